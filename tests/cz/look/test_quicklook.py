"""``cz quicklook``: the pictures are looked at, pixel by pixel, against values we know.

Each test reads the PNG back with Pillow, finds the data pixels through ``image_box`` of the
``--json`` output, and compares their colours with the stretch of the stored values (physical:
stored * 0.0001 - 0.1) computed here with numpy and matplotlib's own colormaps.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest

import chronozarr
from tests.cz.look.conftest import CS, HOLE, H, LookStore, W
from tests.cz.look.helpers import data_pixels, levels, read_png, run


def physical(ls: LookStore, t: int, band: int) -> np.ndarray:
    """Physical values of a band, NaN where invalid (the store has a mask: it alone decides)."""
    v = ls.data[t, band].astype(np.float64) * 0.0001 - 0.1
    return np.where(ls.mask[t] == 1, v, np.nan)


def lut(name: str) -> np.ndarray:
    return np.asarray(matplotlib.colormaps[name].resampled(256)(np.arange(256), bytes=True))


def quicklook(
    tmp_path: Path, ls: LookStore, *args: str, name: str = "q.png"
) -> tuple[dict, np.ndarray]:
    out = tmp_path / name
    result = run("quicklook", ls.path, *args, "--out", out, "--json")
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["file"] == str(out)
    return info, read_png(out)


def test_rgb_pixels_are_the_stretch_of_the_stored_values(
    tmp_path: Path, look_store: LookStore
) -> None:
    info, img = quicklook(
        tmp_path,
        look_store,
        "--time",
        "2024-03",
        "--rgb",
        "red,green,blue",
        "--level",
        "0",
        "--stretch",
        "0,0.25",
    )
    assert img.shape == (info["height"], info["width"], 4)
    assert info["indices"] == [2] and info["times"] == ["2024-03-01T00:00:00Z"]
    assert info["bands"] == ["B04", "B03", "B02"]
    px = data_pixels(img, info["image_box"], H, W)
    for ch, band in enumerate((2, 1, 0)):  # red = B04, green = B03, blue = B02
        want = levels(physical(look_store, 2, band), 0, 0.25)
        ok = np.isfinite(want)
        np.testing.assert_array_equal(px[..., ch][ok], want[ok])
    # the masked rectangle is transparent, everything else opaque
    alpha = px[..., 3]
    assert (alpha[HOLE] == 0).all()
    hole = np.zeros((H, W), bool)
    hole[HOLE] = True
    assert (alpha[~hole] == 255).all()
    assert info["valid_fraction"] == pytest.approx(1 - hole.mean())
    assert info["image_box"]["width"] >= 512  # a small store is enlarged to be seen


def test_default_view_is_rgb_by_common_name_and_latest_month(
    tmp_path: Path, look_store: LookStore
) -> None:
    info, _ = quicklook(tmp_path, look_store)
    assert info["view"] == "rgb" and info["bands"] == ["B04", "B03", "B02"]
    assert info["indices"] == [5]  # the latest timestep


def test_band_view_uses_the_colormap_and_percentiles_of_valid_values(
    tmp_path: Path, look_store: LookStore
) -> None:
    info, img = quicklook(
        tmp_path,
        look_store,
        "--index",
        "2",
        "--band",
        "nir",
        "--colormap",
        "viridis",
        "--level",
        "0",
    )
    phys = physical(look_store, 2, 3)
    lo, hi = np.percentile(phys[np.isfinite(phys)], [2, 98])
    (channel,) = info["stretch"]["channels"]
    assert (channel["name"], info["stretch"]["spec"]) == ("B08", "p2,p98")
    assert channel["min"] == pytest.approx(lo) and channel["max"] == pytest.approx(hi)
    assert info["units"] == "B08 [reflectance]"
    px = data_pixels(img, info["image_box"], H, W)
    want = levels(phys, lo, hi)
    ok = np.isfinite(want)
    np.testing.assert_array_equal(px[ok], lut("viridis")[want[ok].astype(int)])
    assert (px[~ok][..., 3] == 0).all()
    # the colour bar, right of the data: viridis from its top (the high end) to its bottom
    box = info["image_box"]
    right = img[box["top"] : box["top"] + box["height"], box["left"] + box["width"] + 4 :]
    colours = {tuple(c) for c in right.reshape(-1, 4)}
    top_colour = tuple(int(v) for v in lut("viridis")[255])
    assert any(np.abs(np.array(c) - top_colour).max() <= 3 for c in colours)


def test_index_view_is_band_math_on_physical_values(tmp_path: Path, look_store: LookStore) -> None:
    info, img = quicklook(
        tmp_path,
        look_store,
        "--index",
        "0",
        "--expr",
        "(nir-red)/(nir+red)",
        "--stretch",
        "-1,1",
        "--level",
        "0",
    )
    nir, red = physical(look_store, 0, 3), physical(look_store, 0, 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        ndvi = (nir - red) / (nir + red)
    want = levels(np.where(np.isfinite(ndvi), ndvi, np.nan), -1, 1)
    px = data_pixels(img, info["image_box"], H, W)
    ok = np.isfinite(want)
    assert ok.mean() > 0.9
    np.testing.assert_array_equal(px[ok], lut("RdYlGn")[want[ok].astype(int)])
    assert (px[~ok][..., 3] == 0).all()
    assert info["colormap"] == "RdYlGn" and info["bands"] == ["B08", "B04"]


def test_level_k_draws_that_levels_values(tmp_path: Path, look_store: LookStore) -> None:
    reader = chronozarr.open_store(look_store.path)
    info, img = quicklook(
        tmp_path, look_store, "--index", "1", "--band", "red", "--level", "1", "--stretch", "0,0.2"
    )
    h, w = reader.levels[1].shape[-2:]
    assert info["data_shape"] == [h, w] and info["level"] == 1
    want = levels(reader.read(1, level=1)[2] * 0.0001 - 0.1, 0, 0.2)
    mask = reader.read_mask(1, level=1)
    px = data_pixels(img, info["image_box"], h, w)
    np.testing.assert_array_equal(px[mask == 1], lut("viridis")[want[mask == 1].astype(int)])


def test_level_auto_picks_the_finest_level_that_fits(tmp_path: Path, look_store: LookStore) -> None:
    info, _ = quicklook(tmp_path, look_store, "--index", "0")
    assert info["level"] == 0  # 40 x 52 fits 1024 px


def test_a_time_range_is_an_animation_with_one_stretch(
    tmp_path: Path, look_store: LookStore
) -> None:
    info, _ = quicklook(
        tmp_path, look_store, "--time", "2024-01..2024-06", "--band", "green", "--level", "0"
    )
    assert info["frames"] == 6 and info["indices"] == list(range(6))
    (channel,) = info["stretch"]["channels"]
    for t in (0, 2, 5):
        px = data_pixels(read_png(tmp_path / "q.png", frame=t), info["image_box"], H, W)
        want = levels(physical(look_store, t, 1), channel["min"], channel["max"])
        ok = np.isfinite(want)
        np.testing.assert_array_equal(px[ok], lut("viridis")[want[ok].astype(int)])
        assert (px[~ok][..., 3] == 0).all()
    from PIL import Image

    with Image.open(tmp_path / "q.png") as im:
        assert im.format == "PNG" and im.n_frames == 6  # APNG
    info_gif, _ = quicklook(tmp_path, look_store, "--time", "2024-02..2024-04", name="q.gif")
    with Image.open(tmp_path / "q.gif") as im:
        assert im.format == "GIF" and im.n_frames == 3
    hole_frame = read_png(tmp_path / "q.gif", frame=1)  # 2024-03: the masked rectangle
    box = info_gif["image_box"]
    s = box["scale"]
    r, c = HOLE[0].start + 1, HOLE[1].start + 1
    assert hole_frame[box["top"] + r * s, box["left"] + c * s, 3] == 0


def test_tiled_overview_is_one_picture(tmp_path: Path, look_store: LookStore) -> None:
    single, _ = quicklook(tmp_path, look_store, "--index", "0", name="one.png")
    info, img = quicklook(tmp_path, look_store, "--time", "2024-01..2024-04", "--tiled")
    assert info["tiled"] and info["frames"] == 1
    assert img.shape == (2 * single["height"], 2 * single["width"], 4)  # 4 frames: 2 x 2


def test_volatility_map_over_the_level0_footprint(tmp_path: Path, look_store: LookStore) -> None:
    reader = chronozarr.open_store(look_store.path)
    vol = reader.volatility().astype(np.float64)
    info, img = quicklook(
        tmp_path, look_store, "--volatility", "--level", "0", "--stretch", "0,0.05"
    )
    assert info["view"] == "volatility" and info["times"] == []
    px = data_pixels(img, info["image_box"], H, W)
    cells = vol[np.arange(H)[:, None] // CS, np.arange(W)[None, :] // CS]
    np.testing.assert_array_equal(px, lut("magma")[levels(cells, 0, 0.05).astype(int)])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--band", "[/]"], "no band '[/]'"),  # rich markup in user text must print as text
        (["--time", "2030-01"], "no timestep there"),
        (["--index", "6"], "out of range"),
        (["--rgb", "red,green"], "expected three bands"),
        (["--expr", "open('x')"], "is not allowed"),
        (["--level", "7"], "levels 0..2"),
        (["--stretch", "p98,p2"], "--stretch"),
        (["--colormap", "nope", "--band", "red"], "not a matplotlib colormap"),
        (["--colormap", "viridis"], "not RGB"),
        (["--band", "red", "--rgb", "red,green,blue"], "give one of them"),
        (["--out", "x.jpg"], "expected a .png, .apng or .gif"),
        (["--out", "missing/x.png"], "does not exist"),
    ],
)
def test_bad_selections_are_usage_errors(
    tmp_path: Path,
    look_store: LookStore,
    args: list[str],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run("quicklook", look_store.path, *args)
    assert result.exit_code == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written, no partial file


def test_not_a_store_is_a_runtime_error(tmp_path: Path) -> None:
    result = run("quicklook", tmp_path / "absent.zarr")
    assert result.exit_code == 1 and "no chronozarr store" in result.stderr


def test_the_format_library_and_the_cli_import_no_picture_library() -> None:
    code = (
        "import sys, chronozarr, cz.app\n"
        "print(','.join(m for m in ('matplotlib', 'PIL') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"imported eagerly: {out.stdout.strip()}"


def test_store_text_is_never_markup_or_mathtext(tmp_path: Path) -> None:
    """Band names, units and paths with rich markup and matplotlib mathtext in them draw as text."""
    data = np.full((2, 2, 20, 20), 1000, dtype=np.uint16)
    data[:, :, :5] = 2000
    path = tmp_path / "a$\\nope$[/]b.zarr"
    bands = [
        {"name": "$\\undefinedmacro$", "units": "$\\frac{$", "scale": 0.0001},
        {"name": "[bold]x[/]", "common_name": "nir", "units": "[/]"},
    ]
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01", "2024-02-01"],
        bands=bands,
        crs="EPSG:32631",
        transform=[10, 0, 600000, 0, -10, 5100000],
        nodata=0,
        chunk_size=16,
    )
    for args in (["--band", "$\\undefinedmacro$"], ["--band", "nir"], ["--volatility"]):
        result = run("quicklook", path, *args, "--out", tmp_path / "q.png")
        assert result.exit_code == 0, result.stderr
        assert read_png(tmp_path / "q.png").shape[2] == 4
    result = run("series", path, "--x", "600015", "--y", "5099985", "--out", tmp_path / "s.png")
    assert result.exit_code == 0, result.stderr
    table = run("series", path, "--x", "600015", "--y", "5099985")
    assert table.exit_code == 0 and "[bold]x[/]" in table.stdout  # printed, not interpreted


def test_a_long_range_stretches_on_a_sample_and_draws_with_it(
    tmp_path: Path, look_store: LookStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cz.look.quicklook

    monkeypatch.setattr(cz.look.quicklook, "STRETCH_SAMPLE", 500)  # stride > 1 over 6 frames
    info, _ = quicklook(
        tmp_path, look_store, "--time", "2024-01..2024-06", "--band", "nir", "--level", "0"
    )
    (channel,) = info["stretch"]["channels"]
    every = np.stack([physical(look_store, t, 3) for t in range(6)])
    lo, hi = np.nanpercentile(every, [2, 98])
    assert channel["min"] == pytest.approx(lo, abs=0.01) and channel["max"] == pytest.approx(
        hi, abs=0.01
    )
    for t in (0, 3):  # every frame drawn with the reported stretch
        px = data_pixels(read_png(tmp_path / "q.png", frame=t), info["image_box"], H, W)
        want = levels(physical(look_store, t, 3), channel["min"], channel["max"])
        ok = np.isfinite(want)
        np.testing.assert_array_equal(px[ok], lut("viridis")[want[ok].astype(int)])

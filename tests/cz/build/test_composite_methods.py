"""cz build with each composite method and mask rule, on a synthetic catalog with hand-checked
answers (docs/recipes.md, "mask" and "composite").

January 2024 has three dates with constant numbers (red, nir as stored, baseline 05.09: no
correction; physical = stored x 0.0001 - 0.1):

    2024-01-05  (1300, 3000)   NDVI 0.17 / 0.23 = 0.739
    2024-01-15  (1200, 2000)   NDVI 0.08 / 0.12 = 0.667
    2024-01-25  (1500, 5000)   NDVI 0.35 / 0.45 = 0.778

so the per-band median is (1300, 3000), the mean (1333.3, 3333.3), the 25th percentile (1250,
2500), the medoid the 5th (distance 0 to the median) and the best NDVI the 25th. At pixel EVEN
the 25th is cloudy and the 5th has red 1301: two observations, mean red (1301 + 1200) / 2 =
1250.5, which rounds half to even to 1250.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build
from cz.recipe import load_recipe
from tests.cz.scenes import (
    LOADER_WARNINGS,
    constant_scene,
    grid_offset,
    read_all,
    recipe,
    write_items,
)

pytestmark = LOADER_WARNINGS

DATES = ("2024-01-05T10:30:00Z", "2024-01-15T10:30:00Z", "2024-01-25T10:30:00Z")
NUMBERS = ((1300, 3000), (1200, 2000), (1500, 5000))
EVEN = (20, 6)  # tile pixel (row, col) with two observations
BLOB = (11, 18)  # centre of a 3 x 3 cloud on the 15th, across the store's first block edge
SPECK = (22, 22)  # a one-pixel cloud on the 15th
HIGH_PROB = slice(4, 8)  # tile rows where the 25th says 80 % cloud (10 % elsewhere)


def _disk(r: int) -> set[tuple[int, int]]:
    return {
        (dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= r * r
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("methods")
    scenes = []
    for i, (at, (red, nir)) in enumerate(zip(DATES, NUMBERS, strict=True)):
        sc = constant_scene(f"S2B_31TFJ_202401{5 + 10 * i:02d}_0_L2A", at, red, nir)
        sc.cloud = np.full(sc.scl.shape, 10, dtype=np.uint8)
        scenes.append(sc)
    scenes[0].values[0][EVEN] = 1301
    scenes[2].scl[EVEN] = 9
    by, bx = BLOB
    scenes[1].scl[by - 1 : by + 2, bx - 1 : bx + 2] = 8
    scenes[1].scl[SPECK] = 9
    scenes[2].cloud[HIGH_PROB] = 80
    write_items(root, scenes)
    return root


def _build(folder: Path, name: str, *, composite: str = "", mask: str = "", chunk: int = 16):
    path = recipe(folder, start="2024-01", end="2024-01", chunk=chunk, name=f"{name}.yaml")
    text = path.read_text().replace(
        "  keep: [4, 5, 6, 7, 11]\n", "  keep: [4, 5, 6, 7, 11]\n" + mask
    )
    path.write_text(text + composite)
    out = folder / f"{name}.zarr"
    build(load_recipe(path), out=str(out), options=BuildOptions(workers=2))
    assert chronozarr.validate(out, deep=True).ok
    data, _mask, cov = read_all(out)
    row0, col0, _h, _w = grid_offset(out)
    return out, data[0], cov[0], (row0, col0)


def _at(array: np.ndarray, offset: tuple[int, int], tile_px: tuple[int, int]) -> np.ndarray:
    return array[..., tile_px[0] - offset[0], tile_px[1] - offset[1]]


def _provenance(store: Path) -> dict:
    root = json.loads((store / "zarr.json").read_text())
    return root["attributes"]["chronozarr"]["provenance"]


CLEAR = (14, 8)  # tile pixel with all three observations, far from every cloud

CASES = {
    "mean": ("method: mean", (1333, 3333), (1250, 2500)),
    "min": ("method: min", (1200, 2000), (1200, 2000)),
    "max": ("method: max", (1500, 5000), (1301, 3000)),
    "p25": ("method: percentile\n  q: 25", (1250, 2500), (1225, 2250)),
    "medoid": ("method: medoid", (1300, 3000), (1301, 3000)),
    "best": ("method: best\n  index: (nir - red) / (nir + red)", (1500, 5000), (1301, 3000)),
}


@pytest.mark.parametrize("name", list(CASES))
def test_each_method_gives_the_hand_checked_numbers(folder: Path, name: str) -> None:
    """At EVEN the medoid's median is (1250.5, 2500): the 5th and the 15th are equally far
    (50.5² + 500²), and the tie goes to the earlier date, the 5th."""
    spec, clear, even = CASES[name]
    store, data, cov, offset = _build(folder, name, composite=f"composite:\n  {spec}\n")
    assert _at(data, offset, CLEAR).tolist() == list(clear)
    assert _at(data, offset, EVEN).tolist() == list(even)
    assert _at(cov, offset, CLEAR) == 3 and _at(cov, offset, EVEN) == 2
    prov = _provenance(store)
    method = spec.split("\n")[0].split(": ")[1]
    assert prov["composite"] == f"monthly {method}"
    assert prov["fingerprint"]["fields"]["composite.method"] == method
    if name == "p25":
        assert prov["composite_parameters"] == {"q": 25.0}
    if name == "best":
        assert prov["composite_parameters"] == {"index": "(nir - red) / (nir + red)"}


def test_the_median_store_is_unchanged_and_records_no_new_fields(folder: Path) -> None:
    store, data, _cov, offset = _build(folder, "median")
    assert _at(data, offset, CLEAR).tolist() == [1300, 3000]
    assert _at(data, offset, EVEN).tolist() == [1250, 2500]  # (1301 + 1200) / 2 = 1250.5 -> 1250
    prov = _provenance(store)
    assert prov["composite"] == "monthly median"
    assert "composite_parameters" not in prov and "mask_cleaning" not in prov
    fields = prov["fingerprint"]["fields"]  # the recipe's sections: the defaults recorded
    assert fields["composite.method"] == "median" and fields["composite.q"] is None
    assert fields["mask.open"] == 0 and fields["mask.dilate"] == 0


def test_geomedian_builds_with_geomad(folder: Path) -> None:
    geomad = pytest.importorskip(
        "geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed"
    )
    store, data, _cov, offset = _build(
        folder, "geomedian", composite="composite:\n  method: geomedian\n"
    )
    obs = np.array(NUMBERS, dtype=np.float32).T.reshape(1, 1, 2, 3) * 1e-4  # (y, x, band, time)
    want = np.rint(geomad.nangeomedian_pcm(obs, num_threads=1, eps=np.float32(1e-5))[0, 0] * 1e4)
    assert _at(data, offset, CLEAR).tolist() == want.astype(int).tolist()
    assert _provenance(store)["composite_parameters"]["library"] == "geomad"


_PLAIN: dict[str, np.ndarray] = {}


def _plain_coverage(folder: Path) -> np.ndarray:
    """Coverage without cleaning: 3, but 2 at EVEN (the 25th's cloud) and on the 15th's blob
    and speck."""
    if "cov" not in _PLAIN:
        _PLAIN["cov"] = _build(folder, "plain")[2]
    return _PLAIN["cov"]


def test_dilation_and_opening_drop_the_hand_checked_pixels(folder: Path) -> None:
    """The 15th's 3 x 3 cloud: ``dilate: 2`` drops the square grown by a disk of radius 2 (and the
    specks of the 15th and the 25th grown so); ``open: 1`` first turns the square into a plus (the
    disk does not fit in its corners) and removes both one-pixel specks, so they count again."""
    by, bx = BLOB
    square = {(by + dy, bx + dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1)}
    plus = {(by + dy, bx + dx) for dy, dx in _disk(1)}

    def grown(points: set[tuple[int, int]], r: int) -> set[tuple[int, int]]:
        return {(y + a, x + b) for y, x in points for a, b in _disk(r)}

    # per case: the pixels that lose the 15th, and those that lose the 25th (its cloud at EVEN)
    cases = {
        "dilate2": ("  dilate: 2\n", grown(square, 2) | grown({SPECK}, 2), grown({EVEN}, 2)),
        "open1_buffer2": ("  open: 1\n  buffer: 2\n", grown(plus, 2), set()),
    }
    plain = _plain_coverage(folder)
    h, w = plain.shape
    for name, (mask_text, lose_15th, lose_25th) in cases.items():
        store, data, cov, offset = _build(folder, name, mask=mask_text)
        want = np.full((h, w), 3, dtype=np.uint8)
        for dropped in (lose_15th, lose_25th):
            for y, x in dropped:
                want[y - offset[0], x - offset[1]] -= 1
        np.testing.assert_array_equal(cov, want)
        assert (cov < plain).any()
        if name.startswith("open"):  # the specks are observations again
            assert _at(cov, offset, SPECK) == 3 == _at(cov, offset, EVEN) > _at(plain, offset, EVEN)
        cols = {x - offset[1] for _y, x in lose_15th}
        assert min(cols) < 16 <= max(cols)  # the buffer crosses the block edge at column 16
        # one block (chunk 32 holds the whole grid) gives the same numbers as 2 x 2 blocks
        _s, data_one, cov_one, _o = _build(folder, f"{name}-one", mask=mask_text, chunk=32)
        np.testing.assert_array_equal(cov_one, cov)
        np.testing.assert_array_equal(data_one, data)
        rules = _provenance(store)["mask_cleaning"]
        assert rules["dilate_pixels"] == 2 and rules.get("open_pixels", 0) == (name != "dilate2")


def test_cloud_probability_max_rejects_with_the_keep_set(folder: Path) -> None:
    """The 25th says 80 % in tile rows 4..7: above a 50 % ceiling, so those pixels lose that
    observation; SCL still rejects the 15th's blob and speck (both rules hold)."""
    store, data, cov, offset = _build(
        folder, "prob", mask="  cloud_probability_max: 50\n  cloud_probability_asset: [cloud]\n"
    )
    want = _plain_coverage(folder).copy()
    rows = slice(HIGH_PROB.start - offset[0], HIGH_PROB.stop - offset[0])
    want[rows] -= 1
    np.testing.assert_array_equal(cov, want)
    assert data[:, rows.start, 0].tolist() == [1250, 2500]  # the median of the 5th and 15th
    assert _provenance(store)["mask_cleaning"] == {"cloud_probability_max": 50.0}


def test_dry_run_states_the_mask_rules_and_the_method(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import typer
    from typer.testing import CliRunner

    from cz import output
    from cz.commands import build as cmd_build

    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def _root() -> None:
        """cz (test app)."""

    cmd_build.register(app)
    monkeypatch.setattr(output.out, "width", 220)
    path = recipe(folder, start="2024-01", end="2024-01", name="dry.yaml")
    text = path.read_text().replace(
        "  keep: [4, 5, 6, 7, 11]\n",
        "  keep: [4, 5, 6, 7, 11]\n  open: 3\n  dilate: 6\n  cloud_probability_max: 40\n",
    )
    path.write_text(text + "composite:\n  method: best\n  index: nir*1 + red*0\n")
    got = CliRunner().invoke(app, ["build", str(path), "--dry-run"], catch_exceptions=False)
    assert got.exit_code == 0, got.output
    assert "opening 3 px; dilation 6 px; cloud probability" in got.output
    assert "at most 40 %" in got.output
    assert "monthly best (index nir*1 + red*0)" in got.output
    plan = CliRunner().invoke(app, ["build", str(path), "--dry-run", "--json"])
    doc = json.loads(plan.stdout)
    assert doc["composite"]["method"] == "best" and "rounding" in doc["composite"]
    assert (doc["mask"]["open"], doc["mask"]["dilate"]) == (3, 6)


def test_append_refuses_another_mask_cleaning_or_method(folder: Path) -> None:
    """A store built with dilate 2 refuses an append whose recipe has no dilation (and one with
    another method), naming the field; the same recipe fits."""
    from cz.build import AppendRefusedError, append_months

    store = _build(folder, "append-base", mask="  dilate: 2\n")[0]

    def recipe_with(mask: str, composite: str, name: str) -> object:
        path = recipe(folder, start="2024-01", end="2024-02", name=f"{name}.yaml")
        text = path.read_text().replace(
            "  keep: [4, 5, 6, 7, 11]\n", "  keep: [4, 5, 6, 7, 11]\n" + mask
        )
        path.write_text(text + composite)
        return load_recipe(path)

    with pytest.raises(AppendRefusedError, match=r"mask\.dilate: recipe 0, store built with 2"):
        append_months(recipe_with("", "", "append-plain"), ["2024-02"], store=str(store))
    with pytest.raises(
        AppendRefusedError, match=r"composite\.method: recipe 'mean', store built with 'median'"
    ):
        append_months(
            recipe_with("  dilate: 2\n", "composite:\n  method: mean\n", "append-mean"),
            ["2024-02"],
            store=str(store),
        )
    append_months(recipe_with("  dilate: 2\n", "", "append-same"), ["2024-02"], store=str(store))
    assert chronozarr.open_store(store).n_time == 2

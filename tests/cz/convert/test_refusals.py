"""Bad inputs: each refusal names the offending file, exits 1 without a traceback, and leaves
nothing written (neither the store nor a staging folder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.cz.convert.helpers import (
    LAEA,
    assert_nothing_written,
    cz,
    series,
    transform,
    write_series,
    write_tif,
)

DATES = ["2024-01-01", "2024-02-01", "2024-03-01"]


def _refused(source: Path | str, store: Path, *args: str) -> str:
    result = cz("convert", source, store, *args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1, result.output
    assert_nothing_written(store)
    return " ".join(result.output[result.output.index("error: ") :].split())  # rich wraps lines


def _three(tmp_path: Path, dtype: str = "uint16", **kwargs: object) -> list[Path]:
    return write_series(tmp_path / "src", series(3, 1, 8, 8, dtype), DATES, **kwargs)


@pytest.mark.parametrize(
    ("change", "what"),
    [
        ({"affine": transform(600010)}, "transform"),
        ({"crs": "EPSG:32632"}, "CRS"),
        ({"crs": LAEA}, "CRS"),
        ({"shape": (8, 9)}, "shape"),
    ],
    ids=["shifted", "other-epsg", "custom-crs", "shape"],
)
def test_mixed_grids(tmp_path: Path, change: dict, what: str) -> None:
    files = _three(tmp_path)
    shape = change.pop("shape", (8, 8))
    write_tif(files[1], series(1, 1, *shape, "uint16")[0], **change)  # type: ignore[arg-type]
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[1]}: is not on the grid of {files[0]}" in out
    assert what in out


def test_duplicate_dates(tmp_path: Path) -> None:
    files = _three(tmp_path)
    dup = write_tif(tmp_path / "src" / "other_20240201.tif", series(1, 1, 8, 8, "uint16")[0])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert "duplicate" in out and str(files[1]) in out and str(dup) in out


def test_duplicate_times_in_a_manifest(tmp_path: Path) -> None:
    files = _three(tmp_path)
    (tmp_path / "m.csv").write_text(f"time,path\n2024-01-01,{files[0]}\n2024-01-01,{files[1]}\n")
    out = _refused(tmp_path / "m.csv", tmp_path / "s.zarr")
    assert "duplicate date" in out and f"{tmp_path / 'm.csv'}:3" in out


def test_an_unreadable_file(tmp_path: Path) -> None:
    _three(tmp_path)
    bad = tmp_path / "src" / "scene_2024-04-01.tif"
    bad.write_bytes(b"II*\x00 not really a tiff")
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {bad}: cannot read as a raster" in out


def test_a_missing_file_in_a_manifest(tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text('[{"time": "2024-01-01", "path": "nowhere.tif"}]')
    out = _refused(tmp_path / "m.json", tmp_path / "s.zarr")
    assert f"{tmp_path / 'nowhere.tif'} ({tmp_path / 'm.json'}[0]): cannot read" in out


@pytest.mark.parametrize("dtype", ["int32", "uint32", "float64", "int8"])
def test_unsupported_dtypes_need_an_explicit_dtype(tmp_path: Path, dtype: str) -> None:
    files = _three(tmp_path, dtype="int16" if dtype != "uint32" else "uint16")
    write_tif(files[0], series(1, 1, 8, 8, "int16")[0].astype(dtype))
    for f in files[1:]:
        write_tif(f, series(1, 1, 8, 8, "int16")[0].astype(dtype))
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[0]}: dtype {dtype} is not one the spec stores" in out
    assert "--dtype" in out


def test_mixed_dtypes(tmp_path: Path) -> None:
    files = _three(tmp_path)
    write_tif(files[2], series(1, 1, 8, 8, "uint8")[0])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[2]}: is uint8, {files[0]} is uint16" in out


def test_mixed_nodata_and_nan_nodata(tmp_path: Path) -> None:
    files = _three(tmp_path, nodata=0)
    write_tif(files[1], series(1, 1, 8, 8, "uint16")[0], nodata=65535)
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[1]}: has nodata 65535.0, {files[0]} has 0.0" in out
    nan_files = write_series(
        tmp_path / "f", series(3, 1, 8, 8, "float32"), DATES, nodata=float("nan")
    )
    out = _refused(tmp_path / "f", tmp_path / "f.zarr")
    assert f"error: {nan_files[0]}: has nodata NaN" in out and "--nodata" in out


def test_nan_pixels_without_a_nodata(tmp_path: Path) -> None:
    values = series(3, 1, 8, 8, "float32")
    values[2, 0, 3, 3] = np.nan
    files = write_series(tmp_path / "src", values, DATES)
    out = _refused(tmp_path / "src", tmp_path / "s.zarr", "--chunk-size", "4")
    assert f"error: {files[2]} (window x 0..4, y 0..4): holds NaN pixels" in out


def test_scale_differs_between_files(tmp_path: Path) -> None:
    files = _three(tmp_path, scales=[0.0001])
    write_tif(files[2], series(1, 1, 8, 8, "uint16")[0], scales=[0.001])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[2]}: band b1 has scale/offset (0.001, 0.0)" in out


def test_band_count_and_band_names(tmp_path: Path) -> None:
    files = _three(tmp_path)
    write_tif(files[1], series(1, 2, 8, 8, "uint16")[0])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[1]}: has 2 band(s), {files[0]} has 1" in out
    write_tif(files[1], series(1, 1, 8, 8, "uint16")[0])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr", "--bands", "a,b")
    assert "--bands: names 2 band(s), the files hold 1" in out
    out = _refused(
        tmp_path / "src", tmp_path / "s.zarr", "--encoding", "star-delta", "--dtype", "int16"
    )
    assert "star-delta is only valid for uint8 and uint16" in out


def test_a_file_without_a_date_and_a_bad_pattern(tmp_path: Path) -> None:
    _three(tmp_path)
    odd = write_tif(tmp_path / "src" / "scene_latest.tif", series(1, 1, 8, 8, "uint16")[0])
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {odd}: no date in the file name" in out
    out = _refused(tmp_path / "src", tmp_path / "s.zarr", "--date-pattern", "%Y-%q")
    assert "--date-pattern: unknown directive %q" in out


def test_a_south_up_or_rectangular_grid(tmp_path: Path) -> None:
    from rasterio.transform import Affine

    files = write_series(
        tmp_path / "src", series(3, 1, 8, 8, "uint16"), DATES, affine=Affine(10, 0, 0, 0, -20, 0)
    )
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"error: {files[0]}: has rectangular pixels" in out


def test_a_non_empty_store_folder_is_not_touched(tmp_path: Path) -> None:
    _three(tmp_path)
    store = tmp_path / "s.zarr"
    store.mkdir()
    (store / "keep.txt").write_text("mine")
    result = cz("convert", tmp_path / "src", store)
    assert result.exit_code == 1 and "is not empty" in result.output
    assert [p.name for p in store.iterdir()] == ["keep.txt"]


def test_file_names_are_not_rendered_as_markup(tmp_path: Path) -> None:
    """A hostile file name is printed as it is: rich markup in it is not interpreted."""
    _three(tmp_path)
    odd = write_tif(
        tmp_path / "src" / "[bold red]x[blink]_latest.tif", series(1, 1, 8, 8, "uint16")[0]
    )
    out = _refused(tmp_path / "src", tmp_path / "s.zarr")
    assert f"{odd}: no date" in out


def test_broken_manifests_name_the_manifest_and_row(tmp_path: Path) -> None:
    files = _three(tmp_path)
    cases = {
        "a.json": ('{"items": 3}', "a.json: expected a list of"),
        "b.json": ("[1, 2]", "b.json[0]: expected an object with time and path"),
        "c.json": ("{not json", "c.json: not valid JSON"),
        "d.csv": (
            f"when,path\n2024,{files[0]}\n",
            "d.csv: expected a CSV header with time and path",
        ),
        "e.csv": (
            f"time,path,colour\n2024-01-01,{files[0]},red\n",
            "e.csv:2: unknown column(s) ['colour']",
        ),
        "f.csv": (
            f"time,path\nyesterday,{files[0]}\n",
            "f.csv:2: cannot read the time 'yesterday'",
        ),
        "g.csv": ("time,path\n", "g.csv: the manifest lists no raster"),
    }
    for name, (text, message) in cases.items():
        (tmp_path / name).write_text(text)
        out = _refused(tmp_path / name, tmp_path / "s.zarr")
        assert message in out, (name, out)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "not valid JSON (JSON nested deeper than 64 levels)"),
        ('[{"time": "2024-01-01", "path": "a.tif", "x": ' + "9" * 5000 + "}]", "not valid JSON"),
        ('[{"time": NaN, "path": "a.tif"}]', "not valid JSON"),
    ],
)
def test_hostile_json_manifests_are_one_line(tmp_path: Path, text: str, message: str) -> None:
    # main: a manifest nested 10^5 deep was an internal RecursionError
    (tmp_path / "m.json").write_text(text)
    out = _refused(tmp_path / "m.json", tmp_path / "s.zarr")
    assert f"m.json: {message}" in out, out


@pytest.mark.parametrize("empty", ["time", "x"])
def test_a_dataset_with_an_empty_axis(tmp_path: Path, empty: str) -> None:
    # main: a NetCDF with a zero-length time axis was an internal IndexError
    xr = pytest.importorskip("xarray")
    n_t, n_x = (0, 5) if empty == "time" else (2, 0)
    times = np.array(["2024-01-01", "2024-02-01"][:n_t], "datetime64[ns]")
    ds = xr.Dataset(
        {"v": (("time", "y", "x"), np.zeros((n_t, 4, n_x), "uint16"))},
        coords={"time": times, "y": np.arange(4.0) * -10, "x": np.arange(float(n_x)) * 10},
    )
    nc = tmp_path / "zero.nc"
    ds.to_netcdf(nc, engine="h5netcdf")
    for extra in ((), ("--dry-run",)):
        out = _refused(nc, tmp_path / "s.zarr", "--crs", "EPSG:32631", *extra)
        assert "zero.nc: variable v has no data" in out and f"'{empty}': 0" in out, out


def _huge_tifs(folder: Path, side: int = 1_000_000) -> list[Path]:
    """Three GeoTIFFs declaring side x side px, written sparse by GDAL (no pixel data: a few
    MB of tile index each), as a source whose declared size is the hostile part."""
    import rasterio

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for date in DATES:
        path = folder / f"h_{date}.tif"
        with rasterio.open(
            path, "w", driver="GTiff", width=side, height=side, count=1, dtype="uint16",
            crs="EPSG:32631", transform=transform(), tiled=True, blockxsize=16384,
            blockysize=16384, sparse_ok=True, BIGTIFF="YES",
        ):  # fmt: skip
            pass
        paths.append(path)
    return paths


def test_huge_declared_rasters_are_estimated_and_refused(tmp_path: Path) -> None:
    # main: three 10^6 x 10^6 px GeoTIFFs passed --dry-run with every check "ok", no estimate
    _huge_tifs(tmp_path / "huge")
    store = tmp_path / "s.zarr"
    for extra in ((), ("--dry-run",), ("--yes",), ("--dry-run", "--yes")):
        out = _refused(tmp_path / "huge", store, *extra)
        assert "1000000 x 1000000 px: 8.0 TB of values" in out, out  # 3 x 2 B x 10^12 x 4/3
        assert "3,818,116 level-0 cell(s)" in out and "more than 1,000,000 level-0 cells" in out


@pytest.mark.parametrize(
    ("resolution", "yes_converts"),
    [("1e-9", False), ("0.0002", True)],  # 6.4 x 10^21 px: never; 1.6 x 10^11 px: with --yes
)
def test_a_tiny_resolution_is_estimated_and_refused(
    tmp_path: Path, resolution: str, yes_converts: bool
) -> None:
    # main: --resolution 1e-9 ran out of memory (2.9 GB) planning the windows
    _three(tmp_path)
    store = tmp_path / "s.zarr"
    out = _refused(tmp_path / "src", store, "--resolution", resolution)
    assert "size: 3 timestep(s) x 1 band(s)" in out, out
    dry = cz("convert", tmp_path / "src", store, "--resolution", resolution, "--dry-run", "--yes")
    assert (dry.exit_code == 0) == yes_converts, dry.output
    assert "size     3 timestep(s)" in dry.output
    assert_nothing_written(store)


def test_a_shard_time_beyond_the_bound_is_refused(tmp_path: Path) -> None:
    # main: --shard-time 1000000000 was an internal MemoryError (the shard's chunk list)
    _three(tmp_path)
    out = _refused(tmp_path / "src", tmp_path / "s.zarr", "--shard", "--shard-time", "1000000000")
    assert "--shard-time" in out and "at most 65,536 timesteps per shard" in out, out


def test_the_estimate_is_in_the_json_plan(tmp_path: Path) -> None:
    _three(tmp_path)
    result = cz("convert", tmp_path / "src", tmp_path / "s.zarr", "--dry-run", "--json")
    assert result.exit_code == 0, result.output
    import json

    size = json.loads(result.output)["estimate"]
    # 3 timesteps of one 8 x 8 uint16 band: one level (one cell), 3 x 64 x 2 bytes
    assert (size["cells"], size["levels"], size["value_bytes"], size["objects"]) == (1, 1, 384, 3)

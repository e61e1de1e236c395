"""GeoTIFFs written by rasterio -> cz convert -> the store's reader equals the files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.cz.convert.helpers import (
    LAEA,
    SINUSOIDAL,
    UTM,
    cz,
    read_tif,
    series,
    transform,
    write_series,
    write_tif,
)

DATES = ["2024-01-05", "2024-02-05", "2024-03-05", "2024-04-05", "2024-05-05"]


@pytest.mark.parametrize(
    ("dtype", "nodata"),
    [("uint8", 255), ("uint16", 0), ("int16", -32768), ("float32", -9999.0)],
)
def test_dtypes_round_trip_exactly(tmp_path: Path, dtype: str, nodata: float) -> None:
    values = series(len(DATES), 3, 45, 37, dtype)
    values[:, :, :4, :6] = nodata  # a corner of nodata
    files = write_series(
        tmp_path / "src",
        values,
        DATES,
        nodata=nodata,
        descriptions=["red", "green", "nir"],
        scales=[0.0001, 0.0001, 0.0002],
        offsets=[-0.1, -0.1, 0.0],
        units=["1", "1", "W m-2"],
    )
    store = tmp_path / "out.zarr"
    result = cz("convert", tmp_path / "src", store, "--chunk-size", "16", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["timesteps"] == len(DATES)
    reader = chronozarr.open_store(store)
    assert reader.dtype == np.dtype(dtype)
    assert reader.nodata == nodata
    assert reader.band_names == ("red", "green", "nir")
    assert [b.scale for b in reader.bands] == [0.0001, 0.0001, 0.0002]
    assert [b.offset for b in reader.bands] == [-0.1, -0.1, 0.0]
    assert reader.bands[2].units == "W m-2"
    assert [str(t)[:10] for t in reader.times] == DATES
    assert reader.attrs.crs == UTM
    assert tuple(reader.levels[0].transform) == tuple(transform())[:6]
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))
    assert reader.attrs.provenance["source_files"] == [str(f) for f in files]
    assert chronozarr.validate(str(store), deep=True).ok


@pytest.mark.parametrize("proj", [LAEA, SINUSOIDAL], ids=["laea", "sinusoidal"])
def test_a_crs_without_an_epsg_code(tmp_path: Path, proj: str) -> None:
    """A custom CRS is stored as WKT2; the store's reader gives the files' values back and the
    CRS PROJ reads from the store is the files' CRS."""
    from rasterio.crs import CRS

    values = series(3, 1, 20, 24, "int16", seed=3)
    files = write_series(
        tmp_path / "src", values, DATES[:3], crs=proj, affine=transform(-50000, 80000, 250)
    )
    store = tmp_path / "out.zarr"
    result = cz("convert", tmp_path / "src", store, "--chunk-size", "8")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert not reader.attrs.crs.upper().startswith("EPSG:")
    assert CRS.from_user_input(reader.attrs.crs) == CRS.from_user_input(proj)
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))
    assert chronozarr.validate(str(store), deep=True).ok


def test_one_file_per_band_per_date_from_the_file_names(tmp_path: Path) -> None:
    values = series(3, 2, 17, 19, "uint16", seed=4)
    for t, d in enumerate(DATES[:3]):
        for b, name in enumerate(["B04", "B08"]):
            write_tif(tmp_path / "src" / f"T31_{d.replace('-', '')}_{name}.tif", values[t, b])
    store = tmp_path / "out.zarr"
    result = cz("convert", tmp_path / "src", store, "--bands", "B08,B04", "--chunk-size", "8")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert reader.band_names == ("B08", "B04")  # the order of --bands
    for t in range(3):
        np.testing.assert_array_equal(reader.read(t), values[t, ::-1])


def test_a_manifest_with_bands_and_relative_paths(tmp_path: Path) -> None:
    values = series(2, 2, 9, 11, "uint8", seed=5)
    rows = ["time,path,band"]
    for t, when in enumerate(["2023-06-01T10:30:00Z", "2023-07-01T10:30:00Z"]):
        for b, name in enumerate(["red", "nir"]):
            write_tif(tmp_path / "data" / f"x{t}{b}.tif", values[t, b])
            rows.append(f"{when},data/x{t}{b}.tif,{name}")
    (tmp_path / "list.csv").write_text("\n".join(rows) + "\n")
    store = tmp_path / "out.zarr"
    result = cz("convert", tmp_path / "list.csv", store)
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert reader.band_names == ("red", "nir")
    assert list(reader.attrs.times) == ["2023-06-01T10:30:00Z", "2023-07-01T10:30:00Z"]
    for t in range(2):
        np.testing.assert_array_equal(reader.read(t), values[t])


def test_a_json_manifest_and_a_strftime_date_pattern(tmp_path: Path) -> None:
    values = series(2, 1, 8, 8, "uint16", seed=6)
    items = []
    for t, doy in enumerate([32, 60]):
        f = write_tif(tmp_path / f"MOD13.A2024{doy:03d}.tif", values[t])
        items.append({"time": f"2024-{'02-01' if t == 0 else '02-29'}", "path": str(f)})
    (tmp_path / "m.json").write_text(json.dumps(items))
    a = cz("convert", tmp_path / "m.json", tmp_path / "a.zarr")
    b = cz("convert", str(tmp_path / "MOD13*.tif"), tmp_path / "b.zarr", "--date-pattern", "A%Y%j")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ra, rb = chronozarr.open_store(tmp_path / "a.zarr"), chronozarr.open_store(tmp_path / "b.zarr")
    assert (
        list(ra.attrs.times)
        == list(rb.attrs.times)
        == ["2024-02-01T00:00:00Z", "2024-02-29T00:00:00Z"]
    )
    np.testing.assert_array_equal(rb.read(1), values[1])


def test_float64_needs_dtype_float32_and_the_rule_is_recorded(tmp_path: Path) -> None:
    values = series(2, 1, 10, 12, "float32", seed=7).astype(np.float64) / 3  # not float32-exact
    values[0, 0, 0, 0] = np.nan
    write_series(tmp_path / "src", values, DATES[:2], nodata=np.nan)
    store = tmp_path / "out.zarr"
    refused = cz("convert", tmp_path / "src", store)
    assert refused.exit_code == 1
    assert "float64" in refused.output and "--dtype" in refused.output
    assert not store.exists()
    result = cz("convert", tmp_path / "src", store, "--dtype", "float32", "--nodata", "-9999")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    want = values.astype(np.float32)
    want[0, 0, 0, 0] = -9999.0
    for t in range(2):
        np.testing.assert_array_equal(reader.read(t), want[t])
    assert reader.nodata == -9999.0
    rules = reader.attrs.provenance["dtype_conversion"]
    assert rules == [
        "float64 -> float32: round to nearest float32; finite values beyond its range refused"
    ]


def test_int32_to_int16_is_exact_or_refused_naming_the_file(tmp_path: Path) -> None:
    values = series(2, 1, 6, 6, "int16", seed=8).astype(np.int32)
    files = write_series(tmp_path / "ok", values, DATES[:2])
    result = cz("convert", tmp_path / "ok", tmp_path / "ok.zarr", "--dtype", "int16")
    assert result.exit_code == 0, result.output
    np.testing.assert_array_equal(chronozarr.open_store(tmp_path / "ok.zarr").read(1), values[1])
    values[1, 0, 2, 3] = 40000
    files = write_series(tmp_path / "big", values, DATES[:2])
    store = tmp_path / "big.zarr"
    refused = cz("convert", tmp_path / "big", store, "--dtype", "int16")
    assert refused.exit_code == 1
    assert str(files[1]) in refused.output and "40000" in refused.output
    assert not store.exists()
    assert not [p for p in tmp_path.iterdir() if ".converting-" in p.name]


def test_mask_files_and_a_mask_from_nodata(tmp_path: Path) -> None:
    values = series(3, 2, 12, 10, "uint16", seed=9)
    values[values == 0] = 1
    values[:, 0, 0, 0] = 0  # band 0 missing at (0, 0), band 1 valid: the pixel stays valid
    values[:, :, 5, 5] = 0  # every band missing at (5, 5)
    write_series(tmp_path / "src", values, DATES[:3], nodata=0)
    masks = np.ones((3, 12, 10), dtype=np.uint8)
    masks[:, 7:, :] = 0
    write_series(tmp_path / "masks", masks[:, None], DATES[:3], prefix="cloud_")
    a = cz("convert", tmp_path / "src", tmp_path / "a.zarr", "--mask", "nodata")
    b = cz("convert", tmp_path / "src", tmp_path / "b.zarr", "--mask", tmp_path / "masks")
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ra, rb = chronozarr.open_store(tmp_path / "a.zarr"), chronozarr.open_store(tmp_path / "b.zarr")
    for t in range(3):
        want = np.ones((12, 10), dtype=np.uint8)
        want[5, 5] = 0
        np.testing.assert_array_equal(ra.read_mask(t), want)
        np.testing.assert_array_equal(ra.read(t), values[t])
        np.testing.assert_array_equal(rb.read_mask(t), masks[t])
        # where the mask is 0 the toolkit writes nodata (DESIGN: the producer's duty)
        np.testing.assert_array_equal(rb.read(t), np.where(masks[t] > 0, values[t], 0))
    assert rb.attrs.provenance["mask"] == "from mask files"


def test_resampling_equals_rasterio_reproject(tmp_path: Path) -> None:
    """Files on two grids (10 m and 20 m, shifted) onto one 20 m grid: each timestep equals an
    independent rasterio.warp.reproject of its file onto the grid the store reports."""
    from rasterio.crs import CRS
    from rasterio.enums import Resampling
    from rasterio.transform import Affine
    from rasterio.warp import reproject

    a = series(1, 1, 40, 40, "uint16", seed=10)[0]
    b = series(1, 1, 20, 20, "uint16", seed=11)[0]
    fa = write_tif(
        tmp_path / "src" / "s_2024-01-01.tif", a, nodata=0, affine=transform(600000, 5100000, 10)
    )
    fb = write_tif(
        tmp_path / "src" / "s_2024-02-01.tif", b, nodata=0, affine=transform(600100, 5099900, 20)
    )
    store = tmp_path / "out.zarr"
    dry = cz("convert", tmp_path / "src", store, "--dry-run")
    assert dry.exit_code == 1 and "is not on the grid of" in dry.output and str(fb) in dry.output
    result = cz("convert", tmp_path / "src", store, "--resolution", "20", "--chunk-size", "8")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    lv = reader.levels[0]
    assert lv.transform[0] == 20.0 and lv.transform[2] % 20 == 0 and lv.transform[5] % 20 == 0
    for t, f in enumerate([fa, fb]):
        src = read_tif(f)
        with __import__("rasterio").open(f) as ds:
            src_transform = ds.transform
        want = np.zeros((1, *lv.shape[2:]), dtype=np.uint16)
        reproject(
            src,
            want,
            src_transform=src_transform,
            src_crs=CRS.from_user_input(UTM),
            dst_transform=Affine(*lv.transform),
            dst_crs=CRS.from_user_input(UTM),
            resampling=Resampling.nearest,
            src_nodata=0,
            dst_nodata=0,
        )
        np.testing.assert_array_equal(reader.read(t), want)
    assert reader.attrs.provenance["resampling"] == "nearest"

"""A NetCDF written by xarray (h5netcdf engine) -> cz convert -> the store equals the variable."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import chronozarr
from tests.cz.convert.helpers import cz, series

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf", reason="h5netcdf (the cli extra's NetCDF engine) is not installed")


def _dataset(n_time: int = 4, south_up: bool = False) -> object:
    values = series(n_time, 2, 13, 11, "int16", seed=21)
    values[:, :, 0, 0] = -999
    y = 5_000_000 - 30.0 * np.arange(13) - 15
    x = 400_000 + 30.0 * np.arange(11) + 15
    if south_up:
        y, values = y[::-1], values[:, :, ::-1]
    ds = xr.Dataset(
        {
            "refl": (
                ("time", "band", "y", "x"),
                values,
                {
                    "scale_factor": 0.0001,
                    "add_offset": -0.1,
                    "_FillValue": np.int16(-999),
                    "units": "1",
                    "grid_mapping": "spatial_ref",
                },
            ),
            "spatial_ref": (
                (),
                0,
                {"crs_wkt": __import__("rasterio").crs.CRS.from_epsg(32633).to_wkt()},
            ),
        },
        coords={
            "time": pd.date_range("2022-01-01", periods=n_time, freq="MS"),
            "band": ["red", "nir"],
            "y": y,
            "x": x,
        },
    )
    return ds


def test_netcdf_round_trip(tmp_path: Path) -> None:
    ds = _dataset()
    nc = tmp_path / "series.nc"
    ds.to_netcdf(nc, engine="h5netcdf")
    store = tmp_path / "out.zarr"
    result = cz("convert", nc, store, "--variable", "refl", "--chunk-size", "8")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert reader.attrs.crs == "EPSG:32633"
    assert reader.band_names == ("red", "nir")
    assert reader.nodata == -999
    assert [(b.scale, b.offset, b.units) for b in reader.bands] == [(0.0001, -0.1, "1")] * 2
    assert list(reader.levels[0].transform) == [30.0, 0.0, 400_000.0, 0.0, -30.0, 5_000_000.0]
    raw = xr.open_dataset(nc, engine="h5netcdf", mask_and_scale=False)["refl"].values
    for t in range(4):
        np.testing.assert_array_equal(reader.read(t), raw[t])
    assert [str(t)[:10] for t in reader.times] == [
        "2022-01-01",
        "2022-02-01",
        "2022-03-01",
        "2022-04-01",
    ]
    # what xarray decodes (CF scale and _FillValue) is what the store's physical values give
    decoded = xr.open_dataset(nc, engine="h5netcdf")["refl"].values
    got = reader.physical(reader.read(2), reader.valid_bands(2))
    np.testing.assert_allclose(got, decoded[2], rtol=1e-6, equal_nan=True)


def test_a_south_up_dataset_is_stored_north_up(tmp_path: Path) -> None:
    north = _dataset()
    south = _dataset(south_up=True)
    south.to_netcdf(tmp_path / "s.nc", engine="h5netcdf")
    result = cz("convert", tmp_path / "s.nc", tmp_path / "s.zarr")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(tmp_path / "s.zarr")
    np.testing.assert_array_equal(reader.read(1), north["refl"].values[1])


def test_dataset_refusals_name_the_file(tmp_path: Path) -> None:
    ds = _dataset()
    ds = ds.assign_coords(
        time=pd.to_datetime(["2022-01-01", "2022-03-01", "2022-02-01", "2022-04-01"])
    )
    nc = tmp_path / "bad.nc"
    ds.to_netcdf(nc, engine="h5netcdf")
    result = cz("convert", nc, tmp_path / "x.zarr")
    assert result.exit_code == 1
    out = " ".join(result.output.split())
    assert f"error: {nc}: time[2] = 2022-02-01" in out and "strictly increasing" in out
    assert not (tmp_path / "x.zarr").exists()
    result = cz("convert", nc, tmp_path / "x.zarr", "--variable", "nope")
    assert result.exit_code == 1 and "no variable 'nope'" in result.output
    f64 = _dataset()
    f64["refl"] = f64["refl"].astype("float64")
    f64.to_netcdf(tmp_path / "f.nc", engine="h5netcdf")
    result = cz("convert", tmp_path / "f.nc", tmp_path / "x.zarr")
    assert result.exit_code == 1 and "dtype float64 is not one the spec stores" in result.output


def test_a_lat_lon_variable_with_nan_fill(tmp_path: Path) -> None:
    """(time, lat, lon) float32 with _FillValue NaN: EPSG:4326 from the axes, one band named
    after the variable, NaN stored as --nodata."""
    values = series(3, 1, 6, 8, "float32", seed=22)[:, 0]
    values[1, 2, 3] = np.nan
    ds = xr.Dataset(
        {"ndvi": (("time", "lat", "lon"), values, {"_FillValue": np.float32(np.nan)})},
        coords={
            "time": pd.date_range("2021-05-01", periods=3, freq="D"),
            "lat": 45.0 - 0.25 * np.arange(6) - 0.125,
            "lon": 5.0 + 0.25 * np.arange(8) + 0.125,
        },
    )
    ds.to_netcdf(tmp_path / "n.nc", engine="h5netcdf")
    refused = cz("convert", tmp_path / "n.nc", tmp_path / "x.zarr")
    assert refused.exit_code == 1 and "_FillValue NaN" in refused.output
    result = cz("convert", tmp_path / "n.nc", tmp_path / "n.zarr", "--nodata", "-2")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(tmp_path / "n.zarr")
    assert reader.attrs.crs == "EPSG:4326" and reader.band_names == ("ndvi",)
    assert list(reader.levels[0].transform) == [0.25, 0.0, 5.0, 0.0, -0.25, 45.0]
    want = np.where(np.isnan(values), np.float32(-2), values)
    for t in range(3):
        np.testing.assert_array_equal(reader.read(t)[0], want[t])


def test_a_zarr_dataset_and_an_append_of_its_later_times(tmp_path: Path) -> None:
    """xarray's own Zarr (written by xarray) converts like a NetCDF; a later dataset appends."""
    ds = _dataset(n_time=4)
    first, later = ds.isel(time=slice(0, 2)), ds.isel(time=slice(1, 4))  # overlapping by one
    first.to_zarr(tmp_path / "a.zarr", zarr_format=2, consolidated=True)
    later.to_netcdf(tmp_path / "b.nc", engine="h5netcdf")
    store = tmp_path / "s.zarr"
    result = cz("convert", tmp_path / "a.zarr", store, "--variable", "refl")
    assert result.exit_code == 0, result.output
    result = cz("convert", tmp_path / "b.nc", store, "--append", "--json")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert reader.n_time == 4
    for t in range(4):
        np.testing.assert_array_equal(reader.read(t), ds["refl"].values[t])
    assert reader.attrs.provenance["source_files"] == [
        str(tmp_path / "a.zarr"),
        str(tmp_path / "b.nc"),
    ]

"""cz export: COGs read back by rasterio equal Reader.read (stored values) or the physical values."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.cz.convert.helpers import LAEA, cz, series, transform

TIMES = [
    "2024-01-01T00:00:00Z",
    "2024-02-01T00:00:00Z",
    "2024-03-01T00:00:00Z",
    "2024-04-01T00:00:00Z",
]


@pytest.fixture
def store(tmp_path: Path) -> Path:
    values = series(4, 2, 40, 36, "uint16", seed=31)
    values[:, :, :3, :3] = 0
    mask = np.ones((4, 40, 36), dtype=np.uint8)
    mask[1, 20:, :] = 0
    path = tmp_path / "s.zarr"
    chronozarr.encode(
        values,
        path,
        times=TIMES,
        bands=[
            {"name": "red", "scale": 0.0001, "offset": -0.1, "units": "1"},
            {"name": "nir", "scale": 0.0002, "offset": 0.0},
        ],
        crs="EPSG:32631",
        transform=list(transform())[:6],
        nodata=0,
        mask=mask,
        chunk_size=16,
    )
    return path


def test_stored_values_with_crs_transform_nodata_descriptions_scale(
    store: Path, tmp_path: Path
) -> None:
    import rasterio

    result = cz("export", store, tmp_path / "out", "--json")
    assert result.exit_code == 0, result.output
    files = json.loads(result.stdout)["files"]
    assert [Path(f).name for f in files] == [f"data_{t[:10]}.tif" for t in TIMES]
    reader = chronozarr.open_store(store)
    for t, f in enumerate(files):
        with rasterio.open(f) as ds:
            assert ds.driver == "GTiff" and ds.profile.get("tiled")
            assert ds.tags(ns="IMAGE_STRUCTURE").get("LAYOUT") == "COG"
            np.testing.assert_array_equal(ds.read(), reader.read(t))
            assert ds.crs.to_epsg() == 32631
            assert tuple(ds.transform)[:6] == tuple(reader.levels[0].transform)
            assert ds.nodata == 0
            assert ds.descriptions == ("red", "nir")
            assert ds.scales == (0.0001, 0.0002) and ds.offsets == (-0.1, 0.0)
            assert ds.units[0] == "1"
            assert ds.tags(1)["scale"] == "0.0001"
            assert ds.tags()["time"].startswith(TIMES[t][:19])
            # the store's mask is the COG's internal mask
            np.testing.assert_array_equal(ds.dataset_mask() > 0, reader.read_mask(t) > 0)


def test_physical_float32_and_a_time_range(store: Path, tmp_path: Path) -> None:
    import rasterio

    result = cz("export", store, tmp_path / "out", "--physical", "--times", "2024-02..2024-03")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == ["data_2024-02-01.tif", "data_2024-03-01.tif"]
    for t, name in zip([1, 2], names, strict=True):
        with rasterio.open(tmp_path / "out" / name) as ds:
            assert ds.dtypes == ("float32", "float32") and np.isnan(ds.nodata)
            want = reader.physical(reader.read(t), reader.valid_bands(t)).astype(np.float32)
            np.testing.assert_array_equal(ds.read(), want)


def test_a_coarser_level_and_refusals(store: Path, tmp_path: Path) -> None:
    import rasterio

    result = cz("export", store, tmp_path / "out", "--level", "1", "--times", "2024-04-01")
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    with rasterio.open(tmp_path / "out" / "data_2024-04-01.tif") as ds:
        np.testing.assert_array_equal(ds.read(), reader.read(3, level=1))
        assert ds.transform.a == reader.levels[1].resolution
    again = cz("export", store, tmp_path / "out", "--level", "1", "--times", "2024-04-01")
    assert again.exit_code == 1 and "exists; give --overwrite" in again.output
    for args, message in [
        (["--level", "9"], "--level: the store has levels 0..2"),
        (["--times", "2030"], "no timestep of the store in '2030'"),
        (["--times", "2024-13"], "--times: not a date"),
    ]:
        bad = cz("export", store, tmp_path / "x", *args)
        assert bad.exit_code == 1 and message in " ".join(bad.output.split()), bad.output
    missing = cz("export", tmp_path / "nope.zarr", tmp_path / "x")
    assert missing.exit_code == 1 and "nope.zarr" in missing.output


def test_convert_export_convert_round_trip_in_a_custom_crs(tmp_path: Path) -> None:
    """A store in a non-EPSG CRS exported to COGs and converted back equals the first store."""
    values = series(3, 1, 24, 20, "int16", seed=32)
    first = tmp_path / "a.zarr"
    chronozarr.encode(
        values,
        first,
        times=TIMES[:3],
        bands=["v"],
        crs=__import__("rasterio").crs.CRS.from_user_input(LAEA).to_wkt(),
        transform=[100.0, 0.0, -5000.0, 0.0, -100.0, 7000.0],
        nodata=None,
        chunk_size=8,
    )
    assert cz("export", first, tmp_path / "cogs").exit_code == 0
    back = cz("convert", tmp_path / "cogs", tmp_path / "b.zarr", "--chunk-size", "8")
    assert back.exit_code == 0, back.output
    a, b = chronozarr.open_store(first), chronozarr.open_store(tmp_path / "b.zarr")
    assert list(a.attrs.times) == list(b.attrs.times)
    assert a.band_names == b.band_names
    for t in range(3):
        np.testing.assert_array_equal(a.read(t), b.read(t))

"""Independent readers (spec 0, 10, 12): a none store is plain Zarr v3 that xarray, tensorstore and
zarr-python read without this spec; a star-delta store shows anchors as values and deltas as
modular residuals to them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from tests.chronozarr.helpers import modular_residual
from tests.conftest import monthly, synthetic_series

xr = pytest.importorskip("xarray")
ts = pytest.importorskip("tensorstore")

LAYOUTS = {
    "unsharded": {},
    "sharded-whole": {"shard": True},
    "sharded-multi": {"shard_time": 2},
    "sharded-over": {"shard_time": 8},
}


def _encode(path: Path, data: np.ndarray, **kw: Any) -> Path:
    n_time = data.shape[0]
    args: dict[str, Any] = dict(
        times=monthly(n_time),
        bands=["B04", "B08"],
        crs="EPSG:32631",
        transform=[10, 0, 600000, 0, -10, 5000000],
        chunk_size=8,
    )
    args.update(kw)
    chronozarr.encode(data, path, **args)
    return path


@pytest.fixture(scope="module")
def series() -> np.ndarray:
    data = synthetic_series(n_time=5, n_band=2, height=21, width=19, dtype="uint16", seed=4)
    data[:, :, 3:5, 2:6] = 0  # nodata pixels: plain readers must not mask or alter them
    return data


@pytest.fixture(scope="module", params=list(LAYOUTS))
def none_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, series):
    path = tmp_path_factory.mktemp("none") / f"{request.param}.zarr"
    return _encode(path, series, encoding="none", **LAYOUTS[request.param]), series


@pytest.fixture(scope="module", params=list(LAYOUTS))
def delta_store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, series):
    path = tmp_path_factory.mktemp("delta") / f"{request.param}.zarr"
    store = _encode(
        path, series, encoding="star-delta", anchor_interval=3, **LAYOUTS[request.param]
    )
    return store, series


def test_xarray_open_zarr_level0(none_store: Any) -> None:
    path, data = none_store
    ds = xr.open_zarr(path, group="0")
    assert ds["data"].dims == ("time", "band", "y", "x")
    assert ds["data"].dtype == np.uint16
    assert np.array_equal(ds["data"].values, data)
    assert np.issubdtype(ds["time"].dtype, np.datetime64)  # int64 ms + units decode as dates
    assert [str(t)[:10] for t in ds["time"].values] == [t[:10] for t in monthly(5)]
    assert list(ds["band"].values) == ["B04", "B08"]
    assert np.allclose(ds["x"].values, 600000 + 10 * (np.arange(19) + 0.5))
    assert np.allclose(ds["y"].values, 5000000 - 10 * (np.arange(21) + 0.5))
    assert ds.attrs["crs"] == "EPSG:32631"


def test_xarray_open_zarr_coarse_level_equals_reader(none_store: Any) -> None:
    path, _ = none_store
    reader = chronozarr.open_store(path)
    ds = xr.open_zarr(path, group="1")
    for t in range(5):
        assert np.array_equal(ds["data"].values[t], reader.read(t, 1))


def test_tensorstore_reads_level0(none_store: Any) -> None:
    path, data = none_store
    arr = ts.open(
        {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "0" / "data")}}
    ).result()
    assert arr.shape == data.shape
    assert np.array_equal(arr.read().result(), data)
    mask_free = ts.open(
        {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "0" / "time")}}
    ).result()
    assert mask_free.read().result().tolist() == [
        int(np.datetime64(t[:-1], "ms").astype(np.int64)) for t in monthly(5)
    ]


def test_tensorstore_reads_mask_and_coverage(tmp_path: Path, series: np.ndarray) -> None:
    mask = (series[:, 0] % 3 != 0).astype(np.uint8)
    cov = (series[:, 1] % 7).astype(np.uint8)
    path = _encode(
        tmp_path / "mc.zarr", series, encoding="none", shard_time=2, mask=mask, coverage=cov
    )
    for name, want in (("mask", mask), ("coverage", cov)):
        arr = ts.open(
            {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "0" / name)}}
        ).result()
        assert np.array_equal(arr.read().result(), want)


def test_zarr_python_reads_star_delta_as_anchors_and_residuals(delta_store: Any) -> None:
    path, data = delta_store
    group = zarr.open_group(str(path), mode="r")
    raw = group["0"]["data"][:]
    reader = chronozarr.open_store(path)
    temporal = reader.attrs.temporal
    assert list(temporal.anchor_indices) == [0, 3]
    assert dict(temporal.delta_reference) == {1: 0, 2: 3, 4: 3}
    for t in range(5):
        if t in temporal.anchor_indices:
            assert np.array_equal(raw[t], data[t])
        else:
            want = modular_residual(data[t], data[temporal.delta_reference[t]])
            assert np.array_equal(raw[t], want)
    # and the same holds at the coarser level, against the reader's reconstruction
    raw1 = group["1"]["data"][:]
    for t in range(5):
        ref = temporal.delta_reference.get(t)
        level = reader.read(t, 1)
        want = level if ref is None else modular_residual(level, reader.read(ref, 1))
        assert np.array_equal(raw1[t], want)


def test_tensorstore_reads_star_delta_residuals(delta_store: Any) -> None:
    path, data = delta_store
    arr = ts.open(
        {"driver": "zarr3", "kvstore": {"driver": "file", "path": str(path / "0" / "data")}}
    ).result()
    raw = arr.read().result()
    assert np.array_equal(raw[0], data[0]) and np.array_equal(raw[3], data[3])
    assert np.array_equal(raw[4], modular_residual(data[4], data[3]))


def test_zarr_open_consolidated(none_store: Any) -> None:
    path, data = none_store
    group = zarr.open_consolidated(str(path), mode="r")
    assert group.metadata.consolidated_metadata is not None
    members = dict(group.metadata.consolidated_metadata.flattened_metadata)
    assert {"0", "0/data", "0/time", "0/band", "0/y", "0/x", "1/data", "volatility"} <= set(members)
    assert members["0/data"].shape == data.shape
    assert np.array_equal(group["0/data"][:], data)
    assert np.array_equal(group["0"]["data"][:], data)
    assert group.attrs["chronozarr"]["spec_version"] == "0.2.0"
    assert group["volatility"].shape == (3, 3)


@pytest.mark.filterwarnings("ignore:Consolidated metadata is currently not part:UserWarning")
def test_zarr_reads_consolidated_like_a_fresh_consolidation(tmp_path: Path, series) -> None:
    """The consolidated block equals what zarr-python itself writes for the same hierarchy."""
    import json
    import shutil

    path = _encode(tmp_path / "c.zarr", series, encoding="none")
    ours = json.loads((path / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    copy = tmp_path / "copy.zarr"
    shutil.copytree(path, copy)
    zarr.consolidate_metadata(str(copy))
    theirs = json.loads((copy / "zarr.json").read_text())["consolidated_metadata"]["metadata"]
    assert sorted(ours) == sorted(theirs)
    for key in ours:
        assert ours[key]["node_type"] == theirs[key]["node_type"]
        if ours[key]["node_type"] == "array":
            for field in ("shape", "data_type", "chunk_grid", "codecs", "fill_value"):
                assert ours[key][field] == theirs[key][field], (key, field)


def test_xarray_reads_reader_to_xarray_with_datetimes(none_store: Any) -> None:
    path, data = none_store
    da = chronozarr.open_store(path).to_xarray()
    assert np.issubdtype(da["time"].dtype, np.datetime64)
    assert np.array_equal(da.isel(time=2).values, data[2])
    assert np.array_equal(da.sel(band="B08").values, data[:, 1])
    assert np.array_equal(da[1:3, :, 5:17, 3:11].values, data[1:3, :, 5:17, 3:11])
    assert np.array_equal(da[-1, 0, -1, -1].values, data[-1, 0, -1, -1])


@pytest.fixture(scope="module", params=["unsharded", "sharded-multi"])
def companion_store(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, series
) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    """A star-delta store with the time-series companion (docs/spec.md C25), grown by an append
    across a time block: plain readers read its true values, never residuals."""
    mask = (series[:, 0] % 3 != 0).astype(np.uint8)
    cov = (series[:, 1] % 7).astype(np.uint8)
    path = tmp_path_factory.mktemp("companion") / f"{request.param}.zarr"
    _encode(
        path, series[:3], encoding="star-delta", anchor_interval=2, mask=mask[:3],
        coverage=cov[:3], history=True, history_time=2, **LAYOUTS[request.param],
    )  # fmt: skip
    chronozarr.append(path, series[3:], times=monthly(5)[3:], mask=mask[3:], coverage=cov[3:])
    return path, series, mask, cov


def test_xarray_reads_the_companion_as_a_dataset(companion_store: Any) -> None:
    path, data, mask, cov = companion_store
    ds = xr.open_zarr(path, group="0/history")
    assert ds["values"].dims == ("time", "field", "y", "x")
    assert list(ds["field"].values) == ["B04", "B08", "mask", "coverage"]
    got = ds["values"].values
    assert np.array_equal(got[:, :2], data) and np.array_equal(got[:, 2], mask)
    assert np.array_equal(got[:, 3], cov)
    # and the consolidated root lists it: zarr-python opens it from the root's metadata
    root = zarr.open_consolidated(path, mode="r")
    assert root["0/history/values"].shape == (5, 4, 21, 19)


def test_tensorstore_reads_the_companion(companion_store: Any) -> None:
    path, data, mask, cov = companion_store
    arr = ts.open(
        {
            "driver": "zarr3",
            "kvstore": {"driver": "file", "path": str(path / "0" / "history" / "values")},
        }
    ).result()
    got = arr.read().result()
    assert got.shape == (5, 4, 21, 19) and np.array_equal(got[:, :2], data)
    assert np.array_equal(got[:, 2], mask) and np.array_equal(got[:, 3], cov)
    assert arr[:, :, 13, 17].read().result()[:, 0].tolist() == data[:, 0, 13, 17].tolist()

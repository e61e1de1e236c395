"""The xarray backend (engine="chronozarr") against Reader.read, rioxarray, odc-geo and dask.

The reference for physical values is written here from spec 2.3 and 3.6 (stored * scale + offset,
NaN where the mask is 0 or, without a mask, where a band holds nodata), not by Reader.physical.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
import dask  # noqa: E402
import rioxarray  # noqa: E402, F401  (registers .rio)
from affine import Affine  # noqa: E402
from odc.geo import xr as _odc_xr  # noqa: E402, F401  (registers .odc)
from pyproj import CRS  # noqa: E402

import chronozarr  # noqa: E402
from chronozarr.io import LocalStore  # noqa: E402
from chronozarr.read.xarray_backend import ChronozarrBackendEntrypoint  # noqa: E402
from tests.conftest import monthly, synthetic_series  # noqa: E402

N_TIME, HEIGHT, WIDTH, CS = 7, 19, 21, 8
TRANSFORM = [10.0, 0.0, 600000.0, 0.0, -10.0, 5100000.0]
BANDS = [
    {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": -0.1, "units": "1"},
    {"name": "B08", "common_name": "nir", "scale": 0.0002, "offset": 0.0},
]
SINUSOIDAL = "+proj=sinu +lon_0=0 +x_0=0 +y_0=0 +R=6371007.181 +units=m +no_defs"


def _write(path: Path, dtype: str, encoding: str, shard: bool, with_mask: bool, **kw: Any) -> Path:
    data = synthetic_series(N_TIME, 2, HEIGHT, WIDTH, dtype=dtype, seed=5)
    nodata = {"uint8": 0, "uint16": 0, "int16": -32768, "float32": -9999.0}[dtype]
    data[1, 0, :3, :4] = nodata  # a few nodata pixels in one band only
    mask = None
    if with_mask:
        mask = np.ones((N_TIME, HEIGHT, WIDTH), dtype=np.uint8)
        mask[2, 5:9, 3:11] = 0
    args: dict[str, Any] = dict(
        times=monthly(N_TIME),
        bands=BANDS,
        crs="EPSG:32631",
        transform=TRANSFORM,
        chunk_size=CS,
        nodata=nodata,
        encoding=encoding,
        anchor_interval=3,
        mask=mask,
        coverage=None if mask is None else (mask * 3),
        shard_time=4 if shard else None,
    )
    args.update(kw)
    chronozarr.encode(data, path, **args)
    return path


def _reference_physical(reader: chronozarr.Reader, t: int, level: int) -> np.ndarray:
    values = reader.read(t, level)
    scale = np.array([b["scale"] for b in BANDS])[:, None, None]
    offset = np.array([b["offset"] for b in BANDS])[:, None, None]
    out = (values.astype(np.float64) * scale + offset).astype(np.float32)
    mask = reader.read_mask(t, level)
    if mask is not None:
        valid = np.broadcast_to(mask[None] == 1, values.shape)
    else:
        valid = values != np.asarray(reader.nodata, dtype=values.dtype)
    return np.where(valid, out, np.float32(np.nan))


CASES = [
    ("uint8", "none", False, True),
    ("uint8", "star-delta", True, False),
    ("uint16", "star-delta", False, True),
    ("uint16", "star-delta", True, True),
    ("uint16", "none", True, False),
    ("int16", "none", False, False),
    ("int16", "none", True, True),
    ("float32", "none", False, True),
    ("float32", "none", True, False),
]


@pytest.mark.parametrize(("dtype", "encoding", "shard", "with_mask"), CASES)
def test_backend_equals_reader_read(
    tmp_path: Path, dtype: str, encoding: str, shard: bool, with_mask: bool
) -> None:
    path = _write(tmp_path / "s.zarr", dtype, encoding, shard, with_mask)
    reader = chronozarr.open_store(path)
    for level in range(len(reader.levels)):
        raw = xr.open_dataset(path, engine="chronozarr", level=level, physical=False)
        phys = xr.open_dataset(path, engine="chronozarr", level=level, chunks={})
        assert raw["data"].dtype == np.dtype(dtype) and phys["data"].dtype == np.float32
        assert phys["data"].chunks is not None  # dask, chunked like the cells
        assert set(phys["data"].chunks[2][:-1]) <= {CS} and phys["data"].chunks[0] == (1,) * N_TIME
        raw_all, phys_all = raw["data"].values, phys["data"].values
        for t in range(N_TIME):
            np.testing.assert_array_equal(raw_all[t], reader.read(t, level))
            np.testing.assert_array_equal(phys_all[t], _reference_physical(reader, t, level))
            if with_mask:
                np.testing.assert_array_equal(raw["mask"].values[t], reader.read_mask(t, level))
                np.testing.assert_array_equal(
                    raw["coverage"].values[t], reader.read_coverage(t, level)
                )
        assert ("mask" in raw) == with_mask and ("coverage" in raw) == with_mask
        # the coordinates are the store's
        assert [str(b) for b in raw.band.values] == ["B04", "B08"]
        assert list(raw.common_name.values) == ["red", "nir"]
        np.testing.assert_array_equal(raw.time.values, reader.times.astype("datetime64[ns]"))
    # strided, reversed and integer indexing go through the same cell reads
    raw = xr.open_dataset(path, engine="chronozarr", physical=False)
    full = np.stack([reader.read(t) for t in range(N_TIME)])
    np.testing.assert_array_equal(
        raw["data"][::-2, 1, 3:17:3, ::-5].values, full[::-2, 1, 3:17:3, ::-5]
    )
    np.testing.assert_array_equal(raw["data"][-1, :, -1, -1].values, full[-1, :, -1, -1])
    np.testing.assert_array_equal(
        raw["data"].isel(y=[0, 7, 18], x=[20, 2]).values, full[:, :, [0, 7, 18]][..., [20, 2]]
    )


@pytest.fixture(scope="module")
def delta_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write(tmp_path_factory.mktemp("d") / "s.zarr", "uint16", "star-delta", False, True)


class KeyLog:
    """Wraps a Store and records the key of every read."""

    def __init__(self, store: Any):
        self._store = store
        self.keys: list[str] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get(self, key: str) -> bytes | None:
        self.keys.append(key)
        return self._store.get(key)

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        self.keys.append(key)
        return self._store.get_range(key, start, end)


def _data_chunks(keys: list[str]) -> list[tuple[int, int, int]]:
    """(t, row, col) of every level-0 data chunk read."""
    out = []
    for k in keys:
        m = re.fullmatch(r"0/data/c/(\d+)/0/(\d+)/(\d+)", k)
        if m:
            out.append(tuple(int(v) for v in m.groups()))
    return out  # type: ignore[return-value]


def test_a_timestep_reads_at_most_two_chunks_per_cell(delta_store: Path) -> None:
    rows, cols = -(-HEIGHT // CS), -(-WIDTH // CS)
    for t in range(N_TIME):
        log = KeyLog(LocalStore(delta_store))
        ds = xr.open_dataset(chronozarr.open_store(log), engine="chronozarr", chunks={})
        ds["data"].isel(time=t).values  # noqa: B018
        reads = _data_chunks(log.keys)
        per_cell = {
            (r, c): sum(1 for _, rr, cc in reads if (rr, cc) == (r, c))
            for r in range(rows)
            for c in range(cols)
        }
        anchor = t in chronozarr.open_store(delta_store).attrs.temporal.anchor_indices
        assert set(per_cell.values()) == {1 if anchor else 2}, (t, per_cell)


def test_a_pixel_series_reads_only_that_cells_chunks(delta_store: Path) -> None:
    log = KeyLog(LocalStore(delta_store))
    ds = xr.open_dataset(chronozarr.open_store(log), engine="chronozarr")
    series = ds["data"].isel(y=10, x=17).values  # cell (1, 2)
    reads = _data_chunks(log.keys)
    assert {(r, c) for _, r, c in reads} == {(1, 2)}
    assert len(reads) == N_TIME  # each anchor once (cached), each delta once
    reader = chronozarr.open_store(delta_store)
    want = np.stack([_reference_physical(reader, t, 0)[:, 10, 17] for t in range(N_TIME)])
    np.testing.assert_array_equal(series, want)


def test_dask_graph_is_proportional_to_the_chunks_touched(delta_store: Path) -> None:
    ds = xr.open_dataset(delta_store, engine="chronozarr", chunks={})
    cells = -(-HEIGHT // CS) * -(-WIDTH // CS)

    def tasks(obj: Any) -> int:
        (opt,) = dask.optimize(obj.data)
        return len(opt.__dask_graph__())

    whole = tasks(ds["data"])
    one_step = tasks(ds["data"].isel(time=3))
    series = tasks(ds["data"].isel(y=10, x=17))
    assert whole <= 3 * cells * N_TIME
    assert one_step <= 3 * cells < whole
    assert series <= 3 * N_TIME < whole


# rioxarray 0.19 (the last for Python 3.11) builds its transform with `*`, which affine 3 deprecates
RIO_AFFINE_WARNING = "ignore:Use `@` matmul instead of `\\*` mul:PendingDeprecationWarning"


@pytest.mark.filterwarnings(RIO_AFFINE_WARNING)
def test_rioxarray_and_odc_geo_see_crs_and_transform(delta_store: Path) -> None:
    for level in (0, 1):
        ds = xr.open_dataset(delta_store, engine="chronozarr", level=level)
        res = 10.0 * 2**level
        want = Affine(res, 0.0, TRANSFORM[2], 0.0, -res, TRANSFORM[5])
        assert ds.rio.crs.to_epsg() == 32631
        assert ds["data"].rio.crs.to_epsg() == 32631
        assert ds.rio.transform() == want
        assert ds["data"].rio.transform(recalc=True) == want
        gbox = ds["data"].odc.geobox
        assert gbox.crs.epsg == 32631 and gbox.affine == want
        assert gbox.shape == ds["data"].shape[-2:]


@pytest.mark.filterwarnings(RIO_AFFINE_WARNING)
def test_a_crs_without_epsg_code_reaches_rioxarray(tmp_path: Path) -> None:
    crs = CRS.from_proj4(SINUSOIDAL)
    assert crs.to_epsg() is None
    path = _write(tmp_path / "s.zarr", "uint16", "none", False, False, crs=crs)
    ds = xr.open_dataset(path, engine="chronozarr")
    assert CRS.from_wkt(ds.rio.crs.to_wkt()) == crs
    assert ds["data"].odc.geobox.crs == crs


def test_open_datatree_gives_every_level(delta_store: Path) -> None:
    tree = xr.open_datatree(delta_store, engine="chronozarr", physical=False)
    reader = chronozarr.open_store(delta_store)
    assert sorted(tree.children) == [lv.path for lv in reader.levels]
    for k, lv in enumerate(reader.levels):
        node = tree[lv.path].to_dataset()
        assert node["data"].shape == tuple(lv.shape)
        np.testing.assert_array_equal(node["data"].isel(time=4).values, reader.read(4, k))


def test_guess_can_open(delta_store: Path, tmp_path: Path) -> None:
    entry = ChronozarrBackendEntrypoint()
    assert entry.guess_can_open(delta_store) and entry.guess_can_open(str(delta_store))
    (tmp_path / "plain.zarr").mkdir()
    (tmp_path / "plain.zarr" / "zarr.json").write_text('{"zarr_format": 3, "node_type": "group"}')
    assert not entry.guess_can_open(tmp_path / "plain.zarr")
    assert not entry.guess_can_open(tmp_path / "nothing")
    # so xarray picks this engine by itself for a chronozarr store: physical values, not residuals
    ds = xr.open_dataset(delta_store)
    assert ds["data"].dtype == np.float32 and "spatial_ref" in ds.coords


def test_drop_variables_and_bad_level(delta_store: Path) -> None:
    ds = xr.open_dataset(delta_store, engine="chronozarr", drop_variables=["coverage"])
    assert "coverage" not in ds and "mask" in ds
    with pytest.raises(IndexError, match="level 9"):
        xr.open_dataset(delta_store, engine="chronozarr", level=9)
    with pytest.raises(TypeError, match="level: expected an integer"):
        xr.open_dataset(delta_store, engine="chronozarr", level="0")


def test_a_store_over_http_reads_the_same(delta_store: Path) -> None:
    pytest.importorskip("obstore", reason="the remote extra is not installed")
    from tests.chronozarr.helpers import serve_directory

    server, base, log = serve_directory(delta_store.parent)
    try:
        url = f"{base}/{delta_store.name}"
        remote = xr.open_dataset(url, engine="chronozarr")
        local = xr.open_dataset(delta_store, engine="chronozarr")
        xr.testing.assert_identical(
            remote.isel(time=[0, 4]).drop_attrs(), local.isel(time=[0, 4]).drop_attrs()
        )
        assert remote.attrs["source"] == url
        assert any(method == "GET" for method, _, _ in log)
    finally:
        server.shutdown()
        server.server_close()

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


# --- xarray's own arguments and CF attributes (decision 0040) ---------------------------------


def _months(n: int, unit: str) -> np.ndarray:
    """The times of :func:`monthly` as numpy datetimes (without its "Z", which numpy warns on)."""
    return np.array([t.rstrip("Z") for t in monthly(n)], dtype=f"datetime64[{unit}]")


def test_mask_and_scale_false_is_the_stored_values_with_cf_attributes(delta_store: Path) -> None:
    """``mask_and_scale=False`` means what it means for any CF file: stored numbers, with
    ``_FillValue`` (the nodata), and ``xr.decode_cf`` of one band gives spec 3.6's physical values
    where the band holds no nodata (the reference is written from BANDS, not read back)."""
    reader = chronozarr.open_store(delta_store)
    raw = xr.open_dataset(delta_store, engine="chronozarr", mask_and_scale=False)
    assert raw["data"].dtype == np.uint16
    np.testing.assert_array_equal(raw["data"].isel(time=4).values, reader.read(4))
    attrs = raw["data"].attrs
    assert attrs["_FillValue"] == 0 and attrs["grid_mapping"] == "spatial_ref"
    assert "scale_factor" not in attrs  # the two bands' scales differ: per-band coords instead
    assert attrs["long_name"] == "B04, B08" and "units" not in attrs  # units differ too
    # decode_cf=False switches every decoder off, mask_and_scale included (xarray's rule)
    off = xr.open_dataset(delta_store, engine="chronozarr", decode_cf=False)
    assert off["data"].dtype == np.uint16 and off.time.dtype == np.int64
    bands = xr.open_dataset(
        delta_store, engine="chronozarr", mask_and_scale=False, bands_as_variables=True
    )
    assert bands.red.attrs["scale_factor"] == BANDS[0]["scale"]
    assert bands.red.attrs["add_offset"] == BANDS[0]["offset"]
    assert bands.red.attrs["units"] == "1" and bands.red.attrs["long_name"] == "B04"
    decoded = xr.decode_cf(bands).red.isel(time=4).values
    stored = reader.read(4)[0]
    want = np.where(stored != 0, stored * BANDS[0]["scale"] + BANDS[0]["offset"], np.nan)
    np.testing.assert_allclose(decoded, want, rtol=1e-6)


def test_decode_times_false_gives_the_stored_milliseconds(delta_store: Path) -> None:
    ds = xr.open_dataset(delta_store, engine="chronozarr", decode_times=False)
    assert ds.time.dtype == np.int64
    assert ds.time.attrs["units"] == "milliseconds since 1970-01-01T00:00:00"
    want = _months(N_TIME, "ms").astype(np.int64)
    np.testing.assert_array_equal(ds.time.values, want)
    back = xr.decode_cf(ds).time.values  # xarray's own decoding of those units
    np.testing.assert_array_equal(back, _months(N_TIME, "ns"))


def test_decode_coords_false_and_drop_variables(delta_store: Path) -> None:
    ds = xr.open_dataset(
        delta_store, engine="chronozarr", decode_coords=False, drop_variables=["coverage"]
    )
    assert "spatial_ref" in ds.data_vars and "spatial_ref" not in ds.coords
    assert "coverage" not in ds and "mask" in ds
    assert "spatial_ref" in xr.open_dataset(delta_store, engine="chronozarr").coords


@pytest.mark.filterwarnings(RIO_AFFINE_WARNING)
def test_bands_as_variables_reproject_with_rioxarray(delta_store: Path) -> None:
    """One (time, y, x) variable per band, named by common name (``ds.red``, ``ds.nir``), equal
    to the band of the 4-D variable; rioxarray reprojects the whole Dataset."""
    one = xr.open_dataset(delta_store, engine="chronozarr")
    ds = xr.open_dataset(delta_store, engine="chronozarr", bands_as_variables=True)
    assert list(ds.data_vars) == ["red", "nir", "mask", "coverage"]
    assert ds.red.dims == ("time", "y", "x") and ds.red.attrs["band"] == "B04"
    np.testing.assert_array_equal(ds.nir.values, one["data"].sel(band="B08").values)
    out = ds.rio.reproject("EPSG:4326")
    assert out.rio.crs.to_epsg() == 4326 and out.red.dims == ("time", "y", "x")
    lon, lat = float(out.x.mean()), float(out.y.mean())
    assert 4.2 < lon < 4.4 and 46.0 < lat < 46.1  # UTM 31N, x 600 km, y 5100 km
    assert np.isfinite(out.red.isel(time=0).values).any()


def test_bands_as_variables_fall_back_to_band_names(tmp_path: Path) -> None:
    same = [dict(b, common_name="red") for b in BANDS]  # not distinct: names instead
    path = _write(tmp_path / "s.zarr", "uint16", "none", False, False, bands=same)
    ds = xr.open_dataset(path, engine="chronozarr", bands_as_variables=True)
    assert list(ds.data_vars) == ["B04", "B08"]


def test_monthly_composites_have_time_bounds(tmp_path: Path) -> None:
    """A store whose provenance names a monthly composite (spec 3.8) gets CF ``time_bnds``: each
    timestep's calendar month; ``method="ffill"`` and the bounds find a day's month."""
    path = _write(
        tmp_path / "m.zarr", "uint16", "none", False, False,
        provenance={"composite": "monthly median"},
    )  # fmt: skip
    ds = xr.open_dataset(path, engine="chronozarr")
    assert ds.time.attrs["bounds"] == "time_bnds"
    starts = _months(N_TIME, "M")
    np.testing.assert_array_equal(ds.time_bnds.values[:, 0], starts.astype("datetime64[ns]"))
    np.testing.assert_array_equal(ds.time_bnds.values[:, 1], (starts + 1).astype("datetime64[ns]"))
    day = np.datetime64("2024-06-17")
    assert ds.sel(time=day, method="nearest").time.values == np.datetime64("2024-07-01")  # why
    assert ds.sel(time=day, method="ffill").time.values == np.datetime64("2024-06-01")
    inside = (ds.time_bnds[:, 0] <= day) & (day < ds.time_bnds[:, 1])
    assert ds.time.values[inside.values].tolist() == [np.datetime64("2024-06-01", "ns").item()]
    plain = xr.open_dataset(
        _write(tmp_path / "p.zarr", "uint16", "none", False, False), engine="chronozarr"
    )
    assert "time_bnds" not in plain and "bounds" not in plain.time.attrs  # no period recorded


def test_recorded_periods_are_the_time_bounds(tmp_path: Path) -> None:
    """Stores of periods other than months record ``periods`` in the provenance (docs/spec.md
    C24): ``time_bnds`` are those ``[start, end)`` pairs (here 10-day windows that leave gaps, which
    no rule on the times could give); extra pairs of an interrupted append are ignored, and pairs
    that do not fit the times give no bounds rather than wrong ones."""
    starts = _months(N_TIME, "D")
    ends = starts + np.timedelta64(10, "D")
    iso = [[f"{a}T00:00:00Z", f"{b}T00:00:00Z"] for a, b in zip(starts, ends, strict=True)]
    spare = [["2099-01-01T00:00:00Z", "2099-01-11T00:00:00Z"]]  # an append cut short
    prov = {"composite": "dekadal median", "period": {"kind": "windows"}, "periods": iso + spare}
    path = _write(tmp_path / "w.zarr", "uint16", "none", False, False, provenance=prov)
    ds = xr.open_dataset(path, engine="chronozarr")
    assert ds.time.attrs["bounds"] == "time_bnds"
    np.testing.assert_array_equal(ds.time_bnds.values[:, 0], starts.astype("datetime64[ns]"))
    np.testing.assert_array_equal(ds.time_bnds.values[:, 1], ends.astype("datetime64[ns]"))
    day = starts[2] + np.timedelta64(15, "D")  # in the gap after the third window
    inside = (ds.time_bnds[:, 0] <= day) & (day < ds.time_bnds[:, 1])
    assert not inside.values.any()
    shifted = [[iso[0][1], iso[0][1]], *iso[1:]]  # a start that is not the timestep
    for bad in (iso[:-1], shifted, [["June", "July"], *iso[1:]], "2024"):
        p = _write(tmp_path / f"b{len(str(bad))}.zarr", "uint16", "none", False, False,
                   provenance={"composite": "monthly median", "periods": bad})  # fmt: skip
        opened = xr.open_dataset(p, engine="chronozarr")
        assert "time_bnds" not in opened and "bounds" not in opened.time.attrs, bad


def test_star_delta_arrays_say_they_hold_residuals(delta_store: Path, tmp_path: Path) -> None:
    """zarr-python (a plain Zarr reader) sees on the data array of every level that non-anchor
    timesteps are residuals and where the anchors are; a none store carries no such attribute."""
    zarr = pytest.importorskip("zarr", reason="zarr-python (test extra) is not installed")
    group = zarr.open_group(str(delta_store), mode="r")
    for level in ("0", "1"):
        note = group[f"{level}/data"].attrs["chronozarr:temporal"]
        assert note["encoding"] == "star-delta" and "anchor_indices" in note["anchors"]
        assert "delta_reference" in note["values"] and "spec 4.2" in note["values"]
    anchors = group.attrs["chronozarr"]["temporal"]["anchor_indices"]
    assert 0 in anchors and len(anchors) < N_TIME
    plain = _write(tmp_path / "n.zarr", "uint16", "none", False, False)
    assert "chronozarr:temporal" not in zarr.open_group(str(plain), mode="r")["0/data"].attrs


# --- the time-series companion (docs/spec.md C25) ------------------------------------------------


@pytest.fixture(scope="module")
def history_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("h") / "s.zarr"
    return _write(path, "uint16", "star-delta", False, True, history=True, history_time=3)


@pytest.mark.parametrize("physical", [True, False])
def test_a_pixel_series_reads_the_companion_and_equals_the_chunks(
    history_store: Path, delta_store: Path, physical: bool
) -> None:
    log = KeyLog(LocalStore(history_store))
    ds = xr.open_dataset(chronozarr.open_store(log), engine="chronozarr", physical=physical)
    got = {name: ds[name].isel(y=10, x=17).values for name in ("data", "mask", "coverage")}
    # one companion object per time block (3 timesteps each), no cell chunk (decision 0048)
    assert sorted(log.keys) == [*(f"0/history/values/c/{tb}/0/1/2" for tb in range(3)), "zarr.json"]
    # the same data without the companion, read cell by cell (spec 10.4)
    plain = xr.open_dataset(delta_store, engine="chronozarr", physical=physical)
    for name, values in got.items():
        np.testing.assert_array_equal(values, plain[name].isel(y=10, x=17).values)
    window = ds["data"].isel(y=slice(2, 9), x=slice(15, 19), time=slice(1, 6)).values
    np.testing.assert_array_equal(
        window, plain["data"].isel(y=slice(2, 9), x=slice(15, 19), time=slice(1, 6)).values
    )


def test_a_timestep_still_reads_the_cells(history_store: Path) -> None:
    log = KeyLog(LocalStore(history_store))
    ds = xr.open_dataset(chronozarr.open_store(log), engine="chronozarr")
    ds["data"].isel(time=4).values  # noqa: B018
    assert not [k for k in log.keys if k.startswith("0/history/")]
    assert _data_chunks(log.keys)


def test_open_datatree_sees_the_companion_aligned_with_its_level(history_store: Path) -> None:
    """zarr-python through xarray: the companion group inherits time, y and x of level 0."""
    tree = xr.open_datatree(history_store, engine="zarr", consolidated=True)
    node = tree["0/history"]
    assert node["values"].dims == ("time", "field", "y", "x")
    assert list(node["field"].values) == ["B04", "B08", "mask", "coverage"]
    assert node["values"].sizes["time"] == tree["0"].sizes["time"] == N_TIME

"""The xarray backend: ``xr.open_dataset(store, engine="chronozarr")`` and ``xr.open_datatree``.

A chronozarr store read through plain ``xr.open_zarr`` gives stored digital numbers, and residuals
at a star-delta store's non-anchor timesteps. This backend reads through :class:`Reader` instead
(spec 10): every timestep reconstructed, physical values by default. Loaded by xarray through the
``xarray.backends`` entry point, never by ``import chronozarr`` (it imports xarray and pyproj).

What a Dataset holds (docs/python.md, docs/decisions/0012-packaging-extras-and-xarray-backend.md):

- ``data`` (the store's variable name), dims (time, band, y, x): a band *dimension*, as the store
  chunks hold every band of a cell together (one chunk read serves all bands) and as stackstac and
  rioxarray lay bands out. Physical by default: stored * scale + offset per band (spec 3.6) as
  float32, NaN where invalid (spec 2.3: the mask when present, else per band value != nodata);
  ``physical=False`` gives the stored values in the stored dtype, with ``nodata`` in attrs.
- ``mask`` and ``coverage`` (time, y, x) uint8, when the store has them (spec 2.4, 2.5).
- coords time (datetime64[ns]), band (names), y/x (pixel centres), per-band coords
  ``common_name``, ``units``, ``scale``, ``offset`` along band, and ``spatial_ref``: a CF grid
  mapping with ``crs_wkt``, ``spatial_ref`` and ``GeoTransform``, named by each variable's
  ``grid_mapping`` attribute, so rioxarray (``.rio.crs``, ``.rio.transform()``) and odc-geo
  (``.odc.geobox``) see the CRS and grid without extra steps.

Variables are lazy: an index reads only the cells it touches, one chunk per cell-timestep, two for
a star-delta delta (spec 10.4), those of several timesteps in parallel; a point or a small window
over several timesteps reads the store's time-series companion instead when the level carries one
and it needs fewer objects (docs/spec.md C25), else only that cell's chunks. ``chunks={}`` gives
dask arrays chunked like the store's cells (one time step, every band, cs x cs), as for
``engine="zarr"``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from chronozarr.format import (
    TIME_UNITS,
    LevelInfo,
    crs_to_cf,
    parse_time,
    pixel_centres,
    validity,
)
from chronozarr.read._history import DEFAULT_REQUESTS, in_parallel
from chronozarr.read._reader import Reader, open_store

__all__ = ["ChronozarrBackendEntrypoint", "open_dataset", "open_datatree"]


def _ranges(key: tuple[Any, ...], shape: tuple[int, ...]) -> tuple[list[range], tuple[Any, ...]]:
    """Per dimension, the contiguous range to read and the index to apply to it afterwards."""
    spans: list[range] = []
    after: list[slice | int] = []
    for k, n in zip(key, shape, strict=True):
        if isinstance(k, slice):
            start, stop, step = k.indices(n)
            picked = range(start, stop, step)
            if len(picked) == 0:
                spans.append(range(0))
                after.append(slice(0, 0))
                continue
            lo, hi = min(picked), max(picked) + 1
            spans.append(range(lo, hi))
            after.append(slice(picked.start - lo, None, step))  # covers exactly `picked`
        else:
            i = int(k) % n
            spans.append(range(i, i + 1))
            after.append(0)
    return spans, tuple(after)


class _CellArray(BackendArray):
    """A lazy (time, [band,] y, x) level array read cell by cell through a :class:`Reader`."""

    def __init__(self, reader: Reader, level: int, kind: str, physical: bool):
        self.reader = reader
        self.level = level
        self.kind = kind  # "data", "mask" or "coverage"
        self.physical = physical and kind == "data"
        lv = reader.levels[level]
        n_time, n_band, h, w = lv.shape
        self.shape = (n_time, n_band, h, w) if kind == "data" else (n_time, h, w)
        self.dtype = (
            np.dtype("float32")
            if self.physical
            else (reader.dtype if kind == "data" else np.dtype("uint8"))
        )
        self.cs = reader.chunk_size(level)
        self._lock = threading.Lock()
        if self.physical:
            self.scale = np.array([b.effective_scale for b in reader.bands])[:, None, None]
            self.offset = np.array([b.effective_offset for b in reader.bands])[:, None, None]

    def __getitem__(self, key: indexing.ExplicitIndexer) -> Any:
        return indexing.explicit_indexing_adapter(
            key, self.shape, indexing.IndexingSupport.BASIC, self._getitem
        )

    def _cell(self, t: int, r: int, c: int, ys: slice, xs: slice) -> np.ndarray:
        """The (ys, xs) part (cell-relative) of cell (r, c) at t; physical values computed on
        that part only, so a pixel series does not convert whole cells."""
        rd = self.reader
        if self.kind == "mask":
            return rd.plane_cell(rd.attrs.mask_variable or "mask", t, r, c, self.level)[ys, xs]
        if self.kind == "coverage":
            variable = rd.attrs.coverage_variable or "coverage"
            return rd.plane_cell(variable, t, r, c, self.level)[ys, xs]
        values = rd.read_cell(t, r, c, self.level)[:, ys, xs]
        if not self.physical:
            return values
        mask = (
            rd.plane_cell(rd.attrs.mask_variable, t, r, c, self.level)[ys, xs]
            if rd.attrs.mask_variable
            else None
        )
        out = values.astype(np.float64) * self.scale + self.offset  # spec 3.6
        out = np.where(validity(values, rd.nodata, mask), out, np.nan)  # spec 2.3
        return out.astype(np.float32)

    def _getitem(self, key: tuple[Any, ...]) -> np.ndarray:
        spans, after = _ranges(key, self.shape)
        ts, ys, xs = spans[0], spans[-2], spans[-1]
        band_shape = (self.shape[1],) if self.kind == "data" else ()
        if len(ts) and len(ys) and len(xs) and self.reader.prefers_history(ts, ys, xs, self.level):
            out = self._from_history(ts, ys, xs)  # a point or small window over time (C25)
        else:
            out = np.empty((len(ts), *band_shape, len(ys), len(xs)), dtype=self.dtype)
            if len(ys) and len(xs):
                self._from_cells(out, ts, ys, xs)
        if self.kind == "data":
            out = out[:, spans[1].start : spans[1].stop]
        result: np.ndarray = out[after]
        return result

    def _from_history(self, ts: range, ys: range, xs: range) -> np.ndarray:
        """The window from the time-series companion: every band, mask and coverage of a few
        blocks per time block, instead of every timestep's cell chunks (docs/spec.md C25)."""
        win = self.reader.read_history(ts, ys, xs, self.level, use_history=True)
        if self.kind == "mask":
            assert win.mask is not None  # the array exists only when the store has a mask
            return win.mask
        if self.kind == "coverage":
            assert win.coverage is not None  # likewise
            return win.coverage
        if not self.physical:
            return win.values
        scale, offset = self.scale[None], self.offset[None]
        out = win.values.astype(np.float64) * scale + offset  # spec 3.6
        if win.mask is not None:  # spec 2.3: the mask alone decides, for every band
            valid = np.broadcast_to(win.mask.astype(bool)[:, None], win.values.shape)
        else:
            valid = validity(win.values, self.reader.nodata, None)
        return np.where(valid, out, np.nan).astype(np.float32)  # spec 2.3

    def _from_cells(self, out: np.ndarray, ts: range, ys: range, xs: range) -> None:
        """Each timestep's cells (spec 10.4), timesteps read in parallel (bounded), anchors
        first so that every delta finds its anchor decoded."""
        cs = self.cs
        y0, y1, x0, x1 = ys.start, ys.stop, xs.start, xs.stop

        def one(i: int) -> None:
            t = ts[i]
            for r in range(y0 // cs, math.ceil(y1 / cs)):
                for c in range(x0 // cs, math.ceil(x1 / cs)):
                    ya, yb = max(y0, r * cs), min(y1, (r + 1) * cs)
                    xa, xb = max(x0, c * cs), min(x1, (c + 1) * cs)
                    part = (slice(ya - r * cs, yb - r * cs), slice(xa - c * cs, xb - c * cs))
                    out[i, ..., ya - y0 : yb - y0, xa - x0 : xb - x0] = self._cell(t, r, c, *part)

        anchors = set(self.reader.attrs.temporal.anchor_indices) if self.kind == "data" else set()
        first = [i for i, t in enumerate(ts) if t in anchors]
        in_parallel(one, first, DEFAULT_REQUESTS)
        in_parallel(one, [i for i, t in enumerate(ts) if t not in anchors], DEFAULT_REQUESTS)


#: CF encoding of the time axis when ``decode_times=False`` (the stored coordinate's, spec 3.5).
TIME_ATTRS = {"units": TIME_UNITS, "calendar": "proleptic_gregorian"}
_RESERVED = {"mask", "coverage", "spatial_ref", "time_bnds", "time", "band", "y", "x"}


def _times(reader: Reader, decode: bool) -> tuple[np.ndarray, dict[str, Any]]:
    """The time axis: datetime64[ns], or (``decode_times=False``) int64 ms with CF units."""
    if decode:
        return reader.times.astype("datetime64[ns]"), {}
    return reader.times.astype("datetime64[ms]").astype(np.int64), dict(TIME_ATTRS)


def period_bounds(reader: Reader) -> np.ndarray | None:
    """(time, 2) datetime64[ms] ``[start, end)`` of each composite period, or None when the
    store does not say its timesteps are periods.

    Two sources (spec 3.8's free provenance block): ``periods``, one ``[start, end)`` pair per
    timestep that stores of other periods record (docs/spec.md C24; an interrupted append may
    leave more pairs than times: the first ``len(times)`` count); else a ``composite`` naming a
    ``monthly`` composite, whose timesteps are the calendar months they start (decision 0040).
    Recorded bounds that do not fit the times (too few, unreadable, a start that is not the
    timestep, an empty window) give no bounds rather than wrong ones."""
    prov = reader.attrs.provenance or {}
    if not isinstance(prov, dict):
        return None
    if "periods" in prov:
        return _recorded_bounds(reader, prov["periods"])
    composite = prov.get("composite")
    if not (isinstance(composite, str) and composite.split()[:1] == ["monthly"]):
        return None
    starts = reader.times.astype("datetime64[M]")
    if (starts.astype("datetime64[ms]") != reader.times.astype("datetime64[ms]")).any():
        return None  # a monthly composite labelled mid-month: its label is not the period start
    return np.stack([starts, starts + 1], axis=1).astype("datetime64[ms]")


def _recorded_bounds(reader: Reader, periods: Any) -> np.ndarray | None:
    """C24's ``periods`` as (time, 2) datetime64[ms], or None where they do not fit the times."""
    times = reader.times.astype("datetime64[ms]").astype(np.int64)
    if not isinstance(periods, list) or len(periods) < len(times):
        return None
    out = np.empty((len(times), 2), dtype=np.int64)
    for i, pair in enumerate(periods[: len(times)]):
        if not (
            isinstance(pair, list) and len(pair) == 2 and all(isinstance(v, str) for v in pair)
        ):
            return None
        try:
            out[i] = [parse_time(pair[0]), parse_time(pair[1])]
        except (ValueError, OverflowError):  # unreadable text: no bounds rather than wrong ones
            return None
        if out[i, 0] != times[i] or out[i, 1] <= out[i, 0]:
            return None
    return out.astype("datetime64[ms]")


def _band_names(reader: Reader) -> list[str]:
    """Per-band variable names: common names when every band has a distinct one (``ds.red``,
    ``ds.nir``, as odc-stac users write), else the band names (decision 0040)."""
    common = [b.common_name or "" for b in reader.bands]
    if all(common) and len(set(common)) == len(common) and not set(common) & _RESERVED:
        return common
    names = [b.name for b in reader.bands]
    clash = set(names) & _RESERVED
    if clash:
        raise ValueError(f"bands_as_variables: band names {sorted(clash)} clash with variables")
    return names


def _data_attrs(reader: Reader, bands: list[int], physical: bool) -> dict[str, Any]:
    """CF attributes of data holding ``bands``: ``long_name``, ``units`` (when those bands agree),
    ``grid_mapping``; stored values add ``_FillValue`` (the nodata, spec 2.3) and, when the
    bands share them, ``scale_factor``/``add_offset`` (spec 3.6), so ``xr.decode_cf`` gives
    physical values as for any CF file read with ``mask_and_scale=False``."""
    chosen = [reader.bands[i] for i in bands]
    names = ", ".join(b.name for b in chosen)
    attrs: dict[str, Any] = {"long_name": chosen[0].name if len(chosen) == 1 else names}
    units = {b.units for b in chosen}
    if len(units) == 1 and None not in units:
        attrs["units"] = units.pop()
    attrs["grid_mapping"] = "spatial_ref"
    if physical:
        attrs["description"] = "stored * scale + offset (spec 3.6); NaN where invalid (spec 2.3)"
        return attrs
    if reader.nodata is not None:
        attrs["_FillValue"] = reader.dtype.type(reader.nodata)
        attrs["nodata"] = reader.nodata
    scales = {(b.effective_scale, b.effective_offset) for b in chosen}
    if len(scales) == 1 and scales != {(1.0, 0.0)}:
        scale, offset = scales.pop()
        attrs["scale_factor"], attrs["add_offset"] = scale, offset
    if reader.has_mask:
        attrs["ancillary_variables"] = "mask"
    return attrs


def _coords(
    reader: Reader, lv: LevelInfo, decode_times: bool, bands_as_variables: bool
) -> dict[str, Any]:
    """A level's coordinates: time (and its bounds), pixel centres, the CRS, the band facts."""
    h, w = lv.shape[2:]
    ys, xs = pixel_centres(lv.transform, h, w)
    bands = reader.bands
    times, time_attrs = _times(reader, decode_times)
    coords: dict[str, Any] = {
        "time": ("time", times, time_attrs),
        # pixel centres, in the CRS's units (metres or degrees: spatial_ref says which)
        "y": ("y", np.asarray(ys, dtype=np.float64), {"axis": "Y"}),
        "x": ("x", np.asarray(xs, dtype=np.float64), {"axis": "X"}),
        "spatial_ref": ((), np.int32(0), crs_to_cf(reader.attrs.crs, lv.transform)),
    }
    if not bands_as_variables:
        coords.update(
            {
                "band": ("band", [b.name for b in bands]),
                "common_name": ("band", [b.common_name or "" for b in bands]),
                "units": ("band", [b.units or "" for b in bands]),
                "scale": ("band", [b.effective_scale for b in bands]),
                "offset": ("band", [b.effective_offset for b in bands]),
            }
        )
    bounds = period_bounds(reader)
    if bounds is not None:
        coords["time"][2]["bounds"] = "time_bnds"
        values = bounds.astype("datetime64[ns]") if decode_times else bounds.astype(np.int64)
        coords["time_bnds"] = (("time", "nv"), values)
    return coords


def _variables(
    reader: Reader, level: int, physical: bool, bands_as_variables: bool
) -> dict[str, Any]:
    """A level's lazily indexed variables: the data (one or one per band), mask, coverage."""
    n_band = reader.levels[level].shape[1]
    cs = reader.chunk_size(level)
    bands = reader.bands
    grid = {"grid_mapping": "spatial_ref"}
    variables: dict[str, Any] = {}

    def lazy(
        kind: str, dims: tuple[str, ...], attrs: dict[str, Any], chunks: dict[str, int]
    ) -> xr.Variable:
        array = indexing.LazilyIndexedArray(_CellArray(reader, level, kind, physical))
        return xr.Variable(dims, array, attrs, encoding={"preferred_chunks": chunks})

    cell_chunks = {"time": 1, "y": cs, "x": cs}
    if bands_as_variables:
        whole = lazy("data", ("time", "band", "y", "x"), {}, {**cell_chunks, "band": n_band})
        for i, name in enumerate(_band_names(reader)):
            attrs = {**_data_attrs(reader, [i], physical), "band": bands[i].name}
            if bands[i].common_name:
                attrs["common_name"] = bands[i].common_name
            variables[name] = xr.Variable(
                ("time", "y", "x"),
                whole[:, i]._data,
                attrs,
                encoding={"preferred_chunks": cell_chunks},
            )
    else:
        variables[reader.attrs.variable] = lazy(
            "data",
            ("time", "band", "y", "x"),
            _data_attrs(reader, list(range(n_band)), physical),
            {**cell_chunks, "band": n_band},
        )
    if reader.has_mask:
        mask_attrs = {
            **grid,
            "long_name": "validity mask (spec 2.4)",
            "flag_values": [0, 1],
            "flag_meanings": "invalid valid",
        }
        variables["mask"] = lazy("mask", ("time", "y", "x"), mask_attrs, cell_chunks)
    if reader.has_coverage:
        cov_attrs = {**grid, "long_name": "valid observations composited (spec 2.5)"}
        variables["coverage"] = lazy("coverage", ("time", "y", "x"), cov_attrs, cell_chunks)
    return variables


def level_dataset(
    reader: Reader,
    level: int = 0,
    *,
    physical: bool = True,
    decode_times: bool = True,
    bands_as_variables: bool = False,
) -> xr.Dataset:
    """The Dataset of one level (lazily indexed; see the module docstring for its layout)."""
    if isinstance(level, bool) or not isinstance(level, int | np.integer):
        raise TypeError(f"level: expected an integer level index, got {level!r}")
    if not 0 <= level < len(reader.levels):
        raise IndexError(f"level {level} out of range (store has {len(reader.levels)} levels)")
    lv = reader.levels[level]
    coords = _coords(reader, lv, decode_times, bands_as_variables)
    variables = _variables(reader, level, physical, bands_as_variables)
    attrs = {
        "Conventions": "CF-1.8",
        "chronozarr_spec_version": reader.attrs.spec_version,
        "temporal_encoding": reader.encoding,
        "level": level,
        "resolution": lv.resolution,
        "crs": reader.attrs.crs,
        "source": reader.store.url,
    }
    return xr.Dataset(variables, coords=coords, attrs=attrs)


def _drop(ds: xr.Dataset, drop_variables: str | Iterable[str] | None) -> xr.Dataset:
    if drop_variables is None:
        return ds
    names = [drop_variables] if isinstance(drop_variables, str) else list(drop_variables)
    return ds.drop_vars(names, errors="ignore")


def _open(filename_or_obj: Any, storage_options: dict[str, Any] | None) -> Reader:
    if isinstance(filename_or_obj, Reader):
        return filename_or_obj
    return open_store(filename_or_obj, **(storage_options or {}))


def _level(
    reader: Reader,
    level: int,
    *,
    physical: bool,
    mask_and_scale: bool | None,
    decode_times: bool | None,
    decode_coords: bool | str | None,
    bands_as_variables: bool,
    drop_variables: str | Iterable[str] | None,
) -> xr.Dataset:
    """One level with xarray's decoding arguments applied, as ``engine="zarr"`` applies them:
    ``mask_and_scale=False`` is the stored values (it wins over ``physical``),
    ``decode_times=False`` the stored milliseconds with CF units, ``decode_coords=False`` keeps
    ``spatial_ref`` (and ``time_bnds``) as data variables rather than coordinates."""
    ds = level_dataset(
        reader,
        level,
        physical=physical if mask_and_scale is None else bool(mask_and_scale),
        decode_times=True if decode_times is None else bool(decode_times),
        bands_as_variables=bands_as_variables,
    )
    if decode_coords is False:
        ds = ds.reset_coords([n for n in ("spatial_ref", "time_bnds") if n in ds.coords])
    return _drop(ds, drop_variables)


def open_dataset(
    filename_or_obj: Any,
    *,
    level: int = 0,
    physical: bool = True,
    mask_and_scale: bool | None = None,
    decode_times: bool | None = None,
    decode_coords: bool | str | None = None,
    bands_as_variables: bool = False,
    drop_variables: str | Iterable[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> xr.Dataset:
    """The Dataset of one level of a store (path, URL or open :class:`Reader`)."""
    return _level(
        _open(filename_or_obj, storage_options),
        level,
        physical=physical,
        mask_and_scale=mask_and_scale,
        decode_times=decode_times,
        decode_coords=decode_coords,
        bands_as_variables=bands_as_variables,
        drop_variables=drop_variables,
    )


def open_groups_as_dict(
    filename_or_obj: Any,
    *,
    physical: bool = True,
    mask_and_scale: bool | None = None,
    decode_times: bool | None = None,
    decode_coords: bool | str | None = None,
    bands_as_variables: bool = False,
    drop_variables: str | Iterable[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> dict[str, xr.Dataset]:
    """``{"/": root, "/0": level 0, "/1": ...}``: every pyramid level as a group (spec 6)."""
    reader = _open(filename_or_obj, storage_options)
    root_attrs = {
        "chronozarr_spec_version": reader.attrs.spec_version,
        "temporal_encoding": reader.encoding,
        "levels": len(reader.levels),
        "crs": reader.attrs.crs,
        "source": reader.store.url,
    }
    groups = {"/": xr.Dataset(attrs=root_attrs)}
    for k, lv in enumerate(reader.levels):
        groups[f"/{lv.path}"] = _level(
            reader,
            k,
            physical=physical,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            decode_coords=decode_coords,
            bands_as_variables=bands_as_variables,
            drop_variables=drop_variables,
        )
    return groups


def open_datatree(filename_or_obj: Any, **kwargs: Any) -> xr.DataTree:
    """A DataTree with every level of the store as a child named by its path ("0", "1", ...)."""
    return xr.DataTree.from_dict(open_groups_as_dict(filename_or_obj, **kwargs))


class ChronozarrBackendEntrypoint(BackendEntrypoint):
    """``engine="chronozarr"``: chronozarr v0.1/v0.2 stores, local or http(s)/s3 (spec 10)."""

    description = "chronozarr stores: reconstructed, physical values, CF grid mapping"
    open_dataset_parameters = (
        "filename_or_obj",
        "drop_variables",
        "mask_and_scale",
        "decode_times",
        "decode_coords",
        "level",
        "physical",
        "bands_as_variables",
        "storage_options",
    )
    supports_groups = True

    def open_dataset(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool | None = None,
        decode_times: bool | None = None,
        decode_coords: bool | str | None = None,
        level: int = 0,
        physical: bool = True,
        bands_as_variables: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.Dataset:
        return open_dataset(
            filename_or_obj,
            level=level,
            physical=physical,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            decode_coords=decode_coords,
            bands_as_variables=bands_as_variables,
            drop_variables=drop_variables,
            storage_options=storage_options,
        )

    def open_groups_as_dict(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool | None = None,
        decode_times: bool | None = None,
        decode_coords: bool | str | None = None,
        physical: bool = True,
        bands_as_variables: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> dict[str, xr.Dataset]:
        return open_groups_as_dict(
            filename_or_obj,
            physical=physical,
            mask_and_scale=mask_and_scale,
            decode_times=decode_times,
            decode_coords=decode_coords,
            bands_as_variables=bands_as_variables,
            drop_variables=drop_variables,
            storage_options=storage_options,
        )

    def open_datatree(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        mask_and_scale: bool | None = None,
        decode_times: bool | None = None,
        decode_coords: bool | str | None = None,
        physical: bool = True,
        bands_as_variables: bool = False,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.DataTree:
        return xr.DataTree.from_dict(
            self.open_groups_as_dict(
                filename_or_obj,
                drop_variables=drop_variables,
                mask_and_scale=mask_and_scale,
                decode_times=decode_times,
                decode_coords=decode_coords,
                physical=physical,
                bands_as_variables=bands_as_variables,
                storage_options=storage_options,
            )
        )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """A local folder whose root zarr.json carries the chronozarr attribute."""
        try:
            path = os.fspath(filename_or_obj)
        except TypeError:
            return False
        root = os.path.join(path, "zarr.json")
        if not os.path.isfile(root):
            return False
        try:
            with open(root, "rb") as fh:
                head = fh.read(1 << 16)
        except OSError:
            return False
        return b'"chronozarr"' in head

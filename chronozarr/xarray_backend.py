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
a star-delta delta (spec 10.4), and a pixel series only that cell's chunks. ``chunks={}`` gives
dask arrays chunked like the store's cells (one time step, every band, cs x cs), as for
``engine="zarr"``.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from typing import Any

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from chronozarr.crs import crs_to_cf
from chronozarr.grid import pixel_centres
from chronozarr.pyramid import validity
from chronozarr.reader import Reader, open_store

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
        out = np.empty((len(ts), *band_shape, len(ys), len(xs)), dtype=self.dtype)
        cs = self.cs
        if len(ys) and len(xs):
            y0, y1, x0, x1 = ys.start, ys.stop, xs.start, xs.stop
            for i, t in enumerate(ts):
                for r in range(y0 // cs, math.ceil(y1 / cs)):
                    for c in range(x0 // cs, math.ceil(x1 / cs)):
                        ya, yb = max(y0, r * cs), min(y1, (r + 1) * cs)
                        xa, xb = max(x0, c * cs), min(x1, (c + 1) * cs)
                        part = (slice(ya - r * cs, yb - r * cs), slice(xa - c * cs, xb - c * cs))
                        out[i, ..., ya - y0 : yb - y0, xa - x0 : xb - x0] = self._cell(
                            t, r, c, *part
                        )
        if self.kind == "data":
            out = out[:, spans[1].start : spans[1].stop]
        result: np.ndarray = out[after]
        return result


def _times_ns(reader: Reader) -> np.ndarray:
    return reader.times.astype("datetime64[ns]")


def level_dataset(reader: Reader, level: int = 0, *, physical: bool = True) -> xr.Dataset:
    """The Dataset of one level (lazily indexed; see the module docstring for its layout)."""
    if isinstance(level, bool) or not isinstance(level, int | np.integer):
        raise TypeError(f"level: expected an integer level index, got {level!r}")
    if not 0 <= level < len(reader.levels):
        raise IndexError(f"level {level} out of range (store has {len(reader.levels)} levels)")
    lv = reader.levels[level]
    _n_time, _n_band, h, w = lv.shape
    ys, xs = pixel_centres(lv.transform, h, w)
    cs = reader.chunk_size(level)
    bands = reader.bands
    coords: dict[str, Any] = {
        "time": ("time", _times_ns(reader)),
        "band": ("band", [b.name for b in bands]),
        # pixel centres, in the CRS's units (metres or degrees: spatial_ref says which)
        "y": ("y", np.asarray(ys, dtype=np.float64), {"axis": "Y"}),
        "x": ("x", np.asarray(xs, dtype=np.float64), {"axis": "X"}),
        "common_name": ("band", [b.common_name or "" for b in bands]),
        "units": ("band", [b.units or "" for b in bands]),
        "scale": ("band", [b.effective_scale for b in bands]),
        "offset": ("band", [b.effective_offset for b in bands]),
        "spatial_ref": ((), np.int32(0), crs_to_cf(reader.attrs.crs, lv.transform)),
    }
    grid = {"grid_mapping": "spatial_ref"}
    data_attrs: dict[str, Any] = dict(grid)
    if physical:
        data_attrs["description"] = (
            "stored * scale + offset (spec 3.6); NaN where invalid (spec 2.3)"
        )
    elif reader.nodata is not None:
        data_attrs["nodata"] = reader.nodata
    variables: dict[str, Any] = {}

    def lazy(
        kind: str, dims: tuple[str, ...], attrs: dict[str, Any], chunks: dict[str, int]
    ) -> xr.Variable:
        array = indexing.LazilyIndexedArray(_CellArray(reader, level, kind, physical))
        return xr.Variable(dims, array, attrs, encoding={"preferred_chunks": chunks})

    cell_chunks = {"time": 1, "y": cs, "x": cs}
    variables[reader.attrs.variable] = lazy(
        "data", ("time", "band", "y", "x"), data_attrs, {**cell_chunks, "band": lv.shape[1]}
    )
    if reader.has_mask:
        mask_attrs = {**grid, "flag_values": [0, 1], "flag_meanings": "invalid valid"}
        variables["mask"] = lazy("mask", ("time", "y", "x"), mask_attrs, cell_chunks)
    if reader.has_coverage:
        cov_attrs = {**grid, "long_name": "valid observations composited (spec 2.5)"}
        variables["coverage"] = lazy("coverage", ("time", "y", "x"), cov_attrs, cell_chunks)
    attrs = {
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


def open_dataset(
    filename_or_obj: Any,
    *,
    level: int = 0,
    physical: bool = True,
    drop_variables: str | Iterable[str] | None = None,
    storage_options: dict[str, Any] | None = None,
) -> xr.Dataset:
    """The Dataset of one level of a store (path, URL or open :class:`Reader`)."""
    return _drop(
        level_dataset(_open(filename_or_obj, storage_options), level, physical=physical),
        drop_variables,
    )


def open_groups_as_dict(
    filename_or_obj: Any,
    *,
    physical: bool = True,
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
        groups[f"/{lv.path}"] = _drop(level_dataset(reader, k, physical=physical), drop_variables)
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
        "level",
        "physical",
        "storage_options",
    )
    supports_groups = True

    def open_dataset(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        level: int = 0,
        physical: bool = True,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.Dataset:
        return open_dataset(
            filename_or_obj,
            level=level,
            physical=physical,
            drop_variables=drop_variables,
            storage_options=storage_options,
        )

    def open_groups_as_dict(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        physical: bool = True,
        storage_options: dict[str, Any] | None = None,
    ) -> dict[str, xr.Dataset]:
        return open_groups_as_dict(
            filename_or_obj,
            physical=physical,
            drop_variables=drop_variables,
            storage_options=storage_options,
        )

    def open_datatree(  # type: ignore[override,unused-ignore]
        self,
        filename_or_obj: Any,
        *,
        drop_variables: str | Iterable[str] | None = None,
        physical: bool = True,
        storage_options: dict[str, Any] | None = None,
    ) -> xr.DataTree:
        return xr.DataTree.from_dict(
            self.open_groups_as_dict(
                filename_or_obj,
                physical=physical,
                drop_variables=drop_variables,
                storage_options=storage_options,
            )
        )

    def guess_can_open(self, filename_or_obj: Any) -> bool:
        """A local folder whose root zarr.json carries the chronozarr attribute."""
        import os

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

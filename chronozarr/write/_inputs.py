"""Input normalization for ``encode`` and ``append``: the arguments' checks and cell reads.

Each check raises ``EncodeError`` naming the argument before anything is written: bands (spec
3.6), CRS and north-up square-pixel transform (3.3), nodata representable in the data type
(2.3), a local target folder (``local_target``; ``encode`` itself writes to any target of
:mod:`chronozarr.io._targets`, object stores too). ``CellInput`` reads one cell of a numpy, dask or xarray array
in batches of timesteps, so a lazy input is computed a few cells at a time (on a dask worker
with the synchronous scheduler, never the worker's own client).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from chronozarr.errors import EncodeError
from chronozarr.format import Band, default_nodata
from chronozarr.format import normalize_crs as crs_info
from chronozarr.io import LRU, location

__all__ = [
    "BATCH_BYTES",
    "DEFAULT",
    "CellInput",
    "local_target",
    "normalize_bands",
    "normalize_crs",
    "normalize_nodata",
    "normalize_transform",
    "unwrap_array",
]

DEFAULT = object()  # "not given": the dtype's default nodata (spec 2.3)
BATCH_BYTES = 32 << 20  # input read batch per task


class CellInput:
    """Reads planes of one cell from a numpy/dask/xarray array, in time batches.

    A lazy input is computed one batch of timesteps at a time (bounded by BATCH_BYTES, aligned to
    the task's first timestep), keeping at most two batches: memory stays a few cells.
    """

    def __init__(self, data: Any, dtype: np.dtype, scheduler: str | None = None):
        self.data = data
        self.lazy = not isinstance(data, np.ndarray)
        self.dtype = dtype
        self.scheduler = scheduler  # "sync" inside a dask worker: never the worker's client

    def cell(
        self, ys: slice, xs: slice, times: Sequence[int] | None = None
    ) -> Callable[[int], np.ndarray]:
        """``get(t)``: (band, h, w) for a (time, band, y, x) input, (h, w) for (time, y, x)."""
        space = (slice(None), ys, xs) if self.data.ndim == 4 else (ys, xs)
        if not self.lazy:
            return lambda t: self.data[(t, *space)]
        h, w = ys.stop - ys.start, xs.stop - xs.start
        per_t = max(
            1, h * w * self.dtype.itemsize * (self.data.shape[1] if self.data.ndim == 4 else 1)
        )
        batch = max(1, BATCH_BYTES // per_t)
        start = 0
        if times is not None and len(times):
            start = min(times)
            batch = min(batch, max(times) - start + 1)
        cache: LRU[int, np.ndarray] = LRU(max_items=2)

        def load(t0: int) -> np.ndarray:
            block = self.data[(slice(t0, t0 + batch), *space)]
            if not hasattr(block, "compute"):
                return np.asarray(block)
            if self.scheduler is None:
                return np.asarray(block.compute())
            return np.asarray(block.compute(scheduler=self.scheduler))

        def get(t: int) -> np.ndarray:
            # batches are aligned to the task's first timestep; an anchor before it (or past its
            # end) gets a batch of its own, clamped at 0 so a slice start is never negative
            t0 = max(0, start + ((t - start) // batch) * batch)
            plane: np.ndarray = cache.get_or_make(t0, lambda: load(t0))[t - t0]
            return plane

        return get


def unwrap_array(data: Any, name: str) -> Any:
    if hasattr(data, "dims") and hasattr(data, "data") and hasattr(data, "coords"):  # xarray
        data = data.data
    if isinstance(data, np.ndarray) or hasattr(data, "compute"):
        return data
    if data is None:
        return None
    try:
        return np.asarray(data)
    except Exception as exc:  # anything np.asarray refuses: a typed EncodeError
        raise EncodeError(name, f"expected a numpy, dask or xarray array ({exc})") from exc


def _band_text(value: Any, where: str, *, required: bool) -> str | None:
    """A band name, common_name or units as a plain ``str``: numpy string scalars (what
    ``list(da.band.values)`` gives) become str here, before the vlen-utf8 codec sees them."""
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value):
        what = "a non-empty string" if required else "a string"
        raise EncodeError(where, f"expected {what}, got {value!r}")
    return str(value)


def _finite(value: Any, where: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise EncodeError(where, f"expected a finite number, got {value!r}")


def _band_of_object(b: Band, i: int) -> Band:
    for k in ("scale", "offset"):  # None: absent (reads as 1 and 0, spec 3.6)
        if getattr(b, k) is not None:
            _finite(getattr(b, k), f"bands[{i}].{k}")
    return Band(
        name=_band_text(b.name, f"bands[{i}].name", required=True),  # type: ignore[arg-type]
        common_name=_band_text(b.common_name, f"bands[{i}].common_name", required=False),
        scale=b.scale,
        offset=b.offset,
        units=_band_text(b.units, f"bands[{i}].units", required=False),
    )


def _band_of_mapping(b: Mapping[str, Any], i: int) -> Band:
    unknown = set(b) - {"name", "common_name", "scale", "offset", "units"}
    if unknown:
        raise EncodeError(f"bands[{i}]", f"unknown key(s) {sorted(unknown)}")
    if not isinstance(b.get("name"), str) or not b["name"]:
        raise EncodeError(f"bands[{i}]", "a band object needs a non-empty 'name'")
    for k in ("scale", "offset"):
        _finite(b.get(k, 0.0), f"bands[{i}].{k}")
    return Band(
        name=str(b["name"]),
        common_name=_band_text(b.get("common_name"), f"bands[{i}].common_name", required=False),
        scale=float(b.get("scale", 1.0)),
        offset=float(b.get("offset", 0.0)),
        units=_band_text(b.get("units"), f"bands[{i}].units", required=False),
    )


def _band(b: Any, i: int) -> Band:
    """Band ``i`` given as a :class:`Band`, a name (scale 1, offset 0, spec 3.6) or a mapping."""
    if isinstance(b, Band):
        return _band_of_object(b, i)
    if isinstance(b, str):
        return Band(name=_band_text(b, f"bands[{i}]", required=True), scale=1.0, offset=0.0)  # type: ignore[arg-type]
    if isinstance(b, Mapping):
        return _band_of_mapping(b, i)
    raise EncodeError(f"bands[{i}]", f"expected a name or an object, got {b!r}")


def normalize_bands(bands: Any, n_band: int) -> tuple[Band, ...]:
    """The bands of ``encode`` (spec 3.6): names, band objects or mappings, one per band of the
    data, with unique names."""
    if isinstance(bands, np.ndarray) and bands.ndim == 1:
        bands = bands.tolist()  # an xarray/numpy coordinate of names
    elif hasattr(bands, "tolist") and not isinstance(bands, str | bytes | Mapping):
        bands = bands.tolist()  # a pandas Index
    if isinstance(bands, str | bytes) or not isinstance(bands, Sequence):
        raise EncodeError("bands", "expected a list of band names or band objects")
    if len(bands) != n_band:
        raise EncodeError("bands", f"{len(bands)} bands given but data has {n_band} on axis 1")
    out = tuple(_band(b, i) for i, b in enumerate(bands))
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise EncodeError("bands", f"band names must be unique, got {names}")
    return out


def local_target(store: Any) -> str:
    """The local folder a store is written to: a path or a ``file://`` URL. Other URLs are
    refused (write locally, then ``cz publish``: spec 9's upload order is the publisher's job)."""
    try:
        loc = location(store)
    except TypeError as exc:  # not path-like (os.fspath refused it)
        raise EncodeError("store", f"expected a local path, got {store!r}") from exc
    if loc.path is None:
        raise EncodeError(
            "store",
            f"{loc.text!r}: encode writes a local folder; write it locally, then publish it with "
            f"`cz publish STORE {loc.scheme}://...`",
        )
    return loc.path


def normalize_crs(crs: Any) -> str:
    """chronozarr.crs of any accepted CRS input (chronozarr/crs.py, docs/spec.md C16)."""
    return crs_info(crs).text


def normalize_transform(transform: Any) -> tuple[tuple[float, ...], float]:
    try:
        values = tuple(float(v) for v in list(transform)[:6])
    except (TypeError, ValueError) as exc:  # not six numbers
        raise EncodeError("transform", f"expected six numbers [a, b, c, d, e, f] ({exc})") from exc
    if len(values) != 6 or not all(math.isfinite(v) for v in values):
        raise EncodeError(
            "transform", f"expected six finite numbers [a, b, c, d, e, f], got {transform!r}"
        )
    a, b, _c, d, e, _f = values
    if b != 0 or d != 0:
        raise EncodeError("transform", "rotated grids are not supported (b and d must be 0)")
    if a <= 0 or e >= 0:
        raise EncodeError("transform", "expected a north-up grid: a > 0 and e < 0 (row 0 is north)")
    if not math.isclose(a, -e, rel_tol=1e-12):
        raise EncodeError("transform", f"pixels must be square (a == -e), got a={a}, e={e}")
    return values, a


def normalize_nodata(nodata: Any, dtype: np.dtype) -> float | int | None:
    if nodata is DEFAULT:
        return default_nodata(dtype.name)
    if nodata is None:
        return None
    if isinstance(nodata, bool) or not isinstance(nodata, int | float | np.number):
        raise EncodeError("nodata", f"expected a number or None, got {nodata!r}")
    if isinstance(nodata, float | np.floating) and not math.isfinite(float(nodata)):
        raise EncodeError("nodata", "NaN and infinities are not a valid nodata (spec 2.3)")
    if dtype.kind in "ui":
        if float(nodata) != int(nodata):
            raise EncodeError("nodata", f"{nodata!r} is not an integer, data is {dtype.name}")
        info = np.iinfo(dtype)
        if not info.min <= int(nodata) <= info.max:
            raise EncodeError("nodata", f"{nodata!r} does not fit {dtype.name}")
        return int(nodata)
    if float(np.float32(nodata)) != float(nodata):
        raise EncodeError("nodata", f"{nodata!r} is not exactly representable as float32")
    return float(nodata)

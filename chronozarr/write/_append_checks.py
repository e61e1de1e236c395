"""The refusals of ``append`` (spec 14), all before a byte is written.

The appended data must continue the store: the same grid, data type, bands, CRS and nodata,
times after the last one, and mask/coverage planes exactly when the store has them. Each
refusal is an ``AppendError`` naming the condition and the values seen.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chronozarr.errors import AppendError, ChronozarrError
from chronozarr.format import RootAttrs, format_time, parse_time, parse_times, pixel_centres
from chronozarr.read import Reader
from chronozarr.write._inputs import normalize_crs, unwrap_array

__all__ = ["UNSET", "check_append", "refuse", "xarray_coords"]

UNSET = object()  # "not given" (nodata may legitimately be None)


def refuse(condition: str, message: str) -> AppendError:
    return AppendError(condition, message)


def xarray_coords(data: Any) -> dict[str, Any] | None:
    if hasattr(data, "dims") and hasattr(data, "coords"):
        return {
            k: np.asarray(data.coords[k].values) for k in ("band", "y", "x") if k in data.coords
        }
    return None


def check_append(
    reader: Reader,
    data: Any,
    times: Sequence[Any],
    mask: Any,
    coverage: Any,
    bands: Sequence[Any] | None,
    crs: Any,
    transform: Sequence[float] | None,
    nodata: Any,
    coords: Mapping[str, Any] | None,
    *,
    planes_from_data: bool = False,
) -> None:
    """Every refusal of spec 14, before a byte is written. ``planes_from_data``: ``data`` is a
    cell source that gives its own mask and coverage (checked by the caller)."""
    attrs = reader.attrs
    lv0 = reader.levels[0]
    _, n_band, h, w = lv0.shape
    if data is None or getattr(data, "ndim", None) != 4:
        raise refuse(
            "data", f"expected a (time, band, y, x) array, got shape {getattr(data, 'shape', None)}"
        )
    shape = tuple(int(s) for s in data.shape)
    if shape[0] < 1:
        raise refuse("data", "nothing to append: the time axis is empty")
    if shape[1:] != (n_band, h, w):
        raise refuse(
            "grid", f"data is (band, y, x) = {shape[1:]}, the store's level 0 is {(n_band, h, w)}"
        )
    store_dtype = reader.dtype
    if np.dtype(data.dtype) != store_dtype:
        raise refuse(
            "dtype", f"data is {np.dtype(data.dtype).name}, the store holds {store_dtype.name}"
        )
    try:
        new_ms = parse_times(times, shape[0])
    except ValueError as exc:  # parse_times names the entry; refuse under "times"
        raise refuse("times", str(exc)) from exc
    last = parse_time(attrs.times[-1]) if attrs.times else None
    if last is not None and new_ms[0] <= last:
        raise refuse(
            "times",
            f"new times must be after the store's last time {attrs.times[-1]}, got {format_time(new_ms[0])}",
        )
    if not planes_from_data:
        _check_planes(attrs, mask, coverage, (shape[0], h, w))
    _check_identity(reader, bands, crs, transform, nodata, coords)


def _check_planes(attrs: RootAttrs, mask: Any, coverage: Any, shape: tuple[int, int, int]) -> None:
    """mask and coverage exactly when the store has them (spec 14), shaped (time, y, x)."""
    for name, plane, has in (
        ("mask", mask, attrs.mask_variable),
        ("coverage", coverage, attrs.coverage_variable),
    ):
        plane = unwrap_array(plane, name)
        if has and plane is None:
            raise refuse(
                name, f"the store has {name}: a {name} plane is required for every new timestep"
            )
        if not has and plane is not None:
            raise refuse(
                name, f"the store has no {name}: a store without {name} cannot gain one (spec 14)"
            )
        if plane is not None:
            if tuple(plane.shape) != shape:
                raise refuse(
                    name,
                    f"expected shape {shape} (time, y, x), got {tuple(plane.shape)}",
                )
            if np.dtype(plane.dtype) not in (np.dtype("uint8"), np.dtype(bool)):
                raise refuse(name, f"expected uint8, got {np.dtype(plane.dtype).name}")
            if (
                name == "mask"
                and isinstance(plane, np.ndarray)
                and plane.size
                and int(plane.max()) > 1
            ):
                raise refuse("mask", "values must be 0 (invalid) or 1 (valid) (spec 2.4)")


def _band_name(b: Any) -> Any:
    if isinstance(b, str):
        return b
    return b.get("name") if isinstance(b, Mapping) else getattr(b, "name", None)


def _check_bands(
    reader: Reader, bands: Sequence[Any] | None, coords: Mapping[str, Any] | None
) -> None:
    store_names = [b.name for b in reader.attrs.bands]
    if bands is not None:
        names = [_band_name(b) for b in bands]
        if names != store_names:
            raise refuse("bands", f"bands {names} differ from the store's {store_names}")
    if coords and "band" in coords and [str(b) for b in coords["band"]] != store_names:
        raise refuse(
            "bands",
            f"data band coordinate {[str(b) for b in coords['band']]} differs from the store's {store_names}",
        )


def _check_crs(reader: Reader, crs: Any) -> None:
    if crs is None:
        return
    try:
        got = normalize_crs(crs)
    except ChronozarrError as exc:  # an unreadable CRS is a refusal, not a crash
        raise refuse("crs", str(exc)) from exc
    if got != reader.attrs.crs:
        raise refuse("crs", f"crs {got!r} differs from the store's {reader.attrs.crs!r}")


def _check_grid(
    reader: Reader, transform: Sequence[float] | None, coords: Mapping[str, Any] | None
) -> None:
    lv0 = reader.levels[0]
    if transform is not None:
        got_t = [float(v) for v in list(transform)[:6]]
        if not all(
            math.isclose(a, b, rel_tol=0, abs_tol=1e-9 * max(1.0, abs(b)))
            for a, b in zip(got_t, lv0.transform, strict=False)
        ):
            raise refuse(
                "grid", f"transform {got_t} differs from the store's {list(lv0.transform)}"
            )
    if not coords:
        return
    h, w = lv0.shape[-2:]
    ys, xs = pixel_centres(lv0.transform, h, w)
    for axis, want in (("y", ys), ("x", xs)):
        if axis in coords and not np.allclose(
            coords[axis], want, rtol=0, atol=abs(lv0.transform[0]) * 1e-6
        ):
            raise refuse("grid", f"data {axis} coordinates differ from the store's pixel centres")


def _check_identity(
    reader: Reader,
    bands: Sequence[Any] | None,
    crs: Any,
    transform: Sequence[float] | None,
    nodata: Any,
    coords: Mapping[str, Any] | None,
) -> None:
    """bands, crs, grid and nodata, when given, equal the store's (spec 14)."""
    _check_bands(reader, bands, coords)
    _check_crs(reader, crs)
    _check_grid(reader, transform, coords)
    if nodata is not UNSET and nodata != reader.attrs.nodata:
        raise refuse(
            "nodata", f"nodata {nodata!r} differs from the store's {reader.attrs.nodata!r}"
        )

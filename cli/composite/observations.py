"""Observations of one block: validity, digital-number correction, one per solar day (rules 1-3
of :mod:`cz.composite`), and the coverage count (spec 2.3, 2.5)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = [
    "MAX_COVERAGE",
    "correct_values",
    "fill_value",
    "mosaic_solar_days",
    "observation_validity",
    "saturating_coverage",
    "value_bounds",
    "work_dtype",
]

#: Coverage is a uint8 count that saturates here (spec 2.5).
MAX_COVERAGE = 255


def work_dtype(dtype: str | np.dtype) -> np.dtype:
    """The dtype arithmetic is done in: int32 for integer stores (room for a correction on
    16-bit numbers; two middle values are summed in int64), float64 for float32 stores."""
    return np.dtype(np.float64) if np.dtype(dtype).kind == "f" else np.dtype(np.int32)


def fill_value(dtype: str | np.dtype, nodata: float | None) -> int | float:
    """What an invalid pixel holds: the store's nodata, else 0 (the Zarr fill value, spec 2.3)."""
    value = 0 if nodata is None else nodata
    return float(value) if np.dtype(dtype).kind == "f" else int(value)


def value_bounds(dtype: str | np.dtype, nodata: float | None) -> tuple[float, float]:
    """The closed range valid stored numbers are clipped to.

    Integer stores: the dtype's range, without the nodata value when it sits at an end of the
    range (0 for uint8/uint16: a valid number is at least 1, so it never reads as nodata).
    Float stores: unbounded (``-inf, inf``).
    """
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return (-np.inf, np.inf)
    info = np.iinfo(dt)
    low, high = int(info.min), int(info.max)
    if nodata is not None and int(nodata) == low:
        low += 1
    elif nodata is not None and int(nodata) == high:
        high -= 1
    return (low, high)


def observation_validity(
    values: np.ndarray,
    scl: np.ndarray | None,
    keep: Sequence[int] | None,
    src_nodata: Sequence[float | None],
) -> np.ndarray:
    """Which pixels of each observation are valid: (n, nb, h, w) values -> (n, h, w) bool.

    Valid where the SCL class is in ``keep`` (when there is a mask) and every band's value
    differs from that band's source nodata (``None``: the band declares none).
    """
    n, nb = values.shape[:2]
    valid = np.ones((n, *values.shape[2:]), dtype=bool)
    if scl is not None and keep is not None:
        valid &= np.isin(scl, np.asarray(list(keep), dtype=scl.dtype))
    for b in range(nb):
        nd = src_nodata[b]
        if nd is None:
            continue
        band = values[:, b]
        if band.dtype.kind == "f" and np.isnan(nd):
            valid &= ~np.isnan(band)
        else:
            valid &= band != nd
    if values.dtype.kind == "f":
        valid &= np.isfinite(values).all(axis=1)
    return valid


def correct_values(
    values: np.ndarray,
    valid: np.ndarray,
    correction: int,
    harmonized: Sequence[bool],
    bounds: tuple[float, float],
    wdtype: np.dtype,
) -> np.ndarray:
    """One item's (nb, h, w) numbers brought to the store convention, in ``wdtype``.

    Harmonised bands get ``+ correction``; every band is clipped to ``bounds``. Float input going
    to an integer store is rounded half to even first (odc-stac reads items that declare no data
    type as float32). Only the valid pixels mean anything: invalid ones hold 0 (float input) or
    whatever the arithmetic gave (they are never used).
    """
    if values.dtype.kind == "f" and wdtype.kind != "f":
        out = np.zeros(values.shape, dtype=wdtype)
        np.copyto(out, np.rint(values), where=valid[None], casting="unsafe")
    else:
        out = values.astype(wdtype, copy=True)
    low, high = bounds
    for b, harm in enumerate(harmonized):
        band = out[b]
        if harm and correction:
            band += correction
        if np.isfinite(low) or np.isfinite(high):
            np.clip(band, low, high, out=band)
    return out


def mosaic_solar_days(
    values: np.ndarray, valid: np.ndarray, groups: Sequence[Sequence[int]]
) -> tuple[np.ndarray, np.ndarray]:
    """One observation per group of items (a solar day): the first valid pixel in group order.

    ``values`` (n, nb, h, w), ``valid`` (n, h, w); ``groups`` lists item indices per solar day in
    plan order. Returns ``(obs_values (g, nb, h, w), obs_valid (g, h, w))``; entries of invalid
    observations are meaningless.
    """
    n_obs = len(groups)
    shape = values.shape[1:]
    obs_values = np.zeros((n_obs, *shape), dtype=values.dtype)
    obs_valid = np.zeros((n_obs, *shape[1:]), dtype=bool)
    for g, members in enumerate(groups):
        for k, i in enumerate(members):
            if k == 0:
                obs_values[g] = values[i]
                obs_valid[g] = valid[i]
                continue
            take = valid[i] & ~obs_valid[g]
            np.copyto(obs_values[g], values[i], where=take[None])
            obs_valid[g] |= take
    return obs_values, obs_valid


def saturating_coverage(count: np.ndarray) -> np.ndarray:
    """The count of valid observations as uint8 coverage, saturating at 255 (spec 2.5)."""
    return np.minimum(count, MAX_COVERAGE).astype(np.uint8)

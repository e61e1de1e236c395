"""Monthly composites of one block, in pure numpy (reference: ``docs/recipes.md``, "composite").

No I/O here: :mod:`cz.load` reads the pixels, :mod:`cz.build` moves blocks around. Each function
is one rule of the recipe reference, so the rules are tested exhaustively on small arrays:

1. Validity of an observation (:func:`observation_validity`): the SCL class is in the recipe's
   keep-set and *every* band differs from its source nodata. One rule for all bands, so one
   coverage plane describes every band and the mask alone decides validity (spec 2.3, 2.5).
2. Digital-number correction per item (:func:`correct_values`): the plan's ``correction`` is
   added to the harmonised bands of valid pixels, and every valid number is clipped to the
   store's valid range (:func:`value_bounds`), so a valid pixel never becomes nodata.
3. One observation per solar day (:func:`mosaic_solar_days`): items of one solar day
   (overlapping MGRS tiles of one overpass) give the first valid pixel in plan order, so an
   overlap never counts twice.
4. The per-pixel median of valid observations (:func:`median_composite`): with an even count the
   mean of the two middle values, rounded half to even in an integer store (exact integer
   arithmetic), kept as the float32 of the mean in a float32 store. The count saturates at 255
   as coverage (spec 2.5).
5. Gap-fill carry-forward (:func:`carry_forward_source`, :func:`assemble_filled`): a pixel
   without a valid observation takes the value of the last month *with* observations within
   ``max_age`` months; it is valid with coverage 0. Otherwise it holds the fill value, mask 0.
   Because a carried value always comes from a month that was observed, month t depends only on
   the raw composites of months t - max_age .. t: no state runs through the whole series.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "MAX_COVERAGE",
    "assemble_filled",
    "carry_forward_source",
    "composite_block",
    "correct_values",
    "fill_value",
    "mask_from_source",
    "median_composite",
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


#: Up to this many observations the median uses a sorting network (elementwise min/max over
#: whole planes); above it, numpy's sort along the observation axis.
_NETWORK_MAX = 12


def _sort_planes(planes: list[np.ndarray]) -> None:
    """Sort a list of equally shaped arrays elementwise, in place (odd-even transposition)."""
    n = len(planes)
    lo_buf = np.empty_like(planes[0])
    for rnd in range(n):
        for i in range(rnd % 2, n - 1, 2):
            a, b = planes[i], planes[i + 1]
            np.minimum(a, b, out=lo_buf)
            np.maximum(a, b, out=b)
            a[...] = lo_buf


def median_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    *,
    overwrite: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-pixel median of the valid observations: ``(composite (nb, h, w) dtype, count (h, w))``.

    ``obs_values`` (n, nb, h, w), ``obs_valid`` (n, h, w); invalid entries are ignored. Odd
    count: the middle value. Even count: the mean of the two middle values; an integer store
    rounds it to the nearest integer, halves to the even neighbour (``numpy.round``'s rule, done
    in exact integer arithmetic), a float32 store keeps the float32 of the mean. Pixels without a
    valid observation hold ``fill``. ``count`` is the exact number of valid observations.
    ``overwrite=True`` lets the function sort ``obs_values`` in place (saves a copy).
    """
    dt = np.dtype(dtype)
    n_obs = obs_values.shape[0]
    nb, h, w = obs_values.shape[1:]
    count = obs_valid.sum(axis=0, dtype=np.int64) if n_obs else np.zeros((h, w), np.int64)
    out = np.full((nb, h, w), fill, dtype=dt)
    if n_obs == 0 or not count.any():
        return out, count
    if n_obs == 1:
        np.copyto(out, obs_values[0], where=obs_valid[0][None], casting="unsafe")
        return out, count
    floating = obs_values.dtype.kind == "f"
    sentinel = np.inf if floating else np.iinfo(obs_values.dtype).max
    # invalid observations sort last: the valid ones are the first `count` of each pixel
    ranked = obs_values if overwrite else obs_values.copy()
    np.copyto(ranked, sentinel, where=~obs_valid[:, None])
    if n_obs <= _NETWORK_MAX:
        planes = list(ranked)
        _sort_planes(planes)
    else:
        planes = list(np.sort(ranked, axis=0))
    for c in range(1, n_obs + 1):  # pixels with c valid observations: middle of the first c
        where = count == c
        if not where.any():
            continue
        low, high = planes[(c - 1) // 2], planes[c // 2]
        if floating:
            median = ((low.astype(np.float64) + high) / 2.0).astype(dt)
        elif c % 2:
            median = low
        else:
            # int32 work arrays hold 16-bit numbers: their sum cannot overflow (where it is used)
            total = (
                low + high
                if low.dtype.itemsize >= 4 and dt.itemsize <= 2
                else low.astype(np.int64) + high
            )
            half = total // 2  # floor, also for negative numbers
            odd = total - 2 * half  # 1 when the mean ends in .5
            median = (half + odd * (half % 2)).astype(dt)  # .5 goes to the even neighbour
        np.copyto(out, median, where=where[None], casting="unsafe")
    return out, count


def saturating_coverage(count: np.ndarray) -> np.ndarray:
    """The count of valid observations as uint8 coverage, saturating at 255 (spec 2.5)."""
    return np.minimum(count, MAX_COVERAGE).astype(np.uint8)


def composite_block(
    values: np.ndarray,
    scl: np.ndarray | None,
    *,
    corrections: Sequence[int],
    solar_days: Sequence[str],
    keep: Sequence[int] | None,
    src_nodata: Sequence[Sequence[float | None]],
    harmonized: Sequence[bool],
    dtype: str | np.dtype,
    nodata: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rules 1-4 of the module docstring for one block of one month.

    ``values`` (n_items, nb, h, w) as read (item order = plan order), ``scl`` (n_items, h, w) or
    ``None`` without a mask; per item its ``corrections``, ``solar_days`` and per-band
    ``src_nodata``. Returns the raw
    composite ``(values (nb, h, w) in dtype, coverage (h, w) uint8)``, fill where coverage is 0.
    """
    dt = np.dtype(dtype)
    fill = fill_value(dt, nodata)
    n, nb, h, w = values.shape
    if n == 0:
        return np.full((nb, h, w), fill, dtype=dt), np.zeros((h, w), dtype=np.uint8)
    valid = np.empty((n, h, w), dtype=bool)
    for i in range(n):
        item_scl = None if scl is None else scl[i : i + 1]
        valid[i] = observation_validity(values[i : i + 1], item_scl, keep, src_nodata[i])[0]
    wdt = work_dtype(dt)
    bounds = value_bounds(dt, nodata)
    groups: dict[str, list[int]] = {}
    for i, day in enumerate(solar_days):
        groups.setdefault(day, []).append(i)
    # rules 2 and 3 together, item by item, so no corrected copy of every item is held
    obs_values = np.empty((len(groups), nb, h, w), dtype=wdt)
    obs_valid = np.zeros((len(groups), h, w), dtype=bool)
    for g, members in enumerate(groups.values()):
        for k, i in enumerate(members):
            fixed = correct_values(values[i], valid[i], corrections[i], harmonized, bounds, wdt)
            if k == 0:
                obs_values[g] = fixed
                obs_valid[g] = valid[i]
                continue
            take = valid[i] & ~obs_valid[g]
            np.copyto(obs_values[g], fixed, where=take[None])
            obs_valid[g] |= take
    composite, count = median_composite(obs_values, obs_valid, dt, fill, overwrite=True)
    return composite, saturating_coverage(count)


# --- gap-fill (rule 5) -------------------------------------------------------------------------


def carry_forward_source(
    coverages: Sequence[np.ndarray | None], shape: tuple[int, int]
) -> np.ndarray:
    """Where each pixel of month t takes its value from, for carry-forward.

    ``coverages[k]`` is the raw coverage of month t - k (``k = 0`` is month t itself; ``None``
    for a month without observations or before the series), so ``len(coverages) - 1`` is the
    maximum age. Returns an int8 plane: 0 = observed this month, k = carried from month t - k
    (the most recent observed month within the age), -1 = no value (nodata, mask 0).
    """
    source = np.full(shape, -1, dtype=np.int8)
    for k, cov in enumerate(coverages):
        if cov is None:
            continue
        take = (source < 0) & (cov > 0)
        source[take] = k
    return source


def mask_from_source(source: np.ndarray) -> np.ndarray:
    """The uint8 mask (spec 2.4) of a month from its carry-forward source plane."""
    return (source >= 0).astype(np.uint8)


def assemble_filled(
    source: np.ndarray,
    values_of: Callable[[int], np.ndarray],
    n_band: int,
    dtype: str | np.dtype,
    fill: int | float,
) -> np.ndarray:
    """The gap-filled (nb, h, w) values: per pixel the raw composite of month t - source, or
    ``fill`` where source is -1. ``values_of(k)`` returns the raw composite of month t - k; it is
    only called for the offsets that occur."""
    out = np.full((n_band, *source.shape), fill, dtype=np.dtype(dtype))
    for k in np.unique(source):
        if k < 0:
            continue
        where = source == k
        out[:, where] = values_of(int(k))[:, where]
    return out

"""One block of one month, rules 1-4 of :mod:`cz.composite`: validity (the mask rules), one
observation per solar day (with the cleaning of its cloud), correction, the composite method."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from cz.composite.bits import BitRule
from cz.composite.derived import DerivedBand, derived_values
from cz.composite.masks import SCL_CLOUD_CLASSES, cleaned_validity, halo_pixels, rejection_sets
from cz.composite.median import median_composite
from cz.composite.methods import (
    BandTerms,
    best_composite,
    geomedian_composite,
    mean_composite,
    medoid_composite,
    minmax_composite,
    percentile_composite,
)
from cz.composite.observations import (
    correct_values,
    fill_value,
    observation_validity,
    saturating_coverage,
    value_bounds,
    work_dtype,
)

__all__ = [
    "METHODS",
    "ROUNDING",
    "CompositeRules",
    "composite_block",
    "grow_window",
    "reduce_observations",
]

#: Every ``composite.method`` (docs/recipes.md, "composite").
METHODS = ("median", "mean", "min", "max", "percentile", "medoid", "geomedian", "best")

_ROUND = "rounded half to even and clipped to the valid range (integer dtypes)"
#: Each method's rule for a value between integers, as the plan states it.
ROUNDING = {
    "median": "even count: mean of the two middle values, " + _ROUND,
    "mean": "float64 mean, " + _ROUND,
    "min": "an observed number (no rounding)",
    "max": "an observed number (no rounding)",
    "percentile": "linear interpolation between order statistics (numpy), " + _ROUND,
    "medoid": "all bands of one observation (no rounding); ties: the earliest",
    "geomedian": "geomad float32 geometric median, " + _ROUND,
    "best": "all bands of one observation (no rounding); ties: the earliest",
}


@dataclass(frozen=True)
class CompositeRules:
    """The recipe's mask cleaning and composite method, as a block task needs them (picklable).

    The default: no cleaning, no cloud probability, the median. ``clean``: the mask classes the
    cleaning applies to (with a cloud probability above ``cloud_max`` and the ``bits`` rules
    marked cloud; cz.composite.masks); ``bits``: the bit-flag rules on the mask asset.
    """

    method: str = "median"
    q: float | None = None
    index: str | None = None
    bands: tuple[BandTerms, ...] = field(default_factory=tuple)
    open_radius: int = 0
    dilate_radius: int = 0
    cloud_max: float | None = None
    clean: tuple[int, ...] = SCL_CLOUD_CLASSES
    bits: tuple[BitRule, ...] = ()
    #: derived bands (cz.composite.derived); ``bands`` then lists the read bands, then the
    #: derived ones per observation, then those from the composite, and ``store_order`` gives,
    #: per store band, its position in that list (empty: the same order)
    derived: tuple[DerivedBand, ...] = ()
    store_order: tuple[int, ...] = ()

    @property
    def halo(self) -> int:
        """Pixels read around a block so the mask cleaning is the same across block edges."""
        return halo_pixels(self.open_radius, self.dilate_radius)


def grow_window(window: tuple[int, int, int, int], halo: int) -> tuple[int, int, int, int]:
    """A block's window ``(y0, y1, x0, x1)`` with ``halo`` pixels more on every side (it may reach
    beyond the grid: those pixels are read from the items like any other)."""
    y0, y1, x0, x1 = window
    return (y0 - halo, y1 + halo, x0 - halo, x1 + halo)


def reduce_observations(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    rules: CompositeRules,
    dtype: str | np.dtype,
    nodata: float | None,
) -> tuple[np.ndarray, np.ndarray]:
    """The composite of the observations by ``rules.method``: ``(values (nb, h, w), count)``.

    ``obs_values`` may be overwritten (the median sorts it in place)."""
    dt = np.dtype(dtype)
    fill = fill_value(dt, nodata)
    bounds = value_bounds(dt, nodata)
    method = rules.method
    per_observation = sum(1 for d in rules.derived if not d.after)
    if method == "median":
        return median_composite(obs_values, obs_valid, dt, fill, overwrite=True)
    count = obs_valid.sum(axis=0, dtype=np.int64)
    if obs_values.shape[0] == 0:
        return np.full((obs_values.shape[1], *count.shape), fill, dtype=dt), count
    if method == "mean":
        out = mean_composite(obs_values, obs_valid, dt, fill, bounds)
    elif method in ("min", "max"):
        out = minmax_composite(obs_values, obs_valid, dt, fill, bounds, largest=method == "max")
    elif method == "percentile":
        assert rules.q is not None  # the recipe model requires q with percentile
        out = percentile_composite(obs_values, obs_valid, dt, fill, bounds, q=rules.q)
    elif method == "medoid":  # the distance over the bands read, not the derived ones
        metric = obs_values.shape[1] - per_observation
        out = medoid_composite(obs_values, obs_valid, dt, fill, metric_bands=metric)
    elif method == "best":
        assert rules.index is not None  # the recipe model requires index with best
        out = best_composite(obs_values, obs_valid, dt, fill, index=rules.index, bands=rules.bands)
    elif method == "geomedian":
        if per_observation:  # refused with the recipe: the geometric median is no observation
            raise ValueError("a geomedian computes derived bands from the composite only")
        out = geomedian_composite(obs_values, obs_valid, dt, fill, bounds)
    else:
        raise ValueError(f"unknown composite method {method!r} (one of {', '.join(METHODS)})")
    return out, count


def _crop(array: np.ndarray, halo: int) -> np.ndarray:
    if halo == 0:
        return array
    return array[..., halo:-halo, halo:-halo]


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
    cloud: np.ndarray | None = None,
    rules: CompositeRules | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Rules 1-4 of :mod:`cz.composite` for one block of one month.

    ``values`` (n_items, nb, h, w) as read (item order = plan order), ``scl`` (n_items, h, w) the
    mask asset or ``None`` without a mask, ``cloud`` (n_items, h, w) the cloud probability or
    ``None``; per item its ``corrections``, ``solar_days`` and per-band ``src_nodata``. With
    ``rules.halo`` > 0 the arrays cover the block plus that many pixels on every side
    (:func:`grow_window`) and the result is the block alone. Returns the raw composite ``(values
    (nb, h, w) in dtype, coverage (h, w) uint8)``, fill where coverage is 0.

    One observation per solar day: per pixel the first item (plan order) clear there, else the
    first one whose pixel is cloud (:func:`cz.composite.masks.rejection_sets`); the day's cloud
    is then cleaned as one plane (:func:`cz.composite.masks.cleaned_validity`), so a cloud
    across the seam of two tiles of one overpass is cleaned whole, and a pixel rejected for any
    other reason is never an observation.
    """
    rules = rules or CompositeRules()
    halo = rules.halo
    dt = np.dtype(dtype)
    fill = fill_value(dt, nodata)
    n, nb, full_h, full_w = values.shape
    h, w = full_h - 2 * halo, full_w - 2 * halo
    if n == 0:
        n_store = nb + len(rules.derived)
        return np.full((n_store, h, w), fill, dtype=dt), np.zeros((h, w), dtype=np.uint8)
    has_data = np.empty((n, full_h, full_w), dtype=bool)
    for i in range(n):
        has_data[i] = observation_validity(values[i : i + 1], None, None, src_nodata[i])[0]
    keep_set = None if keep is None else tuple(keep)
    hard, cloudy = rejection_sets(
        scl, keep_set, rules.clean, cloud, rules.cloud_max, has_data, rules.bits
    )
    clear = has_data & ~hard & ~cloudy
    del hard
    groups: dict[str, list[int]] = {}
    for i, day in enumerate(solar_days):
        groups.setdefault(day, []).append(i)
    members_of = list(groups.values())
    day_clear = np.stack([clear[m].any(axis=0) for m in members_of])
    day_cloudy = np.stack([cloudy[m].any(axis=0) for m in members_of]) & ~day_clear
    obs_valid = _crop(
        cleaned_validity(day_clear, day_cloudy, rules.open_radius, rules.dilate_radius), halo
    )
    per_observation = sum(1 for d in rules.derived if not d.after)
    obs_values = _mosaic_days(
        per_observation,
        _crop(values, halo),
        _crop(clear, halo),
        _crop(cloudy, halo),
        members_of,
        corrections,
        harmonized,
        value_bounds(dt, nodata),
        work_dtype(dt),
    )
    obs_values = _with_derived(
        obs_values, obs_valid, rules, work_dtype(dt), value_bounds(dt, nodata)
    )
    composite, count = reduce_observations(obs_values, obs_valid, rules, dt, nodata)
    composite = _composite_derived(composite, count, nb, rules, dt, nodata)
    return composite, saturating_coverage(count)


def _with_derived(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    rules: CompositeRules,
    wdt: np.dtype,
    bounds: tuple[float, float],
) -> np.ndarray:
    """The observations with their derived bands (those computed per observation) filled into
    the last bands ``_mosaic_days`` left for them; an observation whose derived value is not
    finite is made invalid (``obs_valid`` in place)."""
    per_obs = [d for d in rules.derived if not d.after]
    if not per_obs:
        return obs_values
    nb = obs_values.shape[1] - len(per_obs)
    for g in range(obs_values.shape[0]):
        for j, band in enumerate(per_obs):
            numbers, finite = derived_values(
                band, obs_values[g, :nb], rules.bands[:nb], wdt, bounds
            )
            obs_values[g, nb + j] = numbers
            obs_valid[g] &= finite
    return obs_values


def _composite_derived(
    composite: np.ndarray,
    count: np.ndarray,
    nb: int,
    rules: CompositeRules,
    dt: np.dtype,
    nodata: float | None,
) -> np.ndarray:
    """The composite with its derived bands computed from it appended (``count`` set to 0 and
    every band to fill where one is not finite), in the store's band order."""
    after = [d for d in rules.derived if d.after]
    if after:
        fill = fill_value(dt, nodata)
        wdt, bounds = work_dtype(dt), value_bounds(dt, nodata)
        extra = np.empty((len(after), *composite.shape[1:]), dtype=dt)
        for j, band in enumerate(after):
            numbers, finite = derived_values(band, composite[:nb], rules.bands[:nb], wdt, bounds)
            extra[j] = numbers.astype(dt)
            gone = (count > 0) & ~finite
            if gone.any():  # validity follows the inputs: no number, no observation
                count[gone] = 0
                composite[:, gone] = fill
                extra[:, gone] = fill
        extra[:, count == 0] = fill
        composite = np.concatenate([composite, extra], axis=0)
    if rules.store_order:
        composite = composite[list(rules.store_order)]
    return composite


def _mosaic_days(
    extra: int,
    values: np.ndarray,
    clear: np.ndarray,
    cloudy: np.ndarray,
    members_of: Sequence[Sequence[int]],
    corrections: Sequence[int],
    harmonized: Sequence[bool],
    bounds: tuple[float, float],
    wdt: np.dtype,
) -> np.ndarray:
    """Rules 2 and 3: each solar day's (nb, h, w) corrected numbers, per pixel from the first item
    clear there, else the first cloudy one (the numbers a cleaning may re-admit). Item by item,
    so no corrected copy of every item is held; entries of pixels neither clear nor cloudy in
    any item are meaningless. ``extra`` more bands are left for the derived ones."""
    n_obs, nb = len(members_of), values.shape[1]
    obs_values = np.empty((n_obs, nb + extra, *values.shape[2:]), dtype=wdt)
    for g, members in enumerate(members_of):
        fixed = [
            correct_values(values[i], clear[i] | cloudy[i], corrections[i], harmonized, bounds, wdt)
            for i in members
        ]
        obs_values[g, :nb] = fixed[0]
        if len(members) == 1:
            continue
        taken = clear[members[0]].copy()
        for source in (clear, cloudy):
            for k, i in enumerate(members):
                take = source[i] & ~taken
                if take.any():
                    np.copyto(obs_values[g, :nb], fixed[k], where=take[None])
                    taken |= take
    return obs_values

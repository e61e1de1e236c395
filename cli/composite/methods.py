"""Composite methods other than the median (``composite.method``, docs/recipes.md "composite").

Every method reduces the valid observations of a pixel, ``obs_values`` (n, nb, h, w) in the work
dtype (int32 for integer stores, float64 for float32 stores) with ``obs_valid`` (n, h, w), to one
(nb, h, w) value in the store dtype; a pixel without a valid observation holds ``fill``. Coverage
is the count of valid observations whatever the method (computed by the caller).

Two families, and their rounding rule in the store dtype:

- Per-band statistics (``mean``, ``min``, ``max``, ``percentile``): each band on its own.
  ``min``/``max`` return an observed number (nothing to round). ``mean`` and ``percentile`` are
  computed in float64 (``percentile``: numpy's default ``linear`` interpolation between the
  order statistics, so ``q: 50`` is the median); an integer store rounds half to even
  (``numpy.rint``) and clips to the store's valid range, a float32 store keeps the float32.
- One observation for all bands (``medoid``, ``best``): the bands of a pixel come from one date,
  so no rounding. ``medoid``: the observation with the least squared Euclidean distance, over all
  bands in stored numbers, to the per-band median (the exact float64 median: the mean of the two
  middle values for an even count). ``best``: the observation with the highest value of an index
  expression over the bands' physical values (Earth Engine's ``qualityMosaic``); an observation
  whose index is not finite (a division by zero) ranks below every finite one. Ties go to the
  earliest observation (plan order: acquisition time, then item id).
- ``geomedian``: the geometric median across bands (Roberts et al. 2017), from Geoscience
  Australia's ``geomad`` (the implementation odc-algo uses; optional dependency), computed in
  float32 on stored numbers x 1e-4 to a tolerance of 0.1 stored number (odc-algo's settings for
  integer data); rounded half to even and clipped like ``mean``. An approximation: with two
  observations every point between them is a geometric median, and geomad returns one of them.
  Each pixel starts from the mean of its observations (one pixel per geomad row), so a result
  never depends on the pixel's neighbours; where geomad returns NaN (observations within
  float32's smallest numbers of each other) the pixel takes the medoid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from chronozarr.errors import MissingExtraError

__all__ = [
    "GEOMEDIAN_EPS",
    "GEOMEDIAN_MAXITERS",
    "GEOMEDIAN_SCALE",
    "BandTerms",
    "best_composite",
    "geomedian_composite",
    "mean_composite",
    "medoid_composite",
    "minmax_composite",
    "percentile_composite",
    "require_geomad",
    "to_store",
]

#: The geometric median runs on ``stored x GEOMEDIAN_SCALE`` with geomad's tolerance
#: ``GEOMEDIAN_EPS`` (0.1 stored number) and at most ``GEOMEDIAN_MAXITERS`` iterations: what
#: odc-algo's ``geomedian_with_mads`` passes for integer data (scale 1e-4, eps 0.1 x scale,
#: maxiters 1000). Recorded in the provenance, since they decide the numbers.
GEOMEDIAN_SCALE = 1e-4
GEOMEDIAN_EPS = 0.1 * GEOMEDIAN_SCALE
GEOMEDIAN_MAXITERS = 1000


@dataclass(frozen=True)
class BandTerms:
    """How an index expression names a band and turns stored numbers into physical values:
    ``physical = stored * scale + offset`` (spec 3.6)."""

    name: str
    common_name: str | None
    scale: float
    offset: float


def to_store(
    values: np.ndarray,
    has: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    bounds: tuple[float, float],
) -> np.ndarray:
    """float64 (nb, h, w) -> the store dtype: integer stores round half to even and clip to
    ``bounds``; float32 keeps the float32. Pixels where ``has`` (h, w) is False hold ``fill``."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        out = values.astype(dt)
    else:
        low, high = bounds
        safe = np.where(has[None], values, 0.0)  # no NaN reaches the integer cast
        out = np.clip(np.rint(safe), low, high).astype(dt)
    np.copyto(out, np.asarray(fill, dtype=dt), where=~has[None])
    return out


def _as_float(obs_values: np.ndarray, obs_valid: np.ndarray) -> np.ndarray:
    """float64 copy with NaN where an observation is invalid."""
    out = obs_values.astype(np.float64)
    np.copyto(out, np.nan, where=~obs_valid[:, None])
    return out


def mean_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    bounds: tuple[float, float],
) -> np.ndarray:
    """Per-band mean of the valid observations. The sum is exact (int64) for integer input."""
    count = obs_valid.sum(axis=0)
    has = np.asarray(count > 0)
    if obs_values.dtype.kind == "f":
        total = np.where(obs_valid[:, None], obs_values, 0.0).sum(axis=0)
    else:
        total = np.where(obs_valid[:, None], obs_values, 0).sum(axis=0, dtype=np.int64)
    mean = total / np.maximum(count, 1)[None]
    return to_store(mean, has, dtype, fill, bounds)


def minmax_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    bounds: tuple[float, float],
    *,
    largest: bool,
) -> np.ndarray:
    """Per-band minimum (``largest=False``) or maximum of the valid observations."""
    has = np.asarray(obs_valid.any(axis=0))
    if obs_values.dtype.kind == "f":
        sentinel: float = -np.inf if largest else np.inf
    else:
        info = np.iinfo(obs_values.dtype)
        sentinel = int(info.min if largest else info.max)
    work = np.where(obs_valid[:, None], obs_values, sentinel)
    pick = work.max(axis=0) if largest else work.min(axis=0)
    return to_store(pick.astype(np.float64), has, dtype, fill, bounds)


def _sorted_with_count(
    obs_values: np.ndarray, obs_valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(values sorted along the observations, the invalid ones last; count per pixel).

    Sorted in the work dtype with the invalid entries set to the largest number (the median's
    sorting network up to 12 observations, numpy's sort above), so only the first ``count``
    entries of a pixel are meaningful; callers take order statistics below ``count``."""
    from cz.composite.median import _NETWORK_MAX, _sort_planes

    ranked = obs_values.copy()
    sentinel = np.inf if ranked.dtype.kind == "f" else np.iinfo(ranked.dtype).max
    np.copyto(ranked, sentinel, where=~obs_valid[:, None])
    if ranked.shape[0] <= _NETWORK_MAX:
        _sort_planes(list(ranked))  # the planes are views: sorted in place
    else:
        ranked = np.sort(ranked, axis=0)
    return ranked, obs_valid.sum(axis=0)


def _order_statistic(ranked: np.ndarray, index: np.ndarray) -> np.ndarray:
    """float64 (nb, h, w): per pixel the ``index`` (h, w)-th smallest valid value."""
    picked = np.take_along_axis(ranked, index[None, None], axis=0)[0].astype(np.float64)
    # a pixel without observations picked the sentinel (inf for floats): any finite number does
    np.copyto(picked, 0.0, where=~np.isfinite(picked))
    return picked


def _lerp(a: np.ndarray, b: np.ndarray, t: np.ndarray) -> np.ndarray:
    """numpy's own linear interpolation (``numpy.lib._function_base_impl._lerp``): from ``b``
    when ``t >= 0.5``, so the result at ``t = 1`` is exactly ``b``."""
    diff = b - a
    out = a + diff * t
    np.copyto(out, b - diff * (1 - t), where=t >= 0.5)
    return out


def percentile_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    bounds: tuple[float, float],
    *,
    q: float,
) -> np.ndarray:
    """Per-band ``q``-th percentile (0..100) of the valid observations, numpy's ``linear``
    method: the virtual index ``(c - 1) q / 100`` (computed as numpy does: ``(c - 1) * (q / 100)``;
    the algebraically equal ``c q + (1 - q) - 1`` rounds differently) between the order statistics of ``c`` values."""
    ranked, count = _sorted_with_count(obs_values, obs_valid)
    has = np.asarray(count > 0)
    n = np.maximum(count, 1).astype(np.float64)
    frac = float(q) / 100.0
    virtual = (n - 1) * frac  # numpy's get_virtual_index of method 'linear', to the bit
    below = np.floor(virtual)
    gamma = virtual - below
    last = (n - 1).astype(np.int64)
    lo = np.clip(below.astype(np.int64), 0, last)
    hi = np.minimum(lo + 1, last)
    a = _order_statistic(ranked, lo)
    b = _order_statistic(ranked, hi)
    value = _lerp(a, b, np.broadcast_to(gamma, a.shape))
    return to_store(value, has, dtype, fill, bounds)


def _pick(obs_values: np.ndarray, choice: np.ndarray) -> np.ndarray:
    """(nb, h, w): per pixel all bands of observation ``choice`` (h, w) (-1: none, gives 0s)."""
    index = np.maximum(choice, 0)[None, None]
    return np.take_along_axis(obs_values, index, axis=0)[0]


def _first_best(score: np.ndarray, obs_valid: np.ndarray) -> np.ndarray:
    """Per pixel the index of the valid observation with the highest score, the earliest on a
    tie; -1 without a valid observation. Non-finite scores rank below every finite one."""
    n = score.shape[0]
    choice = np.full(score.shape[1:], -1, dtype=np.int64)
    best = np.full(score.shape[1:], -np.inf)
    for g in range(n):
        s = np.where(np.isfinite(score[g]), score[g], -np.inf)
        take = obs_valid[g] & ((choice < 0) | (s > best))
        choice[take] = g
        best[take] = s[take]
    return choice


def _finish_pick(
    obs_values: np.ndarray,
    choice: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
) -> np.ndarray:
    dt = np.dtype(dtype)
    out = _pick(obs_values, choice).astype(dt)  # stored numbers already, in range
    np.copyto(out, np.asarray(fill, dtype=dt), where=(choice < 0)[None])
    return out


def medoid_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    *,
    metric_bands: int | None = None,
) -> np.ndarray:
    """All bands from the observation nearest (squared Euclidean distance in stored numbers, over
    every band, or the first ``metric_bands``: derived bands do not vote) to the per-band median
    of the valid observations; the earliest on a tie."""
    ranked, count = _sorted_with_count(obs_values[:, :metric_bands], obs_valid)
    c = np.maximum(count, 1)
    median = (_order_statistic(ranked, (c - 1) // 2) + _order_statistic(ranked, c // 2)) / 2.0
    distance = np.empty((obs_values.shape[0], *median.shape[1:]), dtype=np.float64)
    for g in range(obs_values.shape[0]):  # one observation at a time: no (n, nb, h, w) float64
        diff = obs_values[g, :metric_bands] - median
        distance[g] = (diff * diff).sum(axis=0)  # exact for 16-bit numbers
    choice = _first_best(-distance, obs_valid)
    return _finish_pick(obs_values, choice, dtype, fill)


def index_names(bands: Sequence[BandTerms]) -> dict[str, int]:
    """Name -> band position for an index expression: band names, then common names (which win,
    as in ``cz quicklook --expr``, spec 3.6)."""
    names = {b.name: i for i, b in enumerate(bands)}
    names.update({b.common_name: i for i, b in enumerate(bands) if b.common_name})
    return names


def best_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    *,
    index: str,
    bands: Sequence[BandTerms],
) -> np.ndarray:
    """All bands from the valid observation with the highest ``index`` (an expression over band
    names / common names, evaluated on physical values); the earliest on a tie."""
    from cz.look.expr import evaluate

    names = index_names(bands)
    n = obs_values.shape[0]
    score = np.empty((n, *obs_values.shape[2:]), dtype=np.float64)
    for g in range(n):
        physical: Mapping[str, np.ndarray] = {
            name: obs_values[g, b].astype(np.float64) * bands[b].scale + bands[b].offset
            for name, b in names.items()
        }
        score[g] = evaluate(index, physical)
    choice = _first_best(score, obs_valid)
    return _finish_pick(obs_values, choice, dtype, fill)


def require_geomad() -> None:
    """Raise :class:`chronozarr.MissingExtraError` unless the optional ``geomad`` package
    imports (before a build starts, so a missing dependency is not found block by block)."""
    try:
        import geomad  # noqa: F401
    except ImportError:  # the optional dependency is missing: say which extra installs it
        raise MissingExtraError("composite method geomedian", "geomedian", "geomad") from None


def geomedian_composite(
    obs_values: np.ndarray,
    obs_valid: np.ndarray,
    dtype: str | np.dtype,
    fill: int | float,
    bounds: tuple[float, float],
) -> np.ndarray:
    """The geometric median of the valid observations across all bands (``geomad``)."""
    require_geomad()
    from geomad import nangeomedian_pcm

    has = np.asarray(obs_valid.any(axis=0))
    n, nb, h, w = obs_values.shape
    stack = (_as_float(obs_values, obs_valid) * GEOMEDIAN_SCALE).astype(np.float32)
    # geomad's (rows, cols, bands, obs) order, one pixel per row: geomad starts a pixel from the
    # mean of its observations only at the start of a row, and from the origin after a pixel
    # that converged, so with whole rows a pixel's result would depend on its left neighbour
    # (and on where a block starts). One pixel per row makes it a function of its own pixel.
    stack = np.ascontiguousarray(stack.transpose(2, 3, 1, 0).reshape(h * w, 1, nb, n))
    gm = nangeomedian_pcm(
        stack, maxiters=GEOMEDIAN_MAXITERS, eps=np.float32(GEOMEDIAN_EPS), num_threads=1
    )
    values = np.asarray(gm, dtype=np.float64).reshape(h, w, nb).transpose(2, 0, 1)
    values /= GEOMEDIAN_SCALE
    lost = has & ~np.isfinite(values).all(axis=0)
    if lost.any():  # geomad gave NaN (observations so close that 1/distance overflows): the
        # observations coincide for every purpose, so the medoid (one of them) is the answer
        medoid = medoid_composite(obs_values, obs_valid, "float64", 0.0)
        values[:, lost] = medoid[:, lost]
    return to_store(values, has, dtype, fill, bounds)

"""Gap-fill (rule 5 of :mod:`cz.composite`): carry-forward and linear interpolation, where a
period's pixel takes its value from, and the filled values (spec 2.4, 2.5: a filled pixel is
valid with coverage 0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "assemble_filled",
    "assemble_linear",
    "carry_forward_source",
    "linear_neighbours",
    "linear_source",
    "mask_from_source",
]


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


def linear_neighbours(
    own: np.ndarray | None,
    before: Sequence[np.ndarray | None],
    after: Sequence[np.ndarray | None],
    shape: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """For linear gap-fill of period t: per pixel the distance (in periods) to the nearest
    observed period before it and after it, ``(back, ahead)`` int16 planes, 0 where there is none
    within reach or where t itself is observed.

    ``own`` is the raw coverage of t, ``before[k - 1]`` that of t - k and ``after[k - 1]`` that
    of t + k (``None``: no observation, or beyond the series), so ``len(before)`` and
    ``len(after)`` are the reach (``max_age``)."""
    observed = np.zeros(shape, dtype=bool) if own is None else own > 0
    planes = []
    for side in (before, after):
        dist = np.zeros(shape, dtype=np.int16)
        for k, cov in enumerate(side, start=1):
            if cov is None:
                continue
            take = (dist == 0) & (cov > 0) & ~observed
            dist[take] = k
        planes.append(dist)
    return planes[0], planes[1]


def linear_source(own: np.ndarray | None, back: np.ndarray, ahead: np.ndarray) -> np.ndarray:
    """The int8 source plane of linear gap-fill (as :func:`carry_forward_source`'s: 0 observed,
    1 interpolated, -1 no value)."""
    source = np.full(back.shape, -1, dtype=np.int8)
    source[(back > 0) & (ahead > 0)] = 1
    if own is not None:
        source[own > 0] = 0
    return source


def assemble_linear(
    source: np.ndarray,
    back: np.ndarray,
    ahead: np.ndarray,
    values_of: Callable[[int], np.ndarray],
    n_band: int,
    dtype: str | np.dtype,
    fill: int | float,
) -> np.ndarray:
    """The linearly gap-filled (nb, h, w) values: observed pixels their raw composite, filled ones
    ``v_before + (v_after - v_before) x back / (back + ahead)`` between the raw composites
    ``back`` periods before and ``ahead`` periods after (rounded half to even in an integer
    store), ``fill`` elsewhere. ``values_of(k)`` returns the raw composite of period t + k."""
    dt = np.dtype(dtype)
    out = np.full((n_band, *source.shape), fill, dtype=dt)
    own = source == 0
    if own.any():
        out[:, own] = values_of(0)[:, own]
    filled = source == 1
    pairs = {(int(b), int(a)) for b, a in zip(back[filled], ahead[filled], strict=True)}
    for b, a in sorted(pairs):
        where = filled & (back == b) & (ahead == a)
        start = values_of(-b)[:, where].astype(np.float64)
        end = values_of(a)[:, where].astype(np.float64)
        value = start + (end - start) * (b / (b + a))
        out[:, where] = value.astype(dt) if dt.kind == "f" else np.rint(value).astype(dt)
    return out

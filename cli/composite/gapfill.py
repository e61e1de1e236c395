"""Gap-fill carry-forward (rule 5 of :mod:`cz.composite`): where a month's pixel takes its value
from, and the filled values (spec 2.4, 2.5: a carried pixel is valid with coverage 0)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["assemble_filled", "carry_forward_source", "mask_from_source"]


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

"""The per-pixel median of valid observations (rule 4 of :mod:`cz.composite`, the default
``composite.method``): exact integer arithmetic for the even-count mean, half to even."""

from __future__ import annotations

import numpy as np

__all__ = ["median_composite"]

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

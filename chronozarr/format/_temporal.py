"""Temporal encoding arithmetic (spec 4, 5): anchors, references, modular residuals, volatility.

Pure functions on numpy arrays, shared by the writer, append, the reader and the validator.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

__all__ = [
    "abs_diff_sum",
    "anchor_indices",
    "apply_residual",
    "cell_volatility",
    "is_valid_reference",
    "nearest_anchor",
    "residual",
    "schedule",
    "volatility_value",
]


def anchor_indices(n_time: int, anchor_interval: int) -> list[int]:
    """[0, k, 2k, ...] while < n_time (spec 4.2 step 1)."""
    return list(range(0, n_time, anchor_interval))


def nearest_anchor(t: int, anchors: Sequence[int]) -> int:
    """Nearest anchor by absolute index distance, ties toward the earlier anchor (spec 4.2.2)."""
    return min(anchors, key=lambda a: (abs(a - t), a))


def schedule(
    n_time: int, anchor_interval: int, existing: Mapping[int, int] | None = None
) -> tuple[list[int], dict[int, int]]:
    """Anchors and delta references of an axis of ``n_time`` timesteps.

    ``existing`` references (from a published store) are kept unchanged (spec 4.2.2: a writer MUST
    NOT change the reference of a timestep already written); new timesteps take the nearest anchor
    among those that exist after the write.
    """
    anchors = anchor_indices(n_time, anchor_interval)
    anchor_set = set(anchors)
    refs: dict[int, int] = dict(existing or {})
    for t in range(n_time):
        if t not in anchor_set and t not in refs:
            refs[t] = nearest_anchor(t, anchors)
    return anchors, refs


def is_valid_reference(t: int, ref: int, anchors: Iterable[int], anchor_interval: int) -> bool:
    """A reference is valid when it names an anchor at distance 0 < d < anchor_interval (4.2.2)."""
    return ref in set(anchors) and 0 < abs(t - ref) < anchor_interval


def residual(source: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    """(source - anchor) mod 2^bits in the stored unsigned dtype (spec 4.2 step 4). No clipping."""
    if source.dtype != anchor.dtype or source.dtype.name not in ("uint8", "uint16"):
        raise TypeError(
            f"residuals are defined for matching uint8/uint16 arrays (spec 4.1), got "
            f"{source.dtype.name} and {anchor.dtype.name}"
        )
    out: np.ndarray = np.subtract(source, anchor, dtype=source.dtype)  # unsigned: wraps
    return out


def apply_residual(anchor: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """(anchor + delta) mod 2^bits: unsigned wraparound add, no clamp (spec 4.2 decoding)."""
    out: np.ndarray = np.add(anchor, delta, dtype=anchor.dtype)
    return out


#: elements of one pass of :func:`abs_diff_sum`: its temporaries (a few hundred KiB) stay in the
#: core's cache instead of going through memory once per step (decision 0059)
_PASS = 1 << 16


def _row_blocks(a: np.ndarray, b: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """``a`` and ``b`` in matching pieces of about ``_PASS`` elements, without a copy: whole
    rows of each leading index (a cell's planes are strided views of the input)."""
    if a.ndim < 2:
        yield a, b
        return
    rows = max(1, _PASS // max(1, a.shape[-1]))
    for lead in np.ndindex(a.shape[:-2]):
        pa, pb = a[lead], b[lead]
        for y in range(0, pa.shape[0], rows):
            yield pa[y : y + rows], pb[y : y + rows]


def abs_diff_sum(source: np.ndarray, ref: np.ndarray) -> float:
    """Sum of |source - ref| on exact differences (int64 for integers, float64 for float32) (5).

    Unsigned integers: max - min, which is |source - ref| in the dtype itself (no wider
    temporary), summed per piece in uint32 where it cannot overflow, else uint64; signed ones: the difference in int32. Either is exact, and
    the integer sum does not depend on the order of the pieces (decision 0059)."""
    if source.shape != ref.shape:
        raise ValueError(f"abs_diff_sum: shapes {source.shape} and {ref.shape} differ")
    if source.dtype.kind == "f":
        a, b = source.astype(np.float64), ref.astype(np.float64)
        with np.errstate(invalid="ignore", over="ignore"):
            # equal values (the same infinity included) differ by 0, not inf - inf = NaN
            diff = np.where(a == b, 0.0, np.abs(a - b))
        return float(diff.sum())
    unsigned = source.dtype.kind == "u" and ref.dtype == source.dtype
    top = int(np.iinfo(source.dtype).max) if unsigned else 0
    total = 0
    for a, b in _row_blocks(source, ref):
        if unsigned:
            high = np.maximum(a, b)
            high -= np.minimum(a, b)  # max >= min: no wrap
            # a piece of at most 2^32 / max elements sums exactly in uint32, the cheaper
            # accumulator (a uint16 piece of _PASS elements: 65535 * 65536 < 2^32; decision 0063)
            acc = np.uint32 if high.size * top < 1 << 32 else np.uint64
            total += int(high.sum(dtype=acc))
        else:
            diff = np.subtract(a, b, dtype=np.int32)  # exact for uint8, uint16 and int16 (spec 5)
            np.abs(diff, out=diff)
            total += int(diff.sum(dtype=np.int64))
    return float(total)


def volatility_value(total_abs_diff: float, count: int) -> np.float32:
    """clip(mean / 10000, 0, 1) as float32; 0.0 when the cell has no delta timestep (spec 5)."""
    if count == 0:
        return np.float32(0.0)
    return np.float32(min(max(total_abs_diff / count / 10000.0, 0.0), 1.0))


def cell_volatility(read: Callable[[int], np.ndarray], refs: Mapping[int, int]) -> np.float32:
    """Volatility of one cell (spec 5) from ``read(t)`` (its pixels at timestep t) over the delta
    timesteps ``refs`` (timestep -> its reference): the clipped mean absolute difference."""
    total, count = 0.0, 0
    for t, ref in refs.items():
        values = read(t)
        total += abs_diff_sum(values, read(ref))
        count += values.size
    return volatility_value(total, count)

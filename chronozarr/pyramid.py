"""Pyramid reductions (spec 2.4, 2.5, 6): validity-aware block means, mask max, coverage mean.

Every reduction first pads the source to an even height and width by edge replication (the data,
its validity, the mask and the coverage alike), so H_k = ceil(H_{k-1} / 2). Pure numpy.
"""

from __future__ import annotations

import numpy as np

__all__ = ["block_mean", "coverage_reduce", "mask_reduce", "pad_even", "validity"]


def pad_even(a: np.ndarray) -> np.ndarray:
    """Pad the last two axes to even length by replicating the last row/column (spec 6)."""
    h, w = a.shape[-2:]
    ph, pw = h % 2, w % 2
    if not ph and not pw:
        return a
    pad = [(0, 0)] * (a.ndim - 2) + [(0, ph), (0, pw)]
    return np.pad(a, pad, mode="edge")


def _blocks(a: np.ndarray) -> np.ndarray:
    """View (..., H, W) with even H, W as (..., H/2, 2, W/2, 2)."""
    h, w = a.shape[-2:]
    return a.reshape(*a.shape[:-2], h // 2, 2, w // 2, 2)


def validity(values: np.ndarray, nodata: float | int | None, mask: np.ndarray | None) -> np.ndarray:
    """Validity per spec 2.3 and our per-band reading: (band, h, w) bool.

    With a mask, the mask alone decides (broadcast to every band). Without a mask and with a
    numeric nodata, a band's value is valid where it differs from nodata. Otherwise all valid.
    """
    if mask is not None:
        return np.broadcast_to(mask.astype(bool)[None], values.shape)
    if nodata is None:
        return np.ones(values.shape, dtype=bool)
    return values != np.array(nodata).astype(values.dtype)


def block_mean(values: np.ndarray, valid: np.ndarray, nodata: float | int | None) -> np.ndarray:
    """Factor-2 block mean of (band, h, w) over valid pixels only (spec 6).

    Integers: exact sum in int64 (wider than the spec's uint32/int32, same result) floored by the
    valid count (floor division, toward minus infinity for int16). float32: float64 accumulation.
    A block with no valid pixel yields nodata (0 when nodata is null).
    """
    dtype = values.dtype
    v = _blocks(pad_even(values))
    ok = _blocks(pad_even(np.asarray(valid, dtype=bool)))
    count = ok.sum(axis=(-3, -1), dtype=np.int64)
    fill = np.array(0 if nodata is None else nodata).astype(dtype)
    if dtype.kind == "f":
        total = np.where(ok, v.astype(np.float64), 0.0).sum(axis=(-3, -1))
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = total / np.maximum(count, 1)
        out = mean.astype(dtype)
    else:
        total = np.where(ok, v.astype(np.int64), 0).sum(axis=(-3, -1))
        out = np.floor_divide(total, np.maximum(count, 1)).astype(dtype)
    return np.where(count > 0, out, fill).astype(dtype)


def mask_reduce(mask: np.ndarray) -> np.ndarray:
    """Level-k mask: maximum of each 2 x 2 block (1 if any source pixel is valid) (spec 2.4)."""
    return _blocks(pad_even(mask)).max(axis=(-3, -1)).astype(np.uint8)


def coverage_reduce(coverage: np.ndarray) -> np.ndarray:
    """Level-k coverage: (sum + 2) // 4 of each 2 x 2 block, halves rounded up (spec 2.5)."""
    s = _blocks(pad_even(coverage)).astype(np.int32).sum(axis=(-3, -1))
    return ((s + 2) // 4).astype(np.uint8)

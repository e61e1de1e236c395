"""Pyramid reductions (spec 2.4, 2.5, 6): validity-aware block means, mask max, coverage mean.

Every reduction first pads the source to an even height and width by edge replication (the data,
its validity, the mask and the coverage alike), so H_k = ceil(H_{k-1} / 2). Pure numpy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chronozarr.format._grid import grid_shape

__all__ = [
    "assemble_region",
    "block_mean",
    "coverage_reduce",
    "mask_reduce",
    "pad_even",
    "valid_block_mean",
    "validity",
]


def pad_even(a: np.ndarray) -> np.ndarray:
    """Pad the last two axes to even length by replicating the last row/column (spec 6)."""
    h, w = a.shape[-2:]
    ph, pw = h % 2, w % 2
    if not ph and not pw:
        return a
    pad = [(0, 0)] * (a.ndim - 2) + [(0, ph), (0, pw)]
    return np.pad(a, pad, mode="edge")


def validity(values: np.ndarray, nodata: float | int | None, mask: np.ndarray | None) -> np.ndarray:
    """Validity per spec 2.3 and our per-band reading: (band, h, w) bool.

    With a mask, the mask alone decides (broadcast to every band). Without a mask and with a
    numeric nodata, a band's value is valid where it differs from nodata. Otherwise all valid.
    """
    if mask is not None:
        return np.broadcast_to(mask.astype(bool)[None], values.shape)
    if nodata is None:
        return np.ones(values.shape, dtype=bool)
    valid: np.ndarray = values != np.array(nodata).astype(values.dtype)
    return valid


def _quads(a: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The four pixels of every 2 x 2 block of an even-sized (..., H, W) array, as strided views."""
    return a[..., 0::2, 0::2], a[..., 1::2, 0::2], a[..., 0::2, 1::2], a[..., 1::2, 1::2]


def block_mean(values: np.ndarray, valid: np.ndarray, nodata: float | int | None) -> np.ndarray:
    """Factor-2 block mean of (band, h, w) over valid pixels only (spec 6).

    Integers: exact sum in int32 (the spec's wider integer type: four uint16 or int16 values
    always fit) floored by the valid count (floor division, toward minus infinity for int16).
    float32: float64 accumulation. A block with no valid pixel yields nodata (0 when null).
    """
    dtype = values.dtype
    v = pad_even(values)
    ok = pad_even(np.broadcast_to(np.asarray(valid, dtype=bool), values.shape))
    wide = np.float64 if dtype.kind == "f" else np.int32
    if dtype.kind == "f":  # infinities are data: inf + -inf is NaN, quietly (its honest mean)
        with np.errstate(invalid="ignore", over="ignore"):
            return _block_mean(v, ok, nodata, dtype, wide)
    return _block_mean(v, ok, nodata, dtype, wide)


def valid_block_mean(
    values: np.ndarray, nodata: float | int | None, mask: np.ndarray | None
) -> np.ndarray:
    """``block_mean(values, validity(values, nodata, mask), nodata)`` (spec 2.3, 6), without
    building the validity when no pixel can be invalid: no mask, and no nodata or a nodata
    outside the values' range (two reductions instead of a comparison of every pixel and a
    pass over its result; decision 0059). A NaN among the values, or a NaN nodata, takes the
    general path."""
    if mask is None and values.size:
        if nodata is None:
            inside = False
        else:
            nd = np.array(nodata).astype(values.dtype)
            inside = not (nd < values.min() or nd > values.max())
        if not inside:
            wide = np.float64 if values.dtype.kind == "f" else np.int32
            v = pad_even(values)
            if values.dtype.kind == "f":
                with np.errstate(invalid="ignore", over="ignore"):
                    return _block_mean(v, None, nodata, values.dtype, wide)
            return _block_mean(v, None, nodata, values.dtype, wide)
    return block_mean(values, validity(values, nodata, mask), nodata)


def _block_mean(
    v: np.ndarray, ok: np.ndarray | None, nodata: Any, dtype: np.dtype, wide: Any
) -> np.ndarray:
    """``ok`` None: every pixel is valid."""
    all_valid = ok is None or bool(ok.all())
    if all_valid and dtype.kind != "f":
        return _int_block_mean(v, dtype)
    qa, qb, qc, qd = _quads(v)
    if all_valid:  # float32, every pixel valid: in this order (float sums depend on it)
        total = qa.astype(wide)
        total += qb  # in place: no temporary per term
        total += qc
        total += qd
        total /= 4
        out: np.ndarray = total.astype(dtype)
        return out
    assert ok is not None  # all_valid otherwise
    oa, ob, oc, od = _quads(ok)
    count = oa.astype(np.int32) + ob + oc + od
    total = (
        np.where(oa, qa, 0).astype(wide)
        + np.where(ob, qb, 0)
        + np.where(oc, qc, 0)
        + np.where(od, qd, 0)
    )
    fill = np.array(0 if nodata is None else nodata).astype(dtype)
    safe = np.maximum(count, 1)
    mean = total / safe if dtype.kind == "f" else np.floor_divide(total, safe)
    return np.where(count > 0, mean.astype(dtype), fill)


def _int_block_mean(v: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The all-valid block mean of an even-sized integer ``v``: the exact int32 sum of each
    2 x 2 block floored by 4 (spec 6). Rows are summed in pairs first, whole rows at a time
    (contiguous runs, where the column-pair sums of four strided quarter views are not), then
    the columns of that sum in pairs: integer sums are exact in any order, so the bytes are
    those of the four-term sum (decision 0063)."""
    rows = np.add(v[..., 0::2, :], v[..., 1::2, :], dtype=np.int32)
    total = np.add(rows[..., 0::2], rows[..., 1::2])
    np.right_shift(total, 2, out=total)  # the floor division by 4 of an int32
    out: np.ndarray = total.astype(dtype)
    return out


def mask_reduce(mask: np.ndarray) -> np.ndarray:
    """Level-k mask: maximum of each 2 x 2 block (1 if any source pixel is valid) (spec 2.4)."""
    qa, qb, qc, qd = _quads(pad_even(mask))
    out: np.ndarray = np.maximum(np.maximum(qa, qb), np.maximum(qc, qd)).astype(np.uint8)
    return out


def coverage_reduce(coverage: np.ndarray) -> np.ndarray:
    """Level-k coverage: (sum + 2) // 4 of each 2 x 2 block, halves rounded up (spec 2.5)."""
    qa, qb, qc, qd = _quads(pad_even(coverage))
    total = qa.astype(np.int32) + qb + qc + qd
    out: np.ndarray = ((total + 2) // 4).astype(np.uint8)
    return out


def assemble_region(
    read: Callable[[int, int], np.ndarray],
    row: int,
    col: int,
    cs: int,
    shape: tuple[int, int],
    lead: tuple[int, ...],
    dtype: Any,
) -> np.ndarray:
    """The level k-1 pixels under level-k cell (row, col), trimmed to the level's ``shape``.

    A level-k cell covers up to 2 x 2 cells of level k-1 (spec 6); ``read(r, c)`` gives cell
    (r, c) of level k-1 shaped ``(*lead, >= h, >= w)`` (a full chunk or one trimmed to the shape).
    The writer builds each upper level from this, and the deep validator recomputes it.
    """
    height, width = shape
    rows, cols = grid_shape(height, width, cs)
    y0, x0 = 2 * row * cs, 2 * col * cs
    y1, x1 = min(y0 + 2 * cs, height), min(x0 + 2 * cs, width)
    out = np.empty((*lead, y1 - y0, x1 - x0), dtype=dtype)
    for r in range(2 * row, min(2 * row + 2, rows)):
        for c in range(2 * col, min(2 * col + 2, cols)):
            ya, xa = r * cs - y0, c * cs - x0
            hh, ww = min(cs, height - r * cs), min(cs, width - c * cs)
            out[..., ya : ya + hh, xa : xa + ww] = read(r, c)[..., :hh, :ww]
    return out

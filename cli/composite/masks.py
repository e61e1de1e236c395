"""Which pixels the mask rules reject, and the morphological cleaning of that set (docs/recipes.md,
"mask").

An observation is valid where every band holds data and the mask rules do not reject it
(spec 2.3: one rule for all bands). The rules that reject a pixel:

- the SCL class is not in ``mask.keep``;
- ``mask.cloud_probability_max``: the collection's cloud-probability asset (0..100 %) says more
  than the maximum.

The rejected set is then cleaned, per observation and before compositing: a morphological
*opening* of radius ``mask.open`` (erosion then dilation: removes rejected specks smaller than the
disk, e.g. bright roofs SCL calls cloud), then a *dilation* of radius ``mask.dilate`` (alias
``mask.buffer``: grows the rejected set into cloud edges and thin cloud SCL misses). Opening then
dilation is Digital Earth Australia's order (their geomedian: a 3-pixel opening, a 6-pixel
dilation; odc-algo ``mask_cleanup``). The structuring element is a Euclidean disk (offsets with
``dy² + dx² <= r²``), as odc-algo's isotropic operations use, so a buffer has the same width in
every direction; radii are pixels of the store's grid (the resolution the bands are read at).

Only pixels that hold data are grown: a swath edge or a tile's nodata border is invalid but is no
cloud, so it is never buffered into its neighbours.

Block edges. A pixel's cleaned value depends on the rejected set up to ``2 open + dilate`` pixels
away (:func:`halo_pixels`), so a block is read with that many extra pixels on every side and
cropped after cleaning: the result is the same whether a region is built as one block or many.
Beyond the window read, nothing is assumed rejected (dilation) and everything is assumed rejected
(erosion), which the halo keeps from reaching the block.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "clean_rejected",
    "dilate",
    "disk_half_widths",
    "erode",
    "halo_pixels",
    "open_",
    "rejected_by_rules",
]


def halo_pixels(open_radius: int, dilate_radius: int) -> int:
    """How far the cleaning reaches: an opening of r looks 2 r away, a dilation of d looks d."""
    return 2 * int(open_radius) + int(dilate_radius)


def disk_half_widths(radius: int) -> list[int]:
    """Half-width of the disk's row at each ``dy`` in ``-radius .. radius`` (``dx² <= r² - dy²``)."""
    r = int(radius)
    return [math.isqrt(r * r - dy * dy) for dy in range(-r, r + 1)]


def _shift_or(out: np.ndarray, src: np.ndarray, dy: int, dx: int) -> None:
    """``out[..., y, x] |= src[..., y - dy, x - dx]`` where both are inside the arrays."""
    h, w = src.shape[-2:]
    if abs(dy) >= h or abs(dx) >= w:
        return
    ty = slice(max(dy, 0), h + min(dy, 0))
    tx = slice(max(dx, 0), w + min(dx, 0))
    sy = slice(max(-dy, 0), h + min(-dy, 0))
    sx = slice(max(-dx, 0), w + min(-dx, 0))
    out[..., ty, tx] |= src[..., sy, sx]


def dilate(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary dilation of ``mask`` (..., h, w) by a disk of ``radius`` pixels; outside is False.

    The disk is cut into rows: horizontal dilations by each half-width, then each shifted by its
    row offset, so the cost grows with the radius, not with the disk's area.
    """
    r = int(radius)
    if r <= 0:
        return mask.copy()
    widths = disk_half_widths(r)
    horizontal = [mask.copy()]
    for k in range(1, max(widths) + 1):
        row = horizontal[-1].copy()
        _shift_or(row, mask, 0, k)
        _shift_or(row, mask, 0, -k)
        horizontal.append(row)
    out = np.zeros_like(mask)
    for dy, half in zip(range(-r, r + 1), widths, strict=True):
        _shift_or(out, horizontal[half], dy, 0)
    return out


def erode(mask: np.ndarray, radius: int) -> np.ndarray:
    """Binary erosion by a disk (the dual of :func:`dilate`); outside counts as True."""
    return ~dilate(~mask, radius)


def open_(mask: np.ndarray, radius: int) -> np.ndarray:
    """Morphological opening: erosion then dilation by the same disk (removes small specks)."""
    if int(radius) <= 0:
        return mask.copy()
    return dilate(erode(mask, radius), radius)


def rejected_by_rules(
    scl: np.ndarray | None,
    keep: tuple[int, ...] | None,
    cloud: np.ndarray | None,
    cloud_max: float | None,
    shape: tuple[int, ...],
) -> np.ndarray:
    """(n, h, w) bool: pixels an SCL keep-set or a cloud probability above the maximum rejects.

    A NaN probability (an asset without a declared type, where its file says nodata) rejects
    nothing: the probability is unknown there, and SCL still decides.
    """
    rejected = np.zeros(shape, dtype=bool)
    if scl is not None and keep is not None:
        rejected |= ~np.isin(scl, np.asarray(list(keep), dtype=scl.dtype))
    if cloud is not None and cloud_max is not None:
        with np.errstate(invalid="ignore"):
            rejected |= cloud > cloud_max
    return rejected


def clean_rejected(
    rejected: np.ndarray, has_data: np.ndarray, open_radius: int, dilate_radius: int
) -> np.ndarray:
    """The rejected set of each observation (n, h, w), restricted to pixels with data, opened by
    ``open_radius`` and dilated by ``dilate_radius`` (in that order; see the module docstring)."""
    out = rejected & has_data
    if open_radius > 0:
        out = open_(out, open_radius)
    if dilate_radius > 0:
        out = dilate(out, dilate_radius)
    return out

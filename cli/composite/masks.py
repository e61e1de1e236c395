"""Which pixels the mask rules reject, and the morphological cleaning of the cloud they reject
(docs/recipes.md, "mask").

An observation is valid where every band holds data and the mask rules do not reject it
(spec 2.3: one rule for all bands). The rules that reject a pixel:

- the mask class is not in ``mask.keep``;
- ``mask.cloud_probability_max``: the collection's cloud-probability asset (0..100 %) says more
  than the maximum.

Two kinds of rejection (:func:`rejection_sets`). *Cloud* is what the cleaning applies to: the
classes of ``mask.clean`` (Sentinel-2 SCL 3 cloud shadow, 8 and 9 cloud, 10 thin cirrus by
default: the cloud mask Digital Earth Australia cleans) and a cloud probability above the
maximum. Everything else rejected (saturated or defective, dark, nodata, any class outside the
keep set and the cleaned set) is *hard*: no cleaning ever makes it an observation, and it is
never grown into its neighbours.

The cleaning runs on the solar day's observation (the mosaic of the day's items), not on each
item: a cloud cut by one tile's edge continues in the neighbouring tile of the same overpass,
so the opening sees it whole (:func:`cleaned_validity`). In this order: a morphological
*opening* of radius ``mask.open`` (erosion then dilation: removes cloud specks smaller than the
disk, e.g. bright roofs SCL calls cloud), then a *dilation* of radius ``mask.dilate`` (alias
``mask.buffer``: grows the cloud into its edges and the thin cloud SCL misses). Opening then
dilation of the cloud mask alone is Digital Earth Australia's order (their geomedian: a 3-pixel
opening, a 6-pixel dilation; odc-algo ``mask_cleanup``). The structuring element is a Euclidean
disk (offsets with ``dy² + dx² <= r²``), as odc-algo's isotropic operations use, so a buffer has
the same width in every direction; radii are pixels of the store's grid (the resolution the
bands are read at).

Block edges. A pixel's cleaned value depends on the cloud up to ``2 open + dilate`` pixels
away (:func:`halo_pixels`), so a block is read with that many extra pixels on every side and
cropped after cleaning: the result is the same whether a region is built as one block or many.
Beyond the window read, nothing is assumed cloud (dilation) and everything is assumed cloud
(erosion), which the halo keeps from reaching the block.
"""

from __future__ import annotations

import math

import numpy as np

from cz.composite.bits import BitRule, bit_hits

__all__ = [
    "SCL_CLOUD_CLASSES",
    "cleaned_validity",
    "dilate",
    "disk_half_widths",
    "erode",
    "halo_pixels",
    "open_",
    "rejection_sets",
]

#: Sentinel-2 SCL classes the cleaning applies to by default: 3 cloud shadows, 8 cloud medium
#: probability, 9 cloud high probability, 10 thin cirrus (odc-stats' Sentinel-2 geomedian
#: cleans these and leaves 0 nodata and 1 saturated or defective alone; decision 0043).
SCL_CLOUD_CLASSES: tuple[int, ...] = (3, 8, 9, 10)


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


def rejection_sets(
    mask: np.ndarray | None,
    keep: tuple[int, ...] | None,
    clean: tuple[int, ...],
    cloud: np.ndarray | None,
    cloud_max: float | None,
    has_data: np.ndarray,
    bits: tuple[BitRule, ...] = (),
) -> tuple[np.ndarray, np.ndarray]:
    """``(hard, cloud)``, each (n, h, w) bool over pixels with data: what the rules reject.

    ``cloud``: rejected by a class of ``clean`` (outside ``keep``), a bit rule marked cloud
    (:mod:`cz.composite.bits`) or a cloud probability above ``cloud_max``, and by nothing else;
    the cleaning may re-admit it. ``hard``: rejected by any other class outside ``keep`` or any
    other bit rule; never re-admitted (docs/recipes.md, "mask")."""
    shape = has_data.shape
    hard = np.zeros(shape, dtype=bool)
    cloudy = np.zeros(shape, dtype=bool)
    if mask is not None and keep is not None:
        out = ~np.isin(mask, np.asarray(list(keep), dtype=np.int64))
        cleanable = np.isin(mask, np.asarray(list(clean), dtype=np.int64))
        hard |= out & ~cleanable
        cloudy |= out & cleanable
    if mask is not None and bits:
        bit_hard, bit_cloud = bit_hits(mask, bits)
        hard |= bit_hard
        cloudy |= bit_cloud
    if cloud is not None and cloud_max is not None:
        with np.errstate(invalid="ignore"):
            cloudy |= cloud > cloud_max
    hard &= has_data
    cloudy &= has_data & ~hard
    return hard, cloudy


def cleaned_validity(
    clear: np.ndarray, cloudy: np.ndarray, open_radius: int, dilate_radius: int
) -> np.ndarray:
    """Which pixels of each observation (n, h, w) are valid after the cleaning: the clear ones
    and the cloud the opening removed, less the remaining cloud dilated.

    ``clear`` and ``cloudy`` are disjoint; a pixel in neither (hard-rejected, no data) stays
    invalid whatever the cleaning does. Without cleaning the valid pixels are the clear ones."""
    remaining = open_(cloudy, open_radius) if open_radius > 0 else cloudy
    grown = dilate(remaining, dilate_radius) if dilate_radius > 0 else remaining
    return (clear | cloudy) & ~grown

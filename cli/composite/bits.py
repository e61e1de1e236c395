"""Bit-flag quality masks (docs/recipes.md, "mask", ``bits``): the fields of a QA band and the
pixels a rule on them rejects. Pure: the plan resolves a recipe's named flags against an item's
``classification:bitfields`` (:mod:`cz.plan.bitfields`); this module reads numbers.

A QA band packs several fields into one integer: Landsat Collection 2 ``qa_pixel`` (uint16:
bit 0 fill, 1 dilated cloud, 2 cirrus, 3 cloud, 4 cloud shadow, 5 snow, 6 clear, 7 water, then
confidence pairs at bits 8-9, 10-11, 12-13, 14-15), HLS v2 ``Fmask`` (uint8: bit 1 cloud,
2 adjacent to cloud or shadow, 3 cloud shadow, 4 snow/ice, 5 water, 6-7 aerosol level). A field
is ``length`` bits from bit ``offset`` (bit 0 the least significant), as the STAC
classification extension's ``classification:bitfields`` describe it; its value is
``(qa >> offset) & (2**length - 1)``. A rule rejects the pixels whose field holds one of its
values.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["MAX_BIT", "BitRule", "bit_hits", "field_values", "parse_bit_key"]

#: The highest bit a field may reach (QA bands are at most 32-bit integers).
MAX_BIT = 31

_KEY = re.compile(r"^\s*(\d{1,2})\s*(?:(?:-|\.\.)\s*(\d{1,2})\s*)?$")


def parse_bit_key(key: str) -> tuple[int, int] | None:
    """``"3"`` -> ``(3, 1)``, ``"8-9"`` or ``"8..9"`` -> ``(8, 2)`` (offset, length: bits 8
    through 9); ``None`` when ``key`` is not a bit position (it is a field name). Raises
    ``ValueError`` for positions out of order or beyond :data:`MAX_BIT`."""
    match = _KEY.match(str(key))
    if match is None:
        return None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) is not None else first
    if last < first:
        raise ValueError(f"bits {key!r}: the last bit {last} is before the first {first}")
    if last > MAX_BIT:
        raise ValueError(f"bits {key!r}: bit {last} is beyond bit {MAX_BIT}")
    return first, last - first + 1


@dataclass(frozen=True)
class BitRule:
    """One field of the QA band and the values of it that reject a pixel.

    ``name`` is the recipe's key (a field name or ``"8-9"``), kept for messages and for
    ``mask.clean``; ``cloud`` says whether the cleaning applies to what it rejects."""

    name: str
    offset: int
    length: int
    values: tuple[int, ...]
    cloud: bool = False

    def __post_init__(self) -> None:
        if self.offset < 0 or self.length < 1 or self.offset + self.length - 1 > MAX_BIT:
            raise ValueError(
                f"bit field {self.name!r}: {self.length} bit(s) from bit {self.offset} do not fit "
                f"in bits 0..{MAX_BIT}"
            )
        top = (1 << self.length) - 1
        bad = [v for v in self.values if not 0 <= v <= top]
        if bad:
            raise ValueError(
                f"bit field {self.name!r} is {self.length} bit(s) wide: value {bad[0]} is not in "
                f"0..{top}"
            )


def field_values(qa: np.ndarray, offset: int, length: int) -> np.ndarray:
    """The field's value at every pixel: ``(qa >> offset) & (2**length - 1)``, in the QA band's
    own unsigned integer type (no wider copy; a signed band is read as its bits, the unsigned
    type of its width; bits beyond the type read 0)."""
    if qa.dtype.kind == "i":
        qa = qa.view(f"u{qa.dtype.itemsize}")
    elif qa.dtype.kind != "u":
        qa = qa.astype(np.uint64)
    top = int(np.iinfo(qa.dtype).max)
    return (qa >> qa.dtype.type(min(offset, 8 * qa.dtype.itemsize))) & qa.dtype.type(
        ((1 << length) - 1) & top
    )


def bit_hits(qa: np.ndarray, rules: Sequence[BitRule]) -> tuple[np.ndarray, np.ndarray]:
    """``(hard, cloud)``: the pixels a non-cloud rule rejects, and those a cloud rule rejects
    (both may hold at one pixel; the caller lets ``hard`` win)."""
    hard = np.zeros(qa.shape, dtype=bool)
    cloud = np.zeros(qa.shape, dtype=bool)
    for rule in rules:
        field = field_values(qa, rule.offset, rule.length)
        if len(rule.values) == 1:  # a flag: one comparison, no isin sort
            hit = field == rule.values[0]
        else:
            hit = np.isin(field, np.asarray(rule.values))
        (cloud if rule.cloud else hard)[...] |= hit
    return hard, cloud

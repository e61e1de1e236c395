"""Bit-flag masks (cz.composite.bits; docs/recipes.md, "mask", ``bits``) against a reference that
reads each pixel's bits one by one with Python integers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cz.composite import CompositeRules, composite_block
from cz.composite.bits import BitRule, bit_hits, parse_bit_key
from cz.composite.masks import rejection_sets


@st.composite
def rules(draw: st.DrawFn) -> BitRule:
    offset = draw(st.integers(0, 15))
    length = draw(st.integers(1, 16 - offset))
    values = draw(st.lists(st.integers(0, (1 << length) - 1), min_size=1, max_size=4, unique=True))
    return BitRule(f"f{offset}", offset, length, tuple(values), cloud=draw(st.booleans()))


def _field(value: int, offset: int, length: int) -> int:
    """Bits offset .. offset + length - 1 of value, bit by bit."""
    return sum(((value >> (offset + k)) & 1) << k for k in range(length))


qa_arrays = st.sampled_from([np.uint8, np.uint16, np.uint32, np.int16]).flatmap(
    lambda dt: arrays(dt, st.tuples(st.integers(1, 4), st.integers(1, 6)))
)


@settings(max_examples=150, deadline=None)
@given(qa_arrays, st.lists(rules(), max_size=4))
def test_bit_hits_read_each_field_bit_by_bit(qa: np.ndarray, given_rules: list[BitRule]) -> None:
    """Any integer QA type (a field beyond a narrow type's bits reads 0; a signed band is read as
    its bits as stored, two's complement)."""
    hard, cloud = bit_hits(qa, given_rules)
    for index in np.ndindex(qa.shape):
        value = int(qa[index]) & ((1 << 8 * qa.dtype.itemsize) - 1)  # a signed band's bits
        hits = [r for r in given_rules if _field(value, r.offset, r.length) in r.values]
        assert hard[index] == any(not r.cloud for r in hits)
        assert cloud[index] == any(r.cloud for r in hits)


def test_bit_keys() -> None:
    assert parse_bit_key("3") == (3, 1)
    assert parse_bit_key("8-9") == (8, 2) and parse_bit_key("8..9") == (8, 2)
    assert parse_bit_key("cloud") is None and parse_bit_key("cloud_confidence") is None
    with pytest.raises(ValueError, match="before"):
        parse_bit_key("9-8")
    with pytest.raises(ValueError, match="beyond bit 31"):
        parse_bit_key("30-33")
    with pytest.raises(ValueError, match=r"not in 0\.\.3"):
        BitRule("8-9", 8, 2, (4,))


def test_a_cloud_flag_is_cleaned_and_a_fill_flag_never_admitted() -> None:
    """Landsat qa_pixel numbers (USGS layout: bit 0 fill, bit 3 cloud): a one-pixel cloud is
    opened away and counts; a one-pixel fill is rejected whatever the cleaning; a pixel both
    filled and cloudy is hard (fill wins)."""
    fill = BitRule("fill", 0, 1, (1,))
    cloud = BitRule("cloud", 3, 1, (1,), cloud=True)
    rules = CompositeRules(open_radius=1, bits=(fill, cloud))
    halo = rules.halo
    size = 5 + 2 * halo  # a 5 x 5 block and its halo
    qa = np.full((1, size, size), 21824, dtype=np.uint16)  # clear, low confidence: no flag read
    speck, lone_fill, both = (halo + 2, halo + 2), (halo + 0, halo + 0), (halo + 4, halo + 4)
    qa[(0, *speck)] = 21824 | (1 << 3)
    qa[(0, *lone_fill)] = 1
    qa[(0, *both)] = 1 | (1 << 3)
    data = np.ones(qa.shape, dtype=bool)
    hard, cloudy = rejection_sets(qa, None, (), None, None, data, rules.bits)
    assert np.argwhere(cloudy).tolist() == [[0, *speck]]
    assert np.argwhere(hard).tolist() == [[0, *lone_fill], [0, *both]]
    out, cov = composite_block(
        np.full((1, 1, size, size), 9000, dtype=np.uint16),
        qa,
        corrections=[0],
        solar_days=["d"],
        keep=None,
        src_nodata=[[0]],
        harmonized=[False],
        dtype="uint16",
        nodata=0,
        rules=rules,
    )
    want = np.ones((5, 5), dtype=np.uint8)
    want[0, 0] = want[4, 4] = 0  # fill stays out; the cloud speck is opened away and counts
    np.testing.assert_array_equal(cov, want)
    assert out[0, 2, 2] == 9000 and out[0, 0, 0] == 0

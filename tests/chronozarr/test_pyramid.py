"""Pyramid reductions (spec 2.3-2.5, 6) against independent references."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chronozarr.format import (
    block_mean,
    coverage_reduce,
    mask_reduce,
    valid_block_mean,
    validity,
)
from tests.chronozarr.helpers import (
    ref_coverage_reduce,
    ref_mask_reduce,
    ref_reduce,
    ref_validity,
)

FAST = settings(max_examples=40, deadline=None)


# --- pyramid (spec 2.3-2.5, 6) -----------------------------------------------------------------------


@st.composite
def planes(draw: st.DrawFn, dtype: str) -> np.ndarray:
    h = draw(st.integers(1, 9))
    w = draw(st.integers(1, 9))
    b = draw(st.integers(1, 3))
    if dtype == "float32":
        elements = st.floats(-1e6, 1e6, width=32, allow_nan=False)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    return draw(hnp.arrays(dtype, (b, h, w), elements=elements))


def ref_mean(values: np.ndarray, nodata, mask: np.ndarray | None) -> np.ndarray:
    """The reference reduction of one timestep's planes (the oracle of the block means)."""
    return ref_reduce(
        values[None],
        ref_validity(values[None], nodata, None if mask is None else mask[None]),
        nodata,
    )[0]


@FAST
@given(data=st.data(), dtype=st.sampled_from(["uint8", "uint16", "int16", "float32"]))
def test_block_mean_matches_reference(data, dtype: str) -> None:
    values = data.draw(planes(dtype))
    b, h, w = values.shape
    use_mask = data.draw(st.booleans())
    mask = data.draw(hnp.arrays(np.uint8, (h, w), elements=st.integers(0, 1))) if use_mask else None
    if dtype == "float32":
        nodata = data.draw(st.sampled_from([None, 0.0, float(values.flat[0])]))
    else:
        nodata = data.draw(st.sampled_from([None, 0, int(values.flat[0])]))
    got = block_mean(values, validity(values, nodata, mask), nodata)
    want = ref_mean(values, nodata, mask)
    assert got.dtype == values.dtype
    assert got.shape == (b, -(-h // 2), -(-w // 2))
    assert np.array_equal(got, want)


@FAST
@given(data=st.data(), dtype=st.sampled_from(["uint8", "uint16", "int16", "float32"]))
def test_valid_block_mean_matches_reference(data, dtype: str) -> None:
    """The shortcut that skips the validity (decision 0059) gives the reference's mean, with a
    nodata inside, outside or absent, with and without a mask, on a strided view."""
    values = data.draw(planes(dtype))
    b, h, w = values.shape
    big = np.zeros((b, h + 3, w + 5), dtype=values.dtype)
    big[:, 1 : h + 1, 2 : w + 2] = values
    view = big[:, 1 : h + 1, 2 : w + 2]  # strided, as a cell of the input is
    use_mask = data.draw(st.booleans())
    mask = data.draw(hnp.arrays(np.uint8, (h, w), elements=st.integers(0, 1))) if use_mask else None
    if dtype == "float32":
        choices = [None, 0.0, float(values.flat[0]), float(values.max()) + 1.0, float("nan")]
    else:
        info = np.iinfo(dtype)
        choices = [None, 0, int(values.flat[0]), int(info.min), int(info.max)]
    nodata = data.draw(st.sampled_from(choices))
    got = valid_block_mean(view, nodata, mask)
    want = ref_mean(values, nodata, mask)
    assert got.dtype == values.dtype
    # a NaN nodata: an all-invalid block is NaN in both (spec 6: it yields nodata), in the same places
    assert np.array_equal(got, want, equal_nan=dtype == "float32")


def test_validity_rules() -> None:
    values = np.array([[[0, 5]], [[5, 0]]], dtype=np.uint16)
    assert validity(values, 0, None).tolist() == [[[False, True]], [[True, False]]]
    assert validity(values, None, None).all()
    mask = np.array([[0, 1]], dtype=np.uint8)
    assert validity(values, 0, mask).tolist() == [[[False, True]], [[False, True]]]


def test_block_mean_all_invalid_is_nodata_or_zero() -> None:
    values = np.full((1, 2, 2), 9, dtype=np.uint16)
    none_valid = np.zeros_like(values, dtype=bool)
    assert block_mean(values, none_valid, 7).tolist() == [[[7]]]
    assert block_mean(values, none_valid, None).tolist() == [[[0]]]
    f = np.full((1, 2, 2), 9, dtype=np.float32)
    assert block_mean(f, none_valid, -9999.0).tolist() == [[[-9999.0]]]


def test_block_mean_exact_integer_sum() -> None:
    """65535 * 4 overflows uint16 and float32 rounding would not floor: exact in a wide type."""
    values = np.array([[[65535, 65534], [65535, 65535]]], dtype=np.uint16)
    ok = np.ones_like(values, dtype=bool)
    assert block_mean(values, ok, None).tolist() == [[[65534]]]  # 262139 // 4
    odd = np.array([[[16777217, 0]]], dtype=np.float32)  # float64 accumulation
    assert block_mean(odd, np.ones_like(odd, dtype=bool), None).dtype == np.float32


def test_edge_replication_weights_the_last_row() -> None:
    """An odd last row counts twice in its block (DESIGN: replicate before every reduction)."""
    values = np.array([[[0], [3], [9]]], dtype=np.uint8)  # 3 x 1
    ok = np.ones_like(values, dtype=bool)
    assert block_mean(values, ok, None).tolist() == [[[1], [9]]]
    cov = np.array([[1], [2], [1]], dtype=np.uint8)
    assert coverage_reduce(cov).tolist() == [[2], [1]]  # (1+1+2+2+2)//4, (1*4+2)//4


@FAST
@given(
    mask=hnp.arrays(
        np.uint8, hnp.array_shapes(min_dims=3, max_dims=3, max_side=9), elements=st.integers(0, 1)
    )
)
def test_mask_reduce_matches_reference(mask: np.ndarray) -> None:
    assert np.array_equal(mask_reduce(mask), ref_mask_reduce(mask))


@FAST
@given(cov=hnp.arrays(np.uint8, hnp.array_shapes(min_dims=3, max_dims=3, max_side=9)))
def test_coverage_reduce_matches_reference(cov: np.ndarray) -> None:
    got = coverage_reduce(cov)
    assert got.dtype == np.uint8
    assert np.array_equal(got, ref_coverage_reduce(cov))


def test_coverage_halves_round_up() -> None:
    cov = np.array([[[1, 1], [0, 0]], [[255, 255], [255, 254]]], dtype=np.uint8)
    assert coverage_reduce(cov).tolist() == [[[1]], [[255]]]  # (2+2)//4, (1019+2)//4

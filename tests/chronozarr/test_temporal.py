"""Anchor schedules and references (spec 4.2), modular residuals (4.2) and volatility (5)
against independent references."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.errors import CorruptStoreError
from chronozarr.format import (
    Temporal,
    abs_diff_sum,
    anchor_indices,
    apply_residual,
    is_valid_reference,
    nearest_anchor,
    residual,
    schedule,
    volatility_value,
)
from tests.chronozarr.helpers import (
    ref_schedule,
)

FAST = settings(max_examples=40, deadline=None)


# --- anchors and references (spec 4.2) -------------------------------------------------------------


@FAST
@given(n_time=st.integers(1, 60), k=st.integers(1, 13))
def test_schedule_matches_reference(n_time: int, k: int) -> None:
    anchors, refs = schedule(n_time, k)
    want_anchors, want_refs = ref_schedule(n_time, k)
    assert anchors == want_anchors == anchor_indices(n_time, k)
    assert refs == want_refs
    for t, a in refs.items():
        assert is_valid_reference(t, a, anchors, k)


@FAST
@given(t=st.integers(0, 200), anchors=st.lists(st.integers(0, 200), min_size=1, unique=True))
def test_nearest_anchor_ties_toward_earlier(t: int, anchors: list[int]) -> None:
    got = nearest_anchor(t, anchors)
    best = min(abs(a - t) for a in anchors)
    assert abs(got - t) == best
    assert got == min(a for a in anchors if abs(a - t) == best)


def test_nearest_anchor_examples() -> None:
    assert nearest_anchor(1, [0, 2]) == 0  # tie: earlier
    assert nearest_anchor(3, [0, 4]) == 4
    assert nearest_anchor(5, [0, 4]) == 4
    assert schedule(5, 2)[1] == {1: 0, 3: 2}  # the spec 3.9 example
    assert schedule(7, 6)[1] == {1: 0, 2: 0, 3: 0, 4: 6, 5: 6}
    assert schedule(5, 6)[1] == {1: 0, 2: 0, 3: 0, 4: 0}  # no anchor 6 yet


@FAST
@given(n_old=st.integers(1, 30), n_new=st.integers(0, 30), k=st.integers(1, 8), data=st.data())
def test_schedule_keeps_existing_references(n_old: int, n_new: int, k: int, data) -> None:
    """An append keeps every published reference (spec 4.2.2, 14); new ones take the nearest."""
    _, old_refs = schedule(n_old, k)
    anchors, refs = schedule(n_old + n_new, k, existing=old_refs)
    for t, a in old_refs.items():
        assert refs[t] == a
    for t in range(n_old, n_old + n_new):
        if t not in anchors:
            assert refs[t] == nearest_anchor(t, anchors)
    # an old timestep that became nearer to a new anchor still decodes through its old anchor
    if n_old % k and n_new:
        t = n_old - 1
        if t in old_refs:
            assert refs[t] == old_refs[t]


def test_is_valid_reference() -> None:
    anchors = [0, 3, 6]
    assert is_valid_reference(2, 0, anchors, 3)  # not nearest, still valid
    assert not is_valid_reference(3, 3, anchors, 3)  # d = 0
    assert not is_valid_reference(4, 0, anchors, 3)  # d = anchor_interval... 4 > 3
    assert not is_valid_reference(2, 1, anchors, 3)  # not an anchor
    assert is_valid_reference(5, 6, anchors, 3)


def test_temporal_reference_uses_recorded_map() -> None:
    """Readers decode through the recorded map, never a recomputed one (spec 4.2.2)."""
    block = Temporal.from_json(
        {
            "encoding": "star-delta",
            "anchor_interval": 4,
            "anchor_indices": [0, 4],
            "delta_reference": {"1": 0, "2": 0, "3": 0, "5": 4},
        }
    )
    assert block.reference(3) == 0  # the nearest anchor would be 4
    assert block.reference(4) is None
    with pytest.raises(CorruptStoreError, match="6"):
        block.reference(6)
    assert Temporal.from_json({"encoding": "none"}).reference(3) is None
    v01 = Temporal.from_json({"anchor_interval": 2, "anchor_indices": [0], "delta_reference": {}})
    assert v01.encoding == "star-delta" and not v01.has_encoding_key
    assert "encoding" not in v01.to_json()


# --- modular residuals (spec 4.2) --------------------------------------------------------------------


def test_residual_inverse_all_uint8_pairs() -> None:
    a, s = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    d = residual(s, a)
    assert d.dtype == np.uint8
    assert np.array_equal(d, ((s.astype(np.int64) - a) % 256).astype(np.uint8))
    assert np.array_equal(apply_residual(a, d), s)


def test_residual_inverse_all_uint16_pairs() -> None:
    """All 2^32 (anchor, source) pairs, in slabs of 512 anchors (about 10 s of CPU).

    The oracle does no arithmetic: over source = 0..65535, (source - a) mod 2^16 is the sequence
    0..65535 rotated by a, one window of that sequence written twice. (It replaced a uint32
    computation of the same values that took twice the CPU.)"""
    s = np.arange(65536, dtype=np.uint16)
    # windows[k] is s rotated left by k: windows[k][i] == (i + k) mod 2^16
    windows = np.lib.stride_tricks.sliding_window_view(np.concatenate([s, s]), 65536)
    rows = 512
    for start in range(0, 65536, rows):
        a = np.arange(start, start + rows, dtype=np.uint16)[:, None]
        src, anchor = np.broadcast_to(s, (rows, 65536)), np.broadcast_to(a, (rows, 65536))
        d = residual(src, anchor)
        assert d.dtype == np.uint16
        want = windows[(65536 - a[:, 0].astype(np.int64)) % 65536]  # (i - a) mod 2^16
        assert np.array_equal(d, want)
        assert np.array_equal(apply_residual(anchor, d), src)


def test_residual_matches_v01_int16_bytes_when_small() -> None:
    a = np.array([1000, 1000, 0, 65535], dtype=np.uint16)
    s = np.array([900, 1100, 32767, 32768], dtype=np.uint16)
    v01 = (s.astype(np.int32) - a.astype(np.int32)).astype(np.int16).view(np.uint16)
    assert np.array_equal(residual(s, a), v01)


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_residual_refuses_other_dtypes(dtype: str) -> None:
    with pytest.raises(TypeError):
        residual(np.zeros(2, dtype), np.zeros(2, dtype))


# --- volatility (spec 5) ------------------------------------------------------------------------------


def test_volatility_value() -> None:
    assert volatility_value(0.0, 0) == np.float32(0.0)
    assert volatility_value(5000.0 * 4, 4) == np.float32(0.5)
    assert volatility_value(1e9, 1) == np.float32(1.0)  # clipped
    a = np.array([0, 65535], dtype=np.uint16)
    b = np.array([65535, 0], dtype=np.uint16)
    assert abs_diff_sum(a, b) == 2 * 65535.0  # exact, no modular wrap
    f = np.array([1e-8, 3.0], dtype=np.float32)
    assert abs_diff_sum(f, np.zeros(2, np.float32)) == pytest.approx(3.00000001)


@FAST
@given(
    seed=st.integers(0, 2**32 - 1),
    dtype=st.sampled_from(["uint8", "uint16", "int16"]),
    shape=st.sampled_from([(7,), (3, 5), (2, 9, 11), (2, 300, 301), (1, 2, 70, 1000)]),
)
def test_abs_diff_sum_matches_python_integers(seed: int, dtype: str, shape: tuple) -> None:
    """The piecewise sum (decision 0059) against Python integers over every pixel: exact, over
    the full range of the dtype, for arrays larger than one pass and for strided views."""
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    wide = (*shape[:-1], shape[-1] + 3)
    a = rng.integers(int(info.min), int(info.max), wide, endpoint=True).astype(dtype)[..., 1:-2]
    b = rng.integers(int(info.min), int(info.max), wide, endpoint=True).astype(dtype)[..., 2:-1]
    pairs = zip(a.ravel().tolist(), b.ravel().tolist(), strict=True)
    want = sum(abs(int(x) - int(y)) for x, y in pairs)
    assert abs_diff_sum(a, b) == float(want)


@pytest.mark.parametrize(
    ("dtype", "shape"),
    [("uint16", (2, 128, 512)), ("uint16", (1, 2, 70_000)), ("uint8", (3, 70, 1000))],
)
def test_abs_diff_sum_at_the_accumulators_bound(dtype: str, shape: tuple) -> None:
    """Every difference the dtype's largest, in pieces of exactly 2^16 elements (uint16: the
    largest piece whose sum fits uint32, decision 0063), in rows wider than a piece (the uint64
    path), and for uint8: the sum is the count times the maximum, in both orders."""
    top = int(np.iinfo(dtype).max)
    high = np.full(shape, top, dtype=dtype)
    low = np.zeros(shape, dtype=dtype)
    want = float(int(np.prod(shape)) * top)
    assert abs_diff_sum(high, low) == want
    assert abs_diff_sum(low, high) == want

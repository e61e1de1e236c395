"""Property tests of the pure parts: stretch parsing and application, band math, selection."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chronozarr import Band
from cz.look.errors import LookError
from cz.look.expr import ExpressionError, evaluate, names_in
from cz.look.select import band_index, default_rgb, pixel_of
from cz.look.stretch import Stretch, apply_stretch, compute_stretch, parse_stretch

finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@given(lo=finite, width=st.floats(1e-3, 1e6), v=finite)
def test_apply_stretch_maps_limits_to_0_and_255_and_clips(
    lo: float, width: float, v: float
) -> None:
    s = Stretch(lo, lo + width)
    level = apply_stretch(np.array([v]), s)[0]
    expected = round(min(1.0, max(0.0, (v - lo) / width)) * 255)
    assert abs(level - expected) <= 1  # rint (half to even) against Python's round on a float
    assert apply_stretch(np.array([lo]), s)[0] == 0
    assert apply_stretch(np.array([lo + width]), s)[0] == 255
    assert np.isnan(apply_stretch(np.array([np.nan]), s)[0])


@given(hnp.arrays(np.float64, st.integers(2, 60), elements=finite))
def test_apply_stretch_is_monotone(values: np.ndarray) -> None:
    s = compute_stretch(values, parse_stretch("p2,p98"))
    order = np.argsort(values, kind="stable")
    levels = apply_stretch(values, s)[order]
    assert (np.diff(levels) >= 0).all()


@given(
    hnp.arrays(np.float64, st.integers(1, 80), elements=st.one_of(finite, st.just(math.nan))),
    st.floats(0, 49),
    st.floats(51, 100),
)
def test_percentile_stretch_ignores_invalid_values(values: np.ndarray, a: float, b: float) -> None:
    s = compute_stretch(values, parse_stretch(f"p{a},p{b}"))
    good = values[np.isfinite(values)]
    assert s.hi > s.lo
    if not good.size:
        assert s == Stretch(0.0, 1.0)
        return
    lo, hi = np.percentile(good, [a, b])
    if hi > lo:
        assert (s.lo, s.hi) == (lo, hi)
    else:  # a flat stretch becomes +-0.5 around the value: mid-grey, no division by zero
        assert (s.lo, s.hi) == (lo - 0.5, lo + 0.5)


def test_parse_stretch_forms_and_refusals() -> None:
    assert parse_stretch("p2,p98").kind == "percentile"
    spec = parse_stretch("0,0.3")
    assert (spec.kind, spec.a, spec.b) == ("limits", 0.0, 0.3)
    assert compute_stretch(np.array([5.0]), spec) == Stretch(0.0, 0.3)
    for bad in ("p2", "p2,0.3", "0.3,0", "p98,p2", "p2,p101", "a,b", "nan,1", ""):
        with pytest.raises(ValueError, match="--stretch"):
            parse_stretch(bad)


@given(
    hnp.arrays(np.float64, 5, elements=st.floats(0.01, 1)),
    hnp.arrays(np.float64, 5, elements=st.floats(0.01, 1)),
)
def test_expression_equals_numpy(nir: np.ndarray, red: np.ndarray) -> None:
    got = evaluate("(nir - red) / (nir + red)", {"nir": nir, "red": red})
    np.testing.assert_array_equal(got, (nir - red) / (nir + red))
    with np.errstate(divide="ignore", invalid="ignore"):  # nir = 1.5 red - 1 divides by zero
        want = 2.5 * (nir - red) / (nir + 6 * red - 7.5 * red + 1) ** 1
    np.testing.assert_array_equal(
        evaluate(
            "2.5 * (nir - red) / (nir + 6 * red - 7.5 * red + 1) ** 1", {"nir": nir, "red": red}
        ),
        want,
    )
    assert names_in("(nir-red)/(nir+red)") == ["nir", "red"]


@pytest.mark.parametrize(
    "text",
    [
        "__import__('os').system('x')",
        "nir.real",
        "nir[0]",
        "nir if red else red",
        "f(nir)",
        "nir<red",
        "'a'",
        "nir +",
    ],
)
def test_expression_refuses_anything_but_arithmetic(text: str) -> None:
    with pytest.raises(ExpressionError, match="--expr"):
        evaluate(text, {"nir": np.ones(2), "red": np.ones(2)})


def test_division_by_zero_is_not_finite_not_an_error() -> None:
    got = evaluate("(nir-red)/(nir+red)", {"nir": np.zeros(1), "red": np.zeros(1)})
    assert not np.isfinite(got).any()


def test_bands_by_common_name_first() -> None:
    # spec 3.6: select by common_name, falling back to name. A band *named* "red" loses to the
    # band whose common_name is red.
    bands = [Band("red", "rededge"), Band("B04", "red"), Band("B03", "green"), Band("B02", "blue")]
    assert band_index(bands, "red") == 1
    assert band_index(bands, "RED") == 1
    assert band_index(bands, "rededge") == 0
    assert band_index(bands, "B03") == 2
    assert default_rgb(bands) == [1, 2, 3]
    assert default_rgb([Band("B04"), Band("B08")]) is None
    with pytest.raises(LookError, match=r"no band 'swir'.*B04 \(red\)"):
        band_index(bands, "swir")


@given(
    a=st.floats(0.5, 100),
    e=st.floats(-100, -0.5),
    b=st.floats(-0.4, 0.4),
    d=st.floats(-0.4, 0.4),
    c=st.floats(-1e6, 1e6),
    f=st.floats(-1e6, 1e7),
    row=st.integers(0, 10_000),
    col=st.integers(0, 10_000),
    fy=st.floats(0.05, 0.95),
    fx=st.floats(0.05, 0.95),
)
def test_pixel_of_inverts_the_affine(
    a: float,
    e: float,
    b: float,
    d: float,
    c: float,
    f: float,
    row: int,
    col: int,
    fy: float,
    fx: float,
) -> None:
    # any point inside pixel (row, col), written forward with the spec 3.3 affine, maps back to it
    x = a * (col + fx) + b * (row + fy) + c
    y = d * (col + fx) + e * (row + fy) + f
    assert pixel_of([a, b, c, d, e, f], x, y) == (row, col)


def test_pixel_of_refuses_a_singular_transform() -> None:
    with pytest.raises(LookError, match="not invertible"):
        pixel_of([0, 0, 0, 0, 0, 0], 1, 1)


class _Levels:
    """Just what auto_level reads of a Reader: level shapes."""

    def __init__(self, sides: list[int]) -> None:
        self.levels = [type("L", (), {"shape": (1, 1, s, s)})() for s in sides]


def test_auto_level_shrinks_for_long_animations() -> None:
    from cz.look.select import auto_level

    r = _Levels([4096, 2048, 1024, 512, 256, 128])
    assert auto_level(r) == 2  # type: ignore[arg-type]
    assert auto_level(r, frames=8) == 2  # type: ignore[arg-type]
    assert auto_level(r, frames=32) == 3  # 1024 * sqrt(8/32) = 512  # type: ignore[arg-type]
    assert auto_level(r, frames=120) == 4  # 264 px -> the 256 level  # type: ignore[arg-type]
    assert auto_level(r, frames=10_000) == 4  # never below 256 px  # type: ignore[arg-type]
    assert auto_level(_Levels([5000, 2500]), frames=1) == 1  # type: ignore[arg-type]  # coarsest

"""The compositing rules of docs/recipes.md, on small arrays (cz.composite is pure numpy)."""

from __future__ import annotations

import numpy as np
import pytest

from cz.composite import (
    assemble_filled,
    carry_forward_source,
    composite_block,
    correct_values,
    fill_value,
    mask_from_source,
    median_composite,
    mosaic_solar_days,
    observation_validity,
    saturating_coverage,
    value_bounds,
)


def test_validity_needs_a_kept_class_and_every_band_valid() -> None:
    values = np.array([[[[5, 0, 7, 8]], [[1, 2, 0, 4]]]], dtype=np.uint16)  # (1, 2, 1, 4)
    scl = np.array([[[4, 4, 4, 9]]], dtype=np.uint8)
    valid = observation_validity(values, scl, (4, 5), [0, 0])
    assert valid.tolist() == [[[True, False, False, False]]]
    # without a mask, nodata alone decides; a band without nodata never invalidates
    assert observation_validity(values, None, None, [0, None]).tolist() == [
        [[True, False, True, True]]
    ]
    floats = values.astype(np.float32)
    floats[0, 1, 0, 0] = np.nan
    assert observation_validity(floats, scl, (4,), [None, None]).tolist() == [
        [[False, True, True, False]]
    ]


@pytest.mark.parametrize(
    ("dtype", "nodata", "bounds"),
    [
        ("uint16", 0, (1, 65535)),
        ("uint8", 0, (1, 255)),
        ("uint16", 65535, (0, 65534)),
        ("int16", None, (-32768, 32767)),
        ("int16", -32768, (-32767, 32767)),
        ("float32", None, (-np.inf, np.inf)),
    ],
)
def test_value_bounds_keep_valid_numbers_off_nodata(
    dtype: str, nodata: float | None, bounds: tuple[float, float]
) -> None:
    assert value_bounds(dtype, nodata) == bounds


def test_correction_is_added_to_harmonised_valid_pixels_and_clipped() -> None:
    values = np.array([[100, 65000, 7], [100, 65000, 7]], dtype=np.uint16)[:, None]  # (2,1,3)
    valid = np.array([[True, True, False]])
    out = correct_values(values, valid, 1000, [True, False], (1, 65535), np.dtype(np.int32))
    assert out[0, 0, :2].tolist() == [1100, 65535]  # saturated stays saturated
    assert out[1, 0, :2].tolist() == [100, 65000]  # not harmonised
    low = correct_values(values, valid, -1000, [True, True], (1, 65535), np.dtype(np.int32))
    assert low[0, 0, :2].tolist() == [1, 64000]  # numbers below 1000 clip to 1, never to nodata
    floats = np.array([[[1.4, np.nan, 2.5]]], dtype=np.float32)
    got = correct_values(floats, np.array([[True, False, True]]), 0, [True], (1, 9), np.dtype("i4"))
    assert got[0, 0, [0, 2]].tolist() == [1, 2]  # rounded half to even; NaN never cast


def test_solar_day_mosaic_takes_the_first_valid_item_once() -> None:
    values = np.array([[[[10, 11]]], [[[20, 21]]], [[[30, 31]]]], dtype=np.int32)  # (3,1,1,2)
    valid = np.array([[[False, True]], [[True, True]], [[True, False]]])
    obs, ok = mosaic_solar_days(values, valid, [[0, 1], [2]])
    seen = np.where(ok[:, None], obs, -1)  # what an invalid entry holds does not matter
    assert seen[:, 0, 0].tolist() == [[20, 11], [30, -1]]
    assert ok[:, 0].tolist() == [[True, True], [True, False]]


@pytest.mark.parametrize(
    ("observations", "expected"),
    [
        ([1000, 1003], 1002),  # 1001.5 -> the even 1002 (docs/recipes.md)
        ([1000, 1001], 1000),  # 1000.5 -> the even 1000
        ([1000, 1002], 1001),
        ([5, 1, 3], 3),
        ([7], 7),
        ([1, 2, 3, 4], 2),  # 2.5 -> 2
        ([1, 2, 4, 5], 3),
        ([65534, 65535], 65534),  # 65534.5 -> even, no overflow
    ],
)
def test_median_rounds_even_counts_half_to_even(observations: list[int], expected: int) -> None:
    n = len(observations)
    obs = np.array(observations, dtype=np.int32).reshape(n, 1, 1, 1)
    # an invalid observation with a huge number in the stack must not matter
    obs = np.concatenate([obs, np.full((1, 1, 1, 1), 60000, np.int32)])
    valid = np.concatenate([np.ones((n, 1, 1), bool), np.zeros((1, 1, 1), bool)])
    out, count = median_composite(obs, valid, "uint16", 0)
    assert out.item() == expected
    assert count.item() == n
    assert out.item() == int(np.round(np.median(observations)))  # numpy's rule, same answer


def test_median_signed_and_float_stores() -> None:
    obs = np.array([-3, -2], dtype=np.int32).reshape(2, 1, 1, 1)
    out, _ = median_composite(obs, np.ones((2, 1, 1), bool), "int16", 0)
    assert out.item() == -2  # -2.5 -> -2 (even)
    floats = np.array([0.1, 0.2], dtype=np.float64).reshape(2, 1, 1, 1)
    out, _ = median_composite(floats, np.ones((2, 1, 1), bool), "float32", 0.0)
    assert out.dtype == np.float32
    assert out.item() == np.float32((0.1 + 0.2) / 2)


def test_median_matches_numpy_on_random_stacks() -> None:
    rng = np.random.default_rng(3)
    obs = rng.integers(1, 5000, size=(9, 3, 20, 20)).astype(np.int32)
    valid = rng.random((9, 20, 20)) < 0.6
    out, count = median_composite(obs, valid, "uint16", 0)
    for y in range(20):
        for x in range(20):
            chosen = obs[valid[:, y, x], :, y, x]
            assert count[y, x] == len(chosen)
            if len(chosen) == 0:
                assert (out[:, y, x] == 0).all()
            else:
                assert out[:, y, x].tolist() == np.round(np.median(chosen, axis=0)).tolist()


def test_coverage_saturates_at_255() -> None:
    assert saturating_coverage(np.array([0, 1, 255, 256, 10_000])).tolist() == [0, 1, 255, 255, 255]


def test_composite_block_counts_a_solar_day_once_and_corrects_each_item() -> None:
    # 3 items: two tiles of one solar day (the same ground, one corrected +1000), one other day
    values = np.zeros((3, 1, 1, 3), dtype=np.uint16)
    values[0, 0, 0] = [2000, 0, 1500]  # tile A, day 1, numbers with the +1000 already
    values[1, 0, 0] = [1000, 1100, 500]  # tile B, day 1, baseline < 04.00: +1000 to come
    values[2, 0, 0] = [2200, 2300, 0]  # day 2
    scl = np.array([[[4, 4, 9]], [[4, 4, 4]], [[4, 4, 4]]], dtype=np.uint8)
    out, cov = composite_block(
        values,
        scl,
        corrections=[0, 1000, 0],
        solar_days=["d1", "d1", "d2"],
        keep=(4,),
        src_nodata=[[0], [0], [0]],
        harmonized=[True],
        dtype="uint16",
        nodata=0,
    )
    # pixel 0: day 1 from tile A (2000), day 2 (2200): median 2100, two observations (not 3)
    # pixel 1: tile A nodata -> tile B 1100 + 1000 = 2100; day 2 2300 -> 2200
    # pixel 2: tile A cloudy -> tile B 500 + 1000 = 1500; day 2 nodata -> 1500
    assert out[0, 0].tolist() == [2100, 2200, 1500]
    assert cov[0].tolist() == [2, 2, 1]


def test_carry_forward_source_and_ages() -> None:
    shape = (1, 4)
    cov_t = np.array([[3, 0, 0, 0]], np.uint8)
    cov_1 = np.array([[1, 0, 2, 0]], np.uint8)
    cov_2 = np.array([[1, 5, 1, 0]], np.uint8)
    src = carry_forward_source([cov_t, cov_1, cov_2], shape)
    assert src.tolist() == [[0, 2, 1, -1]]
    assert mask_from_source(src).tolist() == [[1, 1, 1, 0]]
    # max age 1: the value two months back is too old
    assert carry_forward_source([cov_t, cov_1], shape).tolist() == [[0, -1, 1, -1]]
    # a month without any observation is None
    assert carry_forward_source([None, None, cov_2], shape).tolist() == [[2, 2, 2, -1]]
    months = {0: np.full((2, 1, 4), 10), 1: np.full((2, 1, 4), 11), 2: np.full((2, 1, 4), 12)}
    calls: list[int] = []

    def values_of(k: int) -> np.ndarray:
        calls.append(k)
        return months[k]

    out = assemble_filled(src, values_of, 2, "uint16", fill_value("uint16", 0))
    assert out[0].tolist() == [[10, 12, 11, 0]]
    assert sorted(calls) == [0, 1, 2]

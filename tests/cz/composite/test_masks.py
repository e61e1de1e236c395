"""The mask rules and the cleaning of the rejected set (docs/recipes.md, "mask"), on small arrays.

The references are brute force from the definitions: a Euclidean disk of radius r is every offset
with dy² + dx² <= r²; dilation marks a pixel when any pixel of the disk around it is marked,
erosion when every one is (outside the array counts as marked), opening is erosion then dilation.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from cz.composite import CompositeRules, composite_block
from cz.composite.masks import clean_rejected, dilate, erode, halo_pixels, open_, rejected_by_rules


def _disk(r: int) -> list[tuple[int, int]]:
    return [
        (dy, dx) for dy in range(-r, r + 1) for dx in range(-r, r + 1) if dy * dy + dx * dx <= r * r
    ]


def _ref_dilate(mask: np.ndarray, r: int) -> np.ndarray:
    h, w = mask.shape
    out = np.zeros_like(mask)
    for y in range(h):
        for x in range(w):
            out[y, x] = any(
                0 <= y + dy < h and 0 <= x + dx < w and mask[y + dy, x + dx] for dy, dx in _disk(r)
            )
    return out


def _ref_erode(mask: np.ndarray, r: int) -> np.ndarray:
    h, w = mask.shape
    out = np.zeros_like(mask)
    for y in range(h):
        for x in range(w):
            out[y, x] = all(
                not (0 <= y + dy < h and 0 <= x + dx < w) or mask[y + dy, x + dx]
                for dy, dx in _disk(r)
            )
    return out


masks = arrays(bool, st.tuples(st.integers(1, 12), st.integers(1, 12)))


@settings(max_examples=120, deadline=None)
@given(masks, st.integers(0, 7))
def test_dilate_and_erode_are_the_disk_definitions(mask: np.ndarray, r: int) -> None:
    np.testing.assert_array_equal(dilate(mask, r), _ref_dilate(mask, r))
    np.testing.assert_array_equal(erode(mask, r), _ref_erode(mask, r))
    np.testing.assert_array_equal(open_(mask, r), _ref_dilate(_ref_erode(mask, r), r))


def test_known_shapes() -> None:
    speck = np.zeros((7, 7), dtype=bool)
    speck[3, 3] = True
    plus = dilate(speck, 1)
    assert plus.sum() == 5 and plus[2, 3] and plus[3, 2] and not plus[2, 2]  # radius 1: a plus
    assert dilate(speck, 2).sum() == 13  # 5 x 5 without its corners (dy² + dx² <= 4)
    assert not open_(speck, 1).any()  # an opening removes a speck smaller than the disk
    blob = np.zeros((9, 9), dtype=bool)
    blob[2:7, 2:7] = True  # 5 x 5: the radius-1 plus fits everywhere but at the corners
    opened = open_(blob, 1)
    assert opened[2:7, 2:7].sum() == 21 and not opened[2, 2] and opened[4, 4]
    assert halo_pixels(3, 6) == 12


def test_cloud_probability_and_keep_set_combine() -> None:
    scl = np.array([[[4, 4, 9, 4]]], dtype=np.uint8)
    cloud = np.array([[[10.0, 60.0, 0.0, np.nan]]], dtype=np.float32)
    assert rejected_by_rules(scl, (4,), cloud, 50.0, scl.shape).tolist() == [
        [[False, True, True, False]]
    ]
    assert rejected_by_rules(None, None, cloud, 10.0, scl.shape).tolist() == [
        [[False, True, False, False]]
    ]  # "more than the maximum": 10 % passes a 10 % ceiling; NaN (unknown) rejects nothing


def test_pixels_without_data_are_not_grown() -> None:
    rejected = np.zeros((1, 1, 9), dtype=bool)
    has_data = np.ones((1, 1, 9), dtype=bool)
    rejected[0, 0, 0:3] = True  # a nodata edge (SCL 0 there) ...
    has_data[0, 0, 0:3] = False
    rejected[0, 0, 7] = True  # ... and a cloud pixel with data
    out = clean_rejected(rejected, has_data, 0, 2)
    assert out.tolist() == [[[False, False, False, False, False, True, True, True, True]]]


def _block_inputs(rng: np.random.Generator, h: int, w: int) -> tuple:
    n = 4
    values = rng.integers(1, 3000, size=(n, 2, h, w)).astype(np.uint16)
    values[:, :, rng.random((h, w)) < 0.05] = 0  # nodata
    scl = rng.choice(np.array([4, 5, 8, 9], np.uint8), p=[0.45, 0.4, 0.1, 0.05], size=(n, h, w))
    cloud = rng.integers(0, 101, size=(n, h, w)).astype(np.float32)
    return values, scl, cloud


def _composite(values, scl, cloud, rules):
    n = values.shape[0]
    return composite_block(
        values,
        scl,
        corrections=[0] * n,
        solar_days=["2024-01-01", "2024-01-01", "2024-01-09", "2024-01-20"],
        keep=(4, 5),
        src_nodata=[[0, 0]] * n,
        harmonized=[True, True],
        dtype="uint16",
        nodata=0,
        cloud=cloud,
        rules=rules,
    )


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 3), st.integers(0, 4), st.integers(0, 2**32 - 1))
def test_a_region_built_as_blocks_equals_one_block(o: int, d: int, seed: int) -> None:
    """Each block read with its halo gives exactly the pixels of the whole region at once."""
    rules = CompositeRules(open_radius=o, dilate_radius=d, cloud_max=70.0)
    halo = rules.halo
    rng = np.random.default_rng(seed)
    size, bs = 24, 8
    values, scl, cloud = _block_inputs(rng, size + 2 * halo, size + 2 * halo)
    whole, whole_cov = _composite(values, scl, cloud, rules)
    for by in range(0, size, bs):
        for bx in range(0, size, bs):
            win = (slice(None), slice(by, by + bs + 2 * halo), slice(bx, bx + bs + 2 * halo))
            part, cov = _composite(values[:, :, win[1], win[2]], scl[win], cloud[win], rules)
            np.testing.assert_array_equal(part, whole[:, by : by + bs, bx : bx + bs])
            np.testing.assert_array_equal(cov, whole_cov[by : by + bs, bx : bx + bs])


def test_a_buffer_changes_the_composite_and_coverage_as_documented() -> None:
    """Known answer: one observation has a cloud pixel; dilate 1 also drops its 4 neighbours."""
    h = w = 5
    values = np.full((2, 1, h, w), 100, dtype=np.uint16)
    values[1] = 300
    scl = np.full((2, h, w), 4, dtype=np.uint8)
    scl[1, 2, 2] = 9
    args = dict(
        corrections=[0, 0],
        solar_days=["a", "b"],
        keep=(4,),
        src_nodata=[[0], [0]],
        harmonized=[False],
        dtype="uint16",
        nodata=0,
    )
    plain, plain_cov = composite_block(values, scl, **args)
    halo = CompositeRules(dilate_radius=1).halo
    padded = np.pad(values, ((0, 0), (0, 0), (halo, halo), (halo, halo)), mode="edge")
    padded_scl = np.pad(scl, ((0, 0), (halo, halo), (halo, halo)), mode="edge")
    out, cov = composite_block(padded, padded_scl, rules=CompositeRules(dilate_radius=1), **args)
    assert plain_cov.sum() == 2 * 25 - 1 and cov.sum() == 2 * 25 - 5
    dropped = {(1, 2), (2, 1), (2, 2), (2, 3), (3, 2)}
    for y in range(h):
        for x in range(w):
            assert cov[y, x] == (1 if (y, x) in dropped else 2)
            assert out[0, y, x] == (100 if (y, x) in dropped else 200)
    assert plain[0, 1, 2] == 200 and plain[0, 2, 2] == 100

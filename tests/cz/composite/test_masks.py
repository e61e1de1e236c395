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
from cz.composite.masks import (
    cleaned_validity,
    dilate,
    erode,
    halo_pixels,
    open_,
    rejection_sets,
)


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
    scl = np.array([[[4, 4, 9, 4, 1, 1]]], dtype=np.uint8)
    cloud = np.array([[[10.0, 60.0, 0.0, np.nan, 0.0, 90.0]]], dtype=np.float32)
    data = np.ones(scl.shape, dtype=bool)
    hard, cloudy = rejection_sets(scl, (4,), (9,), cloud, 50.0, data)
    # class 9 is cleaned, a probability above 50 is cloud; class 1 is rejected whatever else
    assert cloudy.tolist() == [[[False, True, True, False, False, False]]]
    assert hard.tolist() == [[[False, False, False, False, True, True]]]
    hard, cloudy = rejection_sets(None, None, (), cloud, 10.0, data)
    # "more than the maximum": 10 % passes a 10 % ceiling; NaN (unknown) rejects nothing
    assert cloudy.tolist() == [[[False, True, False, False, False, True]]] and not hard.any()
    hard, cloudy = rejection_sets(scl, (4,), (9,), None, None, ~data)
    assert not hard.any() and not cloudy.any()  # a pixel without data is neither


def test_cleaning_never_admits_what_is_not_cloud() -> None:
    """An isolated cloud pixel is opened away and counts; an isolated hard-rejected pixel (neither
    clear nor cloud) stays invalid whatever the radii; a pixel without data is no seed."""
    clear = np.ones((1, 1, 9), dtype=bool)
    cloudy = np.zeros((1, 1, 9), dtype=bool)
    clear[0, 0, 0:3] = False  # no data (or saturated: neither clear nor cloud) ...
    clear[0, 0, 7] = False  # ... and a one-pixel cloud
    cloudy[0, 0, 7] = True
    assert cleaned_validity(clear, cloudy, 0, 2).tolist() == [
        [[False, False, False, True, True, False, False, False, False]]
    ]
    opened = cleaned_validity(clear, cloudy, 1, 2)
    assert opened.tolist() == [[[False, False, False, True, True, True, True, True, True]]]
    assert cleaned_validity(clear, cloudy, 0, 0).tolist() == clear.tolist()


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


def test_a_days_pixel_comes_from_a_clear_item_else_a_cloudy_one_never_a_hard_rejected_one() -> None:
    """Two tiles of one solar day over the same 5 x 5 ground, one date: the centre is a cloud
    speck in one tile and saturated (SCL 1) in the other. Opened with radius 1 the speck is no
    cloud, so the day's observation there is the cloudy tile's number, in either plan order; a
    saturated pixel alone is never an observation, and a clear pixel wins over both."""
    args = dict(
        corrections=[0, 0],
        solar_days=["d", "d"],
        keep=(4,),
        src_nodata=[[0], [0]],
        harmonized=[False],
        dtype="uint16",
        nodata=0,
    )
    rules = CompositeRules(open_radius=1)
    halo = rules.halo
    for cloudy_first in (True, False):
        values = np.full((2, 1, 5 + 2 * halo, 5 + 2 * halo), 100, dtype=np.uint16)
        scl = np.full((2, 5 + 2 * halo, 5 + 2 * halo), 4, dtype=np.uint8)
        c = halo + 2
        cloudy, bad = (0, 1) if cloudy_first else (1, 0)
        values[cloudy, 0, c, c], scl[cloudy, c, c] = 111, 9
        values[bad, 0, c, c], scl[bad, c, c] = 222, 1
        values[:, 0, c, c + 1] = 300, 400  # clear in both: the first item
        values[bad, 0, c + 1, c] = 500  # clear in the saturated tile, cloudy in the other
        scl[cloudy, c + 1, c] = 9
        values[bad, 0, c - 1, c] = 600  # saturated in one tile, nodata in the other
        scl[bad, c - 1, c] = 1
        values[cloudy, 0, c - 1, c] = 0
        out, cov = composite_block(values, scl, rules=rules, **args)
        assert (out[0, 2, 2], cov[2, 2]) == (111, 1)
        assert out[0, 2, 3] == 300 and out[0, 3, 2] == 500
        assert (out[0, 1, 2], cov[1, 2]) == (0, 0)
        _plain, plain_cov = composite_block(values, scl, rules=CompositeRules(), **args)
        assert plain_cov[halo + 2, halo + 2] == 0  # without cleaning the speck is rejected

"""Grid geometry (spec 2.1, 3.3, 6) against independent references."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.format import (
    cell_slice,
    chunk_key,
    grid_shape,
    level_resolution,
    level_shapes,
    level_transform,
    pixel_centres,
)
from tests.chronozarr.helpers import (
    ref_level_shapes,
)

FAST = settings(max_examples=40, deadline=None)


# --- grid geometry (spec 2.1, 3.3, 6) -------------------------------------------------------------


@FAST
@given(h=st.integers(1, 5000), w=st.integers(1, 5000), cs=st.sampled_from([2, 4, 6, 256, 512]))
def test_level_shapes(h: int, w: int, cs: int) -> None:
    shapes = level_shapes(h, w, cs)
    assert shapes == ref_level_shapes(h, w, cs)
    assert grid_shape(*shapes[-1], cs) == (1, 1)
    assert all(grid_shape(*s, cs) != (1, 1) for s in shapes[:-1])


def test_level_transform_and_centres() -> None:
    tf = [10.0, 0.0, 746090.0, 0.0, -10.0, 2540440.0]
    assert level_transform(tf, 1) == [20.0, 0.0, 746090.0, 0.0, -20.0, 2540440.0]
    assert level_resolution(10.0, 3) == 80.0
    ys, xs = pixel_centres(tf, 2, 3)
    assert ys == [2540435.0, 2540425.0] and xs == [746095.0, 746105.0, 746115.0]
    assert cell_slice(1, 1, 512, 700, 600) == (slice(512, 700), slice(512, 600))
    assert chunk_key("0/data", 3, 1, 2, has_band=True) == "0/data/c/3/0/1/2"
    assert chunk_key("0/mask", 3, 1, 2, has_band=False) == "0/mask/c/3/1/2"

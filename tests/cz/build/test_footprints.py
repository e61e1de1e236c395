"""The items touching a group's blocks (decision 0060): :class:`FootprintIndex` against the
definition, each (footprint, box) pair tested with ``shapely.intersects`` one by one."""

from __future__ import annotations

from typing import Any

import shapely
from hypothesis import given, settings
from hypothesis import strategies as st
from shapely.geometry import Polygon, box

import cz.build.footprints as footprints
from cz.build.footprints import FootprintIndex

COORD = st.integers(min_value=0, max_value=40).map(float)


@st.composite
def shapes(draw: st.DrawFn) -> Any:
    """A footprint: none (read everywhere), an empty one, a box or a triangle (its bounds
    overlap boxes its area does not touch)."""
    kind = draw(st.sampled_from(["none", "empty", "box", "triangle"]))
    if kind == "none":
        return None
    if kind == "empty":
        return Polygon()
    x0, y0 = draw(COORD), draw(COORD)
    w, h = draw(st.integers(1, 20)), draw(st.integers(1, 20))
    if kind == "box":
        return box(x0, y0, x0 + w, y0 + h)
    return Polygon([(x0, y0), (x0 + w, y0), (x0, y0 + h)])


BOXES = st.lists(
    st.tuples(COORD, COORD, st.integers(1, 10), st.integers(1, 10)).map(
        lambda b: box(b[0], b[1], b[0] + b[2], b[1] + b[3])
    ),
    max_size=8,
)


def expected(months: list[list[Any]], t: int, boxes: list[Any]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for b, block in enumerate(boxes):
        items = [
            i
            for i, shape in enumerate(months[t])
            if shape is None or (not shape.is_empty and shapely.intersects(shape, block))
        ]
        if items:
            out[b] = items
    return out


@settings(max_examples=150, deadline=None)
@given(
    months=st.lists(st.lists(shapes(), max_size=6), min_size=1, max_size=3),
    queries=st.lists(st.tuples(st.integers(0, 2), BOXES), max_size=4),
    kept=st.integers(1, 4),
)
def test_touching_is_the_pairwise_predicate(
    months: list[list[Any]], queries: list[tuple[int, list[Any]]], kept: int
) -> None:
    made: list[tuple[int, int]] = []

    def footprint_of(t: int, i: int) -> Any:
        made.append((t, i))
        return months[t][i]

    old = footprints.KEPT
    footprints.KEPT = kept  # footprints made again when they were dropped: the same answer
    try:
        index = FootprintIndex(len(months), lambda t: len(months[t]), footprint_of)
        for t, boxes in queries:
            t %= len(months)
            assert index.touching(t, boxes) == expected(months, t, boxes)
        assert len(index._made) <= kept
    finally:
        footprints.KEPT = old

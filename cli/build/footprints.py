"""Which of a month's items touch which blocks, for a cluster build's groups (decision 0060).

A region's cluster build asks, group of cells by group, which items of each month touch each
block (the predicate of :func:`cz.build.blocks.blocks_touched`: the item's footprint in the
grid's CRS intersects the block's box). Keeping every item's projected footprint for that (an
STRtree per month, decision 0058) costs ~5 kB an item on the client: 90 MB for 24,000 items.
:class:`FootprintIndex` keeps four floats an item (the footprint's bounds) and makes the
footprints of the items whose bounds overlap a group's boxes when asked, keeping the last
:data:`KEPT` of them (a group's neighbour in Z-order reads the same tiles): the same answer
(``shapely.intersects`` of the footprint and each box, what the tree's query tested), memory
that does not grow with the region.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

#: Footprints kept made (a few MB: a footprint is ~5 kB of GEOS and Python objects).
KEPT = 1024


class FootprintIndex:
    """The bounds of every item's footprint, month by month, made once on first use;
    ``footprint_of(t, i)`` makes item i of month t's footprint (or None: read everywhere)."""

    def __init__(self, n_months: int, sizes: Callable[[int], int], footprint_of: Any) -> None:
        self.sizes, self.footprint_of = sizes, footprint_of
        self._bounds: list[tuple[np.ndarray, np.ndarray, list[int]] | None] = [None] * n_months
        self._made: OrderedDict[tuple[int, int], Any] = OrderedDict()

    def _shape(self, t: int, i: int) -> Any:
        key = (t, i)
        if key in self._made:
            self._made.move_to_end(key)
            return self._made[key]
        shape = self.footprint_of(t, i)
        self._made[key] = shape
        if len(self._made) > KEPT:
            self._made.popitem(last=False)
        return shape

    def _month(self, t: int) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Month t's items with a footprint (their indices and bounds) and those without."""
        known = self._bounds[t]
        if known is None:
            inside, bounds, nowhere = [], [], []
            for i in range(self.sizes(t)):
                shape = self._shape(t, i)
                if shape is None:
                    nowhere.append(i)
                else:
                    inside.append(i)
                    bounds.append(shape.bounds)
            known = (
                np.asarray(inside, dtype=np.int64),
                np.asarray(bounds, dtype=np.float64).reshape(-1, 4),
                nowhere,
            )
            self._bounds[t] = known
        return known

    def touching(self, t: int, boxes: list[Any]) -> dict[int, list[int]]:
        """Block position (in ``boxes``) -> the items of month t touching it, in plan order."""
        import shapely

        inside, bounds, nowhere = self._month(t)
        hits: dict[int, set[int]] = {}
        if len(inside) and boxes:
            box_bounds = np.asarray([b.bounds for b in boxes], dtype=np.float64)
            # bounds overlap (closed, as GEOS's envelope test), then the exact predicate
            near = (
                (bounds[None, :, 0] <= box_bounds[:, None, 2])
                & (bounds[None, :, 2] >= box_bounds[:, None, 0])
                & (bounds[None, :, 1] <= box_bounds[:, None, 3])
                & (bounds[None, :, 3] >= box_bounds[:, None, 1])
            )
            box_array = np.asarray(boxes, dtype=object)
            for k in np.flatnonzero(near.any(axis=0)).tolist():
                which = np.flatnonzero(near[:, k])
                shape = self._shape(t, int(inside[k]))
                for b in which[shapely.intersects(shape, box_array[which])].tolist():
                    hits.setdefault(b, set()).add(int(inside[k]))
        for b in range(len(boxes)) if nowhere else ():
            hits.setdefault(b, set()).update(nowhere)
        return {b: sorted(items) for b, items in sorted(hits.items())}

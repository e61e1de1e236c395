"""The cell sources of a build or an append on a cluster (decisions 0021, 0022, 0026).

A *cell source* (:func:`chronozarr.write.is_cell_source`) produces one cell's planes on the
worker that writes the cell: :class:`CompositeSource` composites the cell's months there with the
same :func:`~cz.build.tasks.compute_block` and :class:`~cz.build.spill.SpillPlanes` as a local
build, keeping them in the worker's memory (never the client's disk), and reports what went into
them (:meth:`CellPlanes.summary`). :class:`AppendSource` adds gap-fill's look-back before the
first new month, read from the store on the worker. Both are picklable and sent to the cluster
once (the item references of every month, unsigned: a worker signs a block's items when it reads
them).
"""

from __future__ import annotations

import pickle
import threading
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

import chronozarr
from cz.build.blocks import blocks_touched, footprint, grid_blocks, item_refs, sign_refs
from cz.build.errors import AppendRefusedError
from cz.build.footprints import FootprintIndex
from cz.build.options import BuildOptions
from cz.build.spill import SpillPlanes
from cz.build.store_args import carry_forward_months, gap_method
from cz.build.tasks import (
    BlockResult,
    BlockTask,
    CompositeContext,
    composite_context,
    compute_block,
)
from cz.composite import mask_from_source
from cz.load import ItemRef
from cz.plan import Plan
from cz.recipe import Recipe

__all__ = [
    "AppendSource",
    "CellPlanes",
    "CompositeSource",
    "RegionSource",
    "SourceArray",
    "make_source",
]


class _LazySpill:
    """The :class:`~cz.build.spill.Spill` interface over composites computed on demand, in the
    worker's memory: the raw composite of (month, block) is computed the first time it is asked
    for, once, and kept (compressed) for the rest of the task."""

    def __init__(self, source: CompositeSource, row: int, col: int) -> None:
        self.source = source
        self.row = row
        self.col = col
        self.results: dict[int, BlockResult] = {}

    def has(self, t: int, row: int, col: int) -> bool:
        return (t, row, col) in self.source.members

    def _result(self, t: int) -> BlockResult:
        if t not in self.results:
            self.results[t] = self.source.composite(
                self.source.task(t, self.row, self.col), self.source.ctx
            )
        return self.results[t]

    def get(self, t: int, row: int, col: int, kind: str) -> bytes:
        result = self._result(t)
        return result.values if kind == "v" else result.coverage


class CellPlanes:
    """One cell's final planes for the writer, and what went into them (the task's summary)."""

    def __init__(self, source: CompositeSource, row: int, col: int, times: Sequence[int]):
        self.spill = _LazySpill(source, row, col)
        self.times = list(times)
        self.row, self.col = row, col
        self.planes = SpillPlanes(
            self.spill,  # type: ignore[arg-type]  # the Spill interface (has, get)
            n_months=len(source.months),
            shape=source.shape,
            cs=source.cs,
            n_band=source.n_band,
            dtype=source.dtype,
            nodata=source.nodata,
            max_age=source.max_age,
            gap=source.gap,
            readers=1,
        )
        self._todo = set(self.times)
        self.valid = 0
        self.filled = 0

    def __call__(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, r, c = self.planes, self.row, self.col
        src = p.source(t, r, c)
        if t in self._todo:  # the summary's shares: each of the task's own months once
            self._todo.discard(t)
            self.valid += int(np.count_nonzero(src >= 0))
            self.filled += int(np.count_nonzero(src > 0))
        return p.values(t, r, c), mask_from_source(src), p.coverage(t, r, c)

    def summary(self) -> dict[str, Any]:
        results = self.spill.results
        return {
            "months": len(self.times),
            # indices into the month's item references: a few bytes per item, not its id
            "items_read": {
                str(t): sorted(self.spill.source.index_of(t, i) for i in res.items_read)
                for t, res in results.items()
            },
            "observations": {str(t): res.observations for t, res in results.items()},
            "skipped": [s.to_json() for res in results.values() for s in res.skipped],
            "valid": self.valid,
            "filled": self.filled,
        }


@dataclass
class CompositeSource:
    """The build's cell source for ``chronozarr.encode`` (picklable; scattered once).

    ``refs[t]`` are month t's item references (trimmed STAC dicts: each item once, not once
    per task), unsigned: :meth:`task` signs a block's items on the worker as it reads them
    (decision 0021: a token signed on the client at plan time expires on a long build);
    ``members[(t, row, col)]`` the indices of those touching the block. A part of a region
    (:meth:`RegionSource.part`) holds only the items touching its cells: ``plan_index[t]`` maps
    its references to their index among the month's items in the plan (the summary's indices).
    """

    ctx: CompositeContext
    months: list[str]
    refs: Sequence[tuple[ItemRef, ...]]
    members: dict[tuple[int, int, int], tuple[int, ...]]
    windows: dict[tuple[int, int], tuple[int, int, int, int]]
    shape: tuple[int, int]
    cs: int
    n_band: int
    dtype: str
    nodata: float | None
    max_age: int
    gap: str = "carry-forward"
    has_mask: bool = True
    has_coverage: bool = True
    # the composite of one (month, block): bench/scale_harness.py swaps in one that reads nothing
    composite: Callable[[BlockTask, CompositeContext], BlockResult] = compute_block
    plan_index: list[tuple[int, ...]] | None = None
    _shape4: tuple[int, int, int, int] = field(init=False)

    def __post_init__(self) -> None:
        self._shape4 = (len(self.months), self.n_band, self.shape[0], self.shape[1])

    @property
    def ndim(self) -> int:
        return 4

    @property
    def shape4(self) -> tuple[int, int, int, int]:
        return self._shape4

    def _planned(self, t: int, i: int) -> int:
        return i if self.plan_index is None else self.plan_index[t][i]

    def index_of(self, t: int, item_id: str) -> int:
        """The index of item ``item_id`` among month ``t``'s items in the plan."""
        return self._planned(t, next(i for i, ref in enumerate(self.refs[t]) if ref.id == item_id))

    def members_of(self, t: int, row: int, col: int) -> tuple[int, ...]:
        """The indices (among month ``t``'s items in the plan) of the items touching block
        (row, col)."""
        return tuple(self._planned(t, i) for i in self.members.get((t, row, col), ()))

    def task(self, t: int, row: int, col: int) -> BlockTask:
        """The composite task of (month, block), its items signed now (read time)."""
        items = sign_refs([self.refs[t][i] for i in self.members[(t, row, col)]])
        return BlockTask(t, self.months[t], row, col, self.windows[(row, col)], items)

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> CellPlanes:
        return CellPlanes(self, row, col, times)


class PackedRefs(Sequence[tuple[ItemRef, ...]]):
    """A group's item references, month by month, each month's a zlib-compressed pickle
    (decision 0065): the client makes a group's context a month at a time and sends it without
    keeping ~8 kB of Python objects an item while the group is out; a worker unpacks a month
    when a task first reads it, and keeps it."""

    def __init__(self) -> None:
        self.data: list[bytes] = []
        self._refs: dict[int, tuple[ItemRef, ...]] = {}

    def append(self, refs: tuple[ItemRef, ...]) -> None:
        """Pack the next month's references."""
        self.data.append(zlib.compress(pickle.dumps(refs, protocol=pickle.HIGHEST_PROTOCOL), 1))

    def __getstate__(self) -> list[bytes]:
        return self.data

    def __setstate__(self, data: list[bytes]) -> None:
        self.data, self._refs = data, {}

    def __len__(self) -> int:
        return len(self.data)

    def _month(self, t: int) -> tuple[ItemRef, ...]:
        refs = self._refs.get(t)
        if refs is None:  # two threads may both unpack: the same references either way
            refs = self._refs[t] = pickle.loads(zlib.decompress(self.data[t]))
        return refs

    @overload
    def __getitem__(self, t: int) -> tuple[ItemRef, ...]: ...

    @overload
    def __getitem__(self, t: slice) -> Sequence[tuple[ItemRef, ...]]: ...

    def __getitem__(self, t: int | slice) -> Any:
        if isinstance(t, slice):
            return [self._month(k) for k in range(*t.indices(len(self)))]
        return self._month(range(len(self))[t])


class RegionSource:
    """The build's cell source on a cluster, in parts (decision 0058): what every block shares
    (the composite rules, the months, the grid) and the plan's items; :meth:`part` makes the
    :class:`CompositeSource` of a group of cells (the items touching them, trimmed and
    unsigned, and which touch which block) when ``encode`` submits the group's first task. No
    process holds the members or item references of the whole region at once."""

    def __init__(self, recipe: Recipe, plan: Plan, options: BuildOptions) -> None:
        grid = plan.grid
        self.recipe, self.plan = recipe, plan
        self.ctx = composite_context(recipe, plan, options)
        self.shape4 = (len(plan.months), len(recipe.bands), grid.shape[0], grid.shape[1])
        self.dtype = recipe.store.dtype
        self.composite: Callable[[BlockTask, CompositeContext], BlockResult] = compute_block
        months = plan.months
        self._index = FootprintIndex(
            len(months),
            lambda t: len(months[t].items),
            lambda t, i: footprint(months[t].items[i], plan.grid.crs),
        )  # the bounds of the items' footprints, not their trees (decision 0060)

    def _touching(
        self, t: int, boxes: list[Any]
    ) -> dict[int, list[int]]:  # block position -> items of month t touching it, in plan order
        return self._index.touching(t, boxes)

    def part(self, rows: range, cols: range) -> CompositeSource:
        """The cell source of the cells ``rows`` x ``cols`` (see the class docstring)."""
        from shapely.geometry import box

        from cz.build.cluster_write import release_freed

        release_freed()  # the groups before this one are (mostly) done: their pages back

        recipe, plan, halo = self.recipe, self.plan, self.ctx.rules.halo
        a, _, c, _, e, f = plan.grid.transform
        windows = {(r, col): w for r, col, w in grid_blocks(plan.grid, rows, cols)}
        cells = list(windows)
        boxes = [
            box(c + a * (x0 - halo), f + e * (y1 + halo), c + a * (x1 + halo), f + e * (y0 - halo))
            for y0, y1, x0, x1 in windows.values()
        ]  # as blocks_touched draws them
        refs = PackedRefs()  # packed a month at a time: no group's items unpacked at once
        index: list[tuple[int, ...]] = []
        members: dict[tuple[int, int, int], tuple[int, ...]] = {}
        for t, month in enumerate(plan.months):
            touching = self._touching(t, boxes) if month.items and boxes else {}
            used = sorted({i for items in touching.values() for i in items})
            at = {i: n for n, i in enumerate(used)}
            sub = month.model_copy(update={"items": [month.items[i] for i in used]})
            refs.append(tuple(item_refs(sub, recipe, sign=False)) if used else ())
            index.append(tuple(used))
            for b, items in touching.items():
                members[(t, *cells[b])] = tuple(at[i] for i in items)
        return CompositeSource(
            ctx=self.ctx, months=[m.month for m in plan.months], refs=refs,
            members=members,
            windows=windows, shape=(self.shape4[2], self.shape4[3]),
            cs=recipe.store.layout.chunk_size, n_band=len(recipe.bands), dtype=recipe.store.dtype,
            nodata=recipe.store.effective_nodata, max_age=carry_forward_months(recipe),
            gap=gap_method(recipe), composite=self.composite, plan_index=index,
        )  # fmt: skip

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> CellPlanes:
        return self.part(range(row, row + 1), range(col, col + 1)).open_cell(
            row, col, ys, xs, times
        )


class SourceArray:
    """What ``encode`` checks of its ``data`` (shape, dtype, ndim) plus the cell source (and
    its parts, when it has them)."""

    def __init__(self, source: CompositeSource | RegionSource) -> None:
        self.source = source
        self.shape = source.shape4
        self.dtype = np.dtype(source.dtype)
        self.ndim = 4
        self.has_mask = True
        self.has_coverage = True
        if isinstance(source, RegionSource):
            self.part = source.part

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> CellPlanes:
        return self.source.open_cell(row, col, ys, xs, times)


def make_source(recipe: Recipe, plan: Plan, options: BuildOptions) -> CompositeSource:
    """The cell source of a plan: item-to-block assignment by an STRtree (blocks_touched); the
    items unsigned (the workers sign them at read time)."""
    grid = plan.grid
    ctx = composite_context(recipe, plan, options)
    refs: list[tuple[ItemRef, ...]] = []
    members: dict[tuple[int, int, int], tuple[int, ...]] = {}
    for t, month in enumerate(plan.months):
        touched = blocks_touched(month, grid, ctx.rules.halo) if month.items else {}
        refs.append(tuple(item_refs(month, recipe, sign=False)) if touched else ())
        for (row, col), idx in touched.items():
            members[(t, row, col)] = tuple(idx)
    return CompositeSource(
        ctx=ctx,
        months=[m.month for m in plan.months],
        refs=refs,
        members=members,
        windows={(r, c): w for r, c, w in grid_blocks(grid)},
        shape=(grid.shape[0], grid.shape[1]),
        cs=recipe.store.layout.chunk_size,  # the plan's grid is cut in the layout's cells
        n_band=len(recipe.bands),
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        max_age=carry_forward_months(recipe),
        gap=gap_method(recipe),
    )


class _History:
    """Gap-fill's look-back before the first new month, read from the store on the worker:
    month ``t < 0`` is the store's timestep ``n_old + t`` (values and coverage of level 0), as
    :func:`cz.build.appending._store_history` reads it for a local append."""

    def __init__(self, source: AppendSource) -> None:
        self.source = source

    def __call__(self, t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        index = self.source.n_old + t
        if index < 0:
            return None
        reader = self.source.reader()
        values = reader.read_cell(index, row, col, 0)
        coverage = reader.plane_cell("coverage", index, row, col, 0)
        return np.asarray(values), np.asarray(coverage, dtype=np.uint8)


class AppendSource:
    """The append's cell source for ``chronozarr.append`` (picklable; sent to the cluster once):
    the new months' :class:`CompositeSource` and the store's target, from which each worker
    reads gap-fill's history with its own reader. The root it opens is the old one: the append
    writes the new root only after every cell is written."""

    def __init__(self, composites: CompositeSource, target: Any, n_old: int):
        self.composites = composites
        self.target = target
        self.n_old = n_old
        self.shape = composites.shape4
        self.dtype = np.dtype(composites.dtype)
        self.ndim = 4
        self.has_mask = True
        self.has_coverage = True
        self._reader: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"composites": self.composites, "target": self.target, "n_old": self.n_old}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["composites"], state["target"], state["n_old"])  # type: ignore[misc]

    def reader(self) -> Any:
        with self._lock:  # one reader per process, shared by its threads
            if self._reader is None:
                self._reader = chronozarr.open_store(self.target)
                if self._reader.n_time != self.n_old:  # another append got there first
                    raise AppendRefusedError(
                        f"{self.target.url} has {self._reader.n_time} timesteps, this append "
                        f"continues {self.n_old}: it was appended to meanwhile"
                    )
            return self._reader

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> CellPlanes:
        planes = CellPlanes(self.composites, row, col, times)
        planes.planes.history = _History(self)
        return planes

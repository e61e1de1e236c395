"""The fused stage of a local encode (decisions 0057, 0059): levels 0 to ``top`` in one stage.

A task per (level-``top`` cell, time range) writes, timestep by timestep, every level-0 cell
under that cell and then each coarser cell from the planes of the cells below it, still in
memory: level k at t is the block mean of level k-1 at t (spec 6). The codecs are lossless, so
these are the values the store holds, and the bytes are the ones the stages by level write when
they read level k-1 back (``tests/chronozarr/test_writer_fused.py`` compares every object).
The cell size is even, so no 2 x 2 block straddles two cells: each cell below is reduced on
its own and placed, which is the block mean of their region (no copy of the region).

The last task running shares its timesteps with a helper thread (:class:`Tail`, decision 0067):
the cells right below the top cell are taken one by one from a shared list, and once every
task has started and the others have finished, the helper takes them too. Each cell (and the
cells under it) is written by one thread at a time, its calls in the same order as before, and
the top cell waits for all of them, so the bytes do not change and the thread a finished task
left idle is not idle at the end of the stage.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from chronozarr.format import LevelInfo, cell_slice
from chronozarr.write._cell_tasks import ArrayInput, PlaneTriple
from chronozarr.write._cells import (
    CellResult,
    CellWriter,
    Layout,
    Planes,
    last_in_shard,
)

__all__ = ["FusedContext", "Tail", "fused_task"]

#: timesteps of planes a coarser cell keeps: the one being written and the anchors its
#: residuals and its parent ask for (a level-0 cell's planes are views and cost nothing)
_KEEP = 3


class Tail:
    """The fused stage's tasks started and running, and the helper thread the last one running
    writes half of each timestep's cells on (see the module docstring). ``threads``: the
    stage's threads; with one, there is no helper."""

    def __init__(self, tasks: int, threads: int) -> None:
        self.tasks, self.threads = tasks, threads
        self.started = self.running = 0
        self.lock = threading.Lock()
        self.pool: ThreadPoolExecutor | None = None

    def begin(self) -> None:
        with self.lock:
            self.started += 1
            self.running += 1

    def end(self) -> None:
        with self.lock:
            self.running -= 1

    def helper(self) -> ThreadPoolExecutor | None:
        """The helper when this task is the last one running (every task started, the others
        done) and the stage has more than one thread, else None."""
        with self.lock:
            if self.threads < 2 or self.started < self.tasks or self.running != 1:
                return None
            if self.pool is None:
                self.pool = ThreadPoolExecutor(1, thread_name_prefix="cz-fused-tail")
            return self.pool

    def close(self) -> None:
        """Stop the helper thread (the stage is done)."""
        with self.lock:
            pool, self.pool = self.pool, None
        if pool is not None:
            pool.shutdown(wait=True)


@dataclass
class FusedContext:
    """What every task of the fused stage shares: ``levels`` are levels 0 to ``top``;
    ``tail``: the tasks' count and the helper of the last one running (None: no helper)."""

    layout: Layout
    levels: list[LevelInfo]
    source: ArrayInput
    samples: dict[tuple[int, int], dict[int, bytes]] = field(default_factory=dict)
    tail: Tail | None = None


@dataclass
class _Cell:
    """One cell of the tree under a task's cell: its planes, its writer, the cells below."""

    level: int
    planes: Planes
    writer: CellWriter
    below: list[_Cell]

    def write(self, t: int, last: bool, tail: Tail | None = None) -> None:
        """Timestep ``t`` of the cells below, then of this one (it reduces theirs). With a
        ``tail``, the cells below are taken one by one from a shared list, and once this task
        is the last one running a helper thread takes them too (see the module docstring)."""
        if tail is None or len(self.below) < 2:
            for cell in self.below:
                cell.write(t, last)
        else:
            _shared_write(self.below, t, last, tail)
        self.writer.write(t, last_in_shard=last)

    def results(self, out: list[list[CellResult]]) -> None:
        for cell in self.below:
            cell.results(out)
        out[self.level].append(self.writer.result)


def _shared_write(cells: list[_Cell], t: int, last: bool, tail: Tail) -> None:
    """Timestep ``t`` of ``cells``, each written by whichever thread takes it next: this one,
    and the tail's helper once this task is the last one running (asked before each cell)."""
    taken = iter(cells)
    lock = threading.Lock()

    def take() -> _Cell | None:
        with lock:
            return next(taken, None)

    def drain() -> None:
        while (cell := take()) is not None:
            cell.write(t, last)

    shared: Future[None] | None = None
    try:
        while (cell := take()) is not None:
            if shared is None and (helper := tail.helper()) is not None:
                shared = helper.submit(drain)
            cell.write(t, last)
    finally:
        if shared is not None:
            shared.result()  # before the cell above reduces these; a failure there raises here


def _reduced(
    layout: Layout, info: LevelInfo, row: int, col: int, cells: list[_Cell]
) -> Callable[[int], PlaneTriple]:
    """Planes of level ``info``'s cell (row, col) at t from the planes of ``cells`` below."""
    cs = layout.cs
    ys, xs = cell_slice(row, col, cs, info.shape[-2], info.shape[-1])
    shape = (ys.stop - ys.start, xs.stop - xs.start)  # ceil(half the region below) (spec 6)

    def reduced(t: int) -> PlaneTriple:
        values = np.empty((layout.n_band, *shape), dtype=layout.dtype)
        mask = np.empty(shape, dtype=np.uint8) if layout.has_mask else None
        cov = np.empty(shape, dtype=np.uint8) if layout.has_coverage else None
        for cell in cells:
            part = cell.writer.reduced(t)
            r, c = cell.writer.row, cell.writer.col
            y, x = (r - 2 * row) * cs // 2, (c - 2 * col) * cs // 2
            h, w = part[0].shape[-2:]
            values[:, y : y + h, x : x + w] = part[0]
            for out, got in ((mask, part[1]), (cov, part[2])):
                if out is not None:
                    assert got is not None  # the layout has the plane: every source gives it
                    out[y : y + h, x : x + w] = got
        return values, mask, cov

    return reduced


def _tree(
    ctx: FusedContext, k: int, row: int, col: int, times: range, below_top: bool = False
) -> _Cell:
    """Cell (row, col) of level ``k`` and every cell under it down to level 0; a cell
    ``below_top`` keeps its reduced planes for the cell above (decision 0063)."""
    layout, info = ctx.layout, ctx.levels[k]
    if k == 0:
        ys, xs = cell_slice(row, col, layout.cs, info.shape[-2], info.shape[-1])
        planes = Planes(ctx.source.open_cell(row, col, ys, xs, times))
        writer = CellWriter(
            layout, info.path, row, col, planes, volatility=True,
            encoded=ctx.samples.get((row, col)), keep_reduced=below_top,
        )  # fmt: skip
        return _Cell(0, planes, writer, [])
    rows, cols = ctx.levels[k - 1].grid
    below = [
        _tree(ctx, k - 1, r, c, times, below_top=True)
        for r in range(2 * row, min(2 * row + 2, rows))
        for c in range(2 * col, min(2 * col + 2, cols))
    ]
    fn = _reduced(layout, info, row, col, below)
    planes = Planes(fn, keep=_KEEP)
    writer = CellWriter(
        layout, info.path, row, col, planes, volatility=False, keep_reduced=below_top
    )
    return _Cell(k, planes, writer, below)


def fused_task(ctx: FusedContext, task: tuple[tuple[int, int], range]) -> list[list[CellResult]]:
    """Levels 0 to ``top`` under level-``top`` cell ``task[0]`` for a time range, timestep by
    timestep (see the module docstring); the results of each level, level 0 first (its
    volatility terms, spec 5)."""
    (row, col), times_k = task
    top = _tree(ctx, len(ctx.levels) - 1, row, col, times_k)
    times = list(times_k)
    tail = ctx.tail
    if tail is not None:
        tail.begin()
    try:
        for i, t in enumerate(times):
            top.write(t, last_in_shard(ctx.layout, times, i), tail)
    finally:
        if tail is not None:
            tail.end()
    out: list[list[CellResult]] = [[] for _ in ctx.levels]
    top.results(out)
    return out

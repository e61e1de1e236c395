"""A level's cell tasks and their results, held in a few bytes a task (decision 0049).

A cluster build of 10^5 level-0 cells has ~1.3 x 10^5 tasks. Listed as Python tuples and kept
as one :class:`~chronozarr.write._cells.CellResult` each until the commit, they cost the client a
few kB a task: what grew with the region once the contexts and summaries no longer did (decision
0058). Here instead:

- :class:`GridTasks` is the sequence ``split_tasks`` lists for a whole grid (cell-major, each
  cell's time groups in order), made on demand from the task's index: nothing a task.
- :class:`CellResults` keeps what the commit reads of each task's result (its cell, its
  volatility terms; its shard sizes and cell source summary when it has any) in arrays indexed
  by task, so the commit adds them up in task order, as it did from the list of results: the
  bytes are the same.
- :func:`grid_order` is the Z-order of a grid's tasks (:func:`~chronozarr.write._plan.morton`,
  ties in task order) as one integer array; :func:`pyramid_needs` and :func:`pyramid_needed_by`
  are a pyramid task's needs below and its dependents above, computed, not tabulated.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, overload

import numpy as np

from chronozarr.write._cells import CellResult

__all__ = ["CellResults", "GridTasks", "grid_order", "pyramid_needed_by", "pyramid_needs"]

Task = tuple[tuple[int, int], range]


class GridTasks(Sequence[Task]):
    """The (cell, timesteps) tasks of every cell of a ``rows`` x ``cols`` grid, each cell's
    ``groups`` in order: ``split_tasks`` of the grid's cells, row-major, made on demand."""

    def __init__(self, rows: int, cols: int, groups: Sequence[range]) -> None:
        self.rows, self.cols, self.groups = rows, cols, list(groups)

    def __len__(self) -> int:
        return self.rows * self.cols * len(self.groups)

    @overload
    def __getitem__(self, i: int) -> Task: ...
    @overload
    def __getitem__(self, i: slice) -> list[Task]: ...
    def __getitem__(self, i: int | slice) -> Task | list[Task]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        n = len(self)
        i = int(i)
        if not -n <= i < n:
            raise IndexError(i)
        cell, g = divmod(i % n, len(self.groups))
        return divmod(cell, self.cols), self.groups[g]

    def __iter__(self) -> Iterator[Task]:
        for r in range(self.rows):
            for c in range(self.cols):
                for g in self.groups:
                    yield (r, c), g

    def first_of(self, row: int, col: int) -> int:
        """The index of cell (row, col)'s first task."""
        return (row * self.cols + col) * len(self.groups)


def _interleave(v: np.ndarray) -> np.ndarray:
    """The bits of ``v`` (< 2^32) spread to the even bits of a uint64."""
    v = v.astype(np.uint64) & np.uint64(0xFFFFFFFF)
    for shift, mask in (
        (16, 0x0000FFFF0000FFFF),
        (8, 0x00FF00FF00FF00FF),
        (4, 0x0F0F0F0F0F0F0F0F),
        (2, 0x3333333333333333),
        (1, 0x5555555555555555),
    ):
        v = (v | (v << np.uint64(shift))) & np.uint64(mask)
    return v


def grid_order(tasks: GridTasks) -> np.ndarray:
    """The tasks' indices sorted by the Z-order of their cell (``morton``: row bits odd,
    column bits even), ties in task order: ``sorted(range(n), key=lambda i: (morton(cell of
    i), i))`` as an int64 array (8 bytes a task, not a list of Python ints)."""
    cells = np.arange(tasks.rows * tasks.cols, dtype=np.int64)
    r, c = np.divmod(cells, max(1, tasks.cols))
    codes = (_interleave(r) << np.uint64(1)) | _interleave(c)
    per_task = np.repeat(codes, len(tasks.groups))
    return np.argsort(per_task, kind="stable").astype(np.int64)


def pyramid_needs(tasks: GridTasks, below: GridTasks) -> Callable[[int], list[int]]:
    """For task ``i`` of a level: the tasks of the level below it reads, every time group of
    the 2 x 2 cells under its cell (spec 6), as ``needs_below`` lists them."""

    def needs(i: int) -> list[int]:
        r, c = tasks[i][0]
        out: list[int] = []
        for y, x in (
            (2 * r, 2 * c),
            (2 * r, 2 * c + 1),
            (2 * r + 1, 2 * c),
            (2 * r + 1, 2 * c + 1),
        ):
            if y < below.rows and x < below.cols:
                first = below.first_of(y, x)
                out.extend(range(first, first + len(below.groups)))
        return out

    return needs


def pyramid_needed_by(tasks: GridTasks, below: GridTasks) -> Callable[[int], list[int]]:
    """The inverse of :func:`pyramid_needs`: for task ``j`` of the level below, the tasks of
    this level that read it (every time group of the cell above its cell), ascending."""

    def needed_by(j: int) -> list[int]:
        y, x = below[j][0]
        first = tasks.first_of(y // 2, x // 2)
        return list(range(first, first + len(tasks.groups)))

    return needed_by


class CellResults:
    """A stage's :class:`CellResult` per task, folded as they arrive (see the module docstring):
    the cell and volatility terms in arrays, the shard sizes and summaries of the tasks that
    have them. Iterating yields each task's result in task order (what the stage's list of
    results was)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.rows = np.full(n, -1, dtype=np.int64)
        self.cols = np.zeros(n, dtype=np.int64)
        self.vol_sum = np.zeros(n, dtype=np.float64)
        self.vol_count = np.zeros(n, dtype=np.int64)
        self.shards: dict[int, dict[str, int]] = {}
        self.extra: dict[int, Any] = {}

    def put(self, i: int, res: CellResult) -> None:
        """Task ``i``'s result (its terms are kept, the object is not)."""
        self.rows[i], self.cols[i] = res.row, res.col
        self.vol_sum[i], self.vol_count[i] = res.vol_sum, res.vol_count
        if res.shard_sizes:
            self.shards[i] = dict(res.shard_sizes)
        if res.extra is not None:
            self.extra[i] = res.extra

    def __len__(self) -> int:
        return self.n

    def __iter__(self) -> Iterator[CellResult]:
        for i in range(self.n):
            yield CellResult(
                int(self.rows[i]), int(self.cols[i]), dict(self.shards.get(i, {})),
                float(self.vol_sum[i]), int(self.vol_count[i]), self.extra.get(i),
            )  # fmt: skip

    def extras(self) -> list[Any]:
        """The cell source summaries, in task order."""
        return [self.extra[i] for i in sorted(self.extra)]

    def volatility(self, grid: tuple[int, int], value: Callable[[float, int], Any]) -> np.ndarray:
        """Each cell's ``value(sum, count)`` of its tasks' terms, added in task order from 0.0
        as ``merge_results`` adds them (``np.add.at`` adds repeated indices in order)."""
        if (self.rows < 0).any():
            raise ValueError("a task's result is missing")
        flat = self.rows * grid[1] + self.cols
        total = np.zeros(grid[0] * grid[1], dtype=np.float64)
        count = np.zeros(grid[0] * grid[1], dtype=np.int64)
        np.add.at(total, flat, self.vol_sum)
        np.add.at(count, flat, self.vol_count)
        seen = np.zeros(grid[0] * grid[1], dtype=bool)
        seen[flat] = True
        out = np.zeros(grid[0] * grid[1], dtype=np.float32)
        for cell in np.flatnonzero(seen).tolist():
            out[cell] = value(float(total[cell]), int(count[cell]))
        return out.reshape(grid)

    def shard_sizes(self) -> dict[str, int]:
        """Every task's shard sizes, cell by cell in order of the cells' first task, each cell's
        tasks in order (as ``merge_results`` merges them)."""
        if not self.shards:
            return {}
        cells: dict[tuple[int, int], dict[str, int]] = {}
        for i in range(self.n):
            merged = cells.setdefault((int(self.rows[i]), int(self.cols[i])), {})
            merged.update(self.shards.get(i, {}))
        return {key: n for sizes in cells.values() for key, n in sizes.items()}

"""A write as a plan (spec 6, 9; decisions 0017, 0026): the stages of cell tasks, then the commit.

``encode`` and ``append`` each make a :class:`WritePlan`: the levels of the store, one
:class:`Stage` of cell tasks per level (level 0 from the input, each coarser level from the one
below read back from the target, spec 6), and the commit that writes the metadata last (spec 9).
One runner (:class:`chronozarr.write.Runner`) executes the stages, on local threads or on a
dask.distributed cluster, and :meth:`WritePlan.execute` then commits.

A task of stage k may read some tasks of stage k-1 (``Stage.needs``: the 2 x 2 cells below a
pyramid cell, every time group of them). A *pipelined* plan lets a cluster start such a task as
soon as those are written (encode: the tail of level 0 overlaps the coarser levels, decision
0026); otherwise a stage starts when the one before has finished (append: a few months, little
to overlap, and its checks run between levels). A resumed run (decision 0017) finds some results
already (``Stage.done``): those tasks are not run again, and the dependencies on them are dropped
(their chunks are written).

Nothing here touches a store or a cluster: :func:`submission_order` is the order a cluster run
submits the tasks in, a pure function of the stages, so it is tested without dask.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Stage",
    "WritePlan",
    "iter_submission_order",
    "morton",
    "needs_below",
    "submission_order",
]


@dataclass
class Stage:
    """One stage of a plan: ``fn(ctx, task)`` for each task (a picklable function and context).

    ``needs(i)``: the indices of the previous stage's tasks that task ``i`` reads (None: all).
    ``order``: the order a cluster submits this stage's tasks in when it is the first stage
    (default: as listed). ``done``: results a resumed run found (those tasks are not run).
    ``on_result(i, result)`` is called here as each result arrives; ``on_done()`` once every
    result of the stage and of the stages before it has arrived.

    ``group(i)`` and ``group_context(key)`` (both or neither): task ``i`` runs with the context
    of its group, ``group_context(group(i))``, instead of ``ctx`` (decision 0058: a region's
    tasks share per-group contexts, made when the group's first task is submitted and dropped
    when its last one is, so no process holds every group's context at once).

    ``needed_by(j)``: the inverse of ``needs`` (the tasks of this stage that read task ``j`` of
    the previous one, ascending), so that :func:`iter_submission_order` finds a task's
    dependents without a table of every task's. ``sink``: an object whose ``put(i, result)``
    keeps what is needed of each result (a :class:`~chronozarr.write._tasks.CellResults`); the
    runner then keeps no result and hands the sink to the commit instead of the stage's list
    (decision 0049).
    """

    name: str
    fn: Callable[[Any, Any], Any]
    ctx: Any
    tasks: Sequence[Any]
    needs: Callable[[int], Sequence[int]] | None = None
    order: Iterable[int] | None = None
    done: Mapping[int, Any] = field(default_factory=dict)
    on_result: Callable[[int, Any], None] | None = None
    on_done: Callable[[], None] | None = None
    group: Callable[[int], Any] | None = None
    group_context: Callable[[Any], Any] | None = None
    needed_by: Callable[[int], Sequence[int]] | None = None
    sink: Any = None

    def context(self, i: int) -> Any:
        """The context task ``i`` runs with (its group's, or the stage's)."""
        if self.group is None or self.group_context is None:
            return self.ctx
        return self.group_context(self.group(i))

    def todo(self) -> list[int]:
        """The indices of the tasks to run, in this stage's order."""
        return list(self.pending())

    def pending(self) -> Iterator[int]:
        """:meth:`todo`, one index at a time (a region's list of indices is not made)."""
        order = self.order if self.order is not None else range(len(self.tasks))
        done = self.done
        for i in order:
            if int(i) not in done:
                yield int(i)

    def dependents(self, j: int, below: Stage) -> list[int]:
        """The tasks of this stage that wait for task ``j`` of ``below`` (in this stage's
        order when there is no ``needed_by``)."""
        if self.needed_by is not None:
            return [i for i in self.needed_by(j) if i not in self.done]
        table = self.__dict__.get("_dependents")
        if table is None:  # the generic case: every task's needs inverted once
            table = {}
            for i in self.pending():
                for n in self.wanted(i, below):
                    table.setdefault(n, []).append(i)
            self.__dict__["_dependents"] = table
        return list(table.get(j, ()))

    def wanted(self, i: int, below: Stage) -> list[int]:
        """The tasks of ``below`` that task ``i`` waits for: its needs that are still to run."""
        needs = self.needs(i) if self.needs is not None else range(len(below.tasks))
        return sorted(j for j in set(needs) if j not in below.done)


@dataclass
class WritePlan:
    """A write: its stages of cell tasks and the commit of its metadata (spec 9).

    ``commit(results)`` receives every stage's results in task order (found or run) and writes
    what comes after the chunks: coordinates and volatility, the array documents, the root last.
    ``pipelined``: see the module docstring.
    """

    stages: list[Stage]
    commit: Callable[[list[list[Any]]], Any]
    pipelined: bool = True

    def execute(self, runner: Any) -> Any:
        """Run the stages on ``runner`` (a :class:`chronozarr.write.Runner`), then commit."""
        return self.commit(runner.run(self.stages, pipelined=self.pipelined))


def submission_order(stages: Sequence[Stage], pipelined: bool = True) -> list[tuple[int, int]]:
    """Every (stage, task) to run, in the order a cluster submits them: the list of
    :func:`iter_submission_order`."""
    return list(iter_submission_order(stages, pipelined))


def iter_submission_order(
    stages: Sequence[Stage], pipelined: bool = True
) -> Iterator[tuple[int, int]]:
    """Every (stage, task) to run, in the order a cluster submits them, one at a time.

    Pipelined: each later-stage task right after the last task it waits for, so that its
    dependencies exist when it is submitted and the scheduler starts it when they are written;
    a task that waits for nothing (its needs were found done) first; stage 0 in its order.
    Otherwise stage after stage, each in its order. Generated as it is consumed (decision 0049):
    what it holds is the tasks whose needs are partly submitted, not a list of the region's."""
    if not pipelined:
        for k, stage in enumerate(stages):
            for i in stage.pending():
                yield k, i
        return
    if not stages:
        return
    first = [
        (k, i)
        for k in range(1, len(stages))
        for i in stages[k].pending()
        if not stages[k].wanted(i, stages[k - 1])
    ]
    heads = itertools.chain(first, ((0, i) for i in stages[0].pending()))
    waits: dict[tuple[int, int], int] = {}  # tasks partly released: needs still to come
    stack: list[tuple[int, int]] = []
    while True:  # depth first: a task, then each dependent it was the last need of
        item = stack.pop() if stack else next(heads, None)
        if item is None:
            return
        yield item
        k, j = item
        if k + 1 == len(stages):
            continue
        above, ready = stages[k + 1], []
        for i in above.dependents(j, stages[k]):
            left = waits.pop((k + 1, i), None)
            if left is None:
                left = len(above.wanted(i, stages[k]))
            if left > 1:
                waits[(k + 1, i)] = left - 1
            else:
                ready.append((k + 1, i))
        stack += reversed(ready)


def morton(cell: tuple[int, int]) -> int:
    """The Z-order index of a cell: the four cells under a coarser cell are consecutive, at
    every level, so a pipelined run completes coarser cells early (not a row of them last)."""
    r, c = cell
    z = 0
    for bit in range(32):
        z |= ((r >> bit) & 1) << (2 * bit + 1) | ((c >> bit) & 1) << (2 * bit)
    return z


def needs_below(tasks: Sequence[Any], below: Sequence[Any]) -> Callable[[int], list[int]]:
    """For task ``i`` of level k (``tasks[i]`` is ``(cell, times, ...)``): the indices of the
    level k-1 tasks it reads, every time group of the 2 x 2 cells below it (spec 6; a delta's
    reference timesteps may lie in another group, so all of them)."""
    by_cell: dict[tuple[int, int], list[int]] = {}
    for j, task in enumerate(below):
        by_cell.setdefault(tuple(task[0]), []).append(j)

    def needs(i: int) -> list[int]:
        r, c = tasks[i][0]
        cells = ((2 * r, 2 * c), (2 * r, 2 * c + 1), (2 * r + 1, 2 * c), (2 * r + 1, 2 * c + 1))
        return [j for cell in cells for j in by_cell.get(cell, ())]

    return needs

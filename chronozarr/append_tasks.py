"""``append``'s per-cell tasks as plain picklable functions (spec 5, 6, 14; decision 0022).

``append_level0_task`` writes one level-0 cell's new timesteps (values, mask, coverage; the
star-delta anchor/delta choice of spec 14 already fixed in the layout; a sharded store's trailing
shard rewritten with its old bytes kept) and returns its volatility terms; ``append_upper_task``
writes one level-k cell's new timesteps, reduced from level k-1 as now stored (spec 6). Both run
on a local thread or a dask worker alike (:class:`chronozarr.scheduling.Runner`): they read the
old timesteps and level k-1 back from the target, write their chunk objects there themselves,
record a summary under ``.cz-build/<key>/`` in a resumable run (decision 0017), and return a
:class:`~chronozarr.cells.CellResult` of a few hundred bytes, never pixels.

The context they share (:class:`AppendContext`) holds the target and the root document as the
append found it, not a :class:`~chronozarr.reader.Reader`: a reader holds a lock and caches, so
each process builds its own from the root, once (:class:`StoreView`).

A level-0 task also sums a cell's old volatility terms (spec 5) when the client cannot recover
them from the stored mean (a value clipped at 1.0, or a store whose volatility no longer matches
its root): that reads the cell's old timesteps, which is the worker's work, not the client's.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.cell_tasks import ArrayInput
from chronozarr.cells import CellResult, Layout, Planes, Readback, write_cell_series
from chronozarr.errors import AppendError
from chronozarr.grid import cell_slice
from chronozarr.reader import Reader
from chronozarr.storage import Store
from chronozarr.stores import WorkLog
from chronozarr.temporal import abs_diff_sum

__all__ = [
    "AppendContext",
    "AppendInput",
    "StoreView",
    "UpperAppendContext",
    "append_level0_task",
    "append_upper_task",
]

PlaneTriple = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


class StoreView:
    """The target and its root document as the append found it (the old root), with a
    :class:`Reader` built on first use in each process (pickled as target and root only)."""

    def __init__(self, target: Store, root: Mapping[str, Any], reader: Reader | None = None):
        self.target = target
        self.root = root
        self._reader = reader
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"target": self.target, "root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["target"], state["root"])  # type: ignore[misc]

    @property
    def reader(self) -> Reader:
        with self._lock:  # a worker's threads share one reader (it is thread-safe once built)
            if self._reader is None:
                self._reader = Reader(self.target, self.root)
            return self._reader


class AppendInput(ArrayInput):
    """The appended numpy or dask data (time, band, y, x) and its (time, y, x) mask and coverage.

    ``open_cell`` gives a cell's planes of new timestep ``i`` (0 = the first appended); on a
    cluster each task carries its cell's :meth:`view` (a dask input culled to the cell, computed
    on the worker with the synchronous scheduler: nothing passes through the client). The encode
    input's reading, with the append's error type."""

    def mask_error(self, found: int, t: int) -> Exception:
        return AppendError("mask", f"values must be 0 or 1 (spec 2.4), found {found}")


@dataclass
class AppendContext:
    """What every task of an append shares (sent to the cluster once).

    ``moved``: old timesteps of a none store whose nominal volatility reference the new anchors
    moved (spec 5); ``recount``: cells whose old volatility sum over ``old_terms`` is recomputed
    from the store (see the module docstring). ``source``: a cell source or an
    :class:`AppendInput`; None when each task carries its cell's view.
    """

    view: StoreView
    layout: Layout
    n_old: int
    n_new: int
    height: int
    width: int
    vol_refs: Mapping[int, int]
    old_vol_refs: Mapping[int, int]
    moved: list[int]
    recount: frozenset[tuple[int, int]] = frozenset()
    old_terms: list[int] = field(default_factory=list)
    source: Any = None
    work_key: str | None = None


def _prefix_getter(ctx: AppendContext, level_path: str) -> Any:
    """Old payload (old index included) and entries of the shard receiving new timesteps."""
    from chronozarr.append import _old_shard  # the shard rule lives with append (spec 14)

    st = ctx.layout.shard_time
    if st is None:
        return None

    def get(array_path: str, ts: int, row: int, col: int) -> tuple[bytes, list[Any]] | None:
        if ts * st >= ctx.n_old:
            return None  # a new shard
        return _old_shard(ctx.view.reader, level_path, array_path, ts, row, col, ctx.n_old, st)

    return get


def _record(ctx: AppendContext, name: str, res: CellResult) -> CellResult:
    if ctx.work_key is not None:  # after every chunk object of the task (decision 0017)
        from chronozarr.cell_tasks import result_json

        WorkLog(ctx.layout.store, ctx.work_key).record(name, result_json(res))
    return res


def append_level0_task(ctx: AppendContext, task: tuple[Any, ...]) -> CellResult:
    """Level 0 of one cell: the new timesteps from the input, old ones read back as the new
    deltas' anchors and references; ``extra`` = {"source": the cell source's summary,
    "old_sum": the cell's recomputed old volatility sum, or None}."""
    from chronozarr.cell_tasks import task_name

    (r, c), times = task[0], task[1]
    source = task[2] if len(task) > 2 and task[2] is not None else ctx.source
    reader, layout, n_old = ctx.view.reader, ctx.layout, ctx.n_old
    ys, xs = cell_slice(r, c, layout.cs, ctx.height, ctx.width)
    new = source.open_cell(r, c, ys, xs, range(ctx.n_new - n_old))

    def planes_at(t: int) -> PlaneTriple:
        if t < n_old:  # an existing timestep: a new delta's anchor or reference
            return reader.read_cell(t, r, c, 0), None, None
        values, m, cv = new(t - n_old)
        return np.asarray(values, dtype=layout.dtype), m, cv

    planes = Planes(planes_at)
    res = write_cell_series(
        layout, "0", r, c, planes, times, volatility=True, shard_prefix=_prefix_getter(ctx, "0")
    )
    for t in ctx.moved:  # none stores: nominal references that the new anchors moved
        src = planes.get(t)[0]
        res.vol_sum += abs_diff_sum(src, planes.get(ctx.vol_refs[t])[0])
        res.vol_sum -= abs_diff_sum(src, planes.get(ctx.old_vol_refs[t])[0])
    old_sum = None
    if (r, c) in ctx.recount:
        old_sum = sum(
            abs_diff_sum(
                reader.read_cell(t, r, c, 0), reader.read_cell(ctx.old_vol_refs[t], r, c, 0)
            )
            for t in ctx.old_terms
        )
    summary = getattr(new, "summary", None)
    res.extra = {"source": summary() if callable(summary) else None, "old_sum": old_sum}
    return _record(ctx, task_name("0", (task[0], task[1])), res)


@dataclass
class UpperAppendContext:
    """What every task of one upper level shares: the append's context, the level, and the
    documents of level k-1 with the grown time axis."""

    base: AppendContext
    level: int
    docs: dict[str, dict[str, Any]]


def append_upper_task(ctx: UpperAppendContext, task: tuple[tuple[int, int], range]) -> CellResult:
    """Level k of one cell: new timesteps reduced from level k-1 as now stored (spec 6)."""
    from chronozarr.cell_tasks import task_name

    base = ctx.base
    reader = base.view.reader
    levels = reader.levels
    rb = Readback(base.layout, levels[ctx.level - 1], ctx.docs)
    (r, c), times = task
    k = ctx.level

    def planes_at(t: int) -> PlaneTriple:
        if t < base.n_old:
            return reader.read_cell(t, r, c, k), None, None
        return rb.reduced(t, r, c)

    path = levels[k].path
    res = write_cell_series(
        base.layout, path, r, c, Planes(planes_at), times, volatility=False,
        shard_prefix=_prefix_getter(base, path),
    )  # fmt: skip
    return _record(base, task_name(path, task), res)

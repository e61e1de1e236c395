"""The writer's per-cell tasks as plain picklable functions (spec 2.1, 5, 6, 9).

``level0_task`` writes one (cell, time range) of level 0 from the input; ``upper_task`` one of
level k from level k-1 read back from the target. Both run on a local thread or a dask worker
alike (:mod:`chronozarr.write._runner`): each writes its own chunk objects to the target, then (in
a resumable run) its summary under ``.cz-build/<key>/`` (decision 0017), and returns the summary
(a :class:`~chronozarr.write._cells.CellResult`: shard sizes, volatility terms, the source's extra).

The input of level 0 is one of:

- a numpy array (local runs read it in place; a cluster task carries its cell's slice),
- a dask array (a cluster task carries its cell's slice of the graph, culled, and computes it on
  the worker with the synchronous scheduler: nothing passes through the client),
- a *cell source*: any picklable object with ``shape`` (time, band, y, x), ``dtype``,
  ``has_mask``, ``has_coverage`` and ``open_cell(row, col, ys, xs, times)`` returning a callable
  ``planes(t) -> (values, mask | None, coverage | None)``, optionally with a ``summary()`` method
  whose JSON value is handed back to the caller. It is scattered once and produces a cell's
  planes on the worker (``cz build --scheduler`` composites there). A cell source with
  ``part(rows, cols)`` (a cell source for those cells alone) is not sent whole: on a cluster
  each group of cells gets its part as its own context (decision 0058).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.errors import EncodeError
from chronozarr.format import LevelInfo, cell_slice
from chronozarr.write._cells import (
    CellResult,
    Layout,
    Planes,
    Readback,
    write_cell_series,
)
from chronozarr.write._inputs import CellInput
from chronozarr.write._worklog import WorkLog, result_json, task_name

__all__ = [
    "ArrayInput",
    "Level0Context",
    "UpperContext",
    "is_cell_source",
    "level0_task",
    "upper_task",
]

PlaneTriple = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


def is_cell_source(data: Any) -> bool:
    return callable(getattr(data, "open_cell", None))


class _ArrayPlanes:
    def __init__(self, fn: Callable[[int], PlaneTriple]):
        self.fn = fn

    def __call__(self, t: int) -> PlaneTriple:
        return self.fn(t)

    def summary(self) -> Any:
        return None


@dataclass
class ArrayInput:
    """numpy or dask data (time, band, y, x) with optional (time, y, x) mask and coverage."""

    data: Any
    dtype: np.dtype
    mask: Any = None
    coverage: Any = None
    scheduler: str | None = None  # dask scheduler of a lazy input ("sync" on a worker)
    origin: tuple[int, int] = (0, 0)  # (y, x) of this view's corner in the full array

    @property
    def has_mask(self) -> bool:
        return self.mask is not None

    @property
    def has_coverage(self) -> bool:
        return self.coverage is not None

    def view(self, ys: slice, xs: slice) -> ArrayInput:
        """The cell's part of the input, small enough to travel with a cluster task."""

        def cut(a: Any, planes: bool) -> Any:
            if a is None:
                return None
            part = a[:, ys, xs] if planes else a[:, :, ys, xs]
            if isinstance(part, np.ndarray):
                return np.ascontiguousarray(part)
            import dask  # lazy: a dask input means dask is installed; `import chronozarr` stays light

            (part,) = dask.optimize(part)  # type: ignore[no-untyped-call]  # culled: only this cell's part of the graph travels
            return part

        return type(self)(
            cut(self.data, False), self.dtype, cut(self.mask, True), cut(self.coverage, True),
            "sync", (ys.start, xs.start),
        )  # fmt: skip

    def mask_error(self, found: int, t: int) -> Exception:
        """The typed error for a mask value other than 0 or 1 (spec 2.4) at timestep ``t``."""
        return EncodeError(
            "mask", f"values must be 0 or 1 (spec 2.4), found {found} at timestep {t}"
        )

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> _ArrayPlanes:
        oy, ox = self.origin
        ys = slice(ys.start - oy, ys.stop - oy)
        xs = slice(xs.start - ox, xs.stop - ox)
        get = CellInput(self.data, self.dtype, self.scheduler).cell(ys, xs, times)
        u8 = np.dtype("uint8")
        getm = None if self.mask is None else CellInput(self.mask, u8, self.scheduler).cell(ys, xs, times)  # fmt: skip
        getc = None if self.coverage is None else CellInput(self.coverage, u8, self.scheduler).cell(ys, xs, times)  # fmt: skip
        dtype = self.dtype

        def planes_at(t: int) -> PlaneTriple:
            m = None if getm is None else np.asarray(getm(t)).astype(np.uint8, copy=False)
            if m is not None and m.size and int(m.max()) > 1:
                raise self.mask_error(int(m.max()), t)
            cv = None if getc is None else np.asarray(getc(t)).astype(np.uint8, copy=False)
            return np.asarray(get(t), dtype=dtype), m, cv

        return _ArrayPlanes(planes_at)


@dataclass
class Level0Context:
    """What every level-0 task shares (scattered once on a cluster)."""

    layout: Layout
    height: int
    width: int
    source: Any = None  # a cell source or an ArrayInput; None when each task carries a view
    samples: dict[tuple[int, int], dict[int, bytes]] = field(default_factory=dict)
    work_key: str | None = None


def _record(layout: Layout, work_key: str | None, name: str, res: CellResult) -> CellResult:
    if work_key is not None:  # after every chunk object of the task (decision 0017)
        WorkLog(layout.store, work_key).record(name, result_json(res))
    return res


def level0_task(ctx: Level0Context, task: tuple[Any, ...]) -> CellResult:
    """Level 0 of one (cell, time range) from the input, with the volatility terms (spec 5)."""
    (r, c), times_k = task[0], task[1]
    source = task[2] if len(task) > 2 and task[2] is not None else ctx.source
    cs = ctx.layout.cs
    ys, xs = cell_slice(r, c, cs, ctx.height, ctx.width)
    planes_fn = source.open_cell(r, c, ys, xs, times_k)
    extent = (ys.stop - ys.start, xs.stop - xs.start)
    res = write_cell_series(
        ctx.layout,
        "0",
        r,
        c,
        Planes(planes_fn),
        times_k,
        volatility=True,
        encoded=ctx.samples.get((r, c)),
        history=ctx.layout.history_buffer("0", r, c, extent),
    )
    summary = getattr(planes_fn, "summary", None)
    res.extra = summary() if callable(summary) else None
    return _record(ctx.layout, ctx.work_key, task_name("0", (task[0], task[1])), res)


@dataclass
class UpperContext:
    """What every task of one upper level shares: the level, the one below, their documents."""

    layout: Layout
    info: LevelInfo
    below: LevelInfo
    docs: dict[str, dict[str, Any]]
    work_key: str | None = None


def upper_task(ctx: UpperContext, task: tuple[tuple[int, int], range]) -> CellResult:
    """Level k of one (cell, time range) from level k-1 as stored (spec 6)."""
    rb = Readback(ctx.layout, ctx.below, ctx.docs)
    (r, c), times_k = task
    res = write_cell_series(
        ctx.layout,
        ctx.info.path,
        r,
        c,
        Planes(lambda t: rb.reduced(t, r, c)),
        times_k,
        volatility=False,
    )
    return _record(ctx.layout, ctx.work_key, task_name(ctx.info.path, task), res)

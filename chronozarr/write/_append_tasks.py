"""``append``'s per-cell tasks as plain picklable functions (spec 5, 6, 14; decision 0022).

``append_level0_task`` writes one level-0 cell's new timesteps (values, mask, coverage; the
star-delta anchor/delta choice of spec 14 already fixed in the layout; a sharded store's trailing
shard rewritten with its old bytes kept) and returns its volatility terms; ``append_upper_task``
writes one level-k cell's new timesteps, reduced from level k-1 as now stored (spec 6). Both run
on a local thread or a dask worker alike (:class:`chronozarr.write.Runner`): they read the
old timesteps and level k-1 back from the target, write their chunk objects there themselves,
record a summary under ``.cz-build/<key>/`` in a resumable run (decision 0017), and return a
:class:`~chronozarr.write._cells.CellResult` of a few hundred bytes, never pixels.

The context they share (:class:`AppendContext`) holds the target and the root document as the
append found it, not a :class:`~chronozarr.read.Reader`: a reader holds a lock and caches, so
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

from chronozarr.errors import AppendError, CorruptStoreError
from chronozarr.format import EMPTY, abs_diff_sum, cell_slice, index_nbytes, parse_index
from chronozarr.io import Store
from chronozarr.read import Reader
from chronozarr.write._cell_tasks import ArrayInput
from chronozarr.write._cells import CellResult, Layout, Planes, Readback, write_cell_series
from chronozarr.write._history import HistoryBuffer
from chronozarr.write._worklog import WorkLog, result_json, task_name

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


def old_shard(
    reader: Reader,
    level_path: str,
    array_path: str,
    ts: int,
    row: int,
    col: int,
    n_old: int,
    st: int,
) -> tuple[bytes, list[Any]] | None:
    """The existing shard's bytes up to its end as the old root knows it, and its entries."""
    name = array_path.rsplit("/", 1)[1]
    level = next(k for k, lv in enumerate(reader.levels) if lv.path == level_path)
    arr = reader.array(level, name)
    key = arr.key(ts, row, col)
    listed = arr.shard_bytes.get(f"{ts}/{row}/{col}") if name == reader.attrs.variable else None
    with_crc = any(cd.get("name") == "crc32c" for cd in arr.info.index_codecs)
    n = arr.info.chunk_shape[0]
    nbytes = index_nbytes(n, with_crc)
    if listed is None:
        # mask/coverage (not in shard_bytes) or an unlisted shard: find the old end. If an
        # interrupted attempt already rewrote the object, its index lists new positions; the old
        # index then sits right after the last old chunk (our writer and zarr-python write the
        # payload, then the index), which its crc32c confirms.
        size = reader.store.size(key)
        if size is None:
            return None
        whole = reader.store.get(key) or b""
        index = parse_index(whole[size - nbytes :], n, with_crc=with_crc, where=key)
        old_pos = range(min(st, n_old - ts * st))
        empty = int(EMPTY)
        if all(int(index[p][0]) == empty for p in range(len(old_pos), st)):
            listed = size
        else:
            ends = [
                int(index[p][0]) + int(index[p][1]) for p in old_pos if int(index[p][0]) != empty
            ]
            listed = (max(ends) if ends else 0) + nbytes
            parse_index(whole[listed - nbytes : listed], n, with_crc=with_crc, where=key)
    blob = reader.store.get_range(key, 0, listed)
    if blob is None or len(blob) != listed:
        raise CorruptStoreError(f"{key}: shard is shorter than the {listed} bytes the store lists")
    index = parse_index(blob[listed - nbytes :], n, with_crc=with_crc, where=key)
    entries: list[Any] = [None] * st
    for pos in range(min(st, n_old - ts * st)):
        offset, size = (int(v) for v in index[pos])
        if not (offset == int(EMPTY) and size == int(EMPTY)):
            entries[pos] = (offset, size)
    return blob, entries


def _prefix_getter(ctx: AppendContext, level_path: str) -> Any:
    """Old payload (old index included) and entries of the shard receiving new timesteps."""
    st = ctx.layout.shard_time
    if st is None:
        return None

    def get(array_path: str, ts: int, row: int, col: int) -> tuple[bytes, list[Any]] | None:
        if ts * st >= ctx.n_old:
            return None  # a new shard
        return old_shard(ctx.view.reader, level_path, array_path, ts, row, col, ctx.n_old, st)

    return get


def _history(
    ctx: AppendContext, level: int, row: int, col: int, extent: tuple[int, int]
) -> HistoryBuffer | None:
    """The companion writer of a cell at a level that carries it (docs/spec.md C25), already
    given the old timesteps of the time block that receives the first new one: that chunk is
    rewritten whole (the store's one companion object that changes, spec 14), equal to what a
    fresh encode of the grown axis writes. Those timesteps are read back from the data, mask and
    coverage (the true values the companion must equal), never from the old companion chunk."""
    reader = ctx.view.reader
    history = ctx.layout.history_buffer(reader.levels[level].path, row, col, extent)
    if history is None:
        return None
    start = ctx.n_old - ctx.n_old % history.spec.time_block
    mask_name, cov_name = reader.attrs.mask_variable, reader.attrs.coverage_variable
    for t in range(start, ctx.n_old):
        history.add(
            t,
            reader.read_cell(t, row, col, level),
            None if mask_name is None else reader.plane_cell(mask_name, t, row, col, level),
            None if cov_name is None else reader.plane_cell(cov_name, t, row, col, level),
        )
    return history


def _record(ctx: AppendContext, name: str, res: CellResult) -> CellResult:
    if ctx.work_key is not None:  # after every chunk object of the task (decision 0017)
        WorkLog(ctx.layout.store, ctx.work_key).record(name, result_json(res))
    return res


def append_level0_task(ctx: AppendContext, task: tuple[Any, ...]) -> CellResult:
    """Level 0 of one cell: the new timesteps from the input, old ones read back as the new
    deltas' anchors and references; ``extra`` = {"source": the cell source's summary,
    "old_sum": the cell's recomputed old volatility sum, or None}."""

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
    extent = (ys.stop - ys.start, xs.stop - xs.start)
    res = write_cell_series(
        layout, "0", r, c, planes, times, volatility=True, shard_prefix=_prefix_getter(ctx, "0"),
        history=_history(ctx, 0, r, c, extent),
    )  # fmt: skip
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
    ys, xs = cell_slice(r, c, base.layout.cs, *levels[k].shape[-2:])
    res = write_cell_series(
        base.layout, path, r, c, Planes(planes_at), times, volatility=False,
        shard_prefix=_prefix_getter(base, path),
        history=_history(base, k, r, c, (ys.stop - ys.start, xs.stop - xs.start)),
    )  # fmt: skip
    return _record(base, task_name(path, task), res)

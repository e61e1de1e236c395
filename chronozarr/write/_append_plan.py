"""The plan of an ``append`` (spec 5, 14; decisions 0017, 0020, 0022): the store as read, the
grown time axis, its schedules old and new, the volatility basis, and one stage of cell tasks
per level.

Everything an append writes is decided here, from what is stored, before the first byte is
written: the grown temporal block (4.2: old references kept), the nominal volatility schedule of
a none store over the new axis (5), the cells whose old volatility sum the level-0 tasks must
recompute, and what the volatility update starts from (the stored chunk, the journal's of
decision 0020, or "recompute"). The stages are not pipelined: each level is appended from the
level below as now stored, after it (an append writes a few months, little to overlap), and a
cluster run checks between levels that this process sees what the workers wrote.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chronozarr.errors import ClusterError
from chronozarr.format import (
    ArrayInfo,
    ChunkCodec,
    RootAttrs,
    Temporal,
    cell_slice,
    chunk_key,
    compressor_for,
    parse_time,
    schedule,
)
from chronozarr.io import Store
from chronozarr.read import Reader, history_array
from chronozarr.write._append_checks import refuse
from chronozarr.write._append_tasks import (
    AppendContext,
    AppendInput,
    UpperAppendContext,
    append_level0_task,
    append_upper_task,
)
from chronozarr.write._cells import Layout
from chronozarr.write._history import HistoryLayout
from chronozarr.write._journal import journaled_volatility
from chronozarr.write._plan import Stage
from chronozarr.write._runner import Runner
from chronozarr.write._worklog import WorkLog, pending_tasks

__all__ = [
    "NOMINAL_INTERVAL",
    "AppendState",
    "VolatilityBasis",
    "append_stages",
    "append_state",
    "array_names",
    "doc_with_shape",
    "volatility_basis",
]

NOMINAL_INTERVAL = 6  # spec 5: a none store's nominal schedule (the writer default)


@dataclass
class AppendState:
    """What an append writes: the store as read, the grown axis, the schedules old and new."""

    reader: Reader
    target: Store
    attrs: RootAttrs
    layout: Layout
    n_old: int
    n_new: int
    all_times_ms: list[int]
    new_temporal: Temporal
    vol_refs: Mapping[int, int]
    old_vol_anchors: set[int]
    old_vol_refs: Mapping[int, int]
    moved: list[int]
    shard_bytes: dict[str, dict[str, int]] = field(default_factory=dict)


def _schedules(
    temporal: Temporal, n_old: int, n_new: int
) -> tuple[Temporal, set[int], Mapping[int, int], set[int], Mapping[int, int]]:
    """The grown temporal block (4.2: old references kept) and the volatility schedules after
    and before the append (5): (temporal, anchors, refs, old anchors, old refs)."""
    if temporal.encoding == "star-delta":
        interval = int(temporal.anchor_interval or 1)
        anchors, refs = schedule(n_new, interval, existing=temporal.delta_reference)
        new_temporal = type(temporal)(
            encoding="star-delta",
            anchor_interval=interval,
            anchor_indices=tuple(anchors),
            delta_reference={t: r for t, r in refs.items() if t not in set(anchors)},
            selection=temporal.selection,
            has_encoding_key=temporal.has_encoding_key,
        )
        return (
            new_temporal,
            set(anchors),
            new_temporal.delta_reference,
            set(temporal.anchor_indices),
            temporal.delta_reference,
        )
    # spec 5: the nominal nearest-anchor schedule, not recorded; recomputed over the new axis
    # so the volatility equals a fresh encode's (the references it moves are corrected).
    old_a, old_r = schedule(n_old, NOMINAL_INTERVAL)
    new_a, new_r = schedule(n_new, NOMINAL_INTERVAL)
    return temporal, set(new_a), new_r, set(old_a), old_r


def append_state(reader: Reader, target: Store, n_add: int, times: Sequence[Any]) -> AppendState:
    attrs = reader.attrs
    n_old = reader.n_time
    n_new = n_old + n_add
    all_times_ms = [parse_time(t) for t in attrs.times] + [parse_time(t) for t in times]
    info0 = reader.array(0).info
    if info0.sharded and info0.index_location != "end":
        raise refuse("layout", "appending to a shard with a start-located index is not supported")
    new_temporal, vol_anchors, vol_refs, old_vol_anchors, old_vol_refs = _schedules(
        attrs.temporal, n_old, n_new
    )
    moved = [t for t in range(n_old) if t in old_vol_refs and old_vol_refs[t] != vol_refs.get(t)]
    data_codecs = [dict(c) for c in info0.codecs]
    plane_path = attrs.mask_variable or attrs.coverage_variable
    plane_codecs = (
        [dict(c) for c in reader.array(0, plane_path).info.codecs] if plane_path else data_codecs
    )
    layout = Layout(
        store=target,
        variable=attrs.variable,
        n_time=n_new,
        n_band=len(attrs.bands),
        cs=info0.cs,
        dtype=np.dtype(info0.dtype),
        nodata=attrs.nodata,
        encoding=attrs.temporal.encoding,
        anchors=frozenset(new_temporal.anchor_indices),
        refs=dict(new_temporal.delta_reference),
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=info0.shard_time,
        data_codecs=data_codecs,
        plane_codecs=plane_codecs if plane_path else [dict(c) for c in data_codecs],
        has_mask=attrs.mask_variable is not None,
        has_coverage=attrs.coverage_variable is not None,
        history=_history_layout(reader),
    )
    if (layout.has_mask and attrs.mask_variable != "mask") or (
        layout.has_coverage and attrs.coverage_variable != "coverage"
    ):
        raise refuse("layout", "mask/coverage variables must be named 'mask' and 'coverage'")
    shard_bytes = {k: dict(v) for k, v in (attrs.shard_bytes or {}).items()}
    return AppendState(
        reader, target, attrs, layout, n_old, n_new, all_times_ms, new_temporal, vol_refs,
        old_vol_anchors, old_vol_refs, moved, shard_bytes,
    )  # fmt: skip


def _history_layout(reader: Reader) -> HistoryLayout | None:
    """The store's time-series companion as written (docs/spec.md C25): its chunking read from
    each listed level's ``values`` array, which must agree (and match the level, as the reader
    checks), so that the append extends it exactly as a fresh encode would have written it."""
    block = reader.attrs.history
    if block is None:
        return None
    chunkings = set()
    for k, lv in enumerate(reader.levels):
        if lv.path in block.levels:
            arr = history_array(reader, k)
            assert arr is not None  # the level is listed: the reader checked its array
            chunkings.add((arr.info.chunk_shape[0], arr.info.chunk_shape[2]))
    known = {lv.path for lv in reader.levels}
    if len(chunkings) != 1 or not set(block.levels) <= known:
        raise refuse(
            "layout",
            f"the time-series companion lists levels {list(block.levels)} with chunkings "
            f"{sorted(chunkings)}: an append needs one chunking over levels of the store",
        )
    time_block, size = chunkings.pop()
    if reader.chunk_size(0) % size:
        raise refuse("layout", f"the companion's block {size} does not divide the cell size")
    return HistoryLayout(time_block, size, block.path, block.levels)


@dataclass
class VolatilityBasis:
    """What the volatility update starts from: the pre-append volatility (``stored``), whether
    it is the old root's (``state``: old, final, unknown), whether the journal must be begun,
    the old timesteps whose deltas the old sum holds, and the cells whose old sum is recounted."""

    stored: np.ndarray | None
    state: str
    begin: bool = False
    old_terms: list[int] = field(default_factory=list)
    recount: frozenset[tuple[int, int]] = frozenset()


def volatility_basis(state: AppendState) -> VolatilityBasis:
    """What the volatility update starts from, decided before any chunk is written: the
    pre-append volatility (the journal's, when an interrupted run of an append onto this root
    left one: decision 0020), whether the journal must be begun, and the cells whose old sum the
    level-0 tasks recompute from the store (clipped at 1.0, or every cell when the stored
    volatility is not the old root's)."""
    reader, attrs, target = state.reader, state.attrs, state.target
    stored = reader.volatility()
    stored_state = _volatility_state(reader, state.all_times_ms)
    basis = VolatilityBasis(stored, stored_state)
    if stored is None or not attrs.volatility_path:
        return basis
    found, old_chunk = journaled_volatility(target, state.n_old)
    if found:  # an interrupted run of an append onto this root: its volatility before
        basis.stored = _decoded_volatility(reader, old_chunk, stored)
        basis.state = "old"
    elif stored_state == "old":  # record it before it is rewritten
        basis.begin = True
    if basis.state == "final":
        return basis
    old_terms = [
        t for t in range(state.n_old) if t not in state.old_vol_anchors and t in state.old_vol_refs
    ]
    basis.old_terms = old_terms
    if old_terms:
        exact = basis.state == "unknown"
        assert basis.stored is not None  # checked above
        rows, cols = reader.levels[0].grid
        basis.recount = frozenset(
            (r, c)
            for r in range(rows)
            for c in range(cols)
            if exact or float(basis.stored[r, c]) >= 1.0
        )
    return basis


def _decoded_volatility(reader: Reader, chunk: bytes | None, like: np.ndarray) -> np.ndarray:
    """The volatility array of the journal's chunk (fill when the chunk was absent)."""
    path = reader.attrs.volatility_path
    assert path is not None
    info = ArrayInfo.from_json(reader.document(path), path, allowed_dtypes=("float32",))
    if chunk is None:
        return np.full(like.shape, info.typed_fill(), dtype=np.float32)
    codec = ChunkCodec(info.codecs, info.dtype, info.chunk_shape)
    return codec.decode(chunk)[: info.shape[0], : info.shape[1]]


def _volatility_state(reader: Reader, all_times_ms: Sequence[int]) -> str:
    """ "old" (the stored volatility is the previous root's), "final" (an interrupted run of this
    same append already wrote it), or "unknown" (another append was interrupted: recompute)."""
    path = f"{reader.levels[0].path}/time"
    doc = reader.document(path)
    raw = reader.store.get(f"{path}/c/0")
    if doc is None or raw is None:
        return "unknown"
    data = raw
    for c in reversed(doc["codecs"][1:]):
        data = bytes(compressor_for(c).decode(data))
    values = np.frombuffer(data, dtype="<i8")
    if len(values) == reader.n_time:
        return "old"
    if len(values) == len(all_times_ms) and values.tolist() == list(all_times_ms):
        return "final"
    return "unknown"


def array_names(attrs: RootAttrs) -> list[str]:
    names = [attrs.variable]
    if attrs.mask_variable:
        names.append(attrs.mask_variable)
    if attrs.coverage_variable:
        names.append(attrs.coverage_variable)
    return names


def doc_with_shape(reader: Reader, level_path: str, name: str, n_new: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(reader.document(f"{level_path}/{name}")))
    doc["shape"] = [n_new, *doc["shape"][1:]]  # spatial:* attributes describe y/x: unchanged
    return doc


def _check_visible(state: AppendState) -> None:
    """The workers' first new chunk is visible here: else they wrote to a target this process
    does not see (a local path not on a filesystem every worker shares), and the metadata
    written here would describe missing data (spec 9)."""
    st = state.layout.shard_time
    t = state.n_old if st is None else state.n_old // st
    key = chunk_key(f"{state.reader.levels[0].path}/{state.attrs.variable}", t, 0, 0, has_band=True)
    if state.target.size(key) is None:
        raise ClusterError(
            f"{state.target.url}: the workers wrote level 0 but {key} is not visible from this "
            "process; a local path must be on a filesystem every worker shares (or use s3://...)"
        )


def _level0_stage(state: AppendState, ctx: AppendContext, runner: Runner) -> Stage:
    """Level 0: each cell's new timesteps from the input, with its volatility terms (spec 5); on
    a cluster a numpy or dask input travels as each task's part of it."""
    new_times = range(state.n_old, state.n_new)
    rows, cols = state.reader.levels[0].grid
    tasks: list[Any] = [((r, c), new_times) for r in range(rows) for c in range(cols)]
    if runner.remote and isinstance(ctx.source, AppendInput):
        h, w, cs = ctx.height, ctx.width, state.layout.cs
        tasks = [
            (cell, times, ctx.source.view(*cell_slice(cell[0], cell[1], cs, h, w)))
            for cell, times in tasks
        ]
        ctx = replace(ctx, source=None)  # each task carries its cell's part of the input
    return Stage("cz-level0", append_level0_task, ctx, tasks)


def _upper_stage(state: AppendState, ctx: AppendContext, k: int) -> Stage:
    """Level k: each cell's new timesteps reduced from level k-1 as now stored (spec 6)."""
    reader, lv, back = state.reader, state.reader.levels[k], state.reader.levels[k - 1]
    rows, cols = lv.grid
    tasks = [((r, c), range(state.n_old, state.n_new)) for r in range(rows) for c in range(cols)]
    docs = {
        f"{back.path}/{name}": doc_with_shape(reader, back.path, name, state.n_new)
        for name in array_names(state.attrs)
    }
    upper = UpperAppendContext(replace(ctx, source=None), k, docs)
    return Stage(f"cz-level{lv.path}", append_upper_task, upper, tasks)


def append_stages(
    state: AppendState,
    ctx: AppendContext,
    runner: Runner,
    work: WorkLog | None,
    *,
    on_task: Callable[[Any], None] | None = None,
    fail_after: str | None = None,
) -> list[Stage]:
    """One stage per level, one task per cell with all its new timesteps (a cell's volatility
    terms are summed in one order, as ever); a resumed run finds the cells already written
    (decision 0017). ``fail_after`` (``"level<k>"``) injects a failure once level k is written,
    for the tests of an interrupted append."""
    stages = []
    for k, lv in enumerate(state.reader.levels):
        stage = _level0_stage(state, ctx, runner) if k == 0 else _upper_stage(state, ctx, k)
        if k == 0 and on_task is not None:
            stage.on_result = lambda _i, res: on_task(res)
        stage.done = pending_tasks(list(stage.tasks), lv.path, work)[1]
        stage.on_done = _level_done(state, k, runner, fail_after)
        stages.append(stage)
    return stages


def _level_done(
    state: AppendState, k: int, runner: Runner, fail_after: str | None
) -> Callable[[], None]:
    def done() -> None:
        if k == 0 and runner.remote:
            _check_visible(state)
        if fail_after == f"level{k}":
            raise RuntimeError(f"injected failure after level {k} chunks")

    return done

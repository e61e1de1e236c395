"""``append``: grow a published store at the end of its time axis (spec 14).

Everything is checked before the first byte is written; a refusal leaves the store untouched.
Then, in the order of spec 14: the chunks (unsharded: new objects only) or time shards (sharded:
the shard receiving the first new timestep is rewritten whole, keeping its old bytes, old index
included, at their old offsets), then ``time/c/0`` of every level and ``volatility/c/0/0``, then
the array zarr.json files, the root zarr.json last.

Keeping the old shard's bytes verbatim (its old index too) means a reader holding the previous
root, whose shard_bytes still gives the old length, reads the old index at the old place and
decodes every timestep it knows: an interrupted append leaves a store that decodes at its old
state, and re-running the same append rebuilds exactly the same objects.

The per-cell work is :mod:`chronozarr.write._append_tasks` (one task per cell and level, all new
timesteps), run by :class:`chronozarr.write.Runner` on local threads or, with
``scheduler=``, on dask workers that write their chunk objects to the target themselves; this
module plans, decides the volatility basis before any write, and writes the volatility, the
time coordinates and the metadata (decision 0022).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chronozarr.errors import ClusterError, EncodeError
from chronozarr.format import (
    ArrayInfo,
    ChunkCodec,
    RootAttrs,
    Temporal,
    cell_slice,
    chunk_key,
    compressor_for,
    consolidated_entry,
    dumps,
    format_time,
    load_json,
    parse_time,
    root_time_paths,
    schedule,
    volatility_value,
)
from chronozarr.io import Store, open_target
from chronozarr.provenance import PROVENANCE_ITEMS, grown_items_objects
from chronozarr.read import Reader
from chronozarr.write._append_checks import UNSET, check_append, refuse, xarray_coords
from chronozarr.write._append_tasks import (
    AppendContext,
    AppendInput,
    StoreView,
    UpperAppendContext,
    append_level0_task,
    append_upper_task,
)
from chronozarr.write._cell_tasks import is_cell_source
from chronozarr.write._cells import CellResult, Layout, default_workers
from chronozarr.write._inputs import unwrap_array
from chronozarr.write._journal import begin_journal, end_journal, journaled_volatility
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner
from chronozarr.write._worklog import WorkLog, clear_work, run_level

__all__ = ["append"]

log = logging.getLogger("chronozarr.append")

NOMINAL_INTERVAL = 6  # spec 5: a none store's nominal schedule (the writer default)


def append(
    store: Any,
    data: Any,
    *,
    times: Sequence[Any],
    mask: Any = None,
    coverage: Any = None,
    bands: Sequence[Any] | None = None,
    crs: Any = None,
    transform: Sequence[float] | None = None,
    nodata: Any = UNSET,
    provenance: Mapping[str, Any] | Callable[[list[Any]], Mapping[str, Any]] | None = None,
    provenance_items: Sequence[str] | Callable[[list[Any]], Sequence[str]] | None = None,
    workers: int | None = None,
    scheduler: Any = None,
    retries: int = DEFAULT_RETRIES,
    worker_timeout: float = DEFAULT_WORKER_TIMEOUT,
    store_options: Mapping[str, Any] | None = None,
    resume_key: str | None = None,
    on_task: Callable[[Any], None] | None = None,
    _fail_after: str | None = None,
) -> None:
    """Append timesteps ``data`` (time, band, y, x) to the store at ``store`` (spec 14).

    ``times`` must be strictly increasing and after the store's last time. ``mask`` and
    ``coverage`` (time, y, x) are required exactly when the store has them. ``bands``, ``crs``,
    ``transform`` and ``nodata``, when given (the toolkit passes its recipe's), must equal the
    store's; an xarray input's band/y/x coordinates are checked too. Any mismatch raises
    ``AppendError`` naming the condition and the values seen, before anything is written.
    ``provenance``, when given, replaces the root's ``chronozarr.provenance`` (spec 3.8) in the
    same final root write (the toolkit records the sources of the new timesteps).

    ``store``: a local path, an ``s3://bucket/prefix`` URL (``store_options``: endpoint,
    region, client_options... as for ``encode``) or a :class:`chronozarr.io.Store`.
    ``data`` may also be a *cell source* (:mod:`chronozarr.write._cell_tasks`) whose planes of new
    timestep ``i`` (0 = the first appended) come with their own mask and coverage.

    ``scheduler``: a ``distributed.Client`` or a scheduler address. Each cell's new timesteps (level 0, then every upper
    level from the level below read back from the target) are then written by a task on the
    workers, straight to the target; this process gathers the volatility terms and writes the
    volatility, the time coordinates and the metadata last, under the append journal (decision
    0020). Same objects, same bytes as a local append. ``retries``, ``worker_timeout``: as for
    ``encode``. ``resume_key``: keep each finished cell's summary under
    ``.cz-build/<resume_key>/`` so that the same call after an interruption skips what is
    written (decision 0017); the caller promises that the same key means the same input.
    ``provenance`` and ``provenance_items`` (one JSON document per new timestep, written to the
    root-level ``provenance_items`` array) may be callables of the cell source's summaries,
    called after level 0. ``on_task`` is called here with each level-0 task's result.
    """
    if provenance is not None and not (isinstance(provenance, Mapping) or callable(provenance)):
        raise refuse("provenance", "expected an object (mapping)")
    if resume_key is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(resume_key)):
        raise refuse("resume_key", f"expected 1-64 letters, digits, _ or -, got {resume_key!r}")
    target = _open(store, store_options)
    raw_root = target.get("zarr.json")
    if raw_root is None:
        raise refuse("store", f"no chronozarr store at {target.url} (zarr.json not found)")
    root = load_json(raw_root, f"{target.url}/zarr.json")
    reader = Reader(target, root)
    sourced = is_cell_source(data)
    if sourced:
        _check_source(reader, data, mask, coverage)
        coords = None
    else:
        coords = xarray_coords(data)
        data = unwrap_array(data, "data")
    check_append(
        reader, data, times, mask, coverage, bands, crs, transform, nodata, coords,
        planes_from_data=sourced,
    )  # fmt: skip
    plan = _plan(reader, target, int(data.shape[0]), times)
    client, owned = _connect(scheduler)
    try:
        runner = Runner(
            client, workers=workers or default_workers(), retries=retries,
            worker_timeout=worker_timeout,
        )  # fmt: skip
        work = _work_log(target, resume_key, plan)
        vol = _volatility_basis(plan, _volatility_state(reader, plan.all_times_ms))
        source = data if sourced else None
        array = None
        if source is None:
            array = AppendInput(
                data,
                plan.layout.dtype,
                unwrap_array(mask, "mask"),
                unwrap_array(coverage, "coverage"),
            )
        height, width = reader.levels[0].shape[-2:]
        ctx = AppendContext(
            StoreView(target, root, reader), plan.layout, plan.n_old, plan.n_new, int(height),
            int(width), plan.vol_refs, plan.old_vol_refs, plan.moved, vol.recount, vol.old_terms,
            source if source is not None else array, work.key if work else None,
        )  # fmt: skip
        results0 = _write_chunks(plan, ctx, runner, work, on_task, _fail_after)
        if _fail_after == "chunks":
            raise RuntimeError("injected failure after the chunks")
        extras = [(res.extra or {}).get("source") for res in results0]
        extras = [e for e in extras if e is not None]
        prov = provenance(extras) if callable(provenance) else provenance
        if prov is not None and not isinstance(prov, Mapping):
            raise refuse("provenance", "expected an object (mapping)")
        items_doc = _write_items(plan, provenance_items, extras)
        new_docs = _write_coordinates(plan, results0, vol, _fail_after)
        if _fail_after == "coords":
            raise RuntimeError("injected failure after time and volatility")
        if items_doc is not None:
            new_docs[PROVENANCE_ITEMS] = items_doc
        # array zarr.json below the root
        for key, doc in new_docs.items():
            target.put(f"{key}/zarr.json", dumps(doc))
        if _fail_after == "arrays":
            raise RuntimeError("injected failure after the array zarr.json")
        new_root = _new_root(plan, root, new_docs, prov, sort=items_doc is not None)
        target.put("zarr.json", dumps(new_root))  # the root, last
        end_journal(target)
        if work is not None:
            clear_work(target, work.key)  # after the root: the commit (decision 0017)
        log.info(
            "appended %d timesteps to %s (now %d)", plan.n_new - plan.n_old, target.url, plan.n_new
        )
    finally:
        if owned:
            client.close()


def _connect(scheduler: Any) -> tuple[Any, bool]:
    """(the client, whether this call opened it): a ``distributed.Client`` as given, or one
    connected to a scheduler address (``tcp://host:8786``) for the length of the append."""
    if not isinstance(scheduler, str):
        return scheduler, False
    try:
        from distributed import Client  # lazy: only a cluster append needs it (an extra)
    except ImportError:  # distributed is optional for local appends
        raise ClusterError("scheduler= needs dask.distributed: pip install distributed") from None
    try:
        client = Client(scheduler, timeout="30s", set_as_default=False)  # type: ignore[no-untyped-call]
        return client, True
    except (OSError, TimeoutError) as exc:  # unreachable
        raise ClusterError(f"cannot connect to the dask scheduler at {scheduler}: {exc}") from None


def _open(store: Any, options: Mapping[str, Any] | None) -> Store:
    """The store an append grows: a local path, an ``s3://`` URL or a Store (as ``encode``)."""
    try:
        return open_target(store, dict(options) if options else None)
    except EncodeError as exc:  # an http(s) host, options for a local path: refused
        raise refuse("store", str(exc).split(": ", 1)[-1]) from exc


def _check_source(reader: Reader, source: Any, mask: Any, coverage: Any) -> None:
    """A cell source gives its own mask and coverage: exactly when the store has them."""
    if mask is not None or coverage is not None:
        raise refuse("mask", "a cell source gives its own mask and coverage planes")
    for name, has in (("mask", reader.has_mask), ("coverage", reader.has_coverage)):
        if bool(getattr(source, f"has_{name}", False)) != bool(has):
            raise refuse(
                name, f"the store {'has' if has else 'has no'} {name}; the cell source differs"
            )


def _work_log(target: Store, key: str | None, plan: _Plan) -> WorkLog | None:
    """The resumable work prefix of this append (decision 0017). Another append's prefix is
    removed, by a resumable append or not: it belongs to an append that completed (the root
    moved on) or to another batch (or an interrupted run of this one), whose cells this one
    rewrites."""
    work = WorkLog(target, key or "-")
    described = {"kind": "append", "n_old": plan.n_old, "n_new": plan.n_new}
    for other in sorted(work.other_keys()):
        doc = WorkLog(target, other).done("started")
        if isinstance(doc, dict) and doc.get("kind") == "append":
            log.info("removing the work prefix of another append (%s) at %s", other, target.url)
            clear_work(target, other)
    if key is None:
        return None
    if work.started() and work.done("started") != described:
        clear_work(target, key)  # the same key for another root: start over
    if work.started():
        log.info("resuming the partial append %s at %s", key, target.url)
    else:
        work.start(described)
    return work


@dataclass
class _Plan:
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


def _plan(reader: Reader, target: Store, n_add: int, times: Sequence[Any]) -> _Plan:
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
    )
    if (layout.has_mask and attrs.mask_variable != "mask") or (
        layout.has_coverage and attrs.coverage_variable != "coverage"
    ):
        raise refuse("layout", "mask/coverage variables must be named 'mask' and 'coverage'")
    shard_bytes = {k: dict(v) for k, v in (attrs.shard_bytes or {}).items()}
    return _Plan(
        reader, target, attrs, layout, n_old, n_new, all_times_ms, new_temporal, vol_refs,
        old_vol_anchors, old_vol_refs, moved, shard_bytes,
    )  # fmt: skip


def _write_chunks(
    plan: _Plan,
    ctx: AppendContext,
    runner: Runner,
    work: WorkLog | None,
    on_task: Callable[[Any], None] | None,
    fail_after: str | None,
) -> list[CellResult]:
    """Every level's new chunks (or rewritten trailing shards), level by level, one task per
    cell (all new timesteps: a cell's volatility terms are summed in one order, as ever); the
    level-0 results (their volatility terms)."""

    reader, attrs = plan.reader, plan.attrs
    new_times = range(plan.n_old, plan.n_new)
    results0: list[CellResult] = []
    for k, lv in enumerate(reader.levels):
        rows, cols = lv.grid
        tasks: list[Any] = [((r, c), new_times) for r in range(rows) for c in range(cols)]
        if k == 0:
            fn: Any = append_level0_task
            level_ctx: Any = ctx
            if runner.remote and isinstance(ctx.source, AppendInput):
                h, w = ctx.height, ctx.width  # each task carries its cell's part of the input
                tasks = [
                    (
                        cell,
                        times,
                        ctx.source.view(*cell_slice(cell[0], cell[1], plan.layout.cs, h, w)),
                    )
                    for cell, times in tasks
                ]
                level_ctx = replace(ctx, source=None)
            results = run_level(runner, fn, level_ctx, tasks, "0", work, on_task)
            results0 = results
            if runner.remote:
                _check_visible(plan)
        else:
            back = reader.levels[k - 1]
            docs = {
                f"{back.path}/{name}": _doc_with_shape(reader, back.path, name, plan.n_new)
                for name in _array_names(attrs)
            }
            upper = UpperAppendContext(replace(ctx, source=None), k, docs)
            results = run_level(runner, append_upper_task, upper, tasks, lv.path, work)
        if plan.layout.shard_time is not None:
            plan.shard_bytes.setdefault(lv.path, {}).update(
                {key: size for res in results for key, size in res.shard_sizes.items()}
            )
        if fail_after == f"level{k}":
            raise RuntimeError(f"injected failure after level {k} chunks")
    return results0


def _check_visible(plan: _Plan) -> None:
    """The workers' first new chunk is visible here: else they wrote to a target this process
    does not see (a local path not on a filesystem every worker shares), and the metadata
    written here would describe missing data (spec 9)."""
    st = plan.layout.shard_time
    t = plan.n_old if st is None else plan.n_old // st
    key = chunk_key(f"{plan.reader.levels[0].path}/{plan.attrs.variable}", t, 0, 0, has_band=True)
    if plan.target.size(key) is None:
        raise ClusterError(
            f"{plan.target.url}: the workers wrote level 0 but {key} is not visible from this "
            "process; a local path must be on a filesystem every worker shares (or use s3://...)"
        )


def _write_items(
    plan: _Plan, items: Sequence[str] | Callable[[list[Any]], Sequence[str]] | None, extras: Any
) -> dict[str, Any] | None:
    """The new months' ``provenance_items`` chunks (new keys, before any metadata: spec 9);
    returns the array's grown document, or None when no documents were given."""
    if items is None:
        return None
    documents = list(items(extras) if callable(items) else items)
    n_add = plan.n_new - plan.n_old
    if len(documents) != n_add:
        raise refuse("provenance_items", f"expected {n_add} documents, got {len(documents)}")
    old = plan.reader._doc(PROVENANCE_ITEMS)
    old_shape = int(old["shape"][0]) if isinstance(old, Mapping) and old.get("shape") else 0
    info0 = plan.reader.array(0).info
    compressor = dict(info0.codecs[-1]) if len(info0.codecs) > 1 else None
    objects, doc = grown_items_objects(documents, plan.n_old, compressor, old_shape)
    for key, blob in objects.items():
        plan.target.put(key, blob)
    return doc


def _volatility_basis(plan: _Plan, state: str) -> _VolatilityBasis:
    """What the volatility update starts from, decided before any chunk is written: the
    pre-append volatility (the journal's, when an interrupted run of an append onto this root
    left one: decision 0020), whether the journal must be begun, and the cells whose old sum the
    level-0 tasks recompute from the store (clipped at 1.0, or every cell when the stored
    volatility is not the old root's)."""
    reader, attrs, target = plan.reader, plan.attrs, plan.target
    stored = reader.volatility()
    basis = _VolatilityBasis(stored, state)
    if stored is None or not attrs.volatility_path:
        return basis
    found, old_chunk = journaled_volatility(target, plan.n_old)
    if found:  # an interrupted run of an append onto this root: its volatility before
        basis.stored = _decoded_volatility(reader, old_chunk, stored)
        basis.state = "old"
    elif state == "old":  # record it before it is rewritten
        basis.begin = True
    if basis.state == "final":
        return basis
    old_terms = [
        t for t in range(plan.n_old) if t not in plan.old_vol_anchors and t in plan.old_vol_refs
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


@dataclass
class _VolatilityBasis:
    stored: np.ndarray | None
    state: str
    begin: bool = False
    old_terms: list[int] = field(default_factory=list)
    recount: frozenset[tuple[int, int]] = frozenset()


def _write_coordinates(
    plan: _Plan,
    results0: list[CellResult],
    basis: _VolatilityBasis,
    fail_after: str | None = None,
) -> dict[str, dict[str, Any]]:
    """volatility/c/0/0, then time/c/0 of every level (spec 14 write order). The volatility is
    computed from the pre-append one, which the append journal keeps until the root is written
    (:mod:`chronozarr.write._journal`): a re-run after a kill at any point applies the new deltas
    once. Returns the array documents to write next."""
    reader, attrs, target, n_new = plan.reader, plan.attrs, plan.target, plan.n_new
    vol_key = f"{attrs.volatility_path}/c/0/0"
    if basis.begin:
        begin_journal(target, plan.n_old, target.get(vol_key))
    if basis.stored is not None and attrs.volatility_path and basis.state != "final":
        vol = _update_volatility(reader, basis.stored, results0, basis.old_terms)
        vdoc = reader._doc(attrs.volatility_path)
        assert vdoc is not None  # reader.volatility() read it above
        vcodec = ChunkCodec(vdoc["codecs"], "float32", vol.shape)
        target.put(vol_key, vcodec.encode(vol))
    if fail_after == "volatility":
        raise RuntimeError("injected failure after the volatility, before time/c/0")
    new_docs: dict[str, dict[str, Any]] = {}
    # every level's time, then the root's when the store has one (root_coordinates)
    time_paths = [f"{lv.path}/time" for lv in reader.levels] + root_time_paths(reader._doc)
    for time_path in time_paths:
        tdoc = json.loads(json.dumps(reader._doc(time_path)))
        tdoc["shape"] = [n_new]
        tdoc["chunk_grid"]["configuration"]["chunk_shape"] = [n_new]
        codec = ChunkCodec(tdoc["codecs"], "int64", (n_new,))
        times = np.asarray(plan.all_times_ms, dtype=np.int64)
        target.put(f"{time_path}/c/0", codec.encode(times))
        new_docs[time_path] = tdoc
    for lv in reader.levels:
        for name in _array_names(attrs):
            new_docs[f"{lv.path}/{name}"] = _doc_with_shape(reader, lv.path, name, n_new)
    return new_docs


def _new_root(
    plan: _Plan,
    root: Mapping[str, Any],
    new_docs: Mapping[str, dict[str, Any]],
    provenance: Mapping[str, Any] | None = None,
    *,
    sort: bool = False,
) -> dict[str, Any]:
    """The root document after the append: times, temporal, levels and shard_bytes grown, the
    consolidated copies of the rewritten documents replaced (spec 14); ``provenance``, when
    given, replaces the root's (spec 3.8). ``sort``: the consolidated entries in key order
    (as :func:`chronozarr.provenance.write_provenance_items` leaves them)."""
    attrs, n_new = plan.attrs, plan.n_new
    new_attrs = attrs.evolve(
        times=tuple(format_time(t) for t in plan.all_times_ms),
        temporal=plan.new_temporal,
        levels=None
        if attrs.levels is None
        else tuple(
            type(lv)(lv.path, lv.resolution, lv.transform, (n_new, *lv.shape[1:]), lv.grid)
            for lv in attrs.levels
        ),
        shard_bytes=plan.shard_bytes if attrs.shard_bytes is not None else None,
        provenance=dict(provenance) if provenance is not None else attrs.provenance,
    )
    new_root = dict(root)
    attributes = dict(root.get("attributes") or {})
    attributes["chronozarr"] = new_attrs.to_json()
    new_root["attributes"] = attributes
    cons = root.get("consolidated_metadata")
    if isinstance(cons, Mapping) and isinstance(cons.get("metadata"), Mapping):
        meta = dict(cons["metadata"])
        for key, doc in new_docs.items():
            meta[key] = consolidated_entry(doc)
        if sort:
            meta = dict(sorted(meta.items()))
        new_root["consolidated_metadata"] = {**cons, "metadata": meta}
    return new_root


def _array_names(attrs: RootAttrs) -> list[str]:
    names = [attrs.variable]
    if attrs.mask_variable:
        names.append(attrs.mask_variable)
    if attrs.coverage_variable:
        names.append(attrs.coverage_variable)
    return names


def _doc_with_shape(reader: Reader, level_path: str, name: str, n_new: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(reader._doc(f"{level_path}/{name}")))
    doc["shape"] = [n_new, *doc["shape"][1:]]  # spatial:* attributes describe y/x: unchanged
    return doc


def _update_volatility(
    reader: Reader, stored: np.ndarray, results: list[CellResult], old_terms: Sequence[int]
) -> np.ndarray:
    """The new deltas join each cell's mean (spec 14): old sum recovered from the stored mean.

    A cell whose stored value is clipped at 1.0 has lost its sum (as has every cell of a store
    whose volatility is not its root's): its level-0 task recomputed the sum from the store
    (``extra["old_sum"]``). The result equals the spec 5 definition over the recorded references
    up to float32 rounding.
    """
    vol = stored.astype(np.float32).copy()
    n_band = len(reader.bands)
    lv = reader.levels[0]
    h, w = lv.shape[-2:]
    cs = reader.chunk_size(0)
    for res in results:
        r, c = res.row, res.col
        pixels = n_band * min(cs, h - r * cs) * min(cs, w - c * cs)
        old_count = len(old_terms) * pixels
        recounted = (res.extra or {}).get("old_sum")
        if old_count and recounted is not None:
            old_sum = float(recounted)
        else:
            old_sum = float(stored[r, c]) * 10000.0 * old_count
        vol[r, c] = volatility_value(old_sum + res.vol_sum, old_count + res.vol_count)
    return vol


def _decoded_volatility(reader: Reader, chunk: bytes | None, like: np.ndarray) -> np.ndarray:
    """The volatility array of the journal's chunk (fill when the chunk was absent)."""
    path = reader.attrs.volatility_path
    assert path is not None
    info = ArrayInfo.from_json(reader._doc(path), path, allowed_dtypes=("float32",))
    if chunk is None:
        return np.full(like.shape, info.typed_fill(), dtype=np.float32)
    codec = ChunkCodec(info.codecs, info.dtype, info.chunk_shape)
    return codec.decode(chunk)[: info.shape[0], : info.shape[1]]


def _volatility_state(reader: Reader, all_times_ms: Sequence[int]) -> str:
    """ "old" (the stored volatility is the previous root's), "final" (an interrupted run of this
    same append already wrote it), or "unknown" (another append was interrupted: recompute)."""
    path = f"{reader.levels[0].path}/time"
    doc = reader._doc(path)
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

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

``append`` checks its arguments and the store (:mod:`chronozarr.write._append_checks`), then
makes its plan: the grown schedules and the volatility basis decided before any write, one stage
of cell tasks per level (:mod:`chronozarr.write._append_plan`, tasks in
:mod:`chronozarr.write._append_tasks`), and the commit of the volatility, the time coordinates
and the metadata (:mod:`chronozarr.write._append_commit`). The one runner
(:class:`chronozarr.write.Runner`) executes the stages on local threads or, with ``scheduler=``,
on dask workers that write their chunk objects to the target themselves (decision 0022).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chronozarr.errors import ClusterError, EncodeError
from chronozarr.format import load_json
from chronozarr.io import Lease, LocalStore, Store, open_target, read_versioned
from chronozarr.read import Reader
from chronozarr.write._append_checks import UNSET, check_append, refuse, xarray_coords
from chronozarr.write._append_commit import AppendCommit
from chronozarr.write._append_plan import (
    AppendState,
    VolatilityBasis,
    append_stages,
    append_state,
    volatility_basis,
)
from chronozarr.write._append_tasks import AppendContext, AppendInput, StoreView
from chronozarr.write._cell_tasks import is_cell_source
from chronozarr.write._inputs import unwrap_array
from chronozarr.write._journal import drop_stale_journal
from chronozarr.write._plan import Stage, WritePlan
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner, RunOptions
from chronozarr.write._worklog import WorkLog, clear_work

__all__ = ["AppendSummary", "append"]

log = logging.getLogger("chronozarr.append")


# Long by its signature and docstring: the public keyword API, documented where it is declared.
# The body is its steps (checks, the store as found, plan, run, commit).
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
) -> AppendSummary:
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
    try:
        run = RunOptions(workers, scheduler, retries, worker_timeout, resume_key, on_task)
    except EncodeError as exc:  # the same rule as encode's, refused as an append's
        raise refuse(exc.argument, exc.message) from exc
    target = _open(store, store_options)
    if isinstance(target, LocalStore) and not (target.root / "zarr.json").is_file():
        raise refuse("store", f"no chronozarr store at {target.url} (zarr.json not found)")
    lease = Lease(target, f"append of {len(times)} timestep(s)").acquire()
    try:
        stages = _append_under_lease(
            target, data, times, mask, coverage, bands, crs, transform, nodata, provenance,
            provenance_items, run, _fail_after,
        )  # fmt: skip
    finally:
        lease.release()
    return AppendSummary(
        target.url,
        tasks={str(k): len(st.tasks) for k, st in enumerate(stages)},
        found={str(k): len(st.done) for k, st in enumerate(stages)},
    )


@dataclass
class AppendSummary:
    """What ``append`` returns: the target's URL and, per level (``"0"``, ``"1"``...), its
    tasks and how many of them a resumed run found done in the work prefix and did not run
    (decision 0017; reported by the toolkit, decision 0050). ``resumed``: some were found."""

    store: str
    tasks: dict[str, int] = field(default_factory=dict)
    found: dict[str, int] = field(default_factory=dict)

    @property
    def resumed(self) -> bool:
        return any(self.found.values())


def _append_under_lease(
    target: Store,
    data: Any,
    times: Sequence[Any],
    mask: Any,
    coverage: Any,
    bands: Sequence[Any] | None,
    crs: Any,
    transform: Sequence[float] | None,
    nodata: Any,
    provenance: Any,
    provenance_items: Any,
    run: RunOptions,
    _fail_after: str | None,
) -> list[Stage]:
    """The body of :func:`append` under the writer's lease (decision 0051): the root read with
    its version, which the commit replaces only if it is still the root. Returns the stages
    run (what a resumed run found done is in their ``done``)."""
    raw_root, root_version = read_versioned(target, "zarr.json")
    if raw_root is None:
        raise refuse("store", f"no chronozarr store at {target.url} (zarr.json not found)")
    root = load_json(raw_root, f"{target.url}/zarr.json")
    reader = Reader(target, root)
    drop_stale_journal(target, reader.n_time)  # debris of a run killed after its root (0051)
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
    state = append_state(reader, target, int(data.shape[0]), times)
    client, owned = _connect(run.scheduler)
    try:
        runner = Runner.of(run, client)
        work = _work_log(target, run.resume_key, state)
        basis = volatility_basis(state)
        ctx = _context(state, root, data, sourced, (mask, coverage), basis, work)
        stages = append_stages(
            state, ctx, runner, work, on_task=run.on_task, fail_after=_fail_after
        )
        commit = AppendCommit(
            state, root, basis, work, provenance, provenance_items, fail_after=_fail_after,
            root_version=root_version,
        )  # fmt: skip
        WritePlan(stages, commit, pipelined=False).execute(runner)
    finally:
        if owned:
            client.close()
    return stages


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


def _work_log(target: Store, key: str | None, state: AppendState) -> WorkLog | None:
    """The resumable work prefix of this append (decision 0017). Another append's prefix is
    removed, by a resumable append or not: it belongs to an append that completed (the root
    moved on) or to another batch (or an interrupted run of this one), whose cells this one
    rewrites."""
    work = WorkLog(target, key or "-")
    described = {"kind": "append", "n_old": state.n_old, "n_new": state.n_new}
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


def _context(
    state: AppendState,
    root: Mapping[str, Any],
    data: Any,
    sourced: bool,
    planes: tuple[Any, Any],
    basis: VolatilityBasis,
    work: WorkLog | None,
) -> AppendContext:
    """What every task of the append shares: the store as found, the schedules, the cells to
    recount, and the input (a cell source, or the array with its mask and coverage)."""
    source = data
    if not sourced:
        mask, coverage = planes
        source = AppendInput(
            data, state.layout.dtype, unwrap_array(mask, "mask"), unwrap_array(coverage, "coverage")
        )
    height, width = state.reader.levels[0].shape[-2:]
    return AppendContext(
        StoreView(state.target, root, state.reader), state.layout, state.n_old, state.n_new,
        int(height), int(width), state.vol_refs, state.old_vol_refs, state.moved, basis.recount,
        basis.old_terms, source, work.key if work else None,
    )  # fmt: skip

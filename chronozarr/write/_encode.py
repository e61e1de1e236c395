"""The streaming writer: ``encode`` (spec 2-9).

Memory is bounded by a few cells whatever the region: level 0 is written cell by cell from the
input (a numpy, dask or xarray array read one cell-timestep batch at a time), each level k from
level k-1 as stored (read back, reconstructed, block-averaged), so nothing larger than a 2 x 2
block of cells is held. Write order (spec 9): every chunk/shard object, then the coordinate
arrays and volatility, then every zarr.json below the root, the root zarr.json last: a crash
leaves no root, never a root that describes missing data.

``encode`` checks its arguments (:mod:`chronozarr.write._arguments`), opens the target, makes the
temporal choice (:mod:`chronozarr.write._auto`, 4.3), then its plan
(:mod:`chronozarr.write._encode_plan`: the stages of cell tasks and the commit), which the one
runner executes (:mod:`chronozarr.write._runner`) before the commit writes the metadata (9).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chronozarr.errors import (
    ConditionalWriteError,
    EncodeError,
    RemoteStoreError,
    StoreAccessError,
)
from chronozarr.format import Codec, StoreLayout, schedule
from chronozarr.io import WORK_PREFIX, Lease, LocalStore, Store, open_target, store_is_empty
from chronozarr.write._arguments import (
    EncodeArgs,
    check_encode_args,
    check_provenance,
)
from chronozarr.write._auto import select_encoding
from chronozarr.write._cells import Layout
from chronozarr.write._encode_plan import encode_plan
from chronozarr.write._history import HistoryLayout
from chronozarr.write._inputs import DEFAULT
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner, RunOptions
from chronozarr.write._worklog import WorkLog

__all__ = ["EncodeSummary", "encode"]

log = logging.getLogger("chronozarr.writer")


def _open_target(store: Any, options: Mapping[str, Any] | None, work_key: str | None) -> Store:
    """The new or empty target the store is written into (spec 9: never over a store). A
    resumable run (``work_key``) may continue a partial of the same key (decision 0017)."""
    del work_key  # checked by _check_target under the writer's lease
    return open_target(store, dict(options) if options else None)


def _lease(target: Store) -> Lease:
    """The writer's lease on the target (decision 0051): a second writer fails here, before
    its first write."""
    if isinstance(target, LocalStore) and target.root.exists() and not target.root.is_dir():
        raise EncodeError("store", f"{target.url} is not a folder")
    try:
        return Lease(target, "encode (a new store)").acquire()
    except (RemoteStoreError, StoreAccessError) as exc:  # unreachable, no credentials: say where
        if isinstance(exc, ConditionalWriteError):
            raise
        raise EncodeError("store", f"cannot use {target.url} as the target: {exc}") from exc


def _check_target(target: Store, work_key: str | None) -> Store:
    if target.get("zarr.json") is not None:
        raise EncodeError(
            "store",
            f"{target.url} already holds a Zarr store; a re-encode goes under a new prefix (spec 9)",
        )
    if isinstance(target, LocalStore) and target.root.exists() and not target.root.is_dir():
        raise EncodeError("store", f"{target.url} is not a folder")
    if work_key is not None:
        work = WorkLog(target, work_key)
        others = work.other_keys()
        if others:
            raise EncodeError(
                "store",
                f"{target.url} holds the partial of another build ({WORK_PREFIX}/"
                f"{sorted(others)[0]}/); finish that build, or delete it, or write elsewhere",
            )
        if work.started():
            log.info("resuming the partial build %s at %s", work_key, target.url)
            return target
    if not store_is_empty(target):
        raise EncodeError(
            "store",
            f"{target.url} is not empty; a store is written into a new or empty folder or prefix "
            "(a re-encode goes under a new prefix, spec 9)",
        )
    return target


def _layout(args: EncodeArgs, target: Store) -> Layout:
    """The per-cell writer's layout, star-delta on the nominal schedule (spec 4.2, 5); ``_select``
    switches it to none when that is the choice."""
    n_time, n_band = args.shape[:2]
    vol_anchors, vol_refs = schedule(n_time, args.layout.anchor_interval)
    return Layout(
        store=target,
        variable=args.variable,
        n_time=n_time,
        n_band=n_band,
        cs=args.cs,
        dtype=args.dtype,
        nodata=args.nodata,
        encoding="star-delta",
        anchors=frozenset(vol_anchors),
        refs=vol_refs,
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=args.shard_time,
        data_codecs=args.data_codecs,
        plane_codecs=args.plane_codecs,
        has_mask=args.mask is not None,
        has_coverage=args.coverage is not None,
        history=(
            HistoryLayout(args.layout.history_time, int(args.layout.history_block or 1))
            if args.layout.history
            else None
        ),
    )


@dataclass
class EncodeSummary:
    """What ``encode`` returns: the target's URL, whether it resumed a partial, the level-0
    cell source's summaries (``summary()`` of each task, JSON), and the wall seconds of its
    phases (``select``: the temporal choice, with the auto sample; ``levels``: every chunk of
    every level; ``metadata``: the metadata written last, spec 9).

    ``tasks`` and ``found``: per level (``"0"``, ``"1"``...; ``"01"`` for levels 0 and 1 in one
    stage, decision 0057), its tasks and how many of them a resumed run found done in the work
    prefix and did not run (decision 0017; the toolkit reports them, decision 0050)."""

    store: str
    resumed: bool
    sources: list[Any]
    phases: dict[str, float] = field(default_factory=dict)
    tasks: dict[str, int] = field(default_factory=dict)
    found: dict[str, int] = field(default_factory=dict)


# Long by its signature and docstring: the public keyword API, documented where it is declared.
# The body is its steps (checks, target, choice, plan, run, commit).
def encode(
    data: Any,
    store: Any,
    *,
    times: Sequence[Any],
    bands: Sequence[Any],
    crs: Any,
    transform: Sequence[float],
    nodata: Any = DEFAULT,
    mask: Any = None,
    coverage: Any = None,
    encoding: str = "auto",
    anchor_interval: int = 6,
    chunk_size: int = 512,
    shard: bool = False,
    shard_time: int | None = None,
    codec: str | Codec = "zstd",
    codec_options: Mapping[str, Any] | None = None,
    history: bool = False,
    history_time: int = 12,
    history_block: int | None = None,
    multiscales: str = "list",
    layout: StoreLayout | None = None,
    provenance: Mapping[str, Any] | Callable[[list[Any]], Mapping[str, Any]] | None = None,
    provenance_items: Sequence[str] | Callable[[list[Any]], Sequence[str]] | None = None,
    variable: str = "data",
    workers: int | None = None,
    scheduler: Any = None,
    retries: int = DEFAULT_RETRIES,
    worker_timeout: float = DEFAULT_WORKER_TIMEOUT,
    store_options: Mapping[str, Any] | None = None,
    resume_key: str | None = None,
    on_task: Callable[[Any], None] | None = None,
    on_source: Callable[[int, Any], None] | None = None,
) -> EncodeSummary:
    """Write ``data`` (time, band, y, x) as a chronozarr v0.2 store at ``store``.

    See docs/spec.md for every argument's meaning. Raises ``EncodeError`` naming the argument on
    bad input, before anything is written. ``shard_time`` implies ``shard``. ``workers`` is the
    number of cells encoded at once (default: up to 4, bounded by the CPU count).

    ``layout``: the store's layout as one :class:`chronozarr.StoreLayout` (chunk size, encoding,
    anchor interval, sharding, compressor), instead of the keywords ``chunk_size``, ``encoding``,
    ``anchor_interval``, ``shard``, ``shard_time``, ``codec`` and ``codec_options`` (which then
    stay at their defaults). ``codec`` may also be a compressor object (``ZstdCodec(level=9)``).

    ``history``: also write the time-series companion of level 0 (docs/spec.md C25, decision
    0048): the true values of every band, the mask and the coverage chunked ``history_time``
    timesteps by ``history_block`` x ``history_block`` pixels, so that one pixel's history is
    ``ceil(n_time / history_time)`` small objects.

    ``multiscales``: the form of the root's ``multiscales`` attribute: ``"list"`` (the ndpyramid
    list of spec 3.4, the default) or ``"layout"`` (the zarr-conventions object form GDAL 3.13 and
    deck.gl-raster read; docs/spec.md C26, decision 0054). Either way the root also carries the
    conventions' ``zarr_conventions``, ``proj:*`` and ``spatial:*`` attributes.

    ``store``: a local path or ``file://`` URL, an ``s3://bucket/prefix`` URL (obstore;
    ``store_options`` are its endpoint, region, client_options...), an obstore store object, or
    any :class:`chronozarr.io.Store` (:mod:`chronozarr.io._targets`). ``data`` may also be a
    *cell source* producing a cell's planes on the worker (:mod:`chronozarr.write._cell_tasks`).

    ``scheduler``: a ``distributed.Client``. Every per-cell task then runs on its workers and
    writes its chunk objects to the target itself (a numpy/dask input travels as the cell's part,
    a cell source is scattered once); upper levels are computed on the workers from the level
    below read back from the target; this process writes the metadata last (spec 9). Same
    objects, same bytes as a local run. ``retries`` is dask's per-task retry count;
    ``worker_timeout`` bounds the wait when no worker is left (then ``ClusterError``).

    ``resume_key``: keep each finished task's summary under ``.cz-build/<resume_key>/`` in the
    target, so that the same call after an interruption skips what is written (decision 0017);
    the prefix is removed after the root is written. The caller promises that the same key means
    the same input and arguments.

    ``provenance`` and ``provenance_items`` (one JSON document per timestep, the
    ``provenance_items`` array) may be callables of the cell source's summaries, called after
    level 0. ``on_task`` is called here with each level-0 task's result (progress).

    ``on_source(i, summary)``: called here with each level-0 task's cell source summary and the
    task's index (first those a resumed run found, in task order, then each as its task
    returns); when given, the summaries are not kept (decision 0058: a region's summaries
    would grow with it): ``EncodeSummary.sources`` and the provenance callables' argument are
    then empty, and the caller folds what it needs.
    """
    layout_keywords = dict(
        chunk_size=chunk_size,
        encoding=encoding,
        anchor_interval=anchor_interval,
        shard=shard,
        shard_time=shard_time,
        codec=codec,
        codec_options=codec_options,
        history=history,
        history_time=history_time,
        history_block=history_block,
        multiscales=multiscales,
    )
    description = dict(
        times=times, bands=bands, crs=crs, transform=transform, nodata=nodata, mask=mask,
        coverage=coverage,
    )  # fmt: skip
    args = check_encode_args(data, description, layout, layout_keywords, variable)
    check_provenance(provenance)
    run = RunOptions(workers, scheduler, retries, worker_timeout, resume_key, on_task, on_source)
    target = _open_target(store, store_options, run.resume_key)
    lease = _lease(target)
    try:
        return _encode(args, target, run, provenance, provenance_items, lease)
    finally:
        lease.release()


def _encode(
    args: EncodeArgs,
    target: Store,
    run: RunOptions,
    provenance: Any,
    provenance_items: Any,
    lease: Lease,
) -> EncodeSummary:
    """The body of :func:`encode` under the writer's lease."""
    try:  # again, under the lease: no other writer is at work now
        _check_target(target, run.resume_key)
    except (RemoteStoreError, StoreAccessError) as exc:  # unreachable, no credentials: say where
        raise EncodeError("store", f"cannot use {target.url} as the target: {exc}") from exc
    work = WorkLog(target, run.resume_key) if run.resume_key is not None else None
    resumed = bool(work and work.started())
    if work is not None and not resumed:
        work.start({"shape": list(args.shape), "variable": args.variable})
    runner = Runner.of(run)
    cells = _layout(args, target)
    clock = time.perf_counter()
    phases: dict[str, float] = {}
    temporal, samples = select_encoding(cells, args, runner, work)
    phases["select"] = time.perf_counter() - clock
    plan = encode_plan(
        args, cells, temporal, samples, runner, work, on_task=run.on_task, on_source=run.on_source,
        provenance=provenance, provenance_items=provenance_items,
    )  # fmt: skip
    results = runner.run(plan.stages, pipelined=plan.pipelined)
    phases["levels"] = time.perf_counter() - clock - phases["select"]
    clock = time.perf_counter()
    lease.check()
    extras = plan.commit(results)
    phases["metadata"] = time.perf_counter() - clock
    levels = {st.name.removeprefix("cz-level"): st for st in plan.stages}
    return EncodeSummary(
        target.url,
        resumed,
        extras,
        phases,
        tasks={k: len(st.tasks) for k, st in levels.items()},
        found={k: len(st.done) for k, st in levels.items()},
    )

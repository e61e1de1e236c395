"""``cz append --scheduler``: the new months composited and appended on a cluster (decision 0022).

The client checks the months and the recipe against the store exactly as a local append does
(:mod:`cz.build.appending`: the grid, bands and store options, the recipe fingerprint of
decision 0018, the months right after the last one), plans the new months, and hands
``chronozarr.append`` an :class:`AppendSource` with ``scheduler=client``. Each level-0 task runs
on a worker: it composites its cell's new months with the same
:class:`~cz.build.cluster.CompositeSource` as ``cz build --scheduler``, reads gap-fill's
look-back (the ``max_age`` months before the first new one) from the store itself, on the
worker, and writes the cell's chunk objects straight to the target (a folder every worker sees,
or ``s3://`` through obstore); the upper levels are reduced on the workers from the level below,
read back from the target. The client gathers per-cell summaries (items read, skipped assets,
volatility terms) and writes ``provenance_items``, the volatility, the time coordinates and the
metadata last, under the append journal (decision 0020). Nothing proportional to the region
passes through its disk or memory: no spill, no local copy.

Resumable (decision 0017): the work prefix ``.cz-build/append-<fingerprint>/`` at the target
records each finished cell, keyed by the recipe, the plan and the store's time axis, so the same
command after an interruption (a lost client, Ctrl-C, SIGTERM, a crash) skips the cells already
written and ends with the same bytes. Until the root is written, readers see the old store.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import chronozarr
from chronozarr.io import location, open_target
from chronozarr.provenance import with_periods, with_skipped_items
from chronozarr.read import history_array
from cz.build.cluster import build_fingerprint
from cz.build.cluster_write import ClusterWrite, Wording
from cz.build.errors import AppendRefusedError
from cz.build.executor import Executor
from cz.build.fitting import fitting_recipe
from cz.build.headers import HeaderedStore
from cz.build.leftovers import new_tag, start_run
from cz.build.options import BuildOptions, BuildResult, Progress, resumed_text
from cz.build.sources import AppendSource, make_source
from cz.build.store_args import period_bounds
from cz.build.target import is_url, local_path
from cz.plan import Plan, plan_recipe
from cz.recipe import Recipe

__all__ = ["append_fingerprint", "append_on_cluster"]


def append_fingerprint(recipe: Recipe, plan: Plan, times: Sequence[str]) -> str:
    """The work key of an append: the build fingerprint of the new months' plan (recipe, grid,
    items) and the store's time axis it continues (decision 0017)."""
    text = build_fingerprint(recipe, plan) + "|" + "|".join(times)
    return "append-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _open_target(
    where: str, n_time: int, shard_time: int | None, history_time: int | None = None
) -> Any:
    """The store as the workers and this process write it: a folder (absolute, for workers on
    the shared filesystem) or ``s3://`` with the headers ``cz publish`` would set."""

    if not is_url(where):
        return open_target(str(local_path(where)))
    if location(where).kind == "s3":
        return HeaderedStore(where, n_time, shard_time, history_time)
    raise AppendRefusedError(
        f"cz append --scheduler writes a folder every worker sees or an s3:// store, not {where}"
    )


def _cell_summary(extra: Any) -> Any:
    """The cell source's summary in an append's level-0 result (``extra["source"]``)."""
    return (extra or {}).get("source")


def append_on_cluster(
    recipe: Recipe,
    months: list[str],
    where: str,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    """Append ``months`` to the store at ``where`` on the cluster at ``options.scheduler``; see
    the module docstring."""
    executor = Executor(options)  # first: an unreachable cluster fails before any search
    lock = None
    try:
        if not is_url(where):  # a local folder: the run lock and sweep of a local append
            folder = local_path(where)
            lock = start_run(folder, new_tag(), work_dir=folder.parent)
        probe = _open_target(where, 0, None)
        try:
            reader = chronozarr.open_store(probe)
        except chronozarr.ChronozarrError as exc:  # missing, not a store, or corrupt: refuse
            raise AppendRefusedError(f"cannot open the store at {probe.url}: {exc}") from None
        sub = fitting_recipe(recipe, months, reader, probe.url, progress)
        progress.start("plan", None, "resolving items")
        plan = plan_recipe(sub, out=where)
        progress.finish("plan")
        progress.plan_warnings(plan)
        info0 = reader.array(0).info
        n_new = reader.n_time + len(plan.months)
        companion = history_array(reader, 0)  # the time-series companion (spec C25)
        target = _open_target(
            where, n_new, info0.shard_time if info0.sharded else None,
            None if companion is None else companion.info.chunk_shape[0],
        )  # fmt: skip
        run = ClusterWrite("append", recipe, plan, options, progress, executor, _cell_summary)
        summary = _append(
            run,
            reader,
            target,
            AppendSource(make_source(recipe, plan, options), target, reader.n_time),
        )
    finally:
        executor.close()
        if lock is not None:
            lock.release()
    result = run.result(target.url, target, reader.attrs.temporal.encoding, started)
    result.store = where
    if summary.resumed:  # how much the interrupted append had written (decision 0050)
        result.resumed = {
            level: {"found": summary.found.get(level, 0), "tasks": n}
            for level, n in summary.tasks.items()
        }
        progress.note(f"resumed the append at {where}: {resumed_text(result.resumed)}")
    return result


def _append(run: ClusterWrite, reader: Any, target: Any, source: AppendSource) -> Any:
    """``chronozarr.append`` of the cell source, resumable under the append's fingerprint."""
    old = with_periods(reader.attrs.provenance, period_bounds(run.plan), reader.n_time)

    def provenance(extras: list[Any]) -> Any:
        skipped = run.stats(extras).skipped
        return with_skipped_items(old, skipped) if skipped else old

    kept = "the store still reads as before"
    words = Wording(
        chronozarr.AppendError,  # a condition of spec 14 the store enforces
        lambda exc: AppendRefusedError(f"chronozarr.append refused: {exc}"),
        f"appending to {target.url} on the cluster failed",
        kept,
        f"interrupted: the store at {target.url} still reads as before; re-run the same "
        "command to resume the append",
    )
    return run.run(
        lambda: chronozarr.append(
            target,
            source,
            provenance=provenance,
            resume_key=append_fingerprint(run.recipe, run.plan, list(reader.attrs.times)),
            **run.arguments(),
        ),
        words,
        target,
    )

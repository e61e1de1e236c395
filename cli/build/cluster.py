"""``cz build --scheduler``: the whole build on a dask.distributed cluster (decision 0017).

The client plans and hands ``chronozarr.encode`` a :class:`RegionSource` (the composite rules
and the plan's items; for each group of cells, a part holding the items touching it and which
touch which block, made as the group is submitted: decision 0058) as a
*cell source* with ``scheduler=client``. Each level-0 task runs on a worker: it composites its
cell's months (and the ``max_age`` months before, for gap-fill) with the same
:func:`~cz.build.tasks.compute_block` and :class:`~cz.build.spill.SpillPlanes` as a local
build, keeps them in the worker's memory (never the client's disk), encodes and writes the
cell's chunk objects straight to the target (a shared-filesystem folder, or ``s3://`` through
obstore). Upper levels are computed on the workers from the level below, read back from the
target. The client gathers per-task summaries (items read, observations, skipped assets, valid
and gap-filled pixels) and writes the metadata last (spec 9).

Resumable (decision 0017): ``encode``'s work prefix is keyed by a fingerprint of the recipe and
the plan, so the same command after an interruption skips the cells already written. On an
error the partial stays at the target (it holds no root zarr.json, so no reader sees it).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import chronozarr
from chronozarr.io import location, open_target
from cz.build.cluster_write import ClusterWrite, Wording
from cz.build.errors import BuildError
from cz.build.executor import Executor
from cz.build.headers import HeaderedStore
from cz.build.options import BuildOptions, BuildResult, Progress, resumed_text
from cz.build.sources import RegionSource, SourceArray
from cz.build.store_args import provenance_block
from cz.build.target import is_url, local_path
from cz.plan import Plan
from cz.plan.spooled import plan_recipe_spooled
from cz.recipe import Recipe

__all__ = ["build_fingerprint", "build_on_cluster"]


#: Where the months go in the fingerprint's text (they are hashed a month at a time).
_MONTHS = "\u2063cz-months\u2063"


def build_fingerprint(recipe: Recipe, plan: Plan) -> str:
    """16 hex digits over everything that decides the bytes: the recipe (but where it is
    written) and the plan's grid and items (decision 0017).

    The digest of ``json.dumps(doc, sort_keys=True)`` of the recipe with ``_grid`` and
    ``_months`` (each month's ``[label, [[id, correction, solar day], ...]]``), its text hashed a
    month at a time so that no list of the region's items is made (decision 0065)."""
    doc = recipe.model_dump(mode="json")
    if isinstance(doc.get("store"), dict):
        doc["store"].pop("path", None)
    doc["_grid"] = plan.grid.model_dump(mode="json")
    doc["_months"] = _MONTHS
    head, tail = json.dumps(doc, sort_keys=True, default=str).split(json.dumps(_MONTHS), 1)
    digest = hashlib.sha256(head.encode())
    digest.update(b"[")
    for k, m in enumerate(plan.months):
        month = [m.month, [(p.id, p.correction, p.solar_day) for p in m.items]]
        digest.update((", " if k else "").encode() + json.dumps(month, default=str).encode())
    digest.update(b"]" + tail.encode())
    return digest.hexdigest()[:16]


def region_source(recipe: Recipe, plan: Plan, options: BuildOptions) -> RegionSource:
    """The build's cell source, in parts per group of cells (decision 0058)."""
    return RegionSource(recipe, plan, options)


def _target(recipe: Recipe, where: str, n_months: int) -> Any:
    """The target as the workers and this process write it: a folder (absolute, for workers on
    the shared filesystem) or ``s3://`` with the headers ``cz publish`` would set."""
    if location(where).kind == "s3":  # the headers `cz publish` would set (headers.py)
        layout = recipe.store.layout
        history_time = layout.history_time if layout.history else None
        return HeaderedStore(where, n_months, layout.shard_time_for(n_months), history_time)
    return open_target(where)  # encode refuses an existing store before any write


def build_on_cluster(
    recipe: Recipe,
    where: str,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    """Build ``recipe`` at ``where`` (a folder every worker sees, or an object-store URL) on
    the cluster at ``options.scheduler``; see the module docstring."""
    executor = Executor(options)  # first: an unreachable cluster fails before any search
    try:
        if plan is None:
            progress.start("plan", None, "resolving items")
            plan = plan_recipe_spooled(recipe, out=where)  # the items on disk (0065)
            progress.finish("plan")
        progress.plan_warnings(plan)
        if not is_url(where):  # workers may run elsewhere: an absolute path on the shared FS
            where = str(local_path(where))
        target = _target(recipe, where, len(plan.months))
        run = ClusterWrite("build", recipe, plan, options, progress, executor)
        source = SourceArray(region_source(recipe, plan, options))
        kept = f"the cells written so far stay at {target.url} without a root"
        words = Wording(
            chronozarr.EncodeError,  # refused before any write (a store is there)
            lambda exc: BuildError(f"cannot build at {target.url}: {exc}"),
            "writing the store on the cluster failed",
            kept,
            f"interrupted: {kept}; re-run the same command to resume",
        )
        summary = run.run(
            lambda: chronozarr.encode(
                source,
                target,
                layout=recipe.store.layout,
                provenance=lambda ex: provenance_block(recipe, run.stats(ex).skipped, plan),
                resume_key=build_fingerprint(recipe, plan),
                on_source=run.on_source,  # folded as they arrive (decision 0058)
                **run.arguments(),
            ),
            words,
            target,
        )
    finally:
        executor.close()
    run.stats(summary.sources)
    encoding = chronozarr.open_store(where).attrs.temporal.encoding
    result = run.result(where, open_target(where), encoding, started)
    result.store = where
    if summary.resumed:  # how much the partial held (decision 0050)
        result.resumed = {
            level: {"found": summary.found.get(level, 0), "tasks": n}
            for level, n in summary.tasks.items()
        }
        progress.note(f"resumed the partial build at {where}: {resumed_text(result.resumed)}")
    return result

"""``cz append``: composite new months and add them with ``chronozarr.append`` (spec 14)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr
from chronozarr import provenance
from chronozarr.provenance import write_provenance_items
from cz.build.cluster_append import append_on_cluster
from cz.build.errors import AppendRefusedError, BuildError
from cz.build.executor import CompositeStats, run_composites
from cz.build.fitting import fitting_recipe
from cz.build.leftovers import new_tag, start_run, tagged_name
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.spill import History, Spill, SpillPlanes
from cz.build.store_args import (
    carry_forward_months,
    month_document,
    period_bounds,
    store_bands,
)
from cz.build.target import is_url, local_path, store_size
from cz.build.tasks import composite_context
from cz.build.views import PlaneView, spill_planes
from cz.periods import label_of_time
from cz.plan import Plan, plan_recipe
from cz.recipe import Recipe


def append_months(
    recipe: Recipe,
    months: Sequence[str],
    *,
    store: str | None = None,
    options: BuildOptions | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Composite ``months`` with ``recipe`` and append them to the local store (spec 14); with
    ``options.scheduler``, on the cluster, to a folder every worker sees or an ``s3://`` store
    (:mod:`cz.build.cluster_append`).

    Refuses (:class:`AppendRefusedError`, nothing written) months already in the store, before
    its last month or leaving a gap after it, and (:class:`RecipeMismatchError`, before the
    catalog is searched) a recipe whose grid, bands, store options or fingerprint differ from
    the store's. Gap-fill reads the months before the first new one from the store.
    """
    options = options or BuildOptions()
    progress = progress or Progress()
    started = time.perf_counter()
    where = store if store is not None else recipe.store.path
    if options.scheduler:  # composited and written on the cluster, straight to the store
        if where is None:
            raise BuildError("no store: give --store or set store.path in the recipe")
        return append_on_cluster(recipe, list(months), where, options, progress, started)
    path, reader = _open_local(where)
    sub = fitting_recipe(recipe, list(months), reader, str(path), progress)
    progress.start("plan", None, "resolving items")
    plan = plan_recipe(sub, out=str(path))
    progress.finish("plan")
    progress.plan_warnings(plan)
    ctx = composite_context(recipe, plan, options)
    tag = new_tag()
    work = Path(options.work_dir).expanduser().resolve() if options.work_dir else path.parent
    spill_path = work / tagged_name(path, "composites", tag)
    lock = start_run(path, tag, work_dir=work, spill=spill_path)  # dead runs swept (decision 0020)
    try:
        spill = Spill(spill_path)
    except BaseException:  # nothing of this run stays
        lock.release()
        raise
    try:
        stats = run_composites(plan, recipe, ctx, spill, options.threads(), progress)
        planes = spill_planes(
            spill,
            recipe,
            plan,
            options,
            progress,
            max_age=carry_forward_months(recipe),
            history=_store_history(reader),
        )
        write_start = time.perf_counter()
        _write(recipe, plan, planes, stats, path, reader.n_time, options, progress)
        fractions = planes.fractions()
    finally:
        spill.remove()
        lock.release()
    size = store_size(path)
    return BuildResult.of_run(
        "append",
        str(path),
        recipe=recipe,
        plan=plan,
        stats=stats,
        encoding=chronozarr.open_store(path).attrs.temporal.encoding,
        size=size,
        started=started,
        write_seconds=time.perf_counter() - write_start,
        fractions=fractions,
    )


def _open_local(where: str | None) -> tuple[Path, Any]:
    """The local store an append grows, and its reader; refuses URLs and what is no store."""
    if where is None:
        raise BuildError("no store: give --store or set store.path in the recipe")
    if is_url(where):
        raise AppendRefusedError(
            f"append works on a local copy of the store, not on {where}: append locally, "
            "validate, then `cz publish` (spec 14), or append on a cluster (--scheduler), which "
            "writes s3:// stores in place"
        )
    path = local_path(where)
    try:
        return path, chronozarr.open_store(path)
    except chronozarr.ChronozarrError as exc:  # missing, not a store, or corrupt: refuse
        raise AppendRefusedError(f"cannot open the store at {path}: {exc}") from None


def next_labels(recipe: Recipe, where: str | None, count: int) -> list[str]:
    """The labels of the ``count`` periods after the last one of the store at ``where`` (what
    ``cz append --next N`` appends)."""
    if where is None:
        raise BuildError("no store: give --store or set store.path in the recipe")
    try:
        times = chronozarr.open_store(where if is_url(where) else local_path(where)).attrs.times
    except chronozarr.ChronozarrError as exc:  # missing, not a store, or corrupt: refuse
        raise AppendRefusedError(f"cannot open the store at {where}: {exc}") from None
    rule = recipe.composite.period.rule()
    start: date | None = rule.label_day(label_of_time(times[-1], rule))
    out: list[str] = []
    for _ in range(count):
        start = rule.following(start) if start is not None else None
        if start is None:
            break
        out.append(rule.period(start).label)
    if not out:
        raise AppendRefusedError(f"no period follows the store's last one ({times[-1]})")
    return out


def _store_history(reader: Any) -> History:
    """Gap-fill's look-back before the first new month: (values, coverage) from the store."""
    n_old = reader.n_time
    lock = threading.Lock()

    def history(t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        index = n_old + t
        if index < 0:
            return None
        with lock:  # one reader, shared by the writer's threads
            values = reader.read_cell(index, row, col, 0)
            coverage = reader.plane_cell("coverage", index, row, col, 0)
        return np.asarray(values), np.asarray(coverage, dtype=np.uint8)

    return history


def _write(
    recipe: Recipe,
    plan: Plan,
    planes: SpillPlanes,
    stats: CompositeStats,
    path: Path,
    n_old: int,
    options: BuildOptions,
    progress: Progress,
) -> None:
    """Provenance first (the array may run ahead of the time axis, never behind it), then
    ``chronozarr.append`` of the spill's lazy views."""
    documents = [month_document(m, stats.skipped) for m in plan.months]
    write_provenance_items(path, documents, first=n_old, update_root=True)
    provenance.record_periods(path, period_bounds(plan), n_old)  # none for monthly stores
    if stats.skipped:
        provenance.record_skipped_items(path, stats.skipped)
    grid = plan.grid
    progress.start("cells", grid.cells, f"{grid.cells} cells x {len(plan.months)} months")
    try:
        chronozarr.append(
            path,
            PlaneView(planes, "data"),
            times=[m.time for m in plan.months],
            mask=PlaneView(planes, "mask"),
            coverage=PlaneView(planes, "coverage"),
            bands=store_bands(recipe),
            crs=grid.crs,
            transform=grid.transform,
            nodata=recipe.store.effective_nodata,
            workers=options.threads(),
        )
    except chronozarr.AppendError as exc:  # a condition of spec 14 the store enforces
        raise AppendRefusedError(f"chronozarr.append refused: {exc}") from exc
    except chronozarr.ConcurrentWriteError:  # another writer: its own exit code (decision 0051)
        raise
    except chronozarr.ChronozarrError as exc:  # the write itself failed
        raise BuildError(f"appending to {path} failed: {exc}") from exc
    progress.finish("pyramid")

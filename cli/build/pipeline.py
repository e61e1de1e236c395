"""``cz build``: plan, composites, the streaming writer, provenance, commit (or publish)."""

from __future__ import annotations

import re
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import chronozarr
from chronozarr.provenance import write_provenance_items
from cz.build.cluster import build_on_cluster
from cz.build.empty import check_not_empty
from cz.build.errors import BuildError
from cz.build.executor import run_composites
from cz.build.leftovers import sweep_publish_copies
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.spill import Spill, SpillPlanes
from cz.build.store_args import (
    carry_forward_months,
    month_document,
    provenance_block,
    store_bands,
)
from cz.build.target import Target, is_url, local_path, store_size
from cz.build.tasks import composite_context
from cz.build.views import PlaneView, spill_planes
from cz.errors import CzError
from cz.plan import Plan, plan_recipe
from cz.recipe import Recipe
from cz.signals import reopen


def build(
    recipe: Recipe,
    *,
    out: str | None = None,
    plan: Plan | None = None,
    options: BuildOptions | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Build the store of ``recipe`` at ``out`` (else ``store.path``); see the module docstring.

    Raises :class:`BuildError` (target, cluster, store), :class:`cz.load.AssetReadError` (an
    asset that cannot be read), :class:`cz.errors.StacError` (the catalog) and
    :class:`cz.errors.RecipeError`. On any error nothing is left at the target.
    """
    options = options or BuildOptions()
    progress = progress or Progress()
    started = time.perf_counter()
    where = out if out is not None else recipe.store.path
    if where is None:
        raise BuildError("no output: give --out or set store.path in the recipe")
    if options.scheduler:  # the whole build on the cluster, straight to the target (decision 0017)
        return build_on_cluster(recipe, where, plan, options, progress, started)
    if is_url(where):
        return _build_to_url(recipe, where, plan, options, progress, started)
    target = Target.prepare(local_path(where), options)
    try:
        result = _build_local(recipe, target, plan, options, progress, started)
        target.commit()
    except BaseException:  # Ctrl-C and SIGTERM too: nothing is left at the target
        target.abort()
        raise
    finally:
        target.close()  # the spill, then the run's lock (cz.build.leftovers)
    result.store = str(target.final)
    result.seconds = time.perf_counter() - started
    return result


def _build_to_url(
    recipe: Recipe,
    url: str,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    """Build a local copy, then publish it, holding the target's lease (an S3 prefix) from the
    start (decision 0051): a second build to the same target stops before it builds."""
    from cz import publish as publishing  # loaded only when a build goes to a URL

    where = publishing.open_target(url)
    with publishing.hold(where):
        return _build_then_publish(recipe, url, where, plan, options, progress, started)


def _build_then_publish(
    recipe: Recipe,
    url: str,
    where: Any,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    from cz import publish as publishing  # loaded only when a build goes to a URL

    base = Path(options.work_dir or ".").expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", url.rstrip("/").rsplit("/", 1)[-1]) or "store.zarr"
    local = base / f".cz-publish-{uuid.uuid4().hex[:10]}" / name
    sweep_publish_copies(base)  # dead runs' copies; a copy kept after a failed publish stays
    target = Target.prepare(local, options)
    try:
        result = _build_local(recipe, target, plan, options, progress, started)
        target.commit()
    except BaseException:  # Ctrl-C and SIGTERM too: nothing is left at the target
        target.abort()
        target.close()
        shutil.rmtree(local.parent, ignore_errors=True)
        raise
    objects = [0]

    def uploaded(_obj: Any) -> None:
        objects[0] += 1
        progress.advance("publish", 1.0)

    progress.start("publish", result.objects, url)
    try:
        reopen()  # the local copy's commit is not the run's: the publish's root is (cz.signals)
        publishing.publish(local, where, on_uploaded=uploaded)  # under the lease held above
    except chronozarr.ConcurrentWriteError as exc:  # another writer: exit 75, the copy stays
        raise chronozarr.ConcurrentWriteError(
            f"{exc}. The store built here is kept at {local}: publish it later with"
            f" `cz publish {local} {url}`"
        ) from None
    except CzError as exc:  # the local store stays for a manual publish
        raise BuildError(
            f"the store was built at {local} but publishing it to {url} failed: {exc}; "
            f"publish it with `cz publish {local} {url}`"
        ) from None
    finally:  # the lock is held through the upload: a copy killed meanwhile is swept later
        target.close()
    progress.finish("publish")
    shutil.rmtree(local.parent, ignore_errors=True)
    result.store = str(local)
    result.published = url
    result.seconds = time.perf_counter() - started
    return result


def _build_local(
    recipe: Recipe,
    target: Target,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    """Both passes into ``target.staging``: composites to the spill, then the store."""
    if plan is None:
        progress.start("plan", None, "resolving items")
        plan = plan_recipe(recipe, out=str(target.final))
        progress.finish("plan")
    progress.plan_warnings(plan)
    ctx = composite_context(recipe, plan, options)
    spill = Spill(target.spill_root)
    stats = run_composites(plan, recipe, ctx, spill, options.threads(), progress)
    planes = spill_planes(
        spill, recipe, plan, options, progress, max_age=carry_forward_months(recipe)
    )
    grid = plan.grid
    progress.start("cells", grid.cells, f"{grid.cells} cells x {len(plan.months)} months")
    write_start = time.perf_counter()
    _encode(
        recipe, plan, planes, target.staging, provenance_block(recipe, stats.skipped, plan), options
    )
    if not options.allow_empty:  # decision 0020: an all-fill store is a failed build
        check_not_empty(planes.fractions()[0], plan, stats)
    documents = [month_document(m, stats.skipped) for m in plan.months]
    write_provenance_items(target.staging, documents, first=0, update_root=True)
    progress.finish("pyramid")
    write_seconds = time.perf_counter() - write_start
    fractions = planes.fractions()
    return BuildResult.of_run(
        "build",
        str(target.final),
        recipe=recipe,
        plan=plan,
        stats=stats,
        encoding=chronozarr.open_store(target.staging).attrs.temporal.encoding,
        size=store_size(target.staging),
        started=started,
        write_seconds=write_seconds,
        fractions=fractions,
    )


def _encode(
    recipe: Recipe,
    plan: Plan,
    planes: SpillPlanes,
    staging: Path,
    provenance: dict[str, Any],
    options: BuildOptions,
) -> None:
    """Pass 2: ``chronozarr.encode`` streams the store from the spill's lazy views."""
    grid, store = plan.grid, recipe.store
    try:
        chronozarr.encode(
            PlaneView(planes, "data"),
            staging,
            times=[m.time for m in plan.months],
            bands=store_bands(recipe),
            crs=grid.crs,
            transform=grid.transform,
            nodata=store.effective_nodata,
            mask=PlaneView(planes, "mask"),
            coverage=PlaneView(planes, "coverage"),
            layout=store.layout,
            provenance=provenance,
            workers=options.threads(),
        )
    except chronozarr.ChronozarrError as exc:  # the writer refused or failed: a build error
        raise BuildError(f"writing the store failed: {exc}") from exc

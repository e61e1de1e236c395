"""``cz append``: composite new months and add them with ``chronozarr.append`` (spec 14)."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np

from chronozarr import provenance
from chronozarr.provenance import write_provenance_items
from cz.build.errors import AppendRefusedError, BuildError, RecipeMismatchError
from cz.build.executor import CompositeStats, Executor, run_composites
from cz.build.leftovers import new_tag, start_run, tagged_name
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.spill import History, Spill, SpillPlanes
from cz.build.store_args import (
    carry_forward_months,
    compare_with_store,
    month_document,
    period_bounds,
    store_bands,
)
from cz.build.target import is_url, local_path, store_size
from cz.build.tasks import composite_context
from cz.build.views import PlaneView, spill_planes
from cz.periods import PeriodRule, label_of_time
from cz.plan import GridPlan, Plan, grid_for, plan_recipe
from cz.recipe import Recipe, TimeSpec


def _compare_recipe(recipe: Recipe, reader: Any, grid: GridPlan) -> list[str]:
    """Where the recipe differs from the store's grid, bands and store options (empty: fits)."""
    diffs: list[str] = []
    attrs = reader.attrs
    lv0 = reader.levels[0]
    if attrs.crs != grid.crs:
        diffs.append(f"grid CRS: recipe {grid.crs}, store {attrs.crs}")
    if [round(v, 9) for v in lv0.transform] != [round(float(v), 9) for v in grid.transform]:
        diffs.append(f"grid transform: recipe {list(grid.transform)}, store {list(lv0.transform)}")
    if list(lv0.shape[-2:]) != list(grid.shape):
        diffs.append(f"grid shape: recipe {list(grid.shape)}, store {list(lv0.shape[-2:])}")
    if reader.chunk_size(0) != recipe.store.chunk_size:
        diffs.append(
            f"store.chunk_size: recipe {recipe.store.chunk_size}, store {reader.chunk_size(0)}"
        )
    want = store_bands(recipe)
    have = list(attrs.bands)
    if [b.name for b in want] != [b.name for b in have]:
        diffs.append(f"bands: recipe {[b.name for b in want]}, store {[b.name for b in have]}")
    else:
        for w, h in zip(want, have, strict=True):
            for key in ("scale", "offset", "common_name", "units"):
                a, b = getattr(w, key), getattr(h, key)
                if isinstance(a, float) or isinstance(b, float):
                    same = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)
                else:
                    same = a == b
                if not same:
                    diffs.append(f"bands[{w.name}].{key}: recipe {a!r}, store {b!r}")
    if reader.dtype.name != recipe.store.dtype:
        diffs.append(f"store.dtype: recipe {recipe.store.dtype}, store {reader.dtype.name}")
    if attrs.nodata != recipe.store.effective_nodata:
        diffs.append(f"store.nodata: recipe {recipe.store.effective_nodata}, store {attrs.nodata}")
    enc = attrs.temporal.encoding
    if recipe.store.encoding != "auto" and recipe.store.encoding != enc:
        diffs.append(f"store.encoding: recipe {recipe.store.encoding}, store {enc}")
    if enc == "star-delta" and attrs.temporal.anchor_interval != recipe.store.anchor_interval:
        diffs.append(
            f"store.anchor_interval: recipe {recipe.store.anchor_interval}, "
            f"store {attrs.temporal.anchor_interval}"
        )
    info = reader.array(0).info
    if bool(info.sharded) != bool(recipe.store.shard):
        diffs.append(f"store.shard: recipe {recipe.store.shard}, store {bool(info.sharded)}")
    elif (
        info.sharded
        and recipe.store.shard_time is not None
        and info.shard_time != recipe.store.shard_time
    ):
        diffs.append(f"store.shard_time: recipe {recipe.store.shard_time}, store {info.shard_time}")
    want_comp = recipe.store.layout.codec.compressor(reader.dtype.name)
    have_comp = [c for c in info.codecs if c.get("name") != "bytes"]
    if not have_comp or have_comp[-1] != want_comp:
        diffs.append(
            f"store.codec: recipe {want_comp}, store {have_comp[-1] if have_comp else None}"
        )
    if not reader.has_mask or not reader.has_coverage:
        diffs.append("the store has no mask/coverage (cz build always writes both)")
    return diffs


def _compare_fingerprint(recipe: Recipe, reader: Any, progress: Progress) -> list[str]:
    """Where the recipe's fingerprint (what a month means: collection, filters, mask, composite,
    gap-fill, harmonisation, bands, grid, dtype) differs from the store's recorded one, one line
    per field. A store built before the fingerprint was recorded is compared on what it did
    record, and a warning (once) names what could not be compared."""
    check = compare_with_store(recipe, reader.attrs.provenance)
    lines = []
    for key, value, recorded in check.differences[:50]:  # a hostile store: bounded message
        if recorded == check.NOT_RECORDED:
            lines.append(
                f"{_short(key, as_repr=False)}: recipe {_short(value)}, the store recorded "
                "nothing (it was built before this field existed, so with its default)"
            )
        else:
            lines.append(
                f"{_short(key, as_repr=False)}: recipe {_short(value)}, "
                f"store built with {_short(recorded)}"
            )
    if len(check.differences) > 50:
        lines.append(f"... {len(check.differences) - 50} more differing fields")
    if check.legacy and check.unchecked:
        progress.note(
            "the store records no recipe fingerprint (built before cz recorded one): only its "
            "collection, composite, gap-fill, mask classes, harmonisation and resampling were "
            "compared; make sure the recipe's filters, mask assets, bands and grid are the ones "
            "it was built with"
        )
    return lines


def _short(value: Any, limit: int = 200, *, as_repr: bool = True) -> str:
    """``repr(value)`` (or the text itself), cut to ``limit`` characters: a store's recorded
    fingerprint is store text and can be anything."""
    plain = not as_repr and isinstance(value, str) and value.isprintable()
    text = value if plain else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    import chronozarr

    options = options or BuildOptions()
    progress = progress or Progress()
    started = time.perf_counter()
    where = store if store is not None else recipe.store.path
    if options.scheduler:  # composited and written on the cluster, straight to the store
        from cz.build.cluster_append import append_on_cluster

        if where is None:
            raise BuildError("no store: give --store or set store.path in the recipe")
        return append_on_cluster(recipe, list(months), where, options, progress, started)
    path, reader = _open_local(where)
    months = list(months)
    # every comparison before the catalog is searched: the grid is the recipe's alone; the
    # recipe first, so a recipe of another period says so before its periods are checked
    diffs = _compare_recipe(recipe, reader, grid_for(recipe))
    diffs += _compare_fingerprint(recipe, reader, progress)
    if diffs:
        raise RecipeMismatchError(
            f"the recipe does not fit the store at {path}: " + "; ".join(diffs)
        )
    _check_months(months, store_labels(recipe, reader.attrs.times), recipe.composite.period.rule())
    sub = recipe.model_copy(update={"time": TimeSpec(start=months[0], end=months[-1])})
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
        executor = Executor(options)
        try:
            stats = run_composites(plan, recipe, ctx, spill, executor, progress)
        finally:
            executor.close()
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
    import chronozarr

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


def _check_months(months: list[str], have: list[str], rule: PeriodRule | None = None) -> None:
    """A store grows by the periods right after its last one, in order (spec 14); ``months``
    and ``have`` are period labels (``YYYY-MM`` for months, start dates otherwise)."""
    rule = rule or PeriodRule()
    unit = "month" if rule.kind == "month" else f"{rule.describe()} period"
    inside = [m for m in months if m in set(have)]
    if inside:
        raise AppendRefusedError(
            f"{unit}(s) {', '.join(inside)} are already in the store ({have[0]}..{have[-1]}); "
            f"append only adds {unit}s after the last one"
        )
    if months[0] <= have[-1]:
        raise AppendRefusedError(
            f"{months[0]} is before the store's last {unit} {have[-1]}; append only adds "
            f"{unit}s after it"
        )
    following = rule.following(rule.label_day(have[-1]))
    if following is None:
        raise AppendRefusedError(
            f"the store ends at {have[-1]}, the recipe's last window: add windows to "
            "composite.period to append"
        )
    expected = rule.period(following).label
    if months[0] != expected:
        every = (
            "a monthly store has every month"
            if rule.kind == "month"
            else f"a store has every {unit}"
        )
        raise AppendRefusedError(
            f"the store ends at {have[-1]}: the next {unit} is {expected}, not {months[0]} "
            f"({every}; append {expected}..{months[-1]})"
        )


def store_labels(recipe: Recipe, times: Sequence[str]) -> list[str]:
    """The period labels of a store's times, read with the recipe's period."""
    rule = recipe.composite.period.rule()
    return [label_of_time(t, rule) for t in times]


def next_labels(recipe: Recipe, where: str | None, count: int) -> list[str]:
    """The labels of the ``count`` periods after the last one of the store at ``where`` (what
    ``cz append --next N`` appends)."""
    import chronozarr

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
    import chronozarr

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
    except chronozarr.ChronozarrError as exc:  # the write itself failed
        raise BuildError(f"appending to {path} failed: {exc}") from exc
    progress.finish("pyramid")

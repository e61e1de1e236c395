"""``cz build --scheduler``: the whole build on a dask.distributed cluster (decision 0017).

The client plans, scatters one :class:`CompositeSource` (the composite rules, every month's
item references once, which items touch which block) and hands it to ``chronozarr.encode`` as a
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
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.io import location
from cz.build.blocks import blocks_touched, grid_blocks, item_refs, sign_refs
from cz.build.errors import BuildError
from cz.build.executor import CompositeStats, Executor
from cz.build.headers import HeaderedStore
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.spill import SpillPlanes
from cz.build.store_args import (
    carry_forward_months,
    gap_method,
    month_document,
    provenance_block,
    store_bands,
)
from cz.build.target import is_url, local_path
from cz.build.tasks import (
    BlockResult,
    BlockTask,
    CompositeContext,
    composite_context,
    compute_block,
)
from cz.composite import mask_from_source
from cz.errors import CzError
from cz.load import ItemRef, SkippedAsset
from cz.plan import Plan, plan_recipe
from cz.recipe import Recipe


class _LazySpill:
    """The :class:`~cz.build.spill.Spill` interface over composites computed on demand, in the
    worker's memory: the raw composite of (month, block) is computed the first time it is asked
    for, once, and kept (compressed) for the rest of the task."""

    def __init__(self, source: CompositeSource, row: int, col: int) -> None:
        self.source = source
        self.row = row
        self.col = col
        self.results: dict[int, BlockResult] = {}

    def has(self, t: int, row: int, col: int) -> bool:
        return (t, row, col) in self.source.members

    def _result(self, t: int) -> BlockResult:
        if t not in self.results:
            self.results[t] = compute_block(
                self.source.task(t, self.row, self.col), self.source.ctx
            )
        return self.results[t]

    def get(self, t: int, row: int, col: int, kind: str) -> bytes:
        result = self._result(t)
        return result.values if kind == "v" else result.coverage


class _CellPlanes:
    """One cell's final planes for the writer, and what went into them (the task's summary)."""

    def __init__(self, source: CompositeSource, row: int, col: int, times: Sequence[int]):
        self.spill = _LazySpill(source, row, col)
        self.times = list(times)
        self.row, self.col = row, col
        self.planes = SpillPlanes(
            self.spill,  # type: ignore[arg-type]  # the Spill interface (has, get)
            n_months=len(source.months),
            shape=source.shape,
            cs=source.cs,
            n_band=source.n_band,
            dtype=source.dtype,
            nodata=source.nodata,
            max_age=source.max_age,
            gap=source.gap,
            readers=1,
        )
        self._todo = set(self.times)
        self.valid = 0
        self.filled = 0

    def __call__(self, t: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        p, r, c = self.planes, self.row, self.col
        src = p.source(t, r, c)
        if t in self._todo:  # the summary's shares: each of the task's own months once
            self._todo.discard(t)
            self.valid += int(np.count_nonzero(src >= 0))
            self.filled += int(np.count_nonzero(src > 0))
        return p.values(t, r, c), mask_from_source(src), p.coverage(t, r, c)

    def summary(self) -> dict[str, Any]:
        results = self.spill.results
        return {
            "months": len(self.times),
            # indices into the month's item references: a few bytes per item, not its id
            "items_read": {
                str(t): sorted(self.spill.source.index_of(t, i) for i in res.items_read)
                for t, res in results.items()
            },
            "observations": {str(t): res.observations for t, res in results.items()},
            "skipped": [s.to_json() for res in results.values() for s in res.skipped],
            "valid": self.valid,
            "filled": self.filled,
        }


@dataclass
class CompositeSource:
    """The build's cell source for ``chronozarr.encode`` (picklable; scattered once).

    ``refs[t]`` are month t's item references (trimmed STAC dicts: each item once, not once
    per task), unsigned: :meth:`task` signs a block's items on the worker as it reads them
    (decision 0021: a token signed on the client at plan time expires on a long build);
    ``members[(t, row, col)]`` the indices of those touching the block.
    """

    ctx: CompositeContext
    months: list[str]
    refs: list[tuple[ItemRef, ...]]
    members: dict[tuple[int, int, int], tuple[int, ...]]
    windows: dict[tuple[int, int], tuple[int, int, int, int]]
    shape: tuple[int, int]
    cs: int
    n_band: int
    dtype: str
    nodata: float | None
    max_age: int
    gap: str = "carry-forward"
    has_mask: bool = True
    has_coverage: bool = True
    _shape4: tuple[int, int, int, int] = field(init=False)

    def __post_init__(self) -> None:
        self._shape4 = (len(self.months), self.n_band, self.shape[0], self.shape[1])

    @property
    def ndim(self) -> int:
        return 4

    @property
    def shape4(self) -> tuple[int, int, int, int]:
        return self._shape4

    def index_of(self, t: int, item_id: str) -> int:
        """The index of item ``item_id`` among month ``t``'s references."""
        return next(i for i, ref in enumerate(self.refs[t]) if ref.id == item_id)

    def task(self, t: int, row: int, col: int) -> BlockTask:
        """The composite task of (month, block), its items signed now (read time)."""
        items = sign_refs([self.refs[t][i] for i in self.members[(t, row, col)]])
        return BlockTask(t, self.months[t], row, col, self.windows[(row, col)], items)

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> _CellPlanes:
        return _CellPlanes(self, row, col, times)


class _SourceArray:
    """What ``encode`` checks of its ``data`` (shape, dtype, ndim) plus the cell source."""

    def __init__(self, source: CompositeSource) -> None:
        self.source = source
        self.shape = source.shape4
        self.dtype = np.dtype(source.dtype)
        self.ndim = 4
        self.has_mask = True
        self.has_coverage = True

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> _CellPlanes:
        return self.source.open_cell(row, col, ys, xs, times)


def make_source(recipe: Recipe, plan: Plan, options: BuildOptions) -> CompositeSource:
    """The cell source of a plan: item-to-block assignment by an STRtree (blocks_touched); the
    items unsigned (the workers sign them at read time)."""
    grid = plan.grid
    ctx = composite_context(recipe, plan, options)
    refs: list[tuple[ItemRef, ...]] = []
    members: dict[tuple[int, int, int], tuple[int, ...]] = {}
    for t, month in enumerate(plan.months):
        touched = blocks_touched(month, grid, ctx.rules.halo) if month.items else {}
        refs.append(tuple(item_refs(month, recipe, sign=False)) if touched else ())
        for (row, col), idx in touched.items():
            members[(t, row, col)] = tuple(idx)
    return CompositeSource(
        ctx=ctx,
        months=[m.month for m in plan.months],
        refs=refs,
        members=members,
        windows={(r, c): w for r, c, w in grid_blocks(grid)},
        shape=(grid.shape[0], grid.shape[1]),
        cs=recipe.store.layout.chunk_size,  # the plan's grid is cut in the layout's cells
        n_band=len(recipe.bands),
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        max_age=carry_forward_months(recipe),
        gap=gap_method(recipe),
    )


def build_fingerprint(recipe: Recipe, plan: Plan) -> str:
    """16 hex digits over everything that decides the bytes: the recipe (but where it is
    written) and the plan's grid and items (decision 0017)."""
    doc = recipe.model_dump(mode="json")
    if isinstance(doc.get("store"), dict):
        doc["store"].pop("path", None)
    doc["_grid"] = plan.grid.model_dump(mode="json")
    doc["_months"] = [
        [m.month, [(p.id, p.correction, p.solar_day) for p in m.items]] for m in plan.months
    ]
    text = json.dumps(doc, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _stats(extras: list[dict[str, Any]], plan: Plan) -> CompositeStats:
    stats = CompositeStats()
    seen: set[tuple[str, str, str]] = set()
    for ex in extras:
        for t, indices in ex["items_read"].items():
            items = plan.months[int(t)].items  # refs[t] holds the month's items in plan order
            stats.items_read.setdefault(int(t), set()).update(items[i].id for i in indices)
        for t, n in ex["observations"].items():
            stats.observations[int(t)] = max(stats.observations.get(int(t), 0), int(n))
        for s in ex["skipped"]:
            key = (s["item"], s["asset"], s["month"])
            if key not in seen:  # a month recomputed by two time groups is reported once
                seen.add(key)
                stats.skipped.append(SkippedAsset(**s))
    return stats


def _tally(
    extras: list[Any], plan: Any, target: Any
) -> tuple[tuple[float, float], tuple[int, int]]:
    """The run's (valid, gap-filled) pixel fractions from the cells' summaries, and the target's
    (bytes, objects) as listed after the commit: what a build or append on a cluster reports."""
    pixels = len(plan.months) * plan.grid.shape[0] * plan.grid.shape[1]
    valid = sum(int(e["valid"]) for e in extras)
    filled = sum(int(e["filled"]) for e in extras)
    size = (0, 0)
    for _key, n in target.list(""):
        size = (size[0] + n, size[1] + 1)
    return (valid / pixels if pixels else 0.0, filled / pixels if pixels else 0.0), size


def _progress_hook(progress: Progress, n_months: int) -> Callable[[Any], None]:
    def on_task(result: Any) -> None:
        months = (result.extra or {}).get("months", n_months)
        progress.advance("cells", months / max(1, n_months))

    return on_task


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
    import chronozarr
    from chronozarr.io import open_target

    executor = Executor(options)  # first: an unreachable cluster fails before any search
    try:
        if plan is None:
            progress.start("plan", None, "resolving items")
            plan = plan_recipe(recipe, out=where)
            progress.finish("plan")
        progress.plan_warnings(plan)
        if not is_url(where):  # workers may run elsewhere: an absolute path on the shared FS
            where = str(local_path(where))
        if location(where).kind == "s3":  # the headers `cz publish` would set (headers.py)
            shard_time = recipe.store.layout.shard_time_for(len(plan.months))
            target: Any = HeaderedStore(where, len(plan.months), shard_time)
        else:
            target = open_target(where)  # encode refuses an existing store before any write
        source = make_source(recipe, plan, options)
        key = build_fingerprint(recipe, plan)
        grid = plan.grid
        progress.start(
            "cells",
            grid.cells,
            f"{grid.cells} cells x {len(plan.months)} months on {executor.describe()}",
        )
        write_start = time.perf_counter()
        holder: dict[str, CompositeStats] = {}

        def stats_of(extras: list[Any]) -> CompositeStats:
            if "stats" not in holder:
                holder["stats"] = _stats(extras, plan)
            return holder["stats"]

        try:
            summary = chronozarr.encode(
                _SourceArray(source),
                target,
                times=[m.time for m in plan.months],
                bands=store_bands(recipe),
                crs=grid.crs,
                transform=grid.transform,
                nodata=recipe.store.effective_nodata,
                layout=recipe.store.layout,
                provenance=lambda ex: provenance_block(recipe, stats_of(ex).skipped, plan),
                provenance_items=lambda ex: [
                    month_document(m, stats_of(ex).skipped) for m in plan.months
                ],
                scheduler=executor.client,
                retries=options.retries,
                worker_timeout=options.worker_timeout,
                resume_key=key,
                on_task=_progress_hook(progress, len(plan.months)),
            )
        except chronozarr.EncodeError as exc:  # refused before any write (a store is there)
            raise BuildError(f"cannot build at {target.url}: {exc}") from exc
        except chronozarr.ChronozarrError as exc:  # the writer failed: a build error
            raise BuildError(
                f"writing the store on the cluster failed: {exc} (the cells written so far stay "
                f"at {target.url} without a root; re-run the same command to resume)"
            ) from exc
        except CzError:  # the toolkit's own errors (an unreadable asset) as they are
            raise
        except Exception as exc:  # a worker without cz, a dask failure: a build error
            raise BuildError(
                f"a cluster task failed: {type(exc).__name__}: {exc} (the cells written so far "
                f"stay at {target.url} without a root; re-run the same command to resume)"
            ) from exc
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the partial is kept on purpose (0017)
            progress.note(
                f"interrupted: the cells written so far stay at {target.url} without a root; "
                "re-run the same command to resume"
            )
            raise
        progress.finish("cells")
    finally:
        executor.close()
    stats = stats_of(summary.sources)
    fractions, size = _tally(summary.sources, plan, open_target(where))
    result = BuildResult.of_run(
        "build",
        where,
        recipe=recipe,
        plan=plan,
        stats=stats,
        encoding=chronozarr.open_store(where).attrs.temporal.encoding,
        size=size,
        started=started,
        write_seconds=time.perf_counter() - write_start,
        fractions=fractions,
    )
    result.store = where
    if summary.resumed:
        progress.note(f"resumed the partial build at {where}")
    return result

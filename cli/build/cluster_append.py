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
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from cz.build.cluster import (
    CompositeSource,
    _CellPlanes,
    _progress_hook,
    _stats,
    _tally,
    build_fingerprint,
    make_source,
)
from cz.build.errors import AppendRefusedError, BuildError, RecipeMismatchError
from cz.build.executor import CompositeStats, Executor
from cz.build.headers import HeaderedStore
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.store_args import month_document, period_bounds, store_bands
from cz.build.target import is_url, local_path
from cz.errors import CzError
from cz.plan import Plan, grid_for, plan_recipe
from cz.recipe import Recipe, TimeSpec


class _History:
    """Gap-fill's look-back before the first new month, read from the store on the worker:
    month ``t < 0`` is the store's timestep ``n_old + t`` (values and coverage of level 0), as
    :func:`cz.build.appending._store_history` reads it for a local append."""

    def __init__(self, source: AppendSource) -> None:
        self.source = source

    def __call__(self, t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        index = self.source.n_old + t
        if index < 0:
            return None
        reader = self.source.reader()
        values = reader.read_cell(index, row, col, 0)
        coverage = reader.plane_cell("coverage", index, row, col, 0)
        return np.asarray(values), np.asarray(coverage, dtype=np.uint8)


class AppendSource:
    """The append's cell source for ``chronozarr.append`` (picklable; sent to the cluster once):
    the new months' :class:`CompositeSource` and the store's target, from which each worker
    reads gap-fill's history with its own reader. The root it opens is the old one: the append
    writes the new root only after every cell is written."""

    def __init__(self, composites: CompositeSource, target: Any, n_old: int):
        self.composites = composites
        self.target = target
        self.n_old = n_old
        self.shape = composites.shape4
        self.dtype = np.dtype(composites.dtype)
        self.ndim = 4
        self.has_mask = True
        self.has_coverage = True
        self._reader: Any = None
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        return {"composites": self.composites, "target": self.target, "n_old": self.n_old}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["composites"], state["target"], state["n_old"])  # type: ignore[misc]

    def reader(self) -> Any:
        import chronozarr

        with self._lock:  # one reader per process, shared by its threads
            if self._reader is None:
                self._reader = chronozarr.open_store(self.target)
                if self._reader.n_time != self.n_old:  # another append got there first
                    raise AppendRefusedError(
                        f"{self.target.url} has {self._reader.n_time} timesteps, this append "
                        f"continues {self.n_old}: it was appended to meanwhile"
                    )
            return self._reader

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Sequence[int]
    ) -> _CellPlanes:
        planes = _CellPlanes(self.composites, row, col, times)
        planes.planes.history = _History(self)
        return planes


def append_fingerprint(recipe: Recipe, plan: Plan, times: Sequence[str]) -> str:
    """The work key of an append: the build fingerprint of the new months' plan (recipe, grid,
    items) and the store's time axis it continues (decision 0017)."""
    text = build_fingerprint(recipe, plan) + "|" + "|".join(times)
    return "append-" + hashlib.sha256(text.encode()).hexdigest()[:16]


def _open_target(where: str, n_time: int, shard_time: int | None) -> Any:
    """The store as the workers and this process write it: a folder (absolute, for workers on
    the shared filesystem) or ``s3://`` with the headers ``cz publish`` would set."""
    from chronozarr.io import location, open_target

    if not is_url(where):
        return open_target(str(local_path(where)))
    if location(where).kind == "s3":
        return HeaderedStore(where, n_time, shard_time)
    raise AppendRefusedError(
        f"cz append --scheduler writes a folder every worker sees or an s3:// store, not {where}"
    )


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
    import chronozarr
    from cz.build.appending import (
        _check_months,
        _compare_fingerprint,
        _compare_recipe,
        store_labels,
    )

    executor = Executor(options)  # first: an unreachable cluster fails before any search
    lock = None
    try:
        if not is_url(where):  # a local folder: the run lock and sweep of a local append
            from cz.build.leftovers import new_tag, start_run

            folder = local_path(where)
            lock = start_run(folder, new_tag(), work_dir=folder.parent)
        probe = _open_target(where, 0, None)
        try:
            reader = chronozarr.open_store(probe)
        except chronozarr.ChronozarrError as exc:  # missing, not a store, or corrupt: refuse
            raise AppendRefusedError(f"cannot open the store at {probe.url}: {exc}") from None
        diffs = _compare_recipe(recipe, reader, grid_for(recipe))
        diffs += _compare_fingerprint(recipe, reader, progress)
        if diffs:
            raise RecipeMismatchError(
                f"the recipe does not fit the store at {probe.url}: " + "; ".join(diffs)
            )
        _check_months(
            months, store_labels(recipe, reader.attrs.times), recipe.composite.period.rule()
        )
        sub = recipe.model_copy(update={"time": TimeSpec(start=months[0], end=months[-1])})
        progress.start("plan", None, "resolving items")
        plan = plan_recipe(sub, out=where)
        progress.finish("plan")
        progress.plan_warnings(plan)
        n_new = reader.n_time + len(plan.months)
        info0 = reader.array(0).info
        target = _open_target(where, n_new, info0.shard_time if info0.sharded else None)
        source = AppendSource(make_source(recipe, plan, options), target, reader.n_time)
        key = append_fingerprint(recipe, plan, list(reader.attrs.times))
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

        def provenance(extras: list[Any]) -> Any:
            from chronozarr.provenance import with_periods, with_skipped_items

            skipped = stats_of(extras).skipped
            prov = with_periods(reader.attrs.provenance, period_bounds(plan), reader.n_time)
            return with_skipped_items(prov, skipped) if skipped else prov

        hook = _progress_hook(progress, len(plan.months))
        extras_seen: list[Any] = []

        def on_task(result: Any) -> None:
            hook(_Unwrapped(result))

        def provenance_of(extras: list[Any]) -> Any:
            extras_seen[:] = extras  # the cells' summaries, for the result below
            return provenance(extras)

        try:
            chronozarr.append(
                target,
                source,
                times=[m.time for m in plan.months],
                bands=store_bands(recipe),
                crs=grid.crs,
                transform=grid.transform,
                nodata=recipe.store.effective_nodata,
                provenance=provenance_of,
                provenance_items=lambda ex: [
                    month_document(m, stats_of(ex).skipped) for m in plan.months
                ],
                scheduler=executor.client,
                retries=options.retries,
                worker_timeout=options.worker_timeout,
                resume_key=key,
                on_task=on_task,
            )
        except chronozarr.AppendError as exc:  # a condition of spec 14 the store enforces
            raise AppendRefusedError(f"chronozarr.append refused: {exc}") from exc
        except chronozarr.ChronozarrError as exc:  # the write itself failed
            raise BuildError(
                f"appending to {target.url} on the cluster failed: {exc} (the store still reads "
                "as before; re-run the same command to resume)"
            ) from exc
        except CzError:  # the toolkit's own errors (an unreadable asset) as they are
            raise
        except Exception as exc:  # a worker without cz, a dask failure: a build error
            raise BuildError(
                f"a cluster task failed: {type(exc).__name__}: {exc} (the store still reads as "
                "before; re-run the same command to resume)"
            ) from exc
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the partial is kept on purpose (0017)
            progress.note(
                f"interrupted: the store at {target.url} still reads as before; re-run the same "
                "command to resume the append"
            )
            raise
        progress.finish("cells")
    finally:
        executor.close()
        if lock is not None:
            lock.release()
    stats = stats_of(extras_seen)
    fractions, size = _tally(extras_seen, plan, target)
    result = BuildResult.of_run(
        "append",
        target.url,
        recipe=recipe,
        plan=plan,
        stats=stats,
        encoding=reader.attrs.temporal.encoding,
        size=size,
        started=started,
        write_seconds=time.perf_counter() - write_start,
        fractions=fractions,
    )
    result.store = where
    return result


class _Unwrapped:
    """A level-0 result whose ``extra`` is the cell source's summary (for the progress hook)."""

    def __init__(self, result: Any) -> None:
        self.extra = (result.extra or {}).get("source")

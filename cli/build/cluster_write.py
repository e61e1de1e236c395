"""What ``cz build --scheduler`` and ``cz append --scheduler`` share (decisions 0017, 0021, 0022):
the cells' progress, the cell sources' summaries turned into the run's statistics, the library's
errors turned into the toolkit's, and the result.

Both hand ``chronozarr.encode`` or ``chronozarr.append`` a cell source
(:mod:`cz.build.sources`) with ``scheduler=client``, so both run on the library's one runner
(decision 0033); this module is the rest of their orchestration, written once.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import numpy as np

import chronozarr
from cz.build.errors import BuildError
from cz.build.executor import CompositeStats, Executor, quiet_distributed
from cz.build.options import BuildOptions, BuildResult, Progress
from cz.build.preflight import check_workers, needs_of, on_workers
from cz.build.store_args import month_document, store_bands
from cz.errors import CzError
from cz.load import SkippedAsset
from cz.plan import Plan
from cz.recipe import Recipe

__all__ = ["ClusterWrite", "SourceFold", "Wording", "release_freed", "stats_of", "tally"]


T = TypeVar("T")


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None (another C library, another system)."""
    try:
        trim: Callable[[int], int] = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_freed() -> None:
    """Hand the C heap's free pages back to the system (glibc's ``malloc_trim``; nothing
    elsewhere). A cluster build's client frees a group's items, footprints and messages as the
    group completes, but glibc keeps freed pages in its arenas (one per thread that allocated:
    dask's and the runner's), so the RSS crept up ~0.26 kB a cell over a 10^5-cell build with a
    live heap that did not grow (decision 0065). Called once a group, a few ms."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


def _id_digest(item_id: str) -> int:
    """8 bytes of an item id (two ids sharing them: one chance in 2^64 a pair)."""
    return int.from_bytes(hashlib.blake2b(item_id.encode(), digest_size=8).digest(), "little")


@dataclass
class SourceFold:
    """The cells' summaries (:meth:`CellPlanes.summary`) folded as they arrive (decision 0058):
    the items read and observations per month, the skipped assets (kept with their task's index,
    so that the run lists them in task order, as before), the valid and gap-filled pixels. What it
    holds grows with the plan's items, not with the cells."""

    plan: Plan
    stats: CompositeStats = field(default_factory=CompositeStats)
    #: month -> which of its items were read (by plan index, a byte an item: decision 0065)
    read: dict[int, np.ndarray] = field(default_factory=dict)
    skipped: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    valid: int = 0
    filled: int = 0

    def add(self, i: int, ex: Any) -> None:
        stats = self.stats
        for t, indices in ex["items_read"].items():
            seen = self.read.get(int(t))
            if seen is None:  # the summary's indices are plan indices
                seen = self.read[int(t)] = np.zeros(len(self.plan.months[int(t)].items), bool)
            seen[np.asarray(indices, dtype=np.int64)] = True
        for t, n in ex["observations"].items():
            stats.observations[int(t)] = max(stats.observations.get(int(t), 0), int(n))
        if ex["skipped"]:
            self.skipped.setdefault(i, []).extend(ex["skipped"])
        self.valid += int(ex["valid"])
        self.filled += int(ex["filled"])

    def distinct_read(self) -> int:
        """How many distinct items (by id) the cells read: only the count is reported
        (:class:`~cz.build.options.BuildResult`), so each id read is kept as an 8-byte digest,
        not as a string in a set of every month's ids (3.5 MB of the client's peak at the commit
        at 24,000 items: decision 0068). A spooled plan reads its items back a month at a time."""
        digests = array("Q")
        for t, read in sorted(self.read.items()):
            items = self.plan.months[t].items
            for j in np.flatnonzero(read).tolist():
                digests.append(_id_digest(items[j].id))
        return int(np.unique(np.frombuffer(digests, dtype=np.uint64)).size) if digests else 0

    def result(self) -> CompositeStats:
        """The statistics, the skipped assets in task order (each once: a month recomputed by
        two time groups is reported once)."""
        self.stats.items_read_count = self.distinct_read()
        seen: set[tuple[str, str, str]] = set()
        self.stats.skipped = []
        for i in sorted(self.skipped):
            for s in self.skipped[i]:
                key = (s["item"], s["asset"], s["month"])
                if key not in seen:
                    seen.add(key)
                    self.stats.skipped.append(SkippedAsset(**s))
        return self.stats


def stats_of(extras: list[dict[str, Any]], plan: Plan) -> CompositeStats:
    """The run's composite statistics from the cells' summaries, in task order."""
    fold = SourceFold(plan)
    for i, ex in enumerate(extras):
        fold.add(i, ex)
    return fold.result()


def tally(
    pixels: int, valid: int, filled: int, target: Any
) -> tuple[tuple[float, float], tuple[int, int]]:
    """The run's (valid, gap-filled) pixel fractions of ``pixels``, and the target's (bytes,
    objects) as listed after the commit: what a build or append on a cluster reports."""
    size = (0, 0)
    for _key, n in target.list(""):
        size = (size[0] + n, size[1] + 1)
    return (valid / pixels if pixels else 0.0, filled / pixels if pixels else 0.0), size


@dataclass(frozen=True)
class Wording:
    """What a failed or interrupted run says: the library's refusal and how it is raised, the
    failure's opening words, what stays at the target, and the interruption's note."""

    refused: type[Exception]
    refuse: Callable[[Exception], Exception]
    failed: str
    kept: str
    interrupted: str


@dataclass
class ClusterWrite:
    """One write of ``plan``'s months on the cluster of ``executor`` (see the module docstring).

    ``source(extra)`` is the cell's summary in a level-0 result's ``extra`` (an append's result
    wraps it), for the progress. The statistics are computed once, from the cells' summaries the
    library hands both provenance callables after level 0."""

    action: str  # "build" or "append"
    recipe: Recipe
    plan: Plan
    options: BuildOptions
    progress: Progress
    executor: Executor
    source: Callable[[Any], Any] = field(default=lambda extra: extra)
    extras: list[Any] = field(default_factory=list)
    fold: SourceFold | None = None  # set by :meth:`on_source`: the summaries are folded
    _stats: CompositeStats | None = None
    _started: float = 0.0
    _arrived: bool = False  # a level-0 task of this run has returned (decision 0050)

    def on_source(self, i: int, extra: Any) -> None:
        """Fold level-0 task ``i``'s summary (encode's ``on_source``, decision 0058). Encode
        hands the summaries a resumed run found before any task's (its docstring): those are
        the cells found done, which the progress counts apart (decision 0050)."""
        if self.fold is None:
            self.fold = SourceFold(self.plan)
        if extra is not None:
            self.fold.add(i, extra)
            if not self._arrived:  # found done on the target, not run by this run
                self.progress.skip("cells", self._share(extra))

    def _share(self, summary: Any) -> float:
        """The share of a cell a level-0 task's summary stands for (its months of the plan's)."""
        months = len(self.plan.months)
        return float((summary or {}).get("months", months)) / max(1, months)

    def stats(self, extras: list[Any]) -> CompositeStats:
        if self._stats is None:
            if self.fold is not None:
                self._stats = self.fold.result()
            else:
                self.extras = list(extras)
                self._stats = stats_of(self.extras, self.plan)
        return self._stats

    def arguments(self) -> dict[str, Any]:
        """The keywords encode and append share: what the months are, the cluster, progress."""
        plan, options = self.plan, self.options

        def on_task(result: Any) -> None:
            self._arrived = True
            self.progress.advance("cells", self._share(self.source(result.extra)))

        return dict(
            times=[m.time for m in plan.months],
            bands=store_bands(self.recipe),
            crs=plan.grid.crs,
            transform=plan.grid.transform,
            nodata=self.recipe.store.effective_nodata,
            provenance_items=lambda ex: [
                month_document(m, self.stats(ex).skipped) for m in plan.months
            ],
            scheduler=self.executor.client,
            retries=options.retries,
            worker_timeout=options.worker_timeout,
            on_task=on_task,
        )

    def run(self, write: Callable[[], T], words: Wording, target: Any = None) -> T:
        """``write()`` with the cells' progress; the library's errors as the toolkit's. With a
        ``target``, every worker is checked first (:mod:`cz.build.preflight`): a bad one is
        named and left out, and none good stops the run before any task."""
        release_freed()  # what planning made and freed: 7.5 MB at 24,000 items (decision 0065)
        good = None
        if target is not None and self.executor.client is not None:
            needs = needs_of(target, self.plan)
            good = check_workers(self.executor.client, needs, self.progress)
        grid = self.plan.grid
        self.progress.start(
            "cells",
            grid.cells,
            f"{grid.cells} cells x {len(self.plan.months)} months on {self.executor.describe()}",
        )
        self._started = time.perf_counter()
        resume = "re-run the same command to resume"
        try:
            with on_workers(good), quiet_distributed():  # the good workers only; no log spew
                done = write()
        except words.refused as exc:  # refused before any write
            raise words.refuse(exc) from exc
        except chronozarr.ConcurrentWriteError:  # another writer: exit 75 (decision 0051)
            raise
        except chronozarr.ChronozarrError as exc:  # the write failed: what stays, and what to do
            self._scheduler_lost(words, exc)
            raise BuildError(f"{words.failed}: {exc} ({words.kept}; {resume})") from exc
        except CzError:  # the toolkit's own errors (an unreadable asset) as they are
            raise
        except Exception as exc:  # a worker without cz, a dask failure: a build error
            self._scheduler_lost(words, exc)
            raise BuildError(
                f"a cluster task failed: {type(exc).__name__}: {exc} ({words.kept}; {resume})"
            ) from exc
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the partial is kept on purpose (0017)
            self.progress.note(words.interrupted)
            raise
        self.progress.finish("cells")
        return done

    def _scheduler_lost(self, words: Wording, exc: BaseException) -> None:
        """One line when the scheduler went away mid-run (dask's own words name the futures it
        cancelled, ~10 lines): what happened, that the workers went too, how to resume."""
        client = self.executor.client
        if client is None:
            return
        text = f"{type(exc).__name__}: {exc}"
        if client.status == "running" and "scheduler-connection-lost" not in text:
            return
        raise BuildError(
            f"lost the dask scheduler at {self.options.scheduler} mid-run; the workers connected "
            f"to it stop with it. {words.kept[:1].upper()}{words.kept[1:]}: restart the scheduler "
            f"and its workers, then re-run the same command to resume"
        ) from exc

    def result(self, store: str, target: Any, encoding: str, started: float) -> BuildResult:
        """The run's result: statistics and fractions from the cells' summaries, the target's
        size as listed after the commit."""
        plan = self.plan
        pixels = len(plan.months) * plan.grid.shape[0] * plan.grid.shape[1]
        fold = self.fold
        if fold is None:
            valid = sum(int(e["valid"]) for e in self.extras)
            filled = sum(int(e["filled"]) for e in self.extras)
        else:
            valid, filled = fold.valid, fold.filled
        fractions, size = tally(pixels, valid, filled, target)
        return BuildResult.of_run(
            self.action,
            store,
            recipe=self.recipe,
            plan=self.plan,
            stats=self.stats(self.extras),
            encoding=encoding,
            size=size,
            started=started,
            write_seconds=time.perf_counter() - self._started,
            fractions=fractions,
        )

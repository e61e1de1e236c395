"""Pass 1 of a local build or append: every (month, block) composited once into the spill, on
local threads by the library's one runner; and a cluster build's connection to its cluster."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, overload

from chronozarr.write import Runner, Stage
from cz.build.blocks import blocks_touched, grid_blocks, item_refs
from cz.build.errors import BuildError
from cz.build.options import BuildOptions, Progress
from cz.build.spill import Spill
from cz.build.tasks import (
    BlockResult,
    BlockTask,
    CompositeContext,
    compute_block,
)
from cz.errors import CzError
from cz.load import SkippedAsset
from cz.plan import Plan
from cz.recipe import Recipe


class Executor:
    """A build's connection to its dask.distributed cluster (``options.scheduler``); the cluster
    build and append run on it through the library's one runner. A local build has none: its
    composites run on local threads by the same runner (:func:`run_composites`)."""

    def __init__(self, options: BuildOptions) -> None:
        if not options.scheduler:
            raise ValueError("Executor is a cluster connection: options.scheduler is not set")
        self.options = options
        try:
            from distributed import Client
        except ImportError:  # distributed is optional for local builds
            raise BuildError(
                "--scheduler needs dask.distributed: pip install distributed"
            ) from None
        try:
            with _no_message_log():
                self.client: Any = Client(
                    options.scheduler,
                    timeout=f"{options.connect_timeout}s",
                    set_as_default=False,
                )
        except (OSError, TimeoutError) as exc:  # scheduler unreachable
            raise BuildError(
                f"cannot connect to the dask scheduler at {options.scheduler}: {exc}"
            ) from None

    def describe(self) -> str:
        n = len(self.client.nthreads())
        return f"dask.distributed at {self.options.scheduler} ({n} workers)"

    def close(self) -> None:
        # closing a client whose scheduler is gone logs its reconnect failure with two
        # tracebacks: the run has said what happened in one line already
        with contextlib.suppress(Exception), quiet_distributed():
            self.client.close()


@contextmanager
def _no_message_log() -> Iterator[None]:
    """A client made here keeps no log of the messages it sent (decision 0068). distributed's
    batched stream to the scheduler keeps its last ``distributed.admin.low-level-log-length``
    batches (1,000 by default: "for developers") as sent, each task's pickled graph with its
    arguments, a group's packed references among them (decision 0065): 14 MB of the client's
    peak at 10^4 level-0 cells, more as the groups grow. ``CZ_DEBUG=1`` keeps it."""
    if os.environ.get("CZ_DEBUG"):
        yield
        return
    import dask  # a cluster build: dask is installed

    with dask.config.set({"distributed.admin.low-level-log-length": 0}):
        yield


@contextmanager
def quiet_distributed() -> Iterator[None]:
    """distributed's own ERROR logs (a lost scheduler: "Failed to reconnect ...") stay off the
    user's stderr while a run is on: the run ends with its own one line. ``-vv`` or
    ``CZ_DEBUG=1`` keep them (with their tracebacks)."""
    if os.environ.get("CZ_DEBUG") or logging.getLogger().getEffectiveLevel() <= logging.DEBUG:
        yield
        return
    # distributed's loggers carry levels of their own (distributed.client...): each is set
    names = ["distributed"] + [
        n for n in logging.root.manager.loggerDict if n.startswith("distributed.")
    ]
    before = {n: logging.getLogger(n).level for n in names}
    for name in names:
        logging.getLogger(name).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for name, level in before.items():
            logging.getLogger(name).setLevel(level)


@dataclass
class CompositeStats:
    items_read: dict[int, set[str]] = field(default_factory=dict)
    #: how many distinct items were read, where only the count was kept (a cluster build's
    #: fold, decision 0068); None: count ``items_read``
    items_read_count: int | None = None
    observations: dict[int, int] = field(default_factory=dict)
    skipped: list[SkippedAsset] = field(default_factory=list)
    seconds: float = 0.0

    def distinct_read(self) -> int:
        """How many distinct items were read (by id) over all months."""
        if self.items_read_count is not None:
            return self.items_read_count
        return len(set().union(*self.items_read.values())) if self.items_read else 0


class _BlockTasks(Sequence[BlockTask]):
    """Every (month, block) task with items, in month order, made when a thread takes it.

    A month's item references are signed when its first task is taken and dropped with its last
    (late signing: a token never ages through the months before), so only the months in hand
    hold references; the blocks each month touches are found once, here."""

    def __init__(self, plan: Plan, recipe: Recipe, halo: int) -> None:
        self._plan, self._recipe = plan, recipe
        self._windows = {(r, c): w for r, c, w in grid_blocks(plan.grid)}
        self._lock = threading.Lock()
        self._refs: dict[int, list[Any]] = {}
        self._left: dict[int, int] = {}
        self._index: list[tuple[int, tuple[int, int], list[int]]] = []
        self.shares: list[float] = []  # each task's share of its month, for the progress
        for t, month in enumerate(plan.months):
            touched = blocks_touched(month, plan.grid, halo) if month.items else {}
            for key, members in sorted(touched.items()):
                self._index.append((t, key, members))
                self.shares.append(1.0 / len(touched))
            if touched:
                self._left[t] = len(touched)
        self.empty_months = len(plan.months) - len(self._left)

    def __len__(self) -> int:
        return len(self._index)

    @overload
    def __getitem__(self, i: int) -> BlockTask: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[BlockTask]: ...
    def __getitem__(self, i: int | slice) -> BlockTask | Sequence[BlockTask]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        t, (row, col), members = self._index[i]
        month = self._plan.months[t]
        with self._lock:
            refs = self._refs.get(t)
            if refs is None:
                refs = self._refs[t] = item_refs(month, self._recipe)  # signed here: late
            self._left[t] -= 1
            if not self._left[t]:
                del self._refs[t]
        items = tuple(refs[m] for m in members)
        return BlockTask(t, month.month, row, col, self._windows[(row, col)], items)


class _SpillSink:
    """Where each composite goes as it is made (a :class:`~chronozarr.write.Stage`'s sink,
    called on the thread that made it): the spill, the run's statistics, the progress."""

    def __init__(self, spill: Spill, progress: Progress, shares: list[float]) -> None:
        self.spill, self.progress, self.shares = spill, progress, shares
        self.stats = CompositeStats()
        self._lock = threading.Lock()

    def put(self, i: int, result: BlockResult) -> None:
        self.spill.put(result)  # thread-safe: its own lock
        stats = self.stats
        with self._lock:
            stats.items_read.setdefault(result.t, set()).update(result.items_read)
            stats.observations[result.t] = max(
                stats.observations.get(result.t, 0), result.observations
            )
            for s in result.skipped:
                self.progress.note(f"skipped item {s.item} ({s.month}): asset {s.asset}: {s.error}")
            stats.skipped.extend(result.skipped)
            self.progress.advance("months", self.shares[i])


def _composite(ctx: CompositeContext, task: BlockTask) -> BlockResult:
    """One (month, block) on a local thread; an unexpected failure becomes a BuildError that
    names it (toolkit errors, an unreadable asset, pass as they are)."""
    try:
        return compute_block(task, ctx)
    except CzError:
        raise
    except Exception as exc:  # a bug or a library failure: one line, not a traceback
        raise BuildError(f"a composite task failed: {type(exc).__name__}: {exc}") from exc


def run_composites(
    plan: Plan,
    recipe: Recipe,
    ctx: CompositeContext,
    spill: Spill,
    threads: int,
    progress: Progress,
) -> CompositeStats:
    """Pass 1: every (month, block) with items, computed once on ``threads`` local threads and
    written to the spill, by the library's one runner (``chronozarr.write.Runner``, decision
    0064): one stage whose tasks are made as they are taken and whose results go to the spill as
    they arrive. A failure or Ctrl-C cancels the tasks not started."""
    start = time.perf_counter()
    progress.start("months", len(plan.months), f"local, {threads} threads")
    tasks = _BlockTasks(plan, recipe, ctx.rules.halo)
    progress.advance("months", float(tasks.empty_months))
    sink = _SpillSink(spill, progress, tasks.shares)
    Runner(workers=threads).run([Stage("composite", _composite, ctx, tasks, sink=sink)])
    progress.finish("months")
    sink.stats.seconds = time.perf_counter() - start
    return sink.stats

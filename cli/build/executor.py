"""Pass 1: every (month, block) composited once, on local threads or a dask cluster."""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

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
    """Runs :func:`compute_block` tasks: local threads, or a dask.distributed cluster."""

    def __init__(self, options: BuildOptions) -> None:
        self.options = options
        self.client: Any = None
        self.pool: ThreadPoolExecutor | None = None
        if options.scheduler:
            try:
                from distributed import Client
            except ImportError:  # distributed is optional for local builds
                raise BuildError(
                    "--scheduler needs dask.distributed: pip install distributed"
                ) from None
            try:
                self.client = Client(
                    options.scheduler,
                    timeout=f"{options.connect_timeout}s",
                    set_as_default=False,
                )
            except (OSError, TimeoutError) as exc:  # scheduler unreachable
                raise BuildError(
                    f"cannot connect to the dask scheduler at {options.scheduler}: {exc}"
                ) from None
            threads = sum(self.client.nthreads().values()) or 1
            self.window = 2 * threads
        else:
            self.pool = ThreadPoolExecutor(max_workers=options.threads(), thread_name_prefix="cz")
            self.window = 2 * options.threads()

    def describe(self) -> str:
        if self.client is not None:
            n = len(self.client.nthreads())
            return f"dask.distributed at {self.options.scheduler} ({n} workers)"
        return f"local, {self.options.threads()} threads"

    def submit(self, task: BlockTask, ctx: CompositeContext) -> Any:
        if self.client is not None:
            return self.client.submit(compute_block, task, ctx, pure=False)
        assert self.pool is not None
        return self.pool.submit(compute_block, task, ctx)

    def wait_any(self, pending: set[Any]) -> tuple[set[Any], set[Any]]:
        if self.client is not None:
            from distributed import wait as dwait  # lazy: distributed is an extra

            with self.client.as_current():  # our client is not the process default
                done, rest = dwait(list(pending), return_when="FIRST_COMPLETED")
            return set(done), set(rest)
        done, rest = wait(pending, return_when=FIRST_COMPLETED)
        return set(done), set(rest)

    def cancel(self, pending: set[Any]) -> None:
        for fut in pending:
            fut.cancel()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        if self.client is not None:
            # closing a client whose scheduler is gone logs its reconnect failure with two
            # tracebacks: the run has said what happened in one line already
            with contextlib.suppress(Exception), quiet_distributed():
                self.client.close()


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


def result_of(future: Any) -> BlockResult:
    """A task's result; an unexpected failure (a worker without ``cz``, a lost worker...) becomes
    a BuildError that says so. Toolkit errors (an unreadable asset) pass as they are."""
    try:
        return future.result()
    except CzError:  # our own errors (an unreadable asset) as they are
        raise
    except Exception as exc:  # a worker without cz, a lost worker, ...
        raise BuildError(f"a composite task failed: {type(exc).__name__}: {exc}") from exc


@dataclass
class CompositeStats:
    items_read: dict[int, set[str]] = field(default_factory=dict)
    observations: dict[int, int] = field(default_factory=dict)
    skipped: list[SkippedAsset] = field(default_factory=list)
    seconds: float = 0.0


def run_composites(
    plan: Plan,
    recipe: Recipe,
    ctx: CompositeContext,
    spill: Spill,
    executor: Executor,
    progress: Progress,
) -> CompositeStats:
    """Pass 1: every (month, block) with items, computed once, written to the spill."""
    stats = CompositeStats()
    start = time.perf_counter()
    months = plan.months
    progress.start("months", len(months), executor.describe())

    windows = {(r, c): w for r, c, w in grid_blocks(plan.grid)}

    def tasks() -> Iterator[BlockTask]:
        for t, month in enumerate(months):
            touched = blocks_touched(month, plan.grid, ctx.rules.halo) if month.items else {}
            if not touched:
                progress.advance("months", 1.0)
                continue
            refs = item_refs(month, recipe)  # signed here: late, per month of work
            share = 1.0 / len(touched)
            for (row, col), members in sorted(touched.items()):
                _shares[(t, row, col)] = share
                items = tuple(refs[i] for i in members)
                yield BlockTask(t, month.month, row, col, windows[(row, col)], items)

    _shares: dict[tuple[int, int, int], float] = {}
    queue = tasks()
    pending: set[Any] = set()
    try:
        exhausted = False
        while True:
            while not exhausted and len(pending) < executor.window:
                task = next(queue, None)
                if task is None:
                    exhausted = True
                    break
                pending.add(executor.submit(task, ctx))
            if not pending:
                break
            done, pending = executor.wait_any(pending)
            for fut in done:
                result = result_of(fut)
                spill.put(result)
                stats.items_read.setdefault(result.t, set()).update(result.items_read)
                stats.observations[result.t] = max(
                    stats.observations.get(result.t, 0), result.observations
                )
                for s in result.skipped:
                    progress.note(f"skipped item {s.item} ({s.month}): asset {s.asset}: {s.error}")
                stats.skipped.extend(result.skipped)
                progress.advance("months", _shares.pop((result.t, result.row, result.col), 0.0))
    except BaseException:  # Ctrl-C too: cancel what is queued
        executor.cancel(pending)
        raise
    progress.finish("months")
    stats.seconds = time.perf_counter() - start
    return stats

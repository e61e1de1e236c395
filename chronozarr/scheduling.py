"""Running the writer's per-cell tasks: local threads, or a dask.distributed client.

On a cluster (issue 13) the shared context is sent once, as the result of a task that every
other task depends on (workers fetch it from each other; dask recomputes it when every worker
holding it is lost, which scattered data would not survive); the tasks are
submitted through a bounded window (at most ``window`` futures in flight, refilled as results
come back), each with dask's ``retries``; a worker lost mid-task has its task rescheduled by
dask. A task returns a small summary, never pixels. When no worker is left the wait is bounded:
after ``worker_timeout`` seconds without one a :class:`ClusterError` says so, rather than a hang.

distributed is imported only when a client is given, so ``import chronozarr`` does not load it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from chronozarr.cells import parallel
from chronozarr.errors import ClusterError

__all__ = ["DEFAULT_RETRIES", "DEFAULT_WORKER_TIMEOUT", "Runner"]

log = logging.getLogger("chronozarr.scheduling")

DEFAULT_RETRIES = 2
DEFAULT_WORKER_TIMEOUT = 180.0  # seconds without any worker before a cluster run gives up
_POLL = 1.0  # seconds between checks for workers while nothing completes


def _context(ctx: Any) -> Any:
    """The shared context as a task's result (see :meth:`Runner._run_remote`)."""
    return ctx


def _result(fut: Any, name: str) -> Any:
    """A task's result. A task's own error (after its retries) passes as it is; dask's own
    failures (a task that killed ``allowed-failures`` workers, a lost connection) become a
    :class:`ClusterError` that says which task and why."""
    try:
        return fut.result()
    except Exception as exc:  # sorted below: ours pass, dask's are named
        module = type(exc).__module__ or ""
        if module.startswith(("distributed", "asyncio", "concurrent")) or isinstance(
            exc, TimeoutError
        ):
            raise ClusterError(
                f"task {fut.key} of {name} failed on the cluster: {type(exc).__name__}: {exc}"
            ) from exc
        raise


class Runner:
    """Runs ``fn(ctx, task)`` for many tasks; returns the results in task order.

    ``scheduler`` is ``None`` (``workers`` local threads) or a ``distributed.Client``.
    """

    def __init__(
        self,
        scheduler: Any = None,
        *,
        workers: int = 1,
        retries: int = DEFAULT_RETRIES,
        window: int | None = None,
        worker_timeout: float = DEFAULT_WORKER_TIMEOUT,
    ) -> None:
        self.client = scheduler
        self.workers = workers
        self.retries = retries
        self.window = window
        self.worker_timeout = worker_timeout

    @property
    def remote(self) -> bool:
        return self.client is not None

    def threads(self) -> int:
        """Tasks that can run at once (the cluster's threads, or the local threads)."""
        if self.client is None:
            return self.workers
        return max(1, int(sum(self.client.nthreads().values())))

    def run(
        self,
        fn: Callable[[Any, Any], Any],
        ctx: Any,
        tasks: Sequence[Any],
        *,
        name: str = "cz-task",
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        if not tasks:
            return []
        if self.client is None:

            def one(task: Any) -> Any:
                result = fn(ctx, task)
                if on_result is not None:
                    on_result(result)
                return result

            return parallel(one, tasks, self.workers)
        return self._run_remote(fn, ctx, tasks, name, on_result)

    def _wait_for_workers(self) -> None:
        try:
            self.client.wait_for_workers(1, timeout=self.worker_timeout)
        except TimeoutError:  # distributed's TimeoutError is the builtin one
            raise ClusterError(
                f"no dask worker joined the scheduler {self.client.scheduler.address} within "
                f"{self.worker_timeout:g} s; start workers (dask worker ADDRESS) and re-run"
            ) from None

    def _run_remote(
        self,
        fn: Callable[[Any, Any], Any],
        ctx: Any,
        tasks: Sequence[Any],
        name: str,
        on_result: Callable[[Any], None] | None,
    ) -> list[Any]:
        from distributed import wait

        self._wait_for_workers()
        client = self.client
        token = uuid.uuid4().hex[:8]  # keys unique per run: a reused key may be in release
        # the context goes to the scheduler once, as a task: workers fetch it from each other,
        # and dask recomputes it if every holder is lost (scattered data would be gone for good)
        shared = client.submit(_context, ctx, pure=False, key=f"{name}-context-{token}")
        window = self.window or 2 * self.threads()
        results: list[Any] = [None] * len(tasks)
        pending: dict[Any, int] = {}
        queue = iter(range(len(tasks)))
        exhausted = False
        no_worker_since: float | None = None
        try:
            while True:
                while not exhausted and len(pending) < window:
                    i = next(queue, None)
                    if i is None:
                        exhausted = True
                        break
                    fut = client.submit(
                        fn,
                        shared,
                        tasks[i],
                        retries=self.retries,
                        pure=False,
                        key=f"{name}-{token}-{i}",
                    )
                    pending[fut] = i
                if not pending:
                    break
                try:
                    with client.as_current():  # the caller's client need not be the default
                        done, _rest = wait(  # type: ignore[no-untyped-call]
                            list(pending), timeout=_POLL, return_when="FIRST_COMPLETED"
                        )
                except TimeoutError:  # nothing finished in _POLL seconds: check the workers
                    done = set()
                for fut in done:
                    i = pending.pop(fut)
                    results[i] = _result(fut, name)
                    if on_result is not None:
                        on_result(results[i])
                if done:
                    no_worker_since = None
                    continue
                if client.nthreads():
                    no_worker_since = None
                    continue
                now = time.monotonic()
                no_worker_since = no_worker_since or now
                if now - no_worker_since > self.worker_timeout:
                    raise ClusterError(
                        f"every dask worker is gone and none joined within "
                        f"{self.worker_timeout:g} s; {len(pending)} task(s) of {name} were "
                        "waiting. Nothing was committed: re-run to resume"
                    )
        except BaseException:  # Ctrl-C, a task error, no worker: cancel what is queued
            client.cancel(list(pending), force=True)
            raise
        finally:
            client.cancel([shared], force=True)
        return results

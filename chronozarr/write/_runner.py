"""Running the writer's per-cell tasks: local threads, or a dask.distributed client.

The work is a list of *stages* (level 0, then each coarser level), each a list of tasks
``fn(ctx, task)``; a task of stage k may need some tasks of stage k-1 (the four cells below a
pyramid cell, spec 6). Locally the stages run one after the other on ``workers`` threads.

On a cluster (decision 0026) the stages are pipelined: a task of stage k is submitted with the
futures of the tasks it needs as dependencies, so dask starts it as soon as they are written,
not when the whole level is done (the tail of level 0 overlaps level 1 and up); coarser stages
run first when ready (a higher dask priority). The stages' contexts are sent once, as the result
of one task, and replicated to every worker before any task is submitted: a task depending on
data held by one worker is otherwise placed on that worker (dask's ``decide_worker``), which ran
a small phase (the auto sample, an upper level) on one worker while the others idled. dask
recomputes the context if every holder is lost, which scattered data would not survive. Stage 0
is submitted through a bounded window (at most ``window`` of its futures in flight, refilled as
results come back), each task with dask's ``retries``; a worker lost mid-task has its task
rescheduled by dask. A task returns a small summary, never pixels. When no worker is left the
wait is bounded: after ``worker_timeout`` seconds without one a :class:`ClusterError` says so,
rather than a hang.

distributed is imported only when a client is given, so ``import chronozarr`` does not load it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from chronozarr.errors import ClusterError
from chronozarr.write._cells import parallel

__all__ = ["DEFAULT_RETRIES", "DEFAULT_WORKER_TIMEOUT", "Runner", "Stage"]

log = logging.getLogger("chronozarr.scheduling")

DEFAULT_RETRIES = 2
DEFAULT_WORKER_TIMEOUT = 180.0  # seconds without any worker before a cluster run gives up
_POLL = 1.0  # seconds between checks for workers while nothing completes


def _context(ctx: Any) -> Any:
    """The shared contexts as a task's result (see :meth:`Runner._run_remote`)."""
    return ctx


def _staged(fn: Callable[[Any, Any], Any], shared: Any, k: int, task: Any, *_needs: Any) -> Any:
    """Stage ``k``'s task on a worker: its context from the shared tuple; ``_needs`` are the
    results of the tasks it waited for (dependencies only: their chunks are at the target)."""
    return fn(shared[k], task)


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


@dataclass
class Stage:
    """One stage of a run: ``fn(ctx, task)`` for each task.

    ``needs(i)``: the indices of the previous stage's tasks that task ``i`` reads (on a
    cluster they become its dependencies; locally the previous stage is complete anyway).
    ``order``: the order stage 0's tasks are submitted in (default: as listed); results are
    returned in task order whatever the order of running. ``on_result(i, result)`` is called
    here as each result arrives; ``on_done()`` once the whole stage has arrived (before later
    stages' results are handed out, on a cluster while they may already run).
    """

    name: str
    fn: Callable[[Any, Any], Any]
    ctx: Any
    tasks: Sequence[Any]
    needs: Callable[[int], Sequence[int]] | None = None
    order: Sequence[int] | None = None
    on_result: Callable[[int, Any], None] | None = None
    on_done: Callable[[], None] | None = None


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
        """One stage's tasks (see :meth:`run_stages`)."""
        hook = None if on_result is None else (lambda _i, res: on_result(res))
        return self.run_stages([Stage(name, fn, ctx, tasks, on_result=hook)])[0]

    def run_stages(self, stages: Sequence[Stage]) -> list[list[Any]]:
        """Every stage's results, each in task order (see the module docstring)."""
        if self.client is None:
            return [self._run_local(stage) for stage in stages]
        if not any(stage.tasks for stage in stages):  # a resumed run with nothing left
            for stage in stages:
                if stage.on_done is not None:
                    stage.on_done()
            return [[] for _ in stages]
        return self._run_remote(stages)

    def _run_local(self, stage: Stage) -> list[Any]:
        def one(i: int) -> Any:
            result = stage.fn(stage.ctx, stage.tasks[i])
            if stage.on_result is not None:
                stage.on_result(i, result)
            return result

        order = list(stage.order) if stage.order is not None else range(len(stage.tasks))
        results: list[Any] = [None] * len(stage.tasks)
        for i, res in zip(order, parallel(one, list(order), self.workers), strict=True):
            results[i] = res
        if stage.on_done is not None:
            stage.on_done()
        return results

    def _wait_for_workers(self) -> None:
        try:
            self.client.wait_for_workers(1, timeout=self.worker_timeout)
        except TimeoutError:  # distributed's TimeoutError is the builtin one
            raise ClusterError(
                f"no dask worker joined the scheduler {self.client.scheduler.address} within "
                f"{self.worker_timeout:g} s; start workers (dask worker ADDRESS) and re-run"
            ) from None

    def _share(self, ctxs: tuple[Any, ...], key: str) -> Any:
        """The contexts as one task's result, on every worker (see the module docstring)."""
        from distributed import wait  # lazy: only a cluster run needs distributed (an extra)

        client = self.client
        # a task, not scattered data: dask recomputes it if every holder is lost
        shared = client.submit(_context, ctxs, pure=False, key=key)
        try:
            with client.as_current():
                wait([shared], timeout=self.worker_timeout)  # type: ignore[no-untyped-call]
            # on every worker, so that dask places each task by load, not by where the
            # context is (a best effort: a worker that joins later fetches it when it steals)
            client.replicate([shared])
        except Exception as exc:  # a lost worker, a timeout: the run's own loop reports those
            log.debug("the shared context was not replicated: %s: %s", type(exc).__name__, exc)
        return shared

    def _run_remote(self, stages: Sequence[Stage]) -> list[list[Any]]:
        from distributed import wait  # lazy: only a cluster run needs distributed (an extra)

        self._wait_for_workers()
        client = self.client
        name = stages[0].name
        token = uuid.uuid4().hex[:8]  # keys unique per run: a reused key may be in release
        shared = self._share(tuple(s.ctx for s in stages), f"{name}-context-{token}")
        window = self.window or 2 * self.threads()
        results: list[list[Any]] = [[None] * len(s.tasks) for s in stages]
        futures: list[dict[int, Any]] = [{} for _ in stages]  # (stage, index) -> future
        left = [len(s.tasks) for s in stages]  # results still to arrive, per stage
        # the tasks of stage k + 1 waiting for their needs in stage k to be submitted
        waiting: list[dict[int, set[int]]] = [{} for _ in stages]
        blocked_by: list[dict[int, list[int]]] = [{} for _ in stages]
        for k in range(1, len(stages)):
            needs = stages[k].needs
            for i in range(len(stages[k].tasks)):
                wanted = (
                    set(needs(i)) if needs is not None else set(range(len(stages[k - 1].tasks)))
                )
                waiting[k][i] = wanted
                for j in wanted:
                    blocked_by[k].setdefault(j, []).append(i)
        pending: dict[Any, tuple[int, int]] = {}
        in_flight0 = 0
        submitted: list[set[int]] = [set() for _ in stages]
        arrived: list[set[int]] = [set() for _ in stages]
        # dependents of (k, j) not submitted yet: its future is kept until they hold it
        unsubmitted = [
            {j: len(blocked_by[k + 1].get(j, ())) for j in range(len(stages[k].tasks))}
            if k + 1 < len(stages)
            else {}
            for k in range(len(stages))
        ]

        def release(k: int, j: int) -> None:
            """Drop our hold on (k, j) once its result is here and its dependents hold it (the
            keys held do not grow with the region)."""
            if j in arrived[k] and not unsubmitted[k].get(j, 0):
                futures[k].pop(j, None)

        def submit(k: int, i: int) -> None:
            nonlocal in_flight0
            stage = stages[k]
            wanted = sorted(waiting[k].get(i, ())) if k else []
            needs = [futures[k - 1][j] for j in wanted]
            fut = client.submit(
                _staged, stage.fn, shared, k, stage.tasks[i], *needs,
                retries=self.retries, pure=False, priority=k, key=f"{stage.name}-{token}-{i}",
            )  # fmt: skip
            futures[k][i] = fut
            submitted[k].add(i)
            pending[fut] = (k, i)
            in_flight0 += k == 0
            for j in wanted:
                unsubmitted[k - 1][j] -= 1
                release(k - 1, j)
            if k + 1 < len(stages):
                for dependent in blocked_by[k + 1].get(i, ()):
                    ready = all(j in submitted[k] for j in waiting[k + 1][dependent])
                    if dependent not in submitted[k + 1] and ready:
                        submit(k + 1, dependent)

        for k in range(1, len(stages)):  # a task that needs nothing goes at once
            for i, wanted in waiting[k].items():
                if not wanted and i not in submitted[k]:
                    submit(k, i)
        order = iter(
            stages[0].order if stages[0].order is not None else range(len(stages[0].tasks))
        )
        exhausted = False
        no_worker_since: float | None = None
        finished = [False] * len(stages)
        try:
            while True:
                while not exhausted and in_flight0 < window:
                    first = next(order, None)
                    if first is None:
                        exhausted = True
                        break
                    submit(0, first)
                if not pending:
                    break
                try:
                    with client.as_current():  # the caller's client need not be the default
                        done, _rest = wait(  # type: ignore[no-untyped-call]
                            list(pending), timeout=_POLL, return_when="FIRST_COMPLETED"
                        )
                except TimeoutError:  # nothing finished in _POLL seconds: check the workers
                    done = set()
                # in stage order, so that a stage is complete (on_done) before the next's
                for fut in sorted(done, key=lambda f: pending[f]):
                    k, i = pending.pop(fut)
                    in_flight0 -= k == 0
                    results[k][i] = _result(fut, stages[k].name)
                    arrived[k].add(i)
                    release(k, i)
                    left[k] -= 1
                    hook = stages[k].on_result
                    if hook is not None:
                        hook(i, results[k][i])
                for k, stage in enumerate(stages):
                    if not finished[k] and left[k] == 0 and all(finished[:k]):
                        finished[k] = True
                        if stage.on_done is not None:
                            stage.on_done()
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
                        f"{self.worker_timeout:g} s; {len(pending)} task(s) of "
                        f"{stages[pending[next(iter(pending))][0]].name} were waiting. Nothing "
                        "was committed: re-run to resume"
                    )
        except BaseException:  # Ctrl-C, a task error, no worker: cancel what is queued
            client.cancel(list(pending), force=True)
            raise
        finally:
            # Release the shared context, not ``cancel(force=True)``: a forced cancel recurses
            # into the context's dependents (every task of the run), and the scheduler asserts
            # that each still has a client wanting it. A finished task already released here
            # fails that assertion (distributed 2026.8, Scheduler.stimulus_cancel), which kills
            # this client's stream on the scheduler; the client then reconnects, and the
            # reconnect still in flight at client.close() leaves an unclosed socket behind
            # (the flaky ResourceWarning of the tests/remote CI rehearsals, 2026-12-01).
            # Once nobody wants it and no task needs it, the scheduler forgets the context.
            shared.release()
        return results

"""The one runner of a write's cell tasks: local threads, or a dask.distributed client.

A plan's stages (:mod:`chronozarr.write._plan`) run here. Locally the stages run one after the
other on ``workers`` threads. On a cluster (decision 0026):

- **Dependencies through the client, dask's priorities.** Tasks are taken in
  :func:`~chronozarr.write._plan.submission_order` (a pipelined plan: a coarser task right after
  the last cell it reads); a coarser task is submitted the moment the results of the tasks it
  reads are here (their chunks are written), at the dask priority of its stage, so upper levels
  drain as level 0 goes on. It is not given their futures as dask dependencies: dask keeps a
  finished task's record while a dependent of it lives, so the pyramid's chain up to the last
  level kept every task of the region on the scheduler until the end (decision 0058). A plan
  that is not pipelined runs stage after stage.
- **The contexts on every worker first.** The stages' contexts are one task's result, replicated
  to every worker before any task is submitted: a task depending on data held by one worker is
  otherwise placed on that worker (dask's ``decide_worker``), which ran a small phase on one
  worker while the others idled. dask recomputes it if every holder is lost, which scattered data
  would not survive.
- **A bounded window.** At most ``window`` tasks of the stage being fed (stage 0 of a pipelined
  plan) are in flight, refilled as results come back; a future is dropped once its result is
  here. A stage's tasks may have group contexts instead of the shared one (``Stage.group``),
  each a task submitted with the group's first task and dropped by the client with its last.
- **An environment failure is retried elsewhere.** A task failing with an ``OSError`` (a full
  disk, an endpoint this worker cannot reach) after dask's retries is submitted again with
  that worker excluded (dask worker restrictions) while another worker is there; the worker
  stays excluded for the rest of the run, and the error passes as it is only when no other
  worker is left (decision 0047).
- **Bounded waits.** Each task has dask's ``retries``; a worker lost mid-task has its task
  rescheduled by dask. Results are awaited with ``distributed.wait(FIRST_COMPLETED)`` and a
  short timeout, so that after ``worker_timeout`` seconds without any worker a
  :class:`ClusterError` says so rather than a hang (dask's own no-worker timeout is the
  scheduler's setting, not the client's).

A task returns a small summary, never pixels; results come back in task order whatever the
order they arrive in. distributed is imported only when a client is given, so ``import
chronozarr`` does not load it.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chronozarr.errors import ClusterError
from chronozarr.write._cells import default_workers, parallel
from chronozarr.write._plan import Stage, iter_submission_order
from chronozarr.write._worklog import check_resume_key

__all__ = ["DEFAULT_RETRIES", "DEFAULT_WORKER_TIMEOUT", "RunOptions", "Runner"]

log = logging.getLogger("chronozarr.scheduling")

DEFAULT_RETRIES = 2
DEFAULT_WORKER_TIMEOUT = 180.0  # seconds without any worker before a cluster run gives up
_POLL = 1.0  # seconds between checks for workers while nothing completes
_MOVES = 8  # times one task is submitted again after environment failures


@dataclass(frozen=True)
class RunOptions:
    """How a write runs (not what it writes): ``workers`` local threads (None: up to 4, bounded
    by the CPU count), or a dask.distributed ``scheduler`` with dask's ``retries`` per task and
    ``worker_timeout`` seconds without any worker before a :class:`ClusterError`;
    ``resume_key`` names the resumable work prefix (decision 0017, checked here);
    ``on_task`` is called with each level-0 result (progress); ``on_source`` with each level-0
    task's index and cell source summary, which are then not kept (decision 0058)."""

    workers: int | None = None
    scheduler: Any = None
    retries: int = DEFAULT_RETRIES
    worker_timeout: float = DEFAULT_WORKER_TIMEOUT
    resume_key: str | None = None
    on_task: Callable[[Any], None] | None = None
    on_source: Callable[[int, Any], None] | None = None

    def __post_init__(self) -> None:
        check_resume_key(self.resume_key)


def _context(ctx: Any) -> Any:
    """The shared contexts as a task's result (see the module docstring)."""
    return ctx


class _WorkerFailure(Exception):
    """A task's ``OSError`` on one worker, with that worker's address (see the module
    docstring). Pickled by its arguments, so that it crosses from the worker intact."""

    def __init__(self, worker: str, error: OSError) -> None:
        super().__init__(worker, error)
        self.worker, self.error = worker, error

    def __str__(self) -> str:
        return f"on worker {self.worker}: {type(self.error).__name__}: {self.error}"


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except Exception:  # not on a worker (cannot happen in a cluster task): unnamed
        return "?"


def _staged(fn: Callable[[Any, Any], Any], shared: Any, k: int, task: Any) -> Any:
    """Stage ``k``'s task on a worker: its context from the shared tuple."""
    return _grouped(fn, shared[k], task)


def _grouped(fn: Callable[[Any, Any], Any], ctx: Any, task: Any) -> Any:
    """A task on a worker with its context (the stage's, or its group's)."""
    try:
        return fn(ctx, task)
    except OSError as exc:  # this worker's environment: the run may retry it elsewhere
        raise _WorkerFailure(_worker_address(), exc) from None


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


def _merged(stage: Stage, ran: dict[int, Any]) -> Any:
    """A stage's results in task order: the ones found done, the ones run (with a ``sink``,
    the sink, given the ones found done: decision 0049)."""
    if stage.sink is not None:
        for i, res in stage.done.items():
            stage.sink.put(i, res)
        for i, res in ran.items():
            stage.sink.put(i, res)
        return stage.sink
    return [stage.done[i] if i in stage.done else ran[i] for i in range(len(stage.tasks))]


class Runner:
    """Runs a plan's stages (see the module docstring); returns each stage's results in task
    order. ``scheduler`` is ``None`` (``workers`` local threads) or a ``distributed.Client``."""

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

    @classmethod
    def of(cls, run: RunOptions, client: Any = None) -> Runner:
        """The runner of ``run`` (``client``: a client connected for ``run.scheduler``)."""
        return cls(
            client if client is not None else run.scheduler,
            workers=run.workers or default_workers(),
            retries=run.retries,
            worker_timeout=run.worker_timeout,
        )

    @property
    def remote(self) -> bool:
        return self.client is not None

    def threads(self) -> int:
        """Tasks that can run at once (the cluster's threads, or the local threads)."""
        if self.client is None:
            return self.workers
        return max(1, int(sum(self.client.nthreads().values())))

    def run_tasks(
        self,
        fn: Callable[[Any, Any], Any],
        ctx: Any,
        tasks: Sequence[Any],
        *,
        name: str = "cz-task",
        on_result: Callable[[Any], None] | None = None,
    ) -> list[Any]:
        """``fn(ctx, task)`` for each task: a plan of one stage."""
        hook = None if on_result is None else (lambda _i, res: on_result(res))
        return self.run([Stage(name, fn, ctx, tasks, on_result=hook)])[0]

    def run(self, stages: Sequence[Stage], *, pipelined: bool = True) -> list[list[Any]]:
        """Every stage's results, each in task order (see the module docstring)."""
        if self.client is None:
            return [self._run_local(stage) for stage in stages]
        if not any(stage.todo() for stage in stages):  # a resumed run with nothing left
            for stage in stages:
                if stage.on_done is not None:
                    stage.on_done()
            return [_merged(stage, {}) for stage in stages]
        self._wait_for_workers()
        return _ClusterRun(self, stages, pipelined).run()

    def _run_local(self, stage: Stage) -> Any:
        def one(i: int) -> Any:
            result = stage.fn(stage.ctx, stage.tasks[i])
            if stage.on_result is not None:
                stage.on_result(i, result)
            if stage.sink is not None:
                stage.sink.put(i, result)
                return None
            return result

        todo = stage.todo()
        ran = dict(zip(todo, parallel(one, todo, self.workers), strict=True))
        if stage.sink is not None:
            ran = {}
        if stage.on_done is not None:
            stage.on_done()
        return _merged(stage, ran)

    def _wait_for_workers(self) -> None:
        try:
            self.client.wait_for_workers(1, timeout=self.worker_timeout)
        except TimeoutError:  # distributed's TimeoutError is the builtin one
            raise ClusterError(
                f"no dask worker joined the scheduler {self.client.scheduler.address} within "
                f"{self.worker_timeout:g} s; start workers (dask worker ADDRESS) and re-run"
            ) from None


class _ClusterRun:
    """One run of a plan's stages on a dask cluster (see the module docstring)."""

    def __init__(self, runner: Runner, stages: Sequence[Stage], pipelined: bool) -> None:
        self.runner, self.client, self.stages = runner, runner.client, stages
        self.pipelined = pipelined
        self.token = uuid.uuid4().hex[:8]  # keys unique per run: a reused key may be in release
        self.window = runner.window or 2 * runner.threads()
        self.sequence: Iterator[tuple[int, int]] = iter_submission_order(stages, pipelined)
        self.waiting: tuple[int, int] | None = None  # the next task, held back by the window
        self.ran: list[dict[int, Any]] = [{} for _ in stages]  # stages without a sink
        self.back = [bytearray(len(stage.tasks)) for stage in stages]  # 1: its result is here
        self.left = [sum(1 for _ in stage.pending()) for stage in stages]
        self.finished = [False] * len(stages)
        self.pending: dict[Any, tuple[int, int]] = {}
        self.in_flight = 0  # windowed tasks submitted and not back
        # a pipelined task whose needs are not all here: (k, i) -> needs still out, and
        # (k - 1, j) -> the tasks of stage k parked on it (only tasks in flight: bounded)
        self.parked: dict[tuple[int, int], int] = {}
        self.parked_on: dict[tuple[int, int], list[int]] = {}
        # group contexts (decision 0058): (stage, group) -> its future, and tasks still to submit
        self.groups: dict[tuple[int, Any], Any] = {}
        self.group_left: dict[tuple[int, Any], int] = {}
        for k, stage in enumerate(stages):
            if stage.group is not None:
                for i in stage.pending():
                    key = (k, stage.group(i))
                    self.group_left[key] = self.group_left.get(key, 0) + 1
        self.shared: Any = None
        self.excluded: set[str] = set()  # workers whose environment failed a task
        self.moved: dict[tuple[int, int], int] = {}  # times a task was submitted again
        self.said: set[str] = set()  # failures already logged

    def run(self) -> list[list[Any]]:
        name = self.stages[0].name
        self.shared = self._share(tuple(s.ctx for s in self.stages), f"{name}-context-{self.token}")
        no_worker_since: float | None = None
        try:
            self._finish_stages()  # stages with nothing to run (a resumed run)
            while True:
                self._feed()
                if not self.pending:
                    break
                done = self._wait()
                for fut in sorted(done, key=lambda f: self.pending[f]):  # stage order: on_done
                    self._arrive(fut)
                self._finish_stages()
                no_worker_since = self._check_workers(bool(done), no_worker_since)
        except BaseException:  # Ctrl-C, a task error, no worker: cancel what is queued
            self.client.cancel(list(self.pending), force=True)
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
            self.shared.release()
            for fut in self.groups.values():
                fut.release()
        return [_merged(stage, ran) for stage, ran in zip(self.stages, self.ran, strict=True)]

    def _share(self, ctxs: tuple[Any, ...], key: str) -> Any:
        """The contexts as one task's result, on every worker (see the module docstring)."""
        from distributed import wait  # lazy: only a cluster run needs distributed (an extra)

        client = self.client
        # a task, not scattered data: dask recomputes it if every holder is lost
        shared = client.submit(_context, ctxs, pure=False, key=key)
        try:
            with client.as_current():
                wait([shared], timeout=self.runner.worker_timeout)  # type: ignore[no-untyped-call]
            # on every worker, so that dask places each task by load, not by where the
            # context is (a best effort: a worker that joins later fetches it when it steals)
            client.replicate([shared])
        except Exception as exc:  # a lost worker, a timeout: the run's own loop reports those
            log.debug("the shared context was not replicated: %s: %s", type(exc).__name__, exc)
        return shared

    def _windowed(self, k: int) -> bool:
        return k == 0 or not self.pipelined

    def _feed(self) -> None:
        """Submit tasks in order until the window is full or a stage must finish first."""
        while True:
            item = self.waiting if self.waiting is not None else next(self.sequence, None)
            if item is None:
                return
            k, i = item
            full = self._windowed(k) and self.in_flight >= self.window
            barrier = not self.pipelined and k > 0 and not self.finished[k - 1]
            if full or barrier:
                self.waiting = item
                return
            self.waiting = None
            if self.pipelined and k > 0 and self._park(k, i):
                continue
            self._submit(k, i)

    def _park(self, k: int, i: int) -> bool:
        """Park task (k, i) on its needs still out; False when they are all here."""
        out = [j for j in self.stages[k].wanted(i, self.stages[k - 1]) if not self.back[k - 1][j]]
        if out:
            self.parked[(k, i)] = len(out)
            for j in out:
                self.parked_on.setdefault((k - 1, j), []).append(i)
        return bool(out)

    def _group(self, k: int, i: int, moved: bool) -> Any:
        """The future of task i's group context, submitted with the group's first task (a
        task, not scattered data: dask recomputes it if every holder is lost); the client's
        hold is dropped with its last task (the tasks hold it on the cluster). A task
        submitted again after its group's last one gets the context again."""
        stage = self.stages[k]
        assert stage.group is not None and stage.group_context is not None
        key = (k, stage.group(i))
        fut = self.groups.get(key)
        if fut is None:
            fut = self.client.submit(
                _context, stage.group_context(key[1]), pure=False, priority=k,
                key=f"{stage.name}-group-{self.token}-{i}" + ("-moved" if moved else ""),
            )  # fmt: skip
            if moved:
                return fut
            self.groups[key] = fut
        if not moved:
            self.group_left[key] -= 1
            if not self.group_left[key]:
                self.groups.pop(key)
        return fut

    def _submit(self, k: int, i: int) -> None:
        stage = self.stages[k]
        moved = (k, i) in self.moved
        where: dict[str, Any] = {}
        if self.excluded:  # the workers left (within the caller's own restriction, if any)
            where = {"workers": self._allowed(), "allow_other_workers": False}
        fn: Callable[..., Any]
        head: tuple[Any, ...]
        if stage.group is not None:
            fn, head = _grouped, (stage.fn, self._group(k, i, moved))
        else:
            fn, head = _staged, (stage.fn, self.shared, k)
        fut = self.client.submit(
            fn, *head, stage.tasks[i],
            retries=self.runner.retries, pure=False, priority=k,
            key=f"{stage.name}-{self.token}-{i}" + (f"-moved{self.moved[(k, i)]}" if moved else ""),
            **where,
        )  # fmt: skip
        self.pending[fut] = (k, i)
        self.in_flight += self._windowed(k)

    def _wait(self) -> set[Any]:
        from distributed import wait  # lazy: only a cluster run needs distributed (an extra)

        try:
            with self.client.as_current():  # the caller's client need not be the default
                done, _rest = wait(  # type: ignore[no-untyped-call]
                    list(self.pending), timeout=_POLL, return_when="FIRST_COMPLETED"
                )
        except TimeoutError:  # nothing finished in _POLL seconds: check the workers
            return set()
        return set(done)

    def _allowed(self) -> list[str]:
        import dask  # lazy: a cluster run means dask is installed

        given = dask.get_annotations().get("workers")
        pool = list(given) if given else list(self.client.scheduler_info().get("workers", {}))
        return [w for w in pool if w not in self.excluded]

    def _elsewhere(self, k: int, i: int, failure: _WorkerFailure) -> bool:
        """Submit task (k, i) again without the worker that failed it, if another is there."""
        self.excluded.add(failure.worker)
        # each failure excludes its worker, so this ends when none is left; a task may fail
        # again with an input's failure (its input was submitted again too), a few times
        if self.moved.get((k, i), 0) >= _MOVES or not self._allowed():
            return False
        self.moved[(k, i)] = self.moved.get((k, i), 0) + 1
        if str(failure) not in self.said:  # a dependent fails with its input's error: once
            self.said.add(str(failure))
            log.warning(
                "task %d of %s failed %s; retrying it on the other workers",
                i, self.stages[k].name, failure,
            )  # fmt: skip
        self._submit(k, i)
        return True

    def _arrive(self, fut: Any) -> None:
        k, i = self.pending.pop(fut)
        self.in_flight -= self._windowed(k)
        stage = self.stages[k]
        try:
            result = _result(fut, stage.name)
        except _WorkerFailure as failure:
            if self._elsewhere(k, i, failure):
                return
            raise failure.error from None  # no worker left: the task's own error, as it is
        self.back[k][i] = 1
        self.left[k] -= 1
        if stage.on_result is not None:
            stage.on_result(i, result)
        if stage.sink is not None:  # what the commit needs of it, not the result (0049)
            stage.sink.put(i, result)
        else:
            self.ran[k][i] = result
        for p in self.parked_on.pop((k, i), ()):  # a parked task of stage k + 1 may be ready
            self.parked[(k + 1, p)] -= 1
            if not self.parked[(k + 1, p)]:
                del self.parked[(k + 1, p)]
                self._submit(k + 1, p)

    def _finish_stages(self) -> None:
        """``on_done`` of each stage whose results are all here, in stage order."""
        for k, stage in enumerate(self.stages):
            if self.finished[k] or self.left[k] or not all(self.finished[:k]):
                continue
            self.finished[k] = True
            if stage.on_done is not None:
                stage.on_done()

    def _check_workers(self, progressed: bool, since: float | None) -> float | None:
        """When the no-worker stretch began (None: workers are there, or a result came)."""
        if progressed or self.client.nthreads():
            return None
        now = time.monotonic()
        since = since or now
        if now - since > self.runner.worker_timeout:
            k, _i = next(iter(self.pending.values()))
            raise ClusterError(
                f"every dask worker is gone and none joined within "
                f"{self.runner.worker_timeout:g} s; {len(self.pending)} task(s) of "
                f"{self.stages[k].name} were waiting. Nothing was committed: re-run to resume"
            )
        return since

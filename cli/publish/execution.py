"""Uploading a planned publish phase by phase, with retries of transient errors (spec 9)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from chronozarr.errors import ConcurrentWriteError
from chronozarr.io import ROOT_KEY, Lease, Phase, RemoteStoreError, StoreObject
from cz.publish.errors import PublishError
from cz.publish.planning import PublishPlan, plan_publish
from cz.publish.targets import DirectoryTarget, S3Target, Target, file_md5, open_target

__all__ = ["PublishResult", "execute", "hold", "publish"]

log = logging.getLogger("cz.publish")


def _is_transient(exc: BaseException) -> bool:
    """Worth another attempt: connection trouble, timeouts, 5xx after obstore's own retries."""
    if isinstance(exc, PublishError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    if isinstance(exc, RemoteStoreError):
        cause = exc.__cause__
        if isinstance(cause, ConnectionError | TimeoutError):
            return True
        try:
            from obstore.exceptions import GenericError
        except ImportError:  # pragma: no cover - obstore is a dependency
            return False
        return isinstance(cause, GenericError)
    return False


@dataclass
class PublishResult:
    """What a publish did."""

    plan: PublishPlan
    uploaded: list[str]
    seconds: float
    retries: int
    dry_run: bool = False

    @property
    def bytes(self) -> int:
        sizes = {o.key: o.size for o in self.plan.uploads}
        return sum(sizes[k] for k in self.uploaded)

    def to_json(self) -> dict[str, Any]:
        out = self.plan.to_json()
        out.update(
            {
                "dry_run": self.dry_run,
                "uploaded": {"objects": len(self.uploaded), "bytes": self.bytes},
                "seconds": round(self.seconds, 3),
                "retries": self.retries,
            }
        )
        return out


def execute(
    plan: PublishPlan,
    *,
    workers: int = 8,
    attempts: int = 4,
    backoff: float = 0.5,
    on_phase: Callable[[Phase, list[StoreObject]], None] | None = None,
    on_uploaded: Callable[[StoreObject], None] | None = None,
) -> PublishResult:
    """Upload ``plan.uploads`` phase by phase, ``workers`` at a time. Each object is tried up to
    ``attempts`` times on transient errors (exponential ``backoff`` seconds between tries, on top
    of obstore's request-level retries). The first permanent failure stops the publish before the
    next phase: the root is written only after every other upload has succeeded."""
    with hold(plan.target):
        return _execute(plan, workers, attempts, backoff, on_phase, on_uploaded)


def _execute(
    plan: PublishPlan,
    workers: int,
    attempts: int,
    backoff: float,
    on_phase: Callable[[Phase, list[StoreObject]], None] | None,
    on_uploaded: Callable[[StoreObject], None] | None,
) -> PublishResult:
    t0 = time.perf_counter()
    uploaded: list[str] = []
    lock = threading.Lock()
    retries = 0
    stop = threading.Event()

    def one(obj: StoreObject) -> None:
        nonlocal retries
        path = plan.source.joinpath(*obj.key.split("/"))
        md5 = plan.md5.get(obj.key) or file_md5(path)
        for attempt in range(1, attempts + 1):
            if stop.is_set():
                raise PublishError("stopped: another upload failed")
            try:
                if obj.phase == Phase.ROOT and obj.key == ROOT_KEY:  # the commit (0051)
                    plan.target.commit(obj, path, md5, plan.root_version)
                else:
                    plan.target.upload(obj, path, md5)
                break
            except Exception as exc:  # any failure of one upload: retried if transient
                if attempt == attempts or not _is_transient(exc):
                    stop.set()  # before raising: this worker takes no further object
                    raise
                with lock:
                    retries += 1
                log.warning("%s: attempt %d failed (%s); retrying", obj.key, attempt, exc)
                time.sleep(backoff * 2 ** (attempt - 1))
        with lock:
            uploaded.append(obj.key)
        if on_uploaded is not None:
            on_uploaded(obj)

    for phase, objs in plan.phases():
        if not objs:
            continue
        if on_phase is not None:
            on_phase(phase, objs)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures: list[Future[None]] = [pool.submit(one, o) for o in objs]
            try:
                done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:  # Ctrl-C: queue nothing more, let running uploads finish
                stop.set()
                for f in futures:
                    f.cancel()
                raise
            failed = [f for f in done if f.exception() is not None]
            if failed:
                stop.set()
                for f in pending:
                    f.cancel()
                wait(pending)
                exc = failed[0].exception()
                assert exc is not None
                if isinstance(exc, ConcurrentWriteError):  # its own one line (decision 0051)
                    raise exc
                written = (
                    "no root zarr.json was written"
                    if plan.target_state != "store"
                    else ("the target's root zarr.json is still the old one")
                )
                raise PublishError(
                    f"publish to {plan.target.url} stopped in phase {int(phase)} ({phase.title}):"
                    f" {exc}. {len(uploaded)} of {len(plan.uploads)} objects were uploaded and"
                    f" {written}, so readers see no missing object. Run the same command again to"
                    " resume: objects already uploaded are not sent twice."
                ) from exc
    return PublishResult(plan, uploaded, time.perf_counter() - t0, retries)


def publish(
    source: str | os.PathLike[str],
    target: Target | str,
    *,
    workers: int = 8,
    dry_run: bool = False,
    endpoint: str | None = None,
    region: str | None = None,
    on_phase: Callable[[Phase, list[StoreObject]], None] | None = None,
    on_uploaded: Callable[[StoreObject], None] | None = None,
) -> PublishResult:
    """Plan and (unless ``dry_run``) execute a publish of ``source`` to ``target``."""
    tgt = (
        target
        if isinstance(target, Target)
        else open_target(target, endpoint=endpoint, region=region)
    )
    if dry_run:
        plan = plan_publish(source, tgt, workers=workers)
        return PublishResult(plan, [], 0.0, 0, dry_run=True)
    with hold(tgt):  # the plan reads the target's root under the lease or lock
        plan = plan_publish(source, tgt, workers=workers)
        return execute(plan, workers=workers, on_phase=on_phase, on_uploaded=on_uploaded)


@contextlib.contextmanager
def hold(target: Target) -> Iterator[None]:
    """One writer at a time on ``target`` (decision 0051), for the plan and the uploads: a
    directory's target lock (the sweep of what dead runs left there comes with it,
    :mod:`cz.build.leftovers`), an S3 prefix's lease (:mod:`chronozarr.io._lease`). Nested
    holds of one target are one."""
    if getattr(target, "_held", False):
        yield
        return
    if isinstance(target, DirectoryTarget):
        from cz.build.leftovers import new_tag, start_run  # the toolkit's run bookkeeping

        lock: Any = start_run(target.root, new_tag(), partial=True)
    elif isinstance(target, S3Target):
        lock = Lease(target.store, "publish").acquire()
    else:
        lock = None
    target._held = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        target._held = False  # type: ignore[attr-defined]
        if lock is not None:
            lock.release()

"""Before a cluster run: every worker checked for what its tasks need, a bad one named.

One worker that could not reach the target (a wrong endpoint on that worker only) failed the
whole build, late, with an error that named no worker. Here, before any task is submitted,
each worker (``client.run``: on the worker, not as a task) writes a probe object under the
target and reads it back, opens a connection to each host of the item hrefs and checks that a
sample of local item files is readable; this process then checks it sees every probe (a local
path must be on a filesystem every worker shares) and removes them. A worker with a problem is
named (address, name, the problem) on stderr and left out of the run (dask worker restrictions:
``dask.annotate(workers=...)``), so dask retries its tasks elsewhere; with no good worker left
the run stops with one line naming each worker and its problem (decision 0047).
"""

from __future__ import annotations

import logging
import os
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from cz.build.errors import BuildError

__all__ = ["Needs", "check_workers", "needs_of", "on_workers"]

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0  # per host, on each worker
MAX_HOSTS = 8  # distinct item hosts probed
MAX_FILES = 8  # local item files probed (one per folder)
PROBE_PREFIX = ".cz-preflight-"  # probe objects at the top of the target


@dataclass(frozen=True)
class Needs:
    """What every task of a run needs from its worker: the target, the item hosts, files."""

    target: Any  # a picklable chronozarr Store (LocalStore, ObjectStore, HeaderedStore)
    hosts: tuple[tuple[str, int], ...] = ()
    files: tuple[str, ...] = ()


def needs_of(target: Any, plan: Any) -> Needs:
    """The target and a sample of the plan's item hrefs: each http(s) host, local files."""
    hosts: dict[tuple[str, int], None] = {}
    files: dict[str, str] = {}
    for month in plan.months:
        for item in month.items:
            for href in item.hrefs.values():
                parts = urlsplit(href)
                if parts.scheme in ("http", "https") and parts.hostname:
                    port = parts.port or (443 if parts.scheme == "https" else 80)
                    if len(hosts) < MAX_HOSTS:
                        hosts.setdefault((parts.hostname, port), None)
                elif parts.scheme in ("", "file") and len(files) < MAX_FILES:
                    path = parts.path if parts.scheme == "file" else href
                    files.setdefault(os.path.dirname(path), path)
    return Needs(target, tuple(hosts), tuple(files.values()))


def _probe(needs: Needs, key: str) -> tuple[str | None, list[str]]:
    """On a worker: (the probe key written, or None; the problems found)."""
    problems: list[str] = []
    written: str | None = None
    target = needs.target
    try:
        target.put(key, key.encode())
        written = key
        if target.get(key) != key.encode():
            problems.append(f"wrote {key} under {target.url} but read back something else")
    except Exception as exc:  # any failure of the target is this worker's problem to name
        problems.append(f"cannot write the target {target.url} ({type(exc).__name__}: {exc})")
    for host, port in needs.hosts:
        try:
            socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
        except OSError as exc:
            problems.append(f"cannot reach the item host {host}:{port} ({exc})")
    for path in needs.files:
        if not os.access(path, os.R_OK):
            problems.append(f"cannot read the item file {path}")
    return written, problems


def _remove(target: Any, key: str) -> None:
    """On a worker: remove its probe (best effort: a target it cannot write holds none)."""
    try:
        target.delete(key)
    except Exception as exc:
        log.debug("probe %s not removed: %s", key, exc)


def _sweep(target: Any) -> None:
    """Remove probes a killed run left (they would make the target look non-empty)."""
    try:
        root = getattr(target, "root", None)  # a local folder: its top level only, not a walk
        if root is not None:
            names = os.listdir(root) if os.path.isdir(root) else []
            stale = [n for n in names if n.startswith(PROBE_PREFIX)]
        else:  # an object store lists by prefix
            stale = [key for key, _size in target.list(PROBE_PREFIX)]
        for key in stale:
            target.delete(key)
    except Exception as exc:  # best effort: the run's own checks report the target
        log.debug("stale probes not removed: %s", exc)


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _judge(client: Any, needs: Needs, answers: dict[str, Any]) -> dict[str, str]:
    """The workers whose probe failed, with why (a probe written where this process does not
    see it included); every probe is removed by the worker that wrote it."""
    bad: dict[str, str] = {}
    try:
        for addr, answer in answers.items():
            if isinstance(answer, BaseException):
                bad[addr] = f"the check failed ({type(answer).__name__}: {answer})"
                continue
            written, problems = answer
            if written is not None and not problems and needs.target.get(written) is None:
                problems = [
                    f"wrote {written} under {needs.target.url}, which this process does not see "
                    "(a local path must be on a filesystem every worker shares, or use s3://)"
                ]
            if problems:
                bad[addr] = "; ".join(problems)
    finally:  # each worker removes its own probe (this process's writes stay the run's own)
        for addr, answer in answers.items():
            if isinstance(answer, tuple) and answer[0] is not None:
                client.run(_remove, needs.target, answer[0], workers=[addr], on_error="return")
    return bad


def check_workers(client: Any, needs: Needs, progress: Any = None) -> list[str] | None:
    """Probe every worker (see the module docstring). Returns the good workers' addresses when
    some were left out (None: every worker is good); raises BuildError when none is."""
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        return None  # none yet: the runner waits for one (--worker-timeout)
    _sweep(needs.target)
    token = uuid.uuid4().hex[:12]
    keys = {addr: f"{PROBE_PREFIX}{token}-{i}" for i, addr in enumerate(sorted(workers))}
    answers: dict[str, Any] = {}
    for addr, key in keys.items():  # one call per worker: each writes its own probe key
        got = client.run(_probe, needs, key, workers=[addr], on_error="return")
        answers[addr] = got.get(addr, RuntimeError("the worker did not answer"))
    bad = _judge(client, needs, answers)
    if not bad:
        return None
    names = {addr: info.get("name", addr) for addr, info in workers.items()}

    def who(addr: str) -> str:
        name = str(names.get(addr, ""))
        return f"worker {addr}" + (f" ({name})" if name and name != addr else "")

    good = [addr for addr in workers if addr not in bad]
    if not good:
        raise BuildError(
            "no dask worker can do this run: "
            + "; ".join(f"{who(a)}: {_short(p)}" for a, p in sorted(bad.items()))
            + " (nothing was written)"
        )
    for addr, problem in sorted(bad.items()):
        message = f"leaving out {who(addr)}: {_short(problem)}"
        log.info("%s", message)  # for a library caller's logs; the CLI says it through the note
        if progress is not None:  # the run's own stderr line
            progress.note(message)
    return good


@contextmanager
def on_workers(good: list[str] | None) -> Iterator[None]:
    """Every task submitted inside runs on ``good`` only (None: anywhere)."""
    if good is None:
        yield
        return
    import dask

    with dask.annotate(workers=good, allow_other_workers=False):
        yield

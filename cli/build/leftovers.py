"""A run's own files beside its target, and the sweep of what dead runs left (decision 0020).

A local build, an append, a convert and a publish to a directory name their temporary siblings
after the target and a run tag: ``.NAME.building-TAG`` (the staging store), ``.NAME.composites-TAG``
(the spill, in ``--work-dir`` when given), ``.NAME.converting-TAG`` (``cz convert``'s staging), ``.NAME.replaced-TAG`` (an old store being replaced),
``.NAME.commit-TAG.json`` (the journal of an ``--overwrite`` swap, :mod:`cz.build.swap`).

Who is alive. Every run first takes :class:`RunLock`: the file ``.NAME.run-TAG.lock`` next to the
target, holding the run's pid, host, start time and spill folder, with an exclusive ``flock``
held for the whole run. The kernel drops the lock when the process dies, however it dies
(SIGKILL and the OOM killer included), so "the lock can be taken" means "its run is over": the
sweep never needs to trust a pid on another host or a clock. A run removes its own files before
it releases its lock, so a sweep that wins the lock finds only what a dead run left.

What the sweep does (:func:`sweep`), called by ``cz build``, ``cz append`` and ``cz publish`` on
their target before they start:

- finishes or rolls back an interrupted ``--overwrite`` swap whose run is dead
  (:func:`cz.build.swap.recover`): afterwards the old store or the new one is at the target;
- removes the tagged siblings of every dead run (staging, spill, replaced store, lock file);
- removes ``.*.tmp`` files (a write in flight when its process died) inside the target, only
  when the target holds a complete store (a root ``zarr.json``) or is a publish target, no live
  run holds a lock on it, and the file is older than :data:`TMP_MIN_AGE` seconds (a writer that
  takes no lock, on another host, is not cut short).

What it never touches: the target folder itself, a folder without a root ``zarr.json`` (a
resumable cluster build keeps its partial there, with its progress under ``.cz-build/``:
docs/decisions/0017-resumable-builds.md), and tagged siblings without a lock file (left by a
version before this one, or not ours): those are reported, not removed.

``cz validate`` calls :func:`inspect` (read-only) and prints what it finds as warnings.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from chronozarr.io import has_root

try:  # POSIX: the kernel's flock, dropped when its process dies (however it dies)
    import fcntl
except ImportError:  # Windows and other systems without it: see _lock_free (decision 0039)
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "TMP_MIN_AGE",
    "Leftovers",
    "RunLock",
    "inspect",
    "new_tag",
    "start_run",
    "sweep",
    "sweep_publish_copies",
    "tagged_name",
]

log = logging.getLogger("cz.leftovers")

#: A ``.tmp`` file inside a store younger than this is left alone (seconds;
#: ``CZ_SWEEP_TMP_AGE`` overrides it, for tests that kill a run and sweep right after).
TMP_MIN_AGE = 60.0
TMP_AGE_ENV = "CZ_SWEEP_TMP_AGE"


def _tmp_min_age() -> float:
    raw = os.environ.get(TMP_AGE_ENV, "")
    try:
        return max(0.0, float(raw)) if raw else TMP_MIN_AGE
    except ValueError:  # a malformed override: the safe default
        return TMP_MIN_AGE


KINDS = ("building", "composites", "converting", "replaced", "commit", "run")
_TAGGED = re.compile(r"^\.(?P<name>.+)\.(?P<kind>" + "|".join(KINDS) + r")-(?P<tag>[0-9a-f]{10})")


def new_tag() -> str:
    """A run tag: 10 hex digits, unique enough among the runs of one folder."""
    return uuid.uuid4().hex[:10]


def tagged_name(final: Path, kind: str, tag: str) -> str:
    """``.NAME.KIND-TAG`` (``.json`` for the commit journal, ``.lock`` for the run lock)."""
    suffix = {"commit": ".json", "run": ".lock"}.get(kind, "")
    return f".{final.name}.{kind}-{tag}{suffix}"


def _lock_free(path: Path) -> bool:
    """True when nobody holds the flock of ``path`` (its run is dead), False when one does.

    Without ``fcntl`` (Windows) no lock tells a dead run from a live one, so every run counts as
    alive: its files are reported by ``cz validate``, never removed (decision 0039)."""
    if fcntl is None:
        return False
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:  # its run finished and removed it meanwhile: not alive
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # held: a live run
        return False
    finally:
        os.close(fd)  # closing releases the lock we may have taken
    return True


@dataclass
class RunLock:
    """The lock of one run on one target (see the module docstring)."""

    final: Path
    tag: str
    path: Path
    fd: int | None = None
    spill: Path | None = None

    @classmethod
    def acquire(cls, final: Path, tag: str, *, spill: Path | None = None) -> RunLock:
        """Write ``.NAME.run-TAG.lock`` (pid, host, start, spill) and hold its flock.

        The file is written under a temporary name, locked, then renamed into place, so no
        sweep ever sees an unlocked lock file of a live run.
        """
        final.parent.mkdir(parents=True, exist_ok=True)
        path = final.parent / tagged_name(final, "run", tag)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            if fcntl is not None:  # without it the file alone marks the run (see _lock_free)
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            owner = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "target": str(final),
                "spill": str(spill) if spill is not None else None,
            }
            os.write(fd, json.dumps(owner).encode())
            if fcntl is None:  # no lock to hold, and Windows renames no open file
                os.close(fd)
                fd = -1
            os.rename(tmp, path)
        except BaseException:  # nothing half-made: no lock file without its lock
            if fd >= 0:
                os.close(fd)
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return cls(final, tag, path, fd, spill)

    def release(self) -> None:
        """Remove the lock file, then drop the lock (the run's own files are gone by now)."""
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self.fd >= 0:  # -1: a run without fcntl holds no descriptor
            os.close(self.fd)
        self.fd = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass
class Leftovers:
    """What dead runs left around one target (:func:`inspect`), or what :func:`sweep` removed."""

    dead_runs: list[str] = field(default_factory=list)  # tags whose lock is free
    live_runs: list[str] = field(default_factory=list)  # tags whose lock is held
    paths: list[Path] = field(default_factory=list)  # siblings of dead runs
    tmp_files: list[Path] = field(default_factory=list)  # .tmp inside the target store
    unowned: list[Path] = field(default_factory=list)  # tagged siblings without a lock file
    swaps: list[Path] = field(default_factory=list)  # journals of interrupted --overwrite swaps
    recovered: list[str] = field(default_factory=list)  # what recovery did, one line each

    def __bool__(self) -> bool:
        return bool(self.paths or self.tmp_files or self.unowned or self.swaps)


def _is_spill_of(spill: Any, final: Path, tag: str) -> bool:
    """Only a folder named as this run's spill is ever taken from a lock file (a garbled or
    edited lock file must not make the sweep remove anything else)."""
    if not isinstance(spill, str) or not spill:
        return False
    path = Path(spill)
    return path.name == tagged_name(final, "composites", tag) and path.is_dir()


def _read_owner(lock: Path) -> dict[str, Any]:
    try:
        owner = json.loads(lock.read_text(encoding="utf-8"))
    except (OSError, ValueError):  # half-written or unreadable: no spill recorded
        return {}
    return owner if isinstance(owner, dict) else {}


def _siblings(final: Path, folders: list[Path]) -> dict[str, list[Path]]:
    """Tagged siblings of ``final`` in ``folders``, by tag."""
    found: dict[str, list[Path]] = {}
    for folder in dict.fromkeys(folders):
        try:
            names = os.listdir(folder)
        except OSError:  # a missing work dir: nothing there
            continue
        for name in names:
            m = _TAGGED.match(name)
            if m and m["name"] == final.name:
                found.setdefault(m["tag"], []).append(folder / name)
    return found


def _tmp_files(final: Path, now: float, partial: bool) -> list[Path]:
    """``.*.tmp`` files under a complete store (or, ``partial``, under a publish target without
    a root yet), never under ``.cz-build/``, old enough."""
    if not final.is_dir() or not (partial or has_root(final)):
        return []
    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(final):
        dirnames[:] = [d for d in dirnames if d != ".cz-build"]
        for name in filenames:
            if name.startswith(".") and name.endswith(".tmp"):
                path = Path(dirpath) / name
                with contextlib.suppress(FileNotFoundError):
                    if now - path.stat().st_mtime >= _tmp_min_age():
                        out.append(path)
    return sorted(out)


def inspect(
    final: Path, *, work_dir: Path | None = None, own: str | None = None, partial: bool = False
) -> Leftovers:
    """What dead runs left around ``final`` (read-only). ``own`` is the caller's tag;
    ``partial``: ``final`` is a publish target, whose ``.tmp`` files count without a root."""
    final = Path(final)
    folders = [final.parent] + ([work_dir] if work_dir is not None else [])
    result = Leftovers()
    for tag, paths in sorted(_siblings(final, folders).items()):
        if tag == own:
            continue
        lock = final.parent / tagged_name(final, "run", tag)
        if not lock.exists():  # killed before its lock file got its name: the locked temp one
            lock = next((p for p in paths if p.name.startswith(lock.name + ".")), lock)
        if not lock.exists():  # an older cz or another program; but a swap journal is ours
            swaps = [
                p
                for p in paths
                if p.name.startswith(f".{final.name}.commit-") and p.suffix == ".json"
            ]
            result.swaps.extend(swaps)
            result.unowned.extend(sorted(p for p in paths if p not in swaps))
            continue
        if not _lock_free(lock):
            result.live_runs.append(tag)
            continue
        result.dead_runs.append(tag)
        spill = _read_owner(lock).get("spill")
        extra = [Path(str(spill))] if _is_spill_of(spill, final, tag) else []
        for path in sorted(set(paths) | set(extra)):
            if path.name.startswith(f".{final.name}.commit-") and path.suffix == ".json":
                result.swaps.append(path)
            elif path != lock:
                result.paths.append(path)
        result.paths.append(lock)
    if not result.live_runs:
        result.tmp_files = _tmp_files(final, time.time(), partial)
    return result


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def sweep(
    final: Path, *, work_dir: Path | None = None, own: str | None = None, partial: bool = False
) -> Leftovers:
    """Recover interrupted swaps and remove what dead runs left around ``final`` (see the
    module docstring); returns what was found and done. Logs each removal."""
    from cz.build.swap import recover

    found = inspect(final, work_dir=work_dir, own=own, partial=partial)
    for journal in found.swaps:  # first: it decides which store stays at the target
        found.recovered.append(recover(final, journal))
    for path in found.paths + found.tmp_files:
        log.info("removing %s (left by a run that is no longer alive)", path)
        _remove(path)
    for path in found.unowned:
        log.warning("%s: left by another program or an older cz; not removed", path)
    return found


def sweep_publish_copies(base: Path) -> None:
    """In ``base`` (a build-to-URL's work folder), sweep each ``.cz-publish-*`` copy's target and
    remove the copy's folder once nothing is left in it. A copy holding a store (kept after a
    failed publish, for ``cz publish``) stays."""
    try:
        copies = [p for p in base.iterdir() if p.name.startswith(".cz-publish-") and p.is_dir()]
    except OSError:  # no work folder yet: nothing to sweep
        return
    for folder in copies:
        names = {m["name"] for p in folder.iterdir() if (m := _TAGGED.match(p.name))}
        dead = [sweep(folder / name).dead_runs for name in names]
        if any(dead) and not any(p.name.startswith(".") for p in folder.iterdir()):
            shutil.rmtree(folder, ignore_errors=True)  # its run died building or uploading
        with contextlib.suppress(OSError):  # not empty: a kept store, or a live run's copy
            folder.rmdir()


def start_run(
    final: Path,
    tag: str,
    *,
    work_dir: Path | None = None,
    spill: Path | None = None,
    partial: bool = False,
) -> RunLock:
    """What every writing run does first: sweep what dead runs left around ``final``, then take
    its own lock (its spill folder recorded in it). ``partial``: see :func:`inspect`."""
    found = sweep(final, work_dir=work_dir, partial=partial)
    for line in found.recovered:
        log.warning("%s", line)
    return RunLock.acquire(final, tag, spill=spill)

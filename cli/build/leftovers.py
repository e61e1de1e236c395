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

One run per target (decision 0051). Before anything else, :func:`start_run` takes the target's
own lock, ``.NAME.lock`` (:class:`TargetLock`): a second run on the same target stops there with
:class:`~cz.build.errors.TargetBusyError` (exit 75), before it writes or sweeps anything.

What the sweep does (:func:`sweep`), called by ``cz build``, ``cz append``, ``cz convert`` and
``cz publish`` on their target once they hold its lock:

- finishes or rolls back an interrupted ``--overwrite`` swap whose run is dead
  (:func:`cz.build.swap.recover`): afterwards the old store or the new one is at the target;
- removes the tagged siblings of every dead run (staging, spill, replaced store, lock file);
- removes ``.*.tmp`` files (a write in flight when its process died) inside the target, when
  the target holds a complete store (a root ``zarr.json``) or is a publish target, whatever
  their age: under the target's lock no other cz run writes there; a library writer that takes
  no such lock is known by its live lease in the store (:mod:`chronozarr.io._lease`), and while
  it lives nothing inside is touched. A dead writer's lease goes too. (:func:`inspect` without
  the lock, as ``cz validate`` calls it, reports only files older than :data:`TMP_MIN_AGE`.)

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
import sys
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
    "TargetLock",
    "inspect",
    "new_tag",
    "start_run",
    "sweep",
    "sweep_publish_copies",
    "tagged_name",
    "target_busy",
    "target_lock_path",
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
    target_lock: TargetLock | None = None

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
        if self.target_lock is not None:  # last: the target is free for the next run
            self.target_lock.release()
            self.target_lock = None

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def target_lock_path(final: Path) -> Path:
    """``.NAME.lock`` beside the target: the lock of the one run writing it (decision 0051)."""
    return final.parent / f".{final.name}.lock"


def _owner_line(path: Path) -> str:
    owner = _read_owner(path)
    if not owner:
        return "its owner is not recorded"
    return (
        f"{owner.get('command') or 'a cz run'} by pid {owner.get('pid')} on"
        f" {owner.get('host')}, started {owner.get('started')}"
    )


@dataclass
class TargetLock:
    """The lock of one target, held by the one run writing it (decision 0051): a second run on
    the same target stops before it writes anything (:class:`~cz.build.errors.TargetBusyError`,
    exit 75), instead of racing the first to the final rename.

    POSIX: an exclusive, non-blocking ``flock`` on ``.NAME.lock``, which the kernel drops when
    the process dies however it dies, so a dead run's lock file is simply taken over; the file
    is removed on release, and a run that locked a file removed meanwhile tries again. Without
    ``fcntl`` (decision 0039): the file is created exclusively and its existence is the lock; a
    dead run's file then stays and the message says to remove it once no run is alive.
    """

    path: Path
    fd: int | None = None

    @classmethod
    def acquire(cls, final: Path) -> TargetLock:
        from cz.build.errors import TargetBusyError

        path = target_lock_path(final)
        path.parent.mkdir(parents=True, exist_ok=True)
        for _attempt in range(20):
            if fcntl is None:
                try:
                    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
                except FileExistsError:
                    raise TargetBusyError(
                        f"{final}: another cz run holds this target ({_owner_line(path)});"
                        f" nothing was written. Run again when it has finished (if no cz run is"
                        f" alive, remove {path})"
                    ) from None
            else:
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    raise TargetBusyError(
                        f"{final}: another cz run holds this target ({_owner_line(path)});"
                        " nothing was written. Run again when it has finished"
                    ) from None
                try:
                    same = os.stat(path).st_ino == os.fstat(fd).st_ino
                except FileNotFoundError:  # its holder removed it as we locked it
                    same = False
                if not same:
                    os.close(fd)
                    continue
            owner = {
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "target": str(final),
                "command": " ".join(["cz", *sys.argv[1:2]]),
            }
            os.ftruncate(fd, 0)
            os.write(fd, json.dumps(owner).encode())
            if fcntl is None:
                os.close(fd)
                fd = -1
            return cls(path, fd)
        raise TargetBusyError(f"{final}: its lock file {path} keeps changing; try again")

    def release(self) -> None:
        """Remove the lock file, then drop the lock."""
        if self.fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self.fd >= 0:
            os.close(self.fd)
        self.fd = None


def target_busy(final: Path) -> bool:
    """True when a live run holds ``final``'s target lock (read-only: for ``inspect``)."""
    path = target_lock_path(final)
    return path.exists() and not _lock_free(path)


def _live_lease(final: Path) -> bool:
    """True when the store at ``final`` holds a writer's lease whose holder is alive (a library
    caller writing without the toolkit's lock, decision 0051): its ``.tmp`` files are its own."""
    from chronozarr.io import LEASE_KEY, holder_gone

    try:
        doc = json.loads((final / LEASE_KEY).read_bytes())
    except (OSError, ValueError):  # none, or torn: no live holder
        return False
    return isinstance(doc, dict) and holder_gone(doc, time.time()) is None


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


def _tmp_files(final: Path, now: float, partial: bool, min_age: float = 0.0) -> list[Path]:
    """``.*.tmp`` files under a complete store (or, ``partial``, under a publish target without
    a root yet), never under ``.cz-build/``, at least ``min_age`` seconds old; and the lease
    of a writer that is gone (decision 0051). Nothing while a live writer's lease is there."""
    if not final.is_dir() or not (partial or has_root(final)) or _live_lease(final):
        return []
    from chronozarr.io import LEASE_KEY

    out: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(final):
        dirnames[:] = [d for d in dirnames if d != ".cz-build"]
        for name in filenames:
            if (name.startswith(".") and name.endswith(".tmp")) or (
                name == LEASE_KEY and Path(dirpath) == final
            ):
                path = Path(dirpath) / name
                with contextlib.suppress(FileNotFoundError):
                    if now - path.stat().st_mtime >= min_age:
                        out.append(path)
    return sorted(out)


def _sort_run(result: Leftovers, final: Path, tag: str, paths: list[Path]) -> None:
    """Sort what run ``tag`` left into ``result``: a live run's nothing, a dead run's files
    and lock, its swap journals, or (no lock: an older cz or another program) unowned files."""
    lock = final.parent / tagged_name(final, "run", tag)
    if not lock.exists():  # killed before its lock file got its name: the locked temp one
        lock = next((p for p in paths if p.name.startswith(lock.name + ".")), lock)
    if not lock.exists():  # an older cz or another program; but a swap journal is ours
        swaps = [
            p for p in paths if p.name.startswith(f".{final.name}.commit-") and p.suffix == ".json"
        ]
        result.swaps.extend(swaps)
        result.unowned.extend(sorted(p for p in paths if p not in swaps))
        return
    if not _lock_free(lock):
        result.live_runs.append(tag)
        return
    result.dead_runs.append(tag)
    spill = _read_owner(lock).get("spill")
    extra = [Path(str(spill))] if _is_spill_of(spill, final, tag) else []
    for path in sorted(set(paths) | set(extra)):
        if path.name.startswith(f".{final.name}.commit-") and path.suffix == ".json":
            result.swaps.append(path)
        elif path != lock:
            result.paths.append(path)
    result.paths.append(lock)


def inspect(
    final: Path,
    *,
    work_dir: Path | None = None,
    own: str | None = None,
    partial: bool = False,
    held: bool = False,
) -> Leftovers:
    """What dead runs left around ``final`` (read-only). ``own`` is the caller's tag;
    ``partial``: ``final`` is a publish target, whose ``.tmp`` files count without a root;
    ``held``: the caller holds the target lock, so every ``.tmp`` inside is debris, whatever
    its age (without it, only those older than :data:`TMP_MIN_AGE`: a run on another host may
    be writing them)."""
    final = Path(final)
    folders = [final.parent] + ([work_dir] if work_dir is not None else [])
    result = Leftovers()
    for tag, paths in sorted(_siblings(final, folders).items()):
        if tag == own:
            continue
        _sort_run(result, final, tag, paths)
    if held:  # the caller holds the target lock: no other cz run writes there (decision 0051)
        result.tmp_files = _tmp_files(final, time.time(), partial)
    elif not result.live_runs and not target_busy(final):
        result.tmp_files = _tmp_files(final, time.time(), partial, _tmp_min_age())
    return result


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def sweep(
    final: Path,
    *,
    work_dir: Path | None = None,
    own: str | None = None,
    partial: bool = False,
    held: bool = False,
) -> Leftovers:
    """Recover interrupted swaps and remove what dead runs left around ``final`` (see the
    module docstring); returns what was found and done. Logs each removal."""
    from cz.build.swap import recover

    found = inspect(final, work_dir=work_dir, own=own, partial=partial, held=held)
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
    """What every writing run does first: take the target's lock (:class:`TargetLock`; a live
    run there raises TargetBusyError, exit 75), sweep what dead runs left around ``final``
    (every ``.tmp`` inside, whatever its age: no other cz run is writing), then take its run
    lock (its spill folder recorded in it), which releases the target lock with it.
    ``partial``: see :func:`inspect`."""
    target_lock = TargetLock.acquire(final)
    try:
        found = sweep(final, work_dir=work_dir, partial=partial, held=True)
        for line in found.recovered:
            log.warning("%s", line)
        run = RunLock.acquire(final, tag, spill=spill)
    except BaseException:
        target_lock.release()
        raise
    run.target_lock = target_lock
    return run

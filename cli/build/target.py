"""Where a local build goes: staging next to the target, then one rename or a journaled swap
(spec 9; decision 0020)."""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from chronozarr.io import fault_point, has_root, location
from cz.build.errors import BuildError
from cz.build.leftovers import RunLock, new_tag, start_run, tagged_name
from cz.build.options import BuildOptions
from cz.build.swap import recover, swap_in
from cz.signals import commit_section


def is_url(text: str) -> bool:
    """A target that is not a local path (``file://`` is local; :mod:`chronozarr.io._location`)."""
    return location(text).kind != "local"


def local_path(text: str) -> Path:
    """The absolute local path of a path or ``file://`` URL."""
    return Path(location(text).path or text).expanduser().resolve()


@dataclass
class Target:
    """A local build target: the final path, the staging and spill folders, the run's lock.

    Every name beside the target carries the run's tag, and the run holds its
    :class:`~cz.build.leftovers.RunLock` until it has removed them (:meth:`close`), so a later
    run's sweep tells a dead run's leftovers from a live run's work (decision 0020).
    """

    final: Path
    staging: Path
    spill_root: Path
    replace: bool
    tag: str = ""
    lock: RunLock | None = None

    @classmethod
    def prepare(cls, final: Path, options: BuildOptions) -> Target:
        """Check and reserve the target (no store is written yet): first the sweep of what dead
        runs left (an interrupted ``--overwrite`` is finished or undone), then refuses an
        existing store (unless ``overwrite``) or a non-empty folder; creates the staging folder
        to prove the place is writable."""
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # permissions, read-only disk: a build error
            raise BuildError(
                f"cannot create the folder {final.parent} for {final}: {os_reason(exc)}"
            ) from None
        tag = new_tag()
        work = Path(options.work_dir).expanduser().resolve() if options.work_dir else final.parent
        spill = work / tagged_name(final, "composites", tag)
        try:
            lock = start_run(final, tag, work_dir=work, spill=spill)
        except OSError as exc:  # permissions, read-only disk: a build error
            raise BuildError(
                f"cannot write next to {final} ({final.parent}): {os_reason(exc)}"
            ) from None
        try:
            replace = _check_target(final, options)
            staging = final.parent / tagged_name(final, "building", tag)
            try:
                staging.mkdir()
            except OSError as exc:  # permissions, read-only disk: a build error
                raise BuildError(
                    f"cannot write next to {final} ({final.parent}): {os_reason(exc)}"
                ) from None
        except BaseException:  # refused: nothing of this run stays
            lock.release()
            raise
        return cls(final, staging, spill, replace, tag, lock)

    def commit(self) -> None:
        """Move the complete staging folder to the final path: one rename, or for
        ``--overwrite`` the journaled swap of :mod:`cz.build.swap` (the old store goes only
        after the new one is in place; a kill at any instant is recovered by the next run)."""
        with commit_section():  # a signal now waits; after it, the run finishes (cz.signals)
            self._commit()

    def _commit(self) -> None:
        if self.replace:
            parent, tag = self.final.parent, self.tag
            journal = parent / tagged_name(self.final, "commit", tag)
            try:
                swap_in(
                    self.staging,
                    self.final,
                    journal,
                    parent / tagged_name(self.final, "replaced", tag),
                )
            except BaseException:  # Ctrl-C/SIGTERM mid-swap: finish it now (the journal says how)
                if journal.exists():
                    recover(self.final, journal)
                raise
        else:  # a missing path, or an empty folder (POSIX rename replaces an empty folder)
            fault_point("rename", f"{self.staging.name} -> {self.final.name}")
            os.rename(self.staging, self.final)

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)

    def close(self) -> None:
        """Remove the spill, then release the run's lock (after commit or abort)."""
        shutil.rmtree(self.spill_root, ignore_errors=True)
        if self.lock is not None:
            self.lock.release()


def _check_target(final: Path, options: BuildOptions) -> bool:
    """Whether the build replaces a store at ``final``; refuses what must not be replaced."""
    if not (final.exists() or final.is_symlink()):
        return False
    if not final.is_dir():
        raise BuildError(f"{final} exists and is not a folder; choose another --out")
    if not any(final.iterdir()):
        return False
    if not has_root(final):
        raise BuildError(
            f"{final} is a folder that is not empty and holds no store; choose another --out"
        )
    if not options.overwrite:
        raise BuildError(
            f"{final} already holds a store; a rebuild goes to a new path (spec 9), "
            "or pass --overwrite to replace it once the new store is complete"
        )
    return True


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def store_size(path: Path) -> tuple[int, int]:
    total = count = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += (Path(dirpath) / name).stat().st_size
            count += 1
    return total, count

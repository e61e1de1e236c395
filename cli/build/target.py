"""Where a local build goes: staging next to the target, then one rename (spec 9)."""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from chronozarr.location import location
from chronozarr.objects import has_root
from cz.build.errors import BuildError
from cz.build.options import BuildOptions


def is_url(text: str) -> bool:
    """A target that is not a local path (``file://`` is local; :mod:`chronozarr.location`)."""
    return location(text).kind != "local"


def local_path(text: str) -> Path:
    """The absolute local path of a path or ``file://`` URL."""
    return Path(location(text).path or text).expanduser().resolve()


@dataclass
class Target:
    """A local build target: the final path, the staging folder and the spill folder."""

    final: Path
    staging: Path
    spill_root: Path
    replace: bool

    @classmethod
    def prepare(cls, final: Path, options: BuildOptions) -> Target:
        """Check and reserve the target (no store is written yet): refuses an existing store
        (unless ``overwrite``) or a non-empty folder; creates the staging folder to prove the
        place is writable."""
        replace = False
        if final.exists() or final.is_symlink():
            if not final.is_dir():
                raise BuildError(f"{final} exists and is not a folder; choose another --out")
            if any(final.iterdir()):
                if not has_root(final):
                    raise BuildError(
                        f"{final} is a folder that is not empty and holds no store; "
                        "choose another --out"
                    )
                if not options.overwrite:
                    raise BuildError(
                        f"{final} already holds a store; a rebuild goes to a new path (spec 9), "
                        "or pass --overwrite to replace it once the new store is complete"
                    )
                replace = True
        parent = final.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # permissions, read-only disk: a build error
            raise BuildError(
                f"cannot create the folder {parent} for {final}: {os_reason(exc)}"
            ) from None
        tag = uuid.uuid4().hex[:10]
        staging = parent / f".{final.name}.building-{tag}"
        try:
            staging.mkdir()
        except OSError as exc:  # permissions, read-only disk: a build error
            raise BuildError(f"cannot write next to {final} ({parent}): {os_reason(exc)}") from None
        work = Path(options.work_dir).expanduser().resolve() if options.work_dir else parent
        return cls(final, staging, work / f".{final.name}.composites-{tag}", replace)

    def commit(self) -> None:
        """Move the complete staging folder to the final path (an old store goes only after)."""
        if self.replace:
            trash = self.final.parent / f".{self.final.name}.replaced-{uuid.uuid4().hex[:10]}"
            os.rename(self.final, trash)
            try:
                os.rename(self.staging, self.final)
            except OSError:  # put the old store back, then fail
                os.rename(trash, self.final)
                raise
            shutil.rmtree(trash, ignore_errors=True)
        else:  # a missing path, or an empty folder (POSIX rename replaces an empty folder)
            os.rename(self.staging, self.final)

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def store_size(path: Path) -> tuple[int, int]:
    total = count = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += (Path(dirpath) / name).stat().st_size
            count += 1
    return total, count

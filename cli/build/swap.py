"""Replacing a store in place (``cz build --overwrite``) so that a kill at any instant leaves the
old store or the new one at the target, and the next run finishes the job (decision 0020, spec 9).

The swap, with the complete new store in the staging folder ``S = .NAME.building-TAG`` and the
old store at the target ``F``:

1. the journal ``.NAME.commit-TAG.json`` is written (atomically, fsync'ed): it names S and
   records the inode of S, i.e. of the *new* store;
2. Linux: one ``renameat2(S, F, RENAME_EXCHANGE)`` swaps both names atomically (the old store is
   now at S). Elsewhere (or on a filesystem that refuses it): ``rename(F, .NAME.replaced-TAG)``
   then ``rename(S, F)``; between those two renames F is missing for a moment, and the journal
   says how to finish;
3. the old store is removed, then the journal.

Recovery (:func:`recover`, run by the sweep of the next build/append/publish on that target,
only when the swapping run is dead) reads the journal: if F is the new store (its inode), the
swap happened and what is left of the old one is removed; if S still is the new store, the swap
is rolled forward (the user asked for the new store and it is complete); if neither (S gone and
F missing), the old store is put back from ``.NAME.replaced-TAG``. Then the journal goes.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import shutil
from pathlib import Path
from typing import Any

from chronozarr.io import fault_point

__all__ = ["exchange", "recover", "swap_in"]

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap the names ``a`` and ``b`` (Linux ``renameat2``); False when this system
    or filesystem cannot (the caller falls back to two renames)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):  # not glibc / not Linux: no renameat2
        return False
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):  # the filesystem cannot exchange
        return False
    raise OSError(err, os.strerror(err), str(a))


def _write_journal(path: Path, doc: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # some filesystems cannot fsync a folder: best effort
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _inode(path: Path) -> tuple[int, int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


def swap_in(staging: Path, final: Path, journal: Path, trash: Path) -> None:
    """Put the complete store ``staging`` at ``final`` in place of the store there (module doc)."""
    ident = _inode(staging)
    assert ident is not None
    doc = {
        "staging": staging.name,
        "final": final.name,
        "trash": trash.name,
        "new_store": list(ident),
    }
    fault_point("journal", journal.name)
    _write_journal(journal, doc)
    fault_point("rename", f"{staging.name} <-> {final.name}")
    if exchange(staging, final):
        old = staging  # the old store now sits at the staging name
    else:  # the fault point above stands before this first rename too
        os.rename(final, trash)
        fault_point("rename", f"{staging.name} -> {final.name}")
        try:
            os.rename(staging, final)
        except OSError:  # put the old store back, then fail
            os.rename(trash, final)
            journal.unlink(missing_ok=True)
            raise
        old = trash
    _fsync_dir(final.parent)
    fault_point("remove", old.name)
    shutil.rmtree(old, ignore_errors=True)
    fault_point("remove", journal.name)
    journal.unlink(missing_ok=True)


def recover(final: Path, journal: Path) -> str:
    """Finish or undo the interrupted swap that ``journal`` describes (its run is dead);
    returns one line saying what was done."""
    parent = final.parent
    # the folders are named from the journal's own name (its tag), never from its content: an
    # edited or garbled journal cannot make recovery rename or remove anything else
    tag = journal.name.removeprefix(f".{final.name}.commit-").removesuffix(".json")
    staging = parent / f".{final.name}.building-{tag}"
    trash = parent / f".{final.name}.replaced-{tag}"
    try:
        doc = json.loads(journal.read_text(encoding="utf-8"))
        new_store = tuple(int(v) for v in doc["new_store"])
        if len(tag) != 10 or doc.get("staging") != staging.name or len(new_store) != 2:
            raise ValueError("not this target's journal")
    except (OSError, ValueError, KeyError, TypeError):  # a journal cut short before its rename
        journal.unlink(missing_ok=True)
        return f"{final}: removed an unreadable swap journal {journal.name}; nothing was swapped"
    here = _inode(final)
    if here == new_store:
        message = f"{final}: an interrupted --overwrite had put the new store in place; old removed"
    elif _inode(staging) == new_store:  # the swap did not happen (or only its first rename)
        if here is None:
            os.rename(staging, final)
        elif not exchange(staging, final):
            os.rename(final, trash)
            os.rename(staging, final)
        message = f"{final}: finished an interrupted --overwrite (the new store is now in place)"
    elif here is None and trash.exists():
        os.rename(trash, final)
        message = f"{final}: an interrupted --overwrite lost its new store; the old one is back"
    else:
        message = f"{final}: an interrupted --overwrite left nothing to finish"
    _fsync_dir(parent)
    for leftover in (staging, trash):
        if leftover.exists() and _inode(leftover) != _inode(final):
            shutil.rmtree(leftover, ignore_errors=True)
    journal.unlink(missing_ok=True)
    return message

"""SIGTERM handled like Ctrl-C (decision 0020): ``timeout``, ``kill`` and batch systems stop
commands with SIGTERM, and Python's default for it is to die on the spot, leaving staging folders,
spills and ``.tmp`` files behind. :func:`install` makes SIGTERM raise :class:`Terminated` in the
main thread instead: a ``KeyboardInterrupt`` subclass, so every ``except BaseException`` /
``finally`` cleanup that Ctrl-C runs (a build's staging and spill, a convert's staging, a publish's
queued uploads) runs for SIGTERM too, and :func:`cz.conventions.run` ends the command with one line
and exit code 143 (128 + 15), as Ctrl-C ends with 130.

A second SIGTERM during that cleanup is ignored, so the cleanup is not cut short; SIGKILL still
ends the process at once (and :mod:`cz.build.leftovers` sweeps what that leaves).

After the commit (decision 0051). While a store's root is written (:func:`commit_section`, which
:func:`install` sets as the format library's commit guard, and which the toolkit's own commits,
a folder rename or swap, enter too) a SIGTERM or Ctrl-C is noted and waits. Once the commit is
done, the run has succeeded: a signal then (or one that waited) no longer interrupts; the command
finishes its little remaining work (removing its spill, releasing its locks, printing its
result) and exits with its own code, 0, after one line on stderr saying the signal came after
the commit. A scheduler that sent the signal then sees success and does not retry an append that
is already in the store. If the commit fails, a signal that waited is raised when it does.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = [
    "EXIT_SIGINT",
    "EXIT_SIGTERM",
    "Terminated",
    "after_commit",
    "commit_section",
    "committed",
    "install",
    "is_terminated",
    "received",
    "reopen",
]

EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (raised like Ctrl-C's ``KeyboardInterrupt``)."""


_received: list[int] = []
#: [depth of commit sections entered, 1 once a commit is done]
_commit = [0, 0]


def _holding() -> bool:
    """Signals wait: inside a commit, or after one (the run has succeeded)."""
    return _commit[0] > 0 or _commit[1] > 0


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if _holding():
        return
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup below must not be cut short
    raise Terminated(f"terminated by signal {signum} (SIGTERM)")


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    if _holding():
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def commit_section() -> Iterator[None]:
    """Signals wait while a store is committed; a clean exit marks the commit done (after
    which they never interrupt); a failed commit raises a signal that waited."""
    _commit[0] += 1
    ok = False
    try:
        yield
        ok = True
    finally:
        _commit[0] -= 1
        if ok:
            _commit[1] = 1
    if not _holding() and _received:
        if _received[0] == signal.SIGTERM:
            raise Terminated(f"terminated by signal {_received[0]} (SIGTERM)")
        raise KeyboardInterrupt


def committed() -> None:
    """The run's commit is done (a toolkit commit outside :func:`commit_section`)."""
    _commit[1] = 1


def reopen() -> None:
    """The commit just done was not the run's last (a build's local copy, before its publish):
    signals interrupt again, and one that waited is raised now."""
    _commit[1] = 0
    if _commit[0] == 0 and _received:
        if _received[0] == signal.SIGTERM:
            raise Terminated(f"terminated by signal {_received[0]} (SIGTERM)")
        raise KeyboardInterrupt


def after_commit() -> bool:
    """True when the run committed its store: a signal received then ends nothing."""
    return _commit[1] > 0


def install() -> None:
    """Turn SIGTERM into :class:`Terminated` and note Ctrl-C (main thread only; a no-op
    elsewhere). typer turns a ``KeyboardInterrupt`` into a silent exit 130, so the signal
    that stopped a command is recorded here for :func:`received`."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)
    from chronozarr.io import set_commit_guard

    set_commit_guard(commit_section)


def received() -> int | None:
    """The first SIGTERM/SIGINT this process received since :func:`install`, if any."""
    return _received[0] if _received else None


def is_terminated(exc: BaseException | None) -> bool:
    """True when ``exc`` is, or was caused by, a :class:`Terminated` (click wraps Ctrl-C and
    SIGTERM into ``Abort``)."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, Terminated):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False

"""SIGTERM handled like Ctrl-C (decision 0020): ``timeout``, ``kill`` and batch systems stop
commands with SIGTERM, and Python's default for it is to die on the spot, leaving staging folders,
spills and ``.tmp`` files behind. :func:`install` makes SIGTERM raise :class:`Terminated` in the
main thread instead: a ``KeyboardInterrupt`` subclass, so every ``except BaseException`` /
``finally`` cleanup that Ctrl-C runs (a build's staging and spill, a convert's staging, a publish's
queued uploads) runs for SIGTERM too, and :func:`cz.conventions.run` ends the command with one line
and exit code 143 (128 + 15), as Ctrl-C ends with 130.

A second SIGTERM during that cleanup is ignored, so the cleanup is not cut short; SIGKILL still
ends the process at once (and :mod:`cz.build.leftovers` sweeps what that leaves).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType

__all__ = ["EXIT_SIGINT", "EXIT_SIGTERM", "Terminated", "install", "is_terminated", "received"]

EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class Terminated(KeyboardInterrupt):
    """The process received SIGTERM (raised like Ctrl-C's ``KeyboardInterrupt``)."""


_received: list[int] = []


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # the cleanup below must not be cut short
    _received.append(signum)
    raise Terminated(f"terminated by signal {signum} (SIGTERM)")


def _on_sigint(signum: int, frame: FrameType | None) -> None:
    _received.append(signum)
    raise KeyboardInterrupt


def install() -> None:
    """Turn SIGTERM into :class:`Terminated` and note Ctrl-C (main thread only; a no-op
    elsewhere). typer turns a ``KeyboardInterrupt`` into a silent exit 130, so the signal
    that stopped a command is recorded here for :func:`received`."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _on_sigterm)
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)


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

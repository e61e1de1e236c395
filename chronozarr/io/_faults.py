"""A test-only kill hook at every durable write step (the kill-point test of decision 0020).

Every place that makes a write durable (the rename of an object's temporary file into place, a
rename of a store folder, a publish upload's rename, a removal) calls :func:`fault_point` just
before it; a kill there leaves the temporary file behind, as a real crash would. With ``CZ_FAULT_AT=N`` in the environment the
process SIGKILLs itself at the N-th call (counted from 1, across threads): no ``finally``, no
``atexit``, exactly what a power cut or the OOM killer does. ``CZ_FAULT_TRACE=FILE`` appends one
line per call (``N kind what``), so a test learns how many kill points a run has and which step
each one is. ``CZ_FAULT_DELAY=SECONDS`` sleeps that long at every call: the concurrency tests
widen each write's window with it, so two writers' steps interleave by construction (decision
0051). Without these variables the hook is a few dictionary lookups per call.

Spec 9 (write order) is what the test then checks: after a kill at any point, no root describes
missing objects and a re-run finishes with the bytes of an uninterrupted run.
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["FAULT_AT_ENV", "FAULT_DELAY_ENV", "FAULT_TRACE_ENV", "fault_point", "not_counted"]

FAULT_AT_ENV = "CZ_FAULT_AT"
FAULT_TRACE_ENV = "CZ_FAULT_TRACE"
FAULT_DELAY_ENV = "CZ_FAULT_DELAY"

_lock = threading.Lock()
_count = 0


_thread = threading.local()


def not_counted() -> None:
    """The calling thread's writes are not kill points (the lease's renewal thread: its timing
    would make the numbering of a run's steps differ from one run to the next)."""
    _thread.off = True


def fault_point(kind: str, what: object = "") -> None:
    """Count a durable write step; SIGKILL this process when it is the ``CZ_FAULT_AT``-th."""
    if getattr(_thread, "off", False):
        return
    at = os.environ.get(FAULT_AT_ENV)
    trace = os.environ.get(FAULT_TRACE_ENV)
    delay = os.environ.get(FAULT_DELAY_ENV)
    if delay:
        time.sleep(float(delay))
    if not at and not trace:
        return
    global _count
    with _lock:
        _count += 1
        n = _count
        if trace:
            with open(trace, "a", encoding="utf-8") as fh:
                fh.write(f"{n} {kind} {what}\n")
        if at and n == int(at):
            os.kill(os.getpid(), signal.SIGKILL)

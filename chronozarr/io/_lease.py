"""The writer's lease on a store (decision 0051): one writer at a time, across machines.

Why a lease, and not the root's compare-and-swap alone: an append (and a publish over a store)
rewrites objects in place before its root (``time/c/0``, the volatility, the array zarr.json
files, the trailing shard; spec 14). Two appends racing on the root alone would both rewrite
those, and the loser of the root CAS would leave its ``time/c/0`` under the winner's root. So
every writer first creates ``.chronozarr-lease.json`` at the store's root with a conditional
create (:func:`chronozarr.io._cas.put_if`): the second writer fails there, before its first
write, with one line naming the holder. The root CAS stays as the last guard (a lease lost to
expiry, a writer that takes none).

The lease says who holds it (pid, host, what, start) and until when (``expires``, seconds since
the epoch). The holder renews it every third of its time-to-live (``CZ_LEASE_TTL``, default
60 s) with a conditional update, from a daemon thread. Another writer takes it over only when
its holder is provably gone: expired, or on the same host with a pid that no longer exists (a
SIGKILLed run re-run at once takes over). A holder whose renewal fails has lost it; the root
commit then refuses (:meth:`Lease.check`).

The lease is a work file (:func:`chronozarr.io.is_work_file`): never listed as an object,
never published. After acquiring it, the writer creates it once more: a host that answers
that second create with success ignores ``If-None-Match`` and cannot serialise writers
(refused, or warned about with ``CZ_CONDITIONAL_WRITES=warn``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from chronozarr.errors import ConcurrentWriteError, ConditionalWriteError
from chronozarr.io._cas import (
    ABSENT,
    CONDITIONAL_WRITES_ENV,
    Conflict,
    Version,
    conditional_policy,
    put_if,
    read_versioned,
)
from chronozarr.io._faults import not_counted
from chronozarr.io._objects import LEASE_KEY
from chronozarr.io._storage import Store

__all__ = ["LEASE_KEY", "LEASE_TTL_ENV", "Lease", "hold_lease", "holder_gone"]

log = logging.getLogger("chronozarr.io")

LEASE_TTL_ENV = "CZ_LEASE_TTL"
DEFAULT_TTL = 60.0


def _ttl() -> float:
    try:
        return max(1.0, float(os.environ.get(LEASE_TTL_ENV, "") or DEFAULT_TTL))
    except ValueError:  # a malformed override: the default
        return DEFAULT_TTL


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # exists (another user's), or cannot tell: alive
        return True
    return True


def holder_gone(doc: dict[str, Any], now: float) -> str | None:
    """Why the lease in ``doc`` may be taken over (expired, dead same-host pid), or None."""
    try:
        expires = float(doc.get("expires", 0))
    except (TypeError, ValueError):
        return "its lease is unreadable"
    if expires < now:
        return f"its lease expired at {_stamp(expires)}"
    pid = doc.get("pid")
    if doc.get("host") == socket.gethostname() and isinstance(pid, int) and not _pid_alive(pid):
        return f"pid {pid} on this host is no longer running"
    return None


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def _holder(doc: dict[str, Any]) -> str:
    what = doc.get("what") or "a write"
    return (
        f"{what} by pid {doc.get('pid')} on {doc.get('host')}, started {doc.get('started')},"
        f" lease until {_stamp(float(doc.get('expires', 0) or 0))}"
    )


@dataclass
class Lease:
    """One writer's lease on ``target`` (see the module docstring)."""

    target: Store
    what: str
    ttl: float = field(default_factory=_ttl)
    owner: str = field(default_factory=lambda: uuid.uuid4().hex)
    version: Version | None = None
    lost: str | None = None
    _started: str = ""
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _doc(self) -> bytes:
        now = time.time()
        return json.dumps(
            {
                "owner": self.owner,
                "what": self.what,
                "pid": os.getpid(),
                "host": socket.gethostname(),
                "started": self._started or _stamp(now),
                "expires": now + self.ttl,
            }
        ).encode()

    def acquire(self) -> Lease:
        """Take the lease, or raise :class:`ConcurrentWriteError` naming its live holder."""
        self._started = _stamp(time.time())
        try:
            self.version = put_if(self.target, LEASE_KEY, self._doc(), ABSENT)
        except Conflict:
            self._take_over()
        self._probe()
        self._thread = threading.Thread(target=self._renew_loop, daemon=True, name="cz-lease")
        self._thread.start()
        return self

    def _take_over(self) -> None:
        raw, found = read_versioned(self.target, LEASE_KEY)
        if raw is None:  # released meanwhile: create it
            try:
                self.version = put_if(self.target, LEASE_KEY, self._doc(), ABSENT)
                return
            except Conflict:
                raw, found = read_versioned(self.target, LEASE_KEY)
        try:
            doc = json.loads(raw or b"{}")
            doc = doc if isinstance(doc, dict) else {}
        except ValueError:  # a torn or foreign lease: treat as expired
            doc = {}
        why = holder_gone(doc, time.time()) if doc else "its lease is unreadable"
        if why is None:
            raise ConcurrentWriteError(
                f"{self.target.url}: another writer holds this store ({_holder(doc)}); nothing"
                " was written. Run the command again when it has finished"
            )
        try:
            self.version = put_if(self.target, LEASE_KEY, self._doc(), found)
        except Conflict:
            raise ConcurrentWriteError(
                f"{self.target.url}: another writer took this store's lease at the same moment;"
                " nothing was written. Run the command again when it has finished"
            ) from None
        log.warning("%s: took over the lease of a writer that is gone (%s)", self.target.url, why)

    def _probe(self) -> None:
        """A second create must fail: a host that lets it through ignores If-None-Match."""
        try:
            self.version = put_if(self.target, LEASE_KEY, self._doc(), ABSENT)
        except Conflict:
            return  # conditional writes honoured
        except ConditionalWriteError:
            self.release()
            raise
        if conditional_policy(self.target) != "warn":
            self.release()
            raise ConditionalWriteError(
                f"{self.target.url}: the host ignores conditional writes (If-None-Match), so a"
                " concurrent writer could not be detected; refused. Set"
                f" {CONDITIONAL_WRITES_ENV}=warn to write without that protection"
                " (docs/hosting.md)"
            )
        log.warning(
            "%s: the host ignores conditional writes; writing without protection against a"
            " concurrent writer (%s=warn)",
            self.target.url, CONDITIONAL_WRITES_ENV,
        )  # fmt: skip

    def _renew_loop(self) -> None:
        not_counted()  # renewals come at times of their own: not kill points of the run
        while not self._stop.wait(self.ttl / 3):
            with self._lock:
                if self._stop.is_set() or self.lost or self.version is None:
                    return
                try:
                    self.version = put_if(self.target, LEASE_KEY, self._doc(), self.version)
                except Conflict:
                    self.lost = "another writer took over its lease"
                    return
                except Exception as exc:  # a network error: try again next round
                    log.warning("%s: renewing the lease failed: %s", self.target.url, exc)

    def check(self) -> None:
        """Raise :class:`ConcurrentWriteError` when the lease was lost (before the commit)."""
        if self.lost:
            raise ConcurrentWriteError(
                f"{self.target.url}: this run lost its lease ({self.lost}); its root was not"
                " written. Run the command again"
            )

    def release(self) -> None:
        """Stop renewing and remove the lease, if it is still ours."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5)
        with self._lock:
            if self.version is None or self.lost:
                return
            with contextlib.suppress(Exception):  # the next writer takes over an expired one
                raw, _found = read_versioned(self.target, LEASE_KEY)
                if raw is not None and json.loads(raw).get("owner") == self.owner:
                    self.target.delete(LEASE_KEY)
            self.version = None

    def __enter__(self) -> Lease:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


@contextlib.contextmanager
def hold_lease(target: Store, what: str) -> Any:
    """``with hold_lease(target, "append"):`` the lease for the length of a write."""
    lease = Lease(target, what).acquire()
    try:
        yield lease
    finally:
        lease.release()

"""Compare-and-swap writes and the writer's lease (decision 0051), on a folder and on obstore's
in-memory store (the same conditional-put code path as S3; the S3 server itself is exercised by
tests/remote/test_concurrent_writers.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronozarr.errors import ConcurrentWriteError
from chronozarr.io import (
    ABSENT,
    LEASE_KEY,
    Lease,
    LocalStore,
    ObstoreTarget,
    Store,
    commit_root,
    read_versioned,
)


def _root(n: int) -> bytes:
    times = [f"2024-{m:02d}-01T00:00:00Z" for m in range(1, n + 1)]
    return json.dumps({"attributes": {"chronozarr": {"times": times}}}).encode()


@pytest.fixture(params=["folder", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Store:
    if request.param == "folder":
        return LocalStore(tmp_path / "s.zarr")
    from obstore.store import MemoryStore

    return ObstoreTarget(MemoryStore(), "memory://s.zarr")


def test_a_new_root_is_created_once(store: Store) -> None:
    commit_root(store, _root(3), ABSENT)
    with pytest.raises(ConcurrentWriteError) as err:
        commit_root(store, _root(4), ABSENT)
    assert store.url in str(err.value)
    assert "it now has 3 timesteps, the last 2024-03-01T00:00:00Z" in str(err.value)
    assert store.get("zarr.json") == _root(3)


def test_a_root_is_replaced_only_over_the_version_read(store: Store) -> None:
    commit_root(store, _root(3), ABSENT)
    _raw, seen = read_versioned(store, "zarr.json")
    _raw, also_seen = read_versioned(store, "zarr.json")
    commit_root(store, _root(4), seen)  # A grows the root it read
    with pytest.raises(ConcurrentWriteError, match="it now has 4 timesteps"):
        commit_root(store, _root(5), also_seen)  # B read the same root: refused
    assert store.get("zarr.json") == _root(4)


def test_a_retry_of_a_commit_that_landed_counts_as_done(store: Store) -> None:
    commit_root(store, _root(3), ABSENT)
    _raw, seen = read_versioned(store, "zarr.json")
    commit_root(store, _root(4), seen)
    commit_root(store, _root(4), seen)  # the same bytes are there: our own earlier attempt
    assert store.get("zarr.json") == _root(4)


def test_a_second_writer_is_refused_naming_the_holder(store: Store) -> None:
    first = Lease(store, "append of 1 timestep(s)").acquire()
    try:
        with pytest.raises(ConcurrentWriteError) as err:
            Lease(store, "encode").acquire()
        text = str(err.value)
        assert store.url in text and "append of 1 timestep(s)" in text
        assert f"pid {os.getpid()}" in text and "nothing was written" in text
    finally:
        first.release()
    assert store.get(LEASE_KEY) is None
    Lease(store, "again").acquire().release()  # free once released


def _foreign(store: Store, pid: int, host: str, expires: float) -> None:
    doc = {"owner": "x", "what": "cz publish", "pid": pid, "host": host, "expires": expires}
    store.put(LEASE_KEY, json.dumps(doc).encode())


def test_a_dead_holder_on_this_host_is_taken_over(store: Store) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], text=True,
                          capture_output=True).stdout.strip()  # fmt: skip
    _foreign(store, int(dead), socket.gethostname(), time.time() + 600)
    lease = Lease(store, "re-run").acquire()
    assert json.loads(store.get(LEASE_KEY) or b"{}")["owner"] == lease.owner
    lease.release()


def test_a_live_holder_elsewhere_waits_for_its_expiry(store: Store) -> None:
    _foreign(store, 1, "another-host", time.time() + 600)
    with pytest.raises(ConcurrentWriteError, match="on another-host"):
        Lease(store, "second").acquire()
    _foreign(store, 1, "another-host", time.time() - 1)  # expired
    Lease(store, "second").acquire().release()


def test_a_lost_lease_refuses_the_commit(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CZ_LEASE_TTL", "1")
    lease = Lease(store, "slow").acquire()
    try:
        _foreign(store, 1, "another-host", time.time() + 600)  # taken over behind its back
        deadline = time.monotonic() + 10
        while lease.lost is None and time.monotonic() < deadline:
            time.sleep(0.05)
        with pytest.raises(ConcurrentWriteError, match="lost its lease"):
            lease.check()
    finally:
        lease.release()
    assert json.loads(store.get(LEASE_KEY) or b"{}")["host"] == "another-host"  # not removed

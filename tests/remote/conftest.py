"""Servers on 127.0.0.1 for the remote tests, and the small stores they publish and read.

- ``moto``: moto's S3 server (``ThreadedMotoServer``) on a free port, its WSGI app wrapped in a
  request log that numbers the start and the end of every request on the server side, so a test
  can check the order in which objects were written (every other PUT ended before the root PUT
  started) without trusting the client.
- ``stores``: sharded and unsharded star-delta stores with mask and coverage (chunk_size 16,
  3 x 3 cells at level 0, three levels), each also grown by an append of 4 timesteps, plus two
  re-encodes (other data; other anchor interval) for the refusal tests.
"""

from __future__ import annotations

import gc
import itertools
import logging
import shutil
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from tests.conftest import monthly, synthetic_series

T0, T_ADD = 5, 4
H, W, CS = 30, 24, 16
SHARD_TIME = 4


# --- moto with a server-side request log ----------------------------------------------------------


@dataclass
class ServerRequest:
    method: str
    path: str  # /bucket/key
    query: str
    start: int  # position in the server's event sequence when the request arrived
    end: int = -1  # ... and when its response was complete (the object stored)
    status: int = 0


@dataclass
class RequestLog:
    """WSGI middleware: every request with server-side start and end sequence numbers."""

    app: Any
    entries: list[ServerRequest] = field(default_factory=list)
    _seq: Iterator[int] = field(default_factory=itertools.count)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    #: behave as a host without conditional writes: drop If-None-Match / If-Match (the
    #: concurrency tests' "host that ignores them", decision 0051)
    ignore_conditions: bool = False

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        if self.ignore_conditions:
            environ.pop("HTTP_IF_NONE_MATCH", None)
            environ.pop("HTTP_IF_MATCH", None)
        entry = ServerRequest(
            environ["REQUEST_METHOD"],
            environ.get("PATH_INFO", ""),
            environ.get("QUERY_STRING", ""),
            next(self._seq),
        )

        def recording_start_response(status: str, headers: Any, exc_info: Any = None) -> Any:
            entry.status = int(status.split()[0])
            return start_response(status, headers, exc_info)

        try:
            result = self.app(environ, recording_start_response)
            try:
                body = b"".join(result)
            finally:
                close = getattr(result, "close", None)
                if close is not None:
                    close()
        finally:
            entry.end = next(self._seq)
            with self._lock:
                self.entries.append(entry)
        return [body]

    def snapshot(self) -> list[ServerRequest]:
        with self._lock:
            return sorted(self.entries, key=lambda e: e.start)

    def puts(self, bucket: str) -> list[ServerRequest]:
        """Object PUTs into ``bucket`` (not the bucket creation, not the writer's lease, which
        is no object of the store: decision 0051), in arrival order."""
        prefix = f"/{bucket}/"
        return [
            e
            for e in self.snapshot()
            if e.method == "PUT"
            and e.path.startswith(prefix)
            and not e.path.endswith("/.chronozarr-lease.json")
        ]


@dataclass
class Moto:
    endpoint: str
    log: RequestLog


@pytest.fixture(scope="session")
def moto() -> Iterator[Moto]:
    """moto's S3 server on 127.0.0.1 (a free port), stopped at the end of the session."""
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        wsgi = server._server  # the werkzeug server; wrap its app before the first request
        assert wsgi is not None and hasattr(wsgi, "app"), "moto's ThreadedMotoServer changed"
        log = RequestLog(wsgi.app)
        wsgi.app = log
        host, port = server.get_host_and_port()
        yield Moto(f"http://{host}:{port}", log)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dask_procs(tmp_path_factory: pytest.TempPathFactory, moto: Moto) -> Iterator[Any]:
    """A real dask cluster for the session: a ``dask scheduler`` and two single-thread
    ``dask worker`` processes on 127.0.0.1 whose environment points at the moto server (what a
    user's workers get for their bucket). See tests/dask_procs.py."""
    pytest.importorskip("distributed")
    from tests.dask_procs import dask_cluster

    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": moto.endpoint,
    }
    with dask_cluster(tmp_path_factory.mktemp("dask"), 2, env) as procs:
        yield procs


@pytest.fixture(scope="module")
def s3env(moto: Moto) -> Iterator[Moto]:
    """AWS environment pointing at the moto server (what a user sets for a real bucket), for
    the duration of one test module."""
    with pytest.MonkeyPatch.context() as mp:
        for name in (
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_ENDPOINT_URL_S3",
            "AWS_SKIP_SIGNATURE",
        ):
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setenv("AWS_REGION", "us-east-1")
        mp.setenv("AWS_ENDPOINT_URL", moto.endpoint)
        yield moto


@pytest.fixture(scope="module")
def s3(s3env: Moto) -> Iterator[Any]:
    """A boto3 client of the moto server for one module, closed at its end: an unclosed client's
    pooled sockets are otherwise closed by whichever garbage collection finds them, and the
    ResourceWarning (an error under -W error) lands on an unrelated later test."""
    import boto3

    client = boto3.client(
        "s3",
        endpoint_url=s3env.endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    try:
        yield client
    finally:
        client.close()


def new_bucket(s3: Any) -> str:
    """A fresh bucket (S3 bucket names need at least 3 characters)."""
    name = f"cz-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


@pytest.fixture
def bucket(s3: Any) -> str:
    """A fresh bucket per test."""
    return new_bucket(s3)


def list_keys(s3: Any, bucket: str, prefix: str = "") -> dict[str, dict[str, Any]]:
    """key (relative to prefix) -> listing entry, every page."""
    out: dict[str, dict[str, Any]] = {}
    pages = s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
    for page in pages:
        for obj in page.get("Contents", []):
            out[obj["Key"][len(prefix) :]] = obj
    return out


# --- stores ---------------------------------------------------------------------------------------


def _inputs(seed: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = synthetic_series(n, 2, H, W, seed=seed)
    rng = np.random.default_rng(seed + 100)
    mask = (rng.random((n, H, W)) > 0.2).astype(np.uint8)
    cov = rng.integers(0, 9, size=(n, H, W)).astype(np.uint8)
    return data, mask, cov


def _encode(path: Path, seed: int, *, shard: bool, anchor_interval: int = 2) -> None:
    data, mask, cov = _inputs(seed, T0 + T_ADD)
    chronozarr.encode(
        data[:T0],
        path,
        times=monthly(T0),
        bands=[
            {"name": "B04", "common_name": "red", "scale": 1e-4, "offset": 0.0},
            {"name": "B08", "common_name": "nir", "scale": 1e-4, "offset": 0.0},
        ],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        mask=mask[:T0],
        coverage=cov[:T0],
        chunk_size=CS,
        encoding="star-delta",
        anchor_interval=anchor_interval,
        **({"shard_time": SHARD_TIME} if shard else {}),
    )


def _append(src: Path, dst: Path, seed: int) -> None:
    shutil.copytree(src, dst)
    data, mask, cov = _inputs(seed, T0 + T_ADD)
    chronozarr.append(
        dst,
        data[T0:],
        times=monthly(T0 + T_ADD)[T0:],
        mask=mask[T0:],
        coverage=cov[T0:],
    )


@pytest.fixture(scope="session")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Read-only stores (tests publish them, never write into them).

    ``unsharded``/``sharded`` (5 timesteps), ``unsharded+4``/``sharded+4`` (the same grown by an
    append of 4), ``unsharded-other-data`` (a re-encode of other values with the same options),
    ``unsharded-interval3`` (a re-encode with another anchor interval)."""
    base = tmp_path_factory.mktemp("remote-stores")
    out: dict[str, Path] = {}
    for name, shard in (("unsharded", False), ("sharded", True)):
        out[name] = base / name
        _encode(out[name], seed=11, shard=shard)
        out[f"{name}+4"] = base / f"{name}+4"
        _append(out[name], out[f"{name}+4"], seed=11)
    out["unsharded-other-data"] = base / "unsharded-other-data"
    _encode(out["unsharded-other-data"], seed=12, shard=False)
    out["unsharded-interval3"] = base / "unsharded-interval3"
    _encode(out["unsharded-interval3"], seed=11, shard=False, anchor_interval=3)
    return out


def files(root: Path) -> dict[str, bytes]:
    """key -> bytes of every file of a local store."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def assert_reads_equal(
    remote: chronozarr.Reader, local: chronozarr.Reader, *, volatility: bool = True
) -> None:
    """Every timestep, level, mask and coverage plane, and (unless told not to) the volatility,
    equal."""
    assert list(remote.attrs.times) == list(local.attrs.times)
    assert len(remote.levels) == len(local.levels)
    for k in range(len(local.levels)):
        for t in range(local.n_time):
            np.testing.assert_array_equal(remote.read(t, k), local.read(t, k), f"t={t} level {k}")
            np.testing.assert_array_equal(remote.read_mask(t, k), local.read_mask(t, k))
            np.testing.assert_array_equal(remote.read_coverage(t, k), local.read_coverage(t, k))
    if volatility:
        np.testing.assert_array_equal(remote.volatility(), local.volatility())


@pytest.fixture(scope="session")
def served_root(stores: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory a web server serves: ``unsharded`` and ``sharded`` published into it with
    ``cz publish`` (directory target), and ``broken``, the sharded store missing one data shard
    (for the validator over HTTP)."""
    from cz.publish import publish

    root = tmp_path_factory.mktemp("www")
    for name in ("unsharded", "sharded"):
        publish(stores[name], root / name, workers=4)
    shutil.copytree(root / "sharded", root / "broken")
    (root / "broken" / "0" / "data" / "c" / "0" / "0" / "0" / "1").unlink()
    return root


@pytest.fixture(autouse=True)
def collect_garbage_in_the_test_that_made_it() -> Iterator[None]:
    """A full garbage collection at the end of every test here, under that test's warning
    filters: an object left unclosed in a reference cycle (a socket) is then reported by the
    test that dropped it, not by whichever later test a collection happens to run in.

    The 2026-12-01 CI rehearsals failed unrelated test_publish_s3 tests on such a socket: a
    dask client's reconnect, left in flight at close, after the scheduler dropped the client's
    stream (fixed in chronozarr.write._runner; test_cluster_pipeline checks the stream is kept).
    """
    yield
    gc.collect()

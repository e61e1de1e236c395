"""``chronozarr.encode(..., scheduler=client)`` on a real dask cluster (a scheduler and two
worker processes on 127.0.0.1) writing to moto's S3 server (decision 0017): the workers write every
chunk object, the client only the metadata, and the objects are the pinned bytes of the local
writer (tests/chronozarr/bytes_pinned.json)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.io import LocalStore, ObjectStore
from tests.chronozarr import test_bytes_pinned as pinned
from tests.dask_procs import DaskProcs, dask_cluster
from tests.remote.conftest import Moto, list_keys, new_bucket

distributed = pytest.importorskip("distributed")

#: what the client may write: metadata (spec 9) and the work prefix; never a chunk of a level
CLIENT_KEY = re.compile(
    r"(.*zarr\.json|(\d+/)?(time|band|y|x)/c/0|volatility/c/0/0|provenance_items/c/\d+|\.cz-build/.*)"
)
ENCODE_CASES = [n for n in sorted(pinned.CASES) if "append" not in n]


@pytest.fixture(scope="module")
def client(dask_procs: DaskProcs) -> Iterator[Any]:
    with distributed.Client(dask_procs.address, timeout="20s", set_as_default=False) as c:
        yield c


def download(s3: Any, bucket: str, prefix: str, into: Path) -> Path:
    for key in list_keys(s3, bucket, f"{prefix}/"):
        body = s3.get_object(Bucket=bucket, Key=f"{prefix}/{key}")["Body"].read()
        (into / key).parent.mkdir(parents=True, exist_ok=True)
        (into / key).write_bytes(body)
    return into


@pytest.mark.parametrize("name", ENCODE_CASES)
def test_cluster_encode_to_s3_writes_the_pinned_bytes(
    name: str, tmp_path: Path, s3: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = new_bucket(s3)
    url = f"s3://{bucket}/{name}.zarr"
    client_store = ObjectStore(url)  # the client's own handle: its stats count the client's PUTs
    encode = chronozarr.encode

    def on_cluster(data: Any, _path: Path, **kw: Any) -> Any:
        return encode(data, client_store, scheduler=client, **kw)

    monkeypatch.setattr(chronozarr, "encode", on_cluster)
    pinned.CASES[name](tmp_path / "unused.zarr")
    local = download(s3, bucket, f"{name}.zarr", tmp_path / "got")
    want = json.loads(pinned.PINNED.read_text())[name]
    assert pinned.digests(local) == want
    client_puts = [key for kind, key in client_store.stats.keys if kind == "put"]
    assert client_puts and all(CLIENT_KEY.fullmatch(k) for k in client_puts), client_puts
    chunk_keys = [k for k in want if not CLIENT_KEY.fullmatch(k)]
    assert chunk_keys and not set(chunk_keys) & set(client_puts)
    assert chronozarr.validate(url).ok


def test_cluster_encode_of_a_dask_array_to_a_local_folder(tmp_path: Path, client: Any) -> None:
    """A dask-backed input: each task carries its cell's part of the graph; same bytes as a
    local encode of the numpy array."""
    import dask.array as da

    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(9, 2, 40, 36, "uint16", seed=4)
    kw: dict[str, Any] = dict(
        times=monthly(9), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=16, encoding="auto",
    )  # fmt: skip
    chronozarr.encode(data, tmp_path / "local.zarr", workers=1, **kw)
    lazy = da.from_array(data, chunks=(3, 2, 16, 16))
    summary = chronozarr.encode(lazy, tmp_path / "cluster.zarr", scheduler=client, **kw)
    assert summary.store == str(tmp_path / "cluster.zarr")
    assert pinned.digests(tmp_path / "local.zarr") == pinned.digests(tmp_path / "cluster.zarr")
    reader = chronozarr.open_store(tmp_path / "cluster.zarr")
    assert np.array_equal(reader.read(4), data[4])


class SlowSource:
    """A cell source (chronozarr.write._cell_tasks) that produces constant planes slowly on the worker."""

    shape = (4, 1, 32, 32)
    dtype = np.dtype("uint8")
    ndim = 4
    has_mask = False
    has_coverage = False

    def open_cell(self, row: int, col: int, ys: slice, xs: slice, times: Any) -> Any:
        import time

        def planes(t: int) -> tuple[np.ndarray, None, None]:
            time.sleep(0.3)
            h, w = ys.stop - ys.start, xs.stop - xs.start
            return np.full((1, h, w), 10 * row + col + t, np.uint8), None, None

        return planes


def test_every_worker_lost_mid_encode_is_a_cluster_error_and_no_root(
    tmp_path: Path, s3env: Moto
) -> None:
    """With every worker gone, the wait is bounded by ``worker_timeout``: a ClusterError that
    says so, and the target holds no root (spec 9); the partial stays for a resume."""
    with (
        dask_cluster(tmp_path / "dask", 1) as procs,
        distributed.Client(procs.address, timeout="20s", set_as_default=False) as c,
    ):
        out = tmp_path / "lost.zarr"

        def kill_all(_result: Any) -> None:
            for w in procs.workers:
                procs.kill(w)

        started = None
        with pytest.raises(chronozarr.errors.ClusterError, match="every dask worker is gone"):
            import time

            started = time.monotonic()
            chronozarr.encode(
                SlowSource(), out, times=["2024-01-01", "2024-02-01", "2024-03-01", "2024-04-01"],
                bands=["v"], crs="EPSG:32631", transform=[10.0, 0, 0, 0, -10.0, 0],
                chunk_size=8, encoding="none", scheduler=c, worker_timeout=3.0,
                resume_key="lost", on_task=kill_all,
            )  # fmt: skip
        assert started is not None and time.monotonic() - started < 60
    assert not (out / "zarr.json").exists()
    assert (out / ".cz-build" / "lost" / "started.json").exists()


class Elsewhere(LocalStore):
    """A folder that is another folder on the workers: a local path on a disk they do not
    share with the client (pickled, it points at ``<root>.elsewhere``)."""

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root.with_name(self.root.name + ".elsewhere")}


def test_a_target_the_workers_do_not_share_is_refused_before_any_metadata(
    tmp_path: Path, client: Any
) -> None:
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(3, 1, 16, 16, "uint8", seed=1)
    out = tmp_path / "mine.zarr"
    with pytest.raises(chronozarr.errors.ClusterError, match="filesystem every worker shares"):
        chronozarr.encode(
            data, Elsewhere(out), times=monthly(3), bands=["v"], crs="EPSG:32631",
            transform=[10.0, 0, 0, 0, -10.0, 0], chunk_size=8, encoding="none",
            scheduler=client,
        )  # fmt: skip
    assert not (out / "zarr.json").exists()  # the client wrote no metadata
    # the workers' copy (a worker handing the context on to another pickles it again)
    assert any((p / "0" / "data").is_dir() for p in tmp_path.glob("mine.zarr.elsewhere*"))


def test_encode_without_a_cluster_writes_straight_to_s3(
    tmp_path: Path, s3: Any, s3env: Moto
) -> None:
    """The object-store target alone (local threads): the same objects as a local folder."""
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(5, 2, 20, 18, "uint16", seed=5)
    kw: dict[str, Any] = dict(
        times=monthly(5), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=8, encoding="star-delta",
        anchor_interval=2, workers=2,
    )  # fmt: skip
    chronozarr.encode(data, tmp_path / "local.zarr", **kw)
    bucket = new_bucket(s3)
    chronozarr.encode(data, f"s3://{bucket}/direct.zarr", **kw)
    got = download(s3, bucket, "direct.zarr", tmp_path / "got")
    assert pinned.digests(got) == pinned.digests(tmp_path / "local.zarr")
    with pytest.raises(chronozarr.EncodeError, match="already holds a Zarr store"):
        chronozarr.encode(data, f"s3://{bucket}/direct.zarr", **kw)
    logged = [e for e in s3env.log.puts(bucket) if "/direct.zarr/" in e.path]
    [root] = [e for e in logged if e.path.endswith("/direct.zarr/zarr.json")]
    assert all(e.end < root.start for e in logged if e is not root)  # spec 9: the root last


class SeriesSource:
    """A cell source over a numpy series (what ``cz build --scheduler`` hands ``encode``: the
    planes are produced on the worker, so the auto sample runs there too)."""

    has_mask = False
    has_coverage = False
    ndim = 4

    def __init__(self, data: np.ndarray) -> None:
        self.data = data
        self.shape = data.shape
        self.dtype = data.dtype

    def open_cell(self, row: int, col: int, ys: slice, xs: slice, times: Any) -> Any:
        def planes(t: int) -> tuple[np.ndarray, None, None]:
            return np.ascontiguousarray(self.data[t, :, ys, xs]), None, None

        return planes


def test_the_auto_sample_of_a_cell_source_runs_one_task_per_sampled_cell(
    tmp_path: Path, client: Any
) -> None:
    """Decision 0021: the sample is spread over the workers (one task per sampled cell, not one task
    for all three), and the summed byte totals give the local encode's ratio and bytes."""
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(8, 2, 48, 40, "uint16", seed=11)
    kw: dict[str, Any] = dict(
        times=monthly(8), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=16, encoding="auto",
    )  # fmt: skip
    chronozarr.encode(data, tmp_path / "local.zarr", workers=3, **kw)
    with distributed.get_task_stream(client=client) as stream:
        chronozarr.encode(SeriesSource(data), tmp_path / "cluster.zarr", scheduler=client, **kw)
    auto = [rec for rec in stream.data if str(rec["key"]).startswith("cz-auto-")]
    sampled = chronozarr.open_store(tmp_path / "local.zarr").attrs.temporal.selection
    assert sampled is not None and sampled["sampled_cells"] == 3
    assert len([r for r in auto if "-context-" not in str(r["key"])]) == 3
    assert pinned.digests(tmp_path / "local.zarr") == pinned.digests(tmp_path / "cluster.zarr")

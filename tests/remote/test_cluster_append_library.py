"""``chronozarr.append(..., scheduler=client)`` on a real dask cluster (a scheduler and two worker
processes on 127.0.0.1, started by the test session), to moto's S3 server and to a local folder
the workers share (decision 0022): the workers write every chunk object, the client only the
volatility, the time coordinates and the metadata, and the objects are the pinned bytes of the
local append (tests/chronozarr/bytes_pinned.json)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.io import ObjectStore
from tests.chronozarr import test_bytes_pinned as pinned
from tests.dask_procs import DaskProcs
from tests.remote.conftest import Moto, new_bucket
from tests.remote.test_cluster_encode import CLIENT_KEY, download

distributed = pytest.importorskip("distributed")

#: what the client of an append may write: the metadata, and the append journal (decision 0020)
APPEND_CLIENT_KEY = re.compile(rf"{CLIENT_KEY.pattern}|\.chronozarr-append\.json")
APPEND_CASES = [n for n in sorted(pinned.CASES) if "append" in n]


@pytest.fixture(scope="module")
def client(dask_procs: DaskProcs) -> Iterator[Any]:
    with distributed.Client(dask_procs.address, timeout="20s", set_as_default=False) as c:
        yield c


@pytest.mark.parametrize("name", APPEND_CASES)
def test_cluster_append_to_s3_writes_the_pinned_bytes(
    name: str, tmp_path: Path, s3: Any, s3env: Moto, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = new_bucket(s3)
    url = f"s3://{bucket}/{name}.zarr"
    appender = ObjectStore(url)  # the client's own handle: its stats count the append's PUTs
    encode, append = chronozarr.encode, chronozarr.append

    def encode_to_s3(data: Any, _path: Path, **kw: Any) -> Any:
        return encode(data, ObjectStore(url), **kw)  # local threads, straight to the bucket

    def append_on_cluster(_path: Path, data: Any, **kw: Any) -> None:
        kw.pop("workers", None)
        append(appender, data, scheduler=client, **kw)

    monkeypatch.setattr(chronozarr, "encode", encode_to_s3)
    monkeypatch.setattr(chronozarr, "append", append_on_cluster)
    pinned.CASES[name](tmp_path / "unused.zarr")
    local = download(s3, bucket, f"{name}.zarr", tmp_path / "got")
    want = json.loads(pinned.PINNED.read_text())[name]
    assert pinned.digests(local) == want
    puts = [key for kind, key in appender.stats.keys if kind == "put"]
    assert puts and all(APPEND_CLIENT_KEY.fullmatch(k) for k in puts), puts
    assert "zarr.json" in puts and "volatility/c/0/0" in puts
    assert not any(k.startswith("0/data/c/") for k in puts)  # every new chunk: a worker's
    # spec 9 on the server's side: the append's root PUT started after every other PUT ended
    logged = [e for e in s3env.log.puts(bucket) if f"/{name}.zarr/" in e.path]
    roots = [e for e in logged if e.path.endswith(f"/{name}.zarr/zarr.json")]
    assert len(roots) == 2  # the encode's, then the append's
    assert all(e.end < roots[-1].start for e in logged if e is not roots[-1])
    assert chronozarr.validate(url).ok


def test_cluster_append_of_a_dask_array_to_a_shared_folder(
    tmp_path: Path, client: Any, dask_procs: DaskProcs
) -> None:
    """A dask-backed input: each task carries its cell's part of the graph, computed on the
    worker; the store equals a local append of the numpy array, and a re-run with the same
    ``resume_key`` after an interruption (here: after the level-0 chunks; the re-run given the
    scheduler's address, not a client) gives the same bytes."""
    import shutil

    import dask.array as da

    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(9, 2, 40, 36, "uint16", seed=4)
    rng = np.random.default_rng(4)
    mask = (rng.random((9, 40, 36)) > 0.3).astype(np.uint8)
    cov = rng.integers(0, 5, size=(9, 40, 36)).astype(np.uint8)
    kw: dict[str, Any] = dict(
        bands=["a", "b"], crs="EPSG:32631", transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0],
        chunk_size=16, encoding="star-delta", anchor_interval=3, shard_time=4,
    )  # fmt: skip
    base = tmp_path / "base.zarr"
    chronozarr.encode(data[:6], base, times=monthly(6), mask=mask[:6], coverage=cov[:6], **kw)
    local, remote = tmp_path / "local.zarr", tmp_path / "cluster.zarr"
    shutil.copytree(base, local)
    shutil.copytree(base, remote)
    add = dict(times=monthly(9)[6:])
    chronozarr.append(local, data[6:], mask=mask[6:], coverage=cov[6:], workers=1, **add)
    lazy = [da.from_array(a[6:], chunks=(1, *a.shape[1:-2], 16, 16)) for a in (data, mask, cov)]
    with pytest.raises(RuntimeError, match="injected"):
        chronozarr.append(
            remote, lazy[0], mask=lazy[1], coverage=lazy[2], scheduler=client,
            resume_key="k1", _fail_after="level0", **add,
        )  # fmt: skip
    assert (remote / ".cz-build" / "k1" / "0").is_dir()  # the level-0 cells are recorded
    assert chronozarr.open_store(remote).n_time == 6  # the old root, untouched
    chronozarr.append(
        remote, lazy[0], mask=lazy[1], coverage=lazy[2], scheduler=dask_procs.address,
        resume_key="k1", **add,
    )  # fmt: skip
    assert not (remote / ".cz-build").exists()  # removed after the root
    assert pinned.digests(remote) == pinned.digests(local)
    reader = chronozarr.open_store(remote)
    assert np.array_equal(reader.read(7), data[7])
    assert chronozarr.validate(remote, deep=True).ok


def test_a_store_the_workers_do_not_share_is_refused_before_any_metadata(
    tmp_path: Path, client: Any
) -> None:
    """The workers write level 0 to what is, for them, another folder: the client sees no new
    chunk and stops with a ClusterError before the volatility, the times or any metadata; the
    store keeps its old objects, byte for byte."""
    from tests.conftest import monthly, synthetic_series
    from tests.remote.test_cluster_encode import Elsewhere

    data = synthetic_series(5, 1, 16, 16, "uint8", seed=2)
    out = tmp_path / "mine.zarr"
    chronozarr.encode(
        data[:3], out, times=monthly(3), bands=["v"], crs="EPSG:32631",
        transform=[10.0, 0, 0, 0, -10.0, 0], chunk_size=8, encoding="star-delta",
    )  # fmt: skip
    before = pinned.digests(out)
    with pytest.raises(chronozarr.errors.ClusterError, match="filesystem every worker shares"):
        chronozarr.append(Elsewhere(out), data[3:], times=monthly(5)[3:], scheduler=client)
    assert pinned.digests(out) == before

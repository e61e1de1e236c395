"""``cz build --scheduler`` on a real dask cluster (``dask scheduler`` + ``dask worker``
processes on 127.0.0.1) writing straight to moto's S3 server (decision 0017).

- the workers write every chunk object (the client's own PUTs, counted in this process, are
  metadata only) and the store is byte-identical to a local build of the same recipe;
- the client's work folder stays empty (no spill, no local copy of the store);
- a worker killed mid-build: the build still finishes with the identical store;
- an interrupted build re-run with the same command resumes: cells already written are not
  written again, and the bytes are those of an uninterrupted build;
- no worker at all: a clear error after --worker-timeout, no root at the target.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import chronozarr
from chronozarr.io import LEASE_KEY, ObjectStore, classify_objects
from cz.build import BuildError, BuildOptions, Progress, build
from cz.publish.classify import cache_control
from cz.recipe import load_recipe
from tests.chronozarr.test_bytes_pinned import digests
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items
from tests.dask_procs import DaskProcs, dask_cluster
from tests.remote.conftest import Moto, files, list_keys, new_bucket
from tests.remote.test_cluster_encode import CLIENT_KEY, download

distributed = pytest.importorskip("distributed")

pytestmark = LOADER_WARNINGS


@pytest.fixture(scope="module")
def aws_env(s3env: Moto) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": s3env.endpoint,
    }


@pytest.fixture(scope="module")
def cluster(dask_procs: DaskProcs) -> DaskProcs:
    return dask_procs


@pytest.fixture(scope="module")
def scenes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("scenes")
    scenes, _corrections, _dropped = scenario()
    write_items(folder, scenes)
    return folder


LOCAL_RESULTS: dict[str, Any] = {}


@pytest.fixture(scope="module")
def local_build(scenes_dir: Path) -> tuple[Any, Path]:
    """The recipe (star-delta, gap-fill 2 months) and its local build (the reference bytes)."""
    rec = load_recipe(
        recipe(scenes_dir, start="2024-01", end="2024-04", max_age=2, encoding="star-delta")
    )
    out = scenes_dir / "local.zarr"
    LOCAL_RESULTS[str(out)] = build(rec, out=str(out), options=BuildOptions(workers=2))
    return rec, out


class ClientPuts:
    """Every PUT this process (the client) makes through an ObjectStore; workers are other
    processes, so their PUTs never show here."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.keys: list[str] = []
        original = ObjectStore.put

        def put(store: ObjectStore, key: str, data: bytes, attributes: Any = None) -> None:
            self.keys.append(key)
            original(store, key, data, attributes)

        monkeypatch.setattr(ObjectStore, "put", put)
        conditional = ObjectStore.put_mode

        def put_mode(
            store: ObjectStore, key: str, data: bytes, mode: Any, attributes: Any = None
        ) -> Any:
            if key != LEASE_KEY:  # the writer's lease is no object of the store (decision 0051)
                self.keys.append(key)
            return conditional(store, key, data, mode, attributes)

        monkeypatch.setattr(ObjectStore, "put_mode", put_mode)


class DiskWatch:
    """Peak bytes under a folder, sampled every 20 ms on a thread."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _size(self) -> int:
        total = 0
        for dirpath, _dirs, names in os.walk(self.folder):
            for name in names:
                with contextlib.suppress(FileNotFoundError):  # removed since the listing
                    total += (Path(dirpath) / name).stat().st_size
        return total

    def __enter__(self) -> DiskWatch:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, self._size())
            time.sleep(0.02)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._size())


def _options(cluster: DaskProcs, work: Path, **kw: Any) -> BuildOptions:
    return BuildOptions(scheduler=cluster.address, work_dir=str(work), **kw)


def test_cluster_build_to_s3_equals_the_local_build(
    cluster: DaskProcs,
    local_build: tuple[Any, Path],
    s3: Any,
    s3env: Moto,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec, local = local_build
    bucket = new_bucket(s3)
    url = f"s3://{bucket}/cluster.zarr"
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    puts = ClientPuts(monkeypatch)
    with DiskWatch(work) as disk:
        result = build(rec, out=url, options=_options(cluster, work))
    assert result.store == url
    got = download(s3, bucket, "cluster.zarr", tmp_path / "got")
    assert digests(got) == digests(local)
    assert puts.keys and all(CLIENT_KEY.fullmatch(k) for k in puts.keys), puts.keys
    chunks = [k for k in digests(local) if not CLIENT_KEY.fullmatch(k)]
    assert chunks and not set(chunks) & set(puts.keys)  # every chunk came from a worker
    assert disk.peak == 0  # no spill, no local copy: the client's disk carries nothing
    assert not any(k.startswith(".cz-build") for k in list_keys(s3, bucket, "cluster.zarr/"))
    # spec 9, on the server's side: every other PUT ended before the root PUT started
    logged = [e for e in s3env.log.puts(bucket) if "/cluster.zarr/" in e.path]
    [root] = [e for e in logged if e.path.endswith("/cluster.zarr/zarr.json")]
    assert all(e.end < root.start for e in logged if e is not root)
    assert result.bytes == sum(p.stat().st_size for p in local.rglob("*") if p.is_file())
    want = LOCAL_RESULTS[str(local)]  # the summary's figures, gathered from the workers
    for name in ("items_read", "observations", "valid_fraction", "gap_filled_fraction", "objects"):
        assert getattr(result, name) == getattr(want, name), name
    assert chronozarr.validate(url).ok
    # served as it is: the headers `cz publish` gives each class of object (spec 14)
    classes = {o.key: cache_control(o) for o in classify_objects(local)[0]}
    for key, data in files(local).items():
        head = s3.head_object(Bucket=bucket, Key=f"cluster.zarr/{key}")
        assert head.get("CacheControl") == classes[key], key
        assert head["Metadata"].get("chronozarr-md5") == hashlib.md5(data).hexdigest(), key
        ctype = "application/json" if key.endswith("zarr.json") else "application/octet-stream"
        assert head["ContentType"] == ctype, key


class StopAfter(Progress):
    """Interrupts the build after ``n`` level-0 tasks came back (a lost client, a Ctrl-C)."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.notes: list[str] = []

    def advance(self, phase: str, amount: float = 1.0) -> None:
        if phase == "cells":
            self.n -= 1
            if self.n <= 0:
                raise KeyboardInterrupt

    def note(self, message: str) -> None:
        self.notes.append(message)


def test_interrupted_cluster_build_resumes_to_the_same_bytes(
    cluster: DaskProcs,
    local_build: tuple[Any, Path],
    s3: Any,
    s3env: Moto,
    tmp_path: Path,
) -> None:
    rec, local = local_build
    bucket = new_bucket(s3)
    url = f"s3://{bucket}/resumed.zarr"
    with pytest.raises(KeyboardInterrupt):
        build(rec, out=url, options=_options(cluster, tmp_path), progress=StopAfter(2))
    partial = list_keys(s3, bucket, "resumed.zarr/")
    assert "zarr.json" not in partial  # no root: no reader sees a store
    summaries = [k for k in partial if k.startswith(".cz-build/") and "/0/" in k]
    assert len(summaries) >= 2
    done_chunks = {k for k in partial if k.startswith("0/data/")}
    assert done_chunks
    before = len(s3env.log.puts(bucket))
    progress = StopAfter(10**9)
    build(rec, out=url, options=_options(cluster, tmp_path), progress=progress)
    rerun = {e.path.split("/", 3)[-1] for e in s3env.log.puts(bucket)[before:]}
    # A summary is named {row}.{col}.{start}-{stop} (cell_tasks.py: the cell's timesteps
    # start..stop-1); a chunk key is 0/data/c/{t}/{band}/{row}/{col}.
    finished = set()
    for k in summaries:
        row, col, times = k.rsplit("/", 1)[-1].removesuffix(".json").split(".")
        start, stop = (int(x) for x in times.split("-"))
        finished.update((int(row), int(col), t) for t in range(start, stop))
    checked = 0
    for key in done_chunks:  # a finished task's chunks are not written again
        t, _band, row, col = (int(x) for x in key.split("/")[3:7])
        if (row, col, t) in finished:
            assert key not in rerun, key
            checked += 1
    assert checked, "some chunk of a finished task was checked"
    assert any("resumed" in n for n in progress.notes)
    got = download(s3, bucket, "resumed.zarr", tmp_path / "got")
    assert digests(got) == digests(local)


class KillOnFirstCell(Progress):
    """Kills a worker process when the first level-0 task comes back: the rest is in flight."""

    def __init__(self, cluster: DaskProcs, victim: Any) -> None:
        self.cluster, self.victim = cluster, victim
        self.killed_at: int | None = None
        self.cells = 0

    def advance(self, phase: str, amount: float = 1.0) -> None:
        if phase == "cells":
            self.cells += 1
            if self.killed_at is None:
                self.cluster.kill(self.victim)
                self.killed_at = self.cells


def test_a_worker_killed_mid_build_the_store_is_still_identical(
    cluster: DaskProcs, local_build: tuple[Any, Path], tmp_path: Path
) -> None:
    from tests.dask_procs import _wait_workers

    rec, local = local_build
    victim = cluster.add_worker("victim")
    _wait_workers(cluster.address, 3, time.monotonic() + 60)
    out = tmp_path / "shared" / "killed.zarr"  # a folder every worker sees (a shared FS)
    progress = KillOnFirstCell(cluster, victim)
    try:
        build(rec, out=str(out), options=_options(cluster, tmp_path), progress=progress)
    finally:
        cluster.kill(victim)
    assert progress.killed_at == 1 and progress.cells > 1  # killed with cells still to come
    assert digests(out) == digests(local)


def test_no_worker_is_a_clear_error_and_no_root(
    local_build: tuple[Any, Path], scenes_dir: Path, tmp_path: Path, aws_env: dict[str, str]
) -> None:
    from typer.testing import CliRunner

    from cz.app import app

    rec, _local = local_build
    out = tmp_path / "none.zarr"
    with dask_cluster(tmp_path / "empty", 0, aws_env) as empty:
        started = time.monotonic()
        with pytest.raises(BuildError, match="no dask worker joined the scheduler"):
            build(rec, out=str(out), options=_options(empty, tmp_path, worker_timeout=2.0))
        assert time.monotonic() - started < 30
        path = recipe(scenes_dir, start="2024-01", end="2024-02", name="cli.yaml")
        args = ["build", str(path), "--out", str(tmp_path / "cli.zarr"), "--scheduler"]
        result = CliRunner().invoke(app, [*args, empty.address, "--worker-timeout", "2"])
    assert result.exit_code != 0
    assert "no dask worker joined the scheduler" in result.output
    assert "Traceback" not in result.output
    assert not (out / "zarr.json").exists()
    assert not (tmp_path / "cli.zarr" / "zarr.json").exists()


def test_auto_encoding_samples_on_a_worker_and_matches_the_local_build(
    cluster: DaskProcs, scenes_dir: Path, tmp_path: Path
) -> None:
    rec = load_recipe(
        recipe(scenes_dir, start="2024-01", end="2024-03", encoding="auto", name="auto.yaml")
    )
    local, remote = tmp_path / "local.zarr", tmp_path / "shared" / "auto.zarr"
    build(rec, out=str(local), options=BuildOptions(workers=2))
    build(rec, out=str(remote), options=_options(cluster, tmp_path))
    assert chronozarr.open_store(remote).attrs.temporal.selection["mode"] == "auto"
    assert digests(remote) == digests(local)


def test_a_target_holding_a_store_is_refused_and_left_alone(
    cluster: DaskProcs, local_build: tuple[Any, Path], tmp_path: Path
) -> None:
    rec, local = local_build
    before = digests(local)
    with pytest.raises(BuildError, match="already holds a Zarr store"):
        build(rec, out=str(local), options=_options(cluster, tmp_path))
    assert digests(local) == before


def test_cz_build_scheduler_on_the_command_line(
    cluster: DaskProcs, scenes_dir: Path, tmp_path: Path
) -> None:
    import json

    from typer.testing import CliRunner

    from cz.app import app

    path = recipe(scenes_dir, start="2024-01", end="2024-02", name="cli-ok.yaml")
    out = tmp_path / "shared" / "cli.zarr"
    args = ["build", str(path), "--out", str(out), "--scheduler", cluster.address, "--json"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["store"] == str(out) and summary["months"] == ["2024-01", "2024-02"]
    assert chronozarr.validate(out, deep=True).ok
    assert not (out / ".cz-build").exists()


def test_linear_gap_fill_derived_bands_and_cleaning_match_the_local_build(
    cluster: DaskProcs, scenes_dir: Path, tmp_path: Path
) -> None:
    """The cluster's cell planes look ahead for linear gap-fill as the local spill does, and the
    cell tasks composite derived bands and clean the day's cloud the same way."""
    path = recipe(scenes_dir, start="2024-01", end="2024-04", name="linear.yaml")
    text = path.read_text().replace(
        "gap_fill:\n  method: none\n", "gap_fill:\n  method: linear\n  max_age: 2\n"
    )
    text = text.replace(
        "  keep: [4, 5, 6, 7, 11]\n", "  keep: [4, 5, 6, 7, 11]\n  open: 1\n  dilate: 1\n"
    )
    text = text.replace(
        "mask:\n",
        "  - name: ndvi\n    expression: (nir - red) / (nir + red)\n    scale: 0.0001\n"
        "    offset: -1\n"
        "mask:\n",
    )
    path.write_text(text)
    rec = load_recipe(path)
    local, remote = tmp_path / "local.zarr", tmp_path / "shared" / "linear.zarr"
    build(rec, out=str(local), options=BuildOptions(workers=2))
    build(rec, out=str(remote), options=_options(cluster, tmp_path))
    assert digests(remote) == digests(local)
    assert chronozarr.open_store(local).attrs.provenance["gap_fill"] == "linear"

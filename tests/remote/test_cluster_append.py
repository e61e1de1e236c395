"""``cz append --scheduler`` on a real dask cluster (``dask scheduler`` + two ``dask worker``
processes on 127.0.0.1) writing straight to moto's S3 server or to a folder the workers share
(decision 0022).

A store of January and February is built locally; March (one mostly cloudy overpass, so
gap-fill reads January back from the store, on the worker) is appended:

- to ``s3://`` on the cluster: every object equals the local append of the same month, the
  client wrote no chunk object (its own PUTs are metadata, ``provenance_items`` and the journal)
  and its work folder stayed empty;
- with a worker killed mid-append: the same store;
- interrupted (Ctrl-C in the client, SIGTERM to a ``cz append`` process, a ``CZ_FAULT_AT`` kill
  between the volatility and the time coordinates): the old store still reads as before, and
  the same command re-run gives the same objects.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import chronozarr
from cz.build import BuildOptions, append_months, build
from cz.recipe import load_recipe
from tests.chronozarr.test_bytes_pinned import digests
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items
from tests.dask_procs import DaskProcs, _wait_workers
from tests.remote.conftest import Moto, list_keys, new_bucket
from tests.remote.test_cluster_append_library import APPEND_CLIENT_KEY
from tests.remote.test_cluster_build import ClientPuts, DiskWatch, KillOnFirstCell, StopAfter
from tests.remote.test_cluster_encode import download
from tests.remote.test_cluster_resume_report import quiet_summaries

distributed = pytest.importorskip("distributed")

pytestmark = LOADER_WARNINGS

SHARDED = "  shard: true\n  shard_time: 2\n"


@pytest.fixture(scope="module")
def scenes_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("append-scenes")
    scenes, _corrections, _dropped = scenario()
    write_items(folder, scenes)
    return folder


def _stores(folder: Path, name: str, extra: str) -> tuple[Any, Path, Path]:
    """(recipe, the January-February store, that store with March appended locally)."""
    rec = load_recipe(
        recipe(
            folder,
            start="2024-01",
            end="2024-02",
            max_age=2,
            encoding="star-delta",
            extra=extra,
            name=f"{name}.yaml",
        )
    )
    base, grown = folder / f"{name}-base.zarr", folder / f"{name}-grown.zarr"
    build(rec, out=str(base), options=BuildOptions(workers=2))
    shutil.copytree(base, grown)
    append_months(rec, ["2024-03"], store=str(grown), options=BuildOptions(workers=2))
    return rec, base, grown


@pytest.fixture(scope="module")
def unsharded(scenes_dir: Path) -> tuple[Any, Path, Path]:
    return _stores(scenes_dir, "unsharded", "")


@pytest.fixture(scope="module")
def sharded(scenes_dir: Path) -> tuple[Any, Path, Path]:
    return _stores(scenes_dir, "sharded", SHARDED)


def _options(cluster: DaskProcs, work: Path, **kw: Any) -> BuildOptions:
    return BuildOptions(scheduler=cluster.address, work_dir=str(work), **kw)


def _upload(s3: Any, bucket: str, store: Path, prefix: str) -> str:
    for path in sorted(store.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(store).as_posix()}"
            s3.put_object(Bucket=bucket, Key=key, Body=path.read_bytes())
    return f"s3://{bucket}/{prefix}"


def _objects(store: Path) -> dict[str, str]:
    """Every object's digest; the ``.tmp`` a kill leaves is not an object (a sweep removes it
    once it is 60 s old) and the run lock lives beside the store, not in it."""
    return {k: v for k, v in digests(store).items() if not k.endswith(".tmp")}


def test_cluster_append_to_s3_equals_the_local_append(
    dask_procs: DaskProcs,
    unsharded: tuple[Any, Path, Path],
    s3: Any,
    s3env: Moto,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rec, base, grown = unsharded
    bucket = new_bucket(s3)
    url = _upload(s3, bucket, base, "store.zarr")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    puts = ClientPuts(monkeypatch)
    with DiskWatch(work) as disk:
        result = append_months(rec, ["2024-03"], store=url, options=_options(dask_procs, work))
    assert result.months == ["2024-03"] and result.store == url
    assert result.gap_filled_fraction > 0  # March's clouds filled from January, in the store
    got = download(s3, bucket, "store.zarr", tmp_path / "got")
    assert digests(got) == digests(grown)  # every object, byte for byte
    assert puts.keys and all(APPEND_CLIENT_KEY.fullmatch(k) for k in puts.keys), puts.keys
    new_chunks = set(digests(grown)) - set(digests(base))
    chunk_keys = {k for k in new_chunks if not APPEND_CLIENT_KEY.fullmatch(k)}
    assert chunk_keys and not chunk_keys & set(puts.keys)  # every new chunk came from a worker
    assert disk.peak == 0  # no spill, no local copy: the client's disk carries nothing
    keys = list_keys(s3, bucket, "store.zarr/")
    assert not any(k.startswith(".cz-build") or "chronozarr-append" in k for k in keys)
    # spec 9 on the server's side: the new root PUT started after every other PUT ended
    logged = [e for e in s3env.log.puts(bucket) if "/store.zarr/" in e.path]
    root = [e for e in logged if e.path.endswith("/store.zarr/zarr.json")][-1]
    assert all(e.end < root.start for e in logged if e is not root)
    assert chronozarr.validate(url).ok


def test_a_worker_killed_mid_append_the_store_is_still_identical(
    dask_procs: DaskProcs, sharded: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    rec, base, grown = sharded
    victim = dask_procs.add_worker("append-victim")
    _wait_workers(dask_procs.address, 3, time.monotonic() + 60)
    out = tmp_path / "shared" / "killed.zarr"  # a folder every worker sees (a shared FS)
    shutil.copytree(base, out)
    progress = KillOnFirstCell(dask_procs, victim)
    try:
        append_months(rec, ["2024-03"], store=str(out), options=_options(dask_procs, tmp_path),
                      progress=progress)  # fmt: skip
    finally:
        dask_procs.kill(victim)
    assert progress.killed_at == 1 and progress.cells > 1  # killed with cells still to come
    assert digests(out) == digests(grown)


def test_an_interrupted_append_leaves_the_old_store_and_resumes(
    dask_procs: DaskProcs, sharded: tuple[Any, Path, Path], tmp_path: Path
) -> None:
    rec, base, grown = sharded
    out = tmp_path / "shared" / "resumed.zarr"
    shutil.copytree(base, out)
    with pytest.raises(KeyboardInterrupt):
        append_months(rec, ["2024-03"], store=str(out), options=_options(dask_procs, tmp_path),
                      progress=StopAfter(1))  # fmt: skip
    reader = chronozarr.open_store(out)
    assert reader.n_time == 2 and digests(out)["zarr.json"] == digests(base)["zarr.json"]
    [key] = [p.name for p in (out / ".cz-build").iterdir()]
    done = list((out / ".cz-build" / key / "0").glob("*.json"))
    assert done  # at least the cell that came back is recorded
    assert chronozarr.validate(out).ok  # the old store, readable as it was
    found = quiet_summaries(out)  # the tasks in flight at the interruption record theirs too
    progress = StopAfter(10**9)
    result = append_months(rec, ["2024-03"], store=str(out), options=_options(dask_procs, tmp_path),
                           progress=progress)  # fmt: skip
    assert digests(out) == digests(grown)
    # the re-run reports what the test counted on the target (decision 0050)
    assert result.resumed is not None
    assert {k: v["found"] for k, v in result.resumed.items() if v["found"]} == found
    assert any(
        n.startswith("resumed the append at") and f"{found['0']} of " in n for n in progress.notes
    ), progress.notes


def _cz(args: list[str], cwd: Path, **env: str) -> subprocess.Popen[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("CZ_FAULT")}
    return subprocess.Popen(
        [sys.executable, "-m", "cz", *args, "-q"], cwd=cwd, env={**full, **env},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


@pytest.mark.parametrize("how", ["sigterm", "kill-point"])
def test_a_killed_cz_append_rerun_gives_the_same_store(
    how: str,
    dask_procs: DaskProcs,
    unsharded: tuple[Any, Path, Path],
    scenes_dir: Path,
    tmp_path: Path,
) -> None:
    """SIGTERM while the workers write level 0 (like Ctrl-C: exit 143, the partial kept), or
    SIGKILL at the client's 5th durable write after its lease (the journal, provenance_items and the volatility
    are written, ``0/time/c/0`` is not: the step where a naive re-run would count the new
    deltas twice). The store reads as before; the same command completes it, same objects."""
    _rec, base, grown = unsharded
    out = tmp_path / "shared" / f"{how}.zarr"
    shutil.copytree(base, out)
    args = ["append", str(scenes_dir / "unsharded.yaml"), "--store", str(out), "--month",
            "2024-03", "--scheduler", dask_procs.address]  # fmt: skip
    if how == "sigterm":
        proc = _cz(args, tmp_path)
        deadline = time.monotonic() + 120
        while not list(out.glob(".cz-build/*/started.json")) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGTERM)
        _stdout, stderr = proc.communicate(timeout=120)
        assert proc.returncode == 143, stderr
        assert "Traceback" not in stderr
    else:
        # the 7th: the lease's create and its probe (decision 0051) come before the five
        proc = _cz(args, tmp_path, CZ_FAULT_AT="7")
        _stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == -signal.SIGKILL, stderr
        assert (out / ".chronozarr-append.json").exists()  # the journal of decision 0020
    reader = chronozarr.open_store(out)
    assert reader.n_time == 2  # the old root: the store reads as before
    assert chronozarr.validate(out).ok
    rerun = _cz(args, tmp_path, CZ_SWEEP_TMP_AGE="0")
    _stdout, stderr = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, stderr
    assert _objects(out) == digests(grown)


def test_cz_append_scheduler_refusals_are_messages_and_write_nothing(
    dask_procs: DaskProcs,
    unsharded: tuple[Any, Path, Path],
    scenes_dir: Path,
    s3: Any,
    s3env: Moto,
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from cz.app import app

    _rec, base, _grown = unsharded
    bucket = new_bucket(s3)
    url = _upload(s3, bucket, base, "store.zarr")
    before = {k: v["ETag"] for k, v in list_keys(s3, bucket).items()}
    path = str(scenes_dir / "unsharded.yaml")
    common = ["--scheduler", dask_procs.address]
    cases = [
        (["--store", url, "--month", "2024-02"], 1, "already in the store"),
        (["--store", url, "--month", "2024-05"], 1, "the next month is 2024-03"),
        (["--store", "http://127.0.0.1:9/x.zarr", "--month", "2024-03"], 1, "s3:// store"),
        (["--store", str(tmp_path / "nothing.zarr"), "--month", "2024-03"], 1, "cannot open"),
    ]
    for args, code, message in cases:
        result = CliRunner().invoke(app, ["append", path, *args, *common])
        assert result.exit_code == code, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
    other = recipe(scenes_dir, start="2024-01", end="2024-02", max_age=3, name="other.yaml")
    result = CliRunner().invoke(
        app, ["append", str(other), "--store", url, "--month", "2024-03", *common]
    )
    assert result.exit_code == 2, result.output  # decision 0018: a usage error, fields named
    assert "gap_fill.max_age: recipe 3, store built with 2" in result.output
    assert {k: v["ETag"] for k, v in list_keys(s3, bucket).items()} == before  # untouched

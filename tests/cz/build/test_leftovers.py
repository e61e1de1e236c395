"""The sweep of what dead runs left (cz.build.leftovers): a dead run's staging, spill and lock go,
a live run's stay, names without a lock file are only reported, ``.tmp`` files go only from a
complete store (only when old without the target's lock; whatever their age under it, decision
0051), one run at a time holds a target, and a resumable cluster partial (``.cz-build/``, no
root) is never touched (docs/decisions/0017-resumable-builds.md)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from typer.testing import CliRunner

from cz.app import app
from cz.build import leftovers
from cz.build.leftovers import RunLock, tagged_name

TAG = "abcdef0123"

DIE = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from cz.build.leftovers import RunLock, tagged_name
    final, work, tag = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    spill = work / tagged_name(final, "composites", tag)
    RunLock.acquire(final, tag, spill=spill)
    (final.parent / tagged_name(final, "building", tag) / "0").mkdir(parents=True)
    (final.parent / tagged_name(final, "building", tag) / "0" / "c").write_bytes(b"x")
    spill.mkdir(parents=True)
    (spill / "0.0.0.v").write_bytes(b"y")
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def _dead_run(final: Path, work: Path, tag: str = TAG) -> None:
    proc = subprocess.run([sys.executable, "-c", DIE, str(final), str(work), tag], timeout=60)
    assert proc.returncode == -9


def _store(path: Path) -> Path:
    (path / "0").mkdir(parents=True)
    (path / "zarr.json").write_text(json.dumps({"zarr_format": 3, "node_type": "group"}))
    return path


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_dead_runs_staging_spill_and_lock_are_removed(tmp_path: Path) -> None:
    final, work = tmp_path / "site" / "s.zarr", tmp_path / "work"
    _dead_run(final, work)
    assert _hidden(final.parent) == [f".s.zarr.building-{TAG}", f".s.zarr.run-{TAG}.lock"]
    assert _hidden(work) == [f".s.zarr.composites-{TAG}"]
    found = leftovers.inspect(final, work_dir=work)
    assert found.dead_runs == [TAG] and found.live_runs == []
    assert found.paths  # inspect removes nothing
    assert _hidden(final.parent) == [f".s.zarr.building-{TAG}", f".s.zarr.run-{TAG}.lock"]
    swept = leftovers.sweep(final, work_dir=work)
    assert swept.dead_runs == [TAG]
    assert _hidden(final.parent) == [] and _hidden(work) == []


def test_the_spill_of_a_dead_run_is_found_through_its_lock_file(tmp_path: Path) -> None:
    """Without --work-dir the sweep only looks next to the target; the lock names the spill."""
    final, work = tmp_path / "site" / "s.zarr", tmp_path / "elsewhere"
    _dead_run(final, work)
    leftovers.sweep(final)
    assert _hidden(final.parent) == [] and _hidden(work) == []


def test_a_live_runs_files_are_kept(tmp_path: Path) -> None:
    final = tmp_path / "s.zarr"
    with RunLock.acquire(final, TAG):
        staging = tmp_path / tagged_name(final, "building", TAG)
        staging.mkdir()
        found = leftovers.sweep(final)
        assert found.live_runs == [TAG] and found.dead_runs == []
        assert staging.is_dir()
        staging.rmdir()
    assert _hidden(tmp_path) == []  # release removed the lock file


def test_names_without_a_lock_are_reported_not_removed(tmp_path: Path) -> None:
    final = tmp_path / "s.zarr"
    old = tmp_path / tagged_name(final, "building", TAG)  # an older cz, or another program
    old.mkdir()
    found = leftovers.sweep(final)
    assert found.unowned == [old] and found.paths == []
    assert old.is_dir()


def test_tmp_files_go_from_a_complete_store_only_when_old(tmp_path: Path) -> None:
    final = _store(tmp_path / "s.zarr")
    old_tmp = final / "0" / ".c.1234.tmp"
    new_tmp = final / "0" / ".d.5678.tmp"
    old_tmp.write_bytes(b"a")
    new_tmp.write_bytes(b"b")
    past = time.time() - 2 * leftovers.TMP_MIN_AGE
    os.utime(old_tmp, (past, past))
    found = leftovers.sweep(final)
    assert found.tmp_files == [old_tmp]
    assert not old_tmp.exists() and new_tmp.exists()


def test_tmp_files_stay_while_a_run_holds_the_target(tmp_path: Path) -> None:
    final = _store(tmp_path / "s.zarr")
    tmp = final / ".zarr.json.99.tmp"
    tmp.write_bytes(b"a")
    past = time.time() - 2 * leftovers.TMP_MIN_AGE
    os.utime(tmp, (past, past))
    with RunLock.acquire(final, TAG):
        assert leftovers.sweep(final).tmp_files == []
    assert tmp.exists()


def test_a_resumable_cluster_partial_is_never_touched(tmp_path: Path) -> None:
    """0015: chunks and .cz-build/ at the target, no root zarr.json: not litter."""
    final = tmp_path / "s.zarr"
    work = final / ".cz-build" / "0123456789abcdef"
    work.mkdir(parents=True)
    (work / "0.0.0-12.json").write_text("{}")
    chunk_tmp = final / "0" / "data" / "c" / ".0.abcd.tmp"
    chunk_tmp.parent.mkdir(parents=True)
    chunk_tmp.write_bytes(b"x")
    past = time.time() - 2 * leftovers.TMP_MIN_AGE
    os.utime(chunk_tmp, (past, past))
    before = sorted(str(p) for p in final.rglob("*"))
    assert not leftovers.sweep(final)
    assert sorted(str(p) for p in final.rglob("*")) == before


def test_cz_validate_warns_about_a_dead_runs_staging(tmp_path: Path) -> None:
    import numpy as np

    import chronozarr

    final = tmp_path / "s.zarr"
    chronozarr.encode(
        np.zeros((1, 1, 8, 8), np.uint16),
        final,
        times=["2024-01-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
    )
    _dead_run(final, tmp_path)
    res = CliRunner().invoke(app, ["validate", str(final)])
    assert res.exit_code == 0, res.output
    assert f"left by a dead run: {tmp_path / f'.s.zarr.building-{TAG}'}" in res.stderr
    assert (tmp_path / f".s.zarr.building-{TAG}").is_dir()  # validate removes nothing


def test_a_lock_file_naming_another_folder_as_its_spill_is_not_trusted(tmp_path: Path) -> None:
    final = tmp_path / "site" / "s.zarr"
    _dead_run(final, tmp_path / "work")
    precious = tmp_path / "precious"
    precious.mkdir()
    lock = final.parent / f".s.zarr.run-{TAG}.lock"
    owner = json.loads(lock.read_text())
    lock.write_text(json.dumps({**owner, "spill": str(precious)}))
    leftovers.sweep(final)
    assert precious.is_dir()


def test_a_run_holding_the_target_lock_sweeps_every_tmp_whatever_its_age(tmp_path: Path) -> None:
    """Decision 0051: with the target's lock held, no other cz run writes there, so a fresh
    ``.tmp`` (a run killed a moment ago) goes too, and a dead writer's lease with it."""
    final = _store(tmp_path / "s.zarr")
    fresh = final / "0" / ".c.1234.tmp"
    fresh.write_bytes(b"a")
    lease = final / ".chronozarr-lease.json"
    lease.write_text(json.dumps({"pid": 2**22 + 7, "host": "elsewhere", "expires": 1.0}))
    run = leftovers.start_run(final, TAG)
    try:
        assert not fresh.exists() and not lease.exists()
    finally:
        run.release()
    assert _hidden(tmp_path) == []  # the target lock went with the run


def test_a_live_writers_lease_keeps_its_tmp_files(tmp_path: Path) -> None:
    """A library writer without the toolkit's lock holds the store's lease: its ``.tmp`` files
    are its own, whatever their age."""
    final = _store(tmp_path / "s.zarr")
    tmp = final / "0" / ".c.1234.tmp"
    tmp.write_bytes(b"a")
    past = time.time() - 2 * leftovers.TMP_MIN_AGE
    os.utime(tmp, (past, past))
    (final / ".chronozarr-lease.json").write_text(
        json.dumps({"pid": os.getpid(), "host": os.uname().nodename, "expires": time.time() + 60})
    )
    run = leftovers.start_run(final, TAG)
    run.release()
    assert tmp.exists()


def test_a_second_run_on_a_target_is_refused_while_the_first_holds_it(tmp_path: Path) -> None:
    from cz.build.errors import TargetBusyError

    final = tmp_path / "s.zarr"
    first = leftovers.start_run(final, TAG)
    try:
        child = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; from pathlib import Path; from cz.build import leftovers\n"
                "try:\n    leftovers.start_run(Path(sys.argv[1]), 'b' * 10)\n"
                "except Exception as exc:\n    print(type(exc).__name__, exc)",
                str(final),
            ],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert child.stdout.startswith(TargetBusyError.__name__), child.stdout + child.stderr
        assert "another cz run holds this target" in child.stdout
        assert f"pid {os.getpid()}" in child.stdout
    finally:
        first.release()
    again = leftovers.start_run(final, TAG)  # free again once the first released it
    again.release()


def test_a_publish_that_finds_the_target_up_to_date_still_sweeps(tmp_path: Path) -> None:
    import numpy as np

    import chronozarr

    store = tmp_path / "s.zarr"
    chronozarr.encode(
        np.arange(2 * 1 * 8 * 8, dtype=np.uint16).reshape(2, 1, 8, 8) + 1,
        store,
        times=["2024-01-01", "2024-02-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
    )
    site = tmp_path / "site" / "s.zarr"
    assert CliRunner().invoke(app, ["publish", str(store), str(site)]).exit_code == 0
    debris = site / "0" / ".zarr.json.4321.tmp"
    debris.write_bytes(b"x")  # a killed upload's, a moment ago
    res = CliRunner().invoke(app, ["publish", str(store), str(site)])
    assert res.exit_code == 0 and "up to date" in res.output, res.output
    assert not debris.exists()

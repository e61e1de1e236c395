"""A resumed ``cz build --scheduler`` says how much it found done (decisions 0017, 0050).

A real ``cz build`` process on a real ``dask scheduler`` and worker process (127.0.0.1) is
killed (SIGKILL, no clean-up) once a few cells are written; once the worker is quiet the test
counts the task summaries the partial holds under ``.cz-build/<key>/<level>/`` on the target
(the work log of decision 0017: one object per finished task). The re-run, with stderr a pipe
(plain lines), must report exactly those numbers: per level in ``--json``, in its note, and as
the cells found done in its progress lines, whose rate and time left count only its own cells.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import chronozarr
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items
from tests.cz.test_progress_eta import check_running_lines
from tests.dask_procs import dask_cluster

pytest.importorskip("distributed")

pytestmark = LOADER_WARNINGS


def work_summaries(store: Path) -> dict[str, int]:
    """Finished tasks per level in the target's work log (``.cz-build/<key>/<level>/*.json``)."""
    out: dict[str, int] = {}
    for path in store.glob(".cz-build/*/*/*.json"):
        out[path.parent.name] = out.get(path.parent.name, 0) + 1
    return out


def quiet_summaries(store: Path, seconds: float = 3.0, limit: float = 120.0) -> dict[str, int]:
    """The summaries once none has appeared for ``seconds`` (tasks in flight when the client
    died finish on the worker and record theirs)."""
    last: dict[str, int] | None = None
    since = time.monotonic()
    deadline = since + limit
    while time.monotonic() < deadline:
        now = work_summaries(store)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= seconds:
            return now
        time.sleep(0.2)
    pytest.fail(f"the worker never went quiet: {last}")


def test_a_resumed_build_reports_what_it_found_on_the_target(tmp_path: Path) -> None:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes)
    chunk = 8
    path = recipe(tmp_path, start="2024-01", end="2024-03", chunk=chunk)
    store = tmp_path / "shared" / "s.zarr"
    env = {**os.environ, "CZ_PROGRESS_INTERVAL": "0", "COLUMNS": "80"}
    with dask_cluster(tmp_path / "dask", 1) as procs:
        args = [sys.executable, "-m", "cz", "build", str(path), "--out", str(store)]
        args += ["--scheduler", procs.address]
        first = subprocess.Popen(
            args,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
        deadline = time.monotonic() + 300
        while work_summaries(store).get("0", 0) < 3:
            assert first.poll() is None, "the first run ended before it was killed"
            assert time.monotonic() < deadline, "no cell written in 300 s"
            time.sleep(0.05)
        os.killpg(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
        found = quiet_summaries(store)
        assert not (store / "zarr.json").exists()  # killed before its commit
        again = subprocess.run(
            [*args, "--json"], capture_output=True, text=True, env=env, timeout=600
        )
    assert again.returncode == 0, again.stderr
    result = json.loads(again.stdout)
    height, width = result["shape"]
    cells0 = math.ceil(height / chunk) * math.ceil(width / chunk)  # spec 6: grid rows x cols
    assert 3 <= found["0"] < cells0  # a partial, not a whole build
    resumed = result["resumed"]
    assert resumed["0"] == {"found": found["0"], "tasks": cells0}
    assert {k: v["found"] for k, v in resumed.items() if v["found"]} == found
    assert (
        f"resumed the partial build at {store}: {found['0']} of {cells0} level-0 tasks"
        in again.stderr
    ), again.stderr
    lines = again.stderr.splitlines()
    assert f"cells: {cells0}/{cells0} cells ({found['0']} found done) in" in "\n".join(lines)
    running = [m for m in check_running_lines(again.stderr) if m["phase"] == "cells"]
    assert running and all(m["found"] == str(found["0"]) for m in running), again.stderr
    assert chronozarr.validate(store, deep=True).ok
    assert not (store / ".cz-build").exists()

"""What a cluster build holds does not grow with the region (decision 0058), on a real dask
scheduler and workers (``dask scheduler`` + ``dask worker`` processes on 127.0.0.1).

``bench/scale_harness.py run`` builds a synthetic region (a generated catalog of 24 months, no
pixel read, chunks dropped, the real plan, sources, runner and metadata) in a fresh client
process, at N and at 4N level-0 cells (24 months, not docs/scale.md's 120: what is measured
here grows with the tasks, not the months, and a task's summary is 5x quicker to make).
Oracles, independent of the code under test:

- the client's peak RSS (its own VmHWM, read by the kernel) grows by less than a fixed bound
  when the region grows 4x: what grows with the cells (the members of every month's items, the
  cells' summaries, each task's record) used to add ~60 kB a cell (1,024 -> 4,096 cells x 120
  months: 175 -> 360 MB);
- the scheduler never holds more than a window's worth of tasks (its own task table, sampled):
  the pyramid's dependency chain used to keep every task of the region there until the end;
- the Python heap the client's build holds live (``tracemalloc`` from the build's start, after a
  full collection, sampled at half and nine tenths of the cells: exact, not the allocator's
  noise) grows by less than a fixed bound: a list of the tasks, their results, the submission
  order and its dependents used to add ~600 bytes a task (decision 0049; 0.57 -> 1.22 MB from
  256 to 1,024 cells on main before it, 0.39 -> 0.47 MB after). dask's own log of the client's
  last 1,000 messages (``distributed.admin.low-level-log-length``: bounded, not ours) is
  turned off for the measure;
- the client's RSS after the plan and at its peak, per planned item, when the items grow 8x over
  the same cells (decisions 0065, 0068): the plan is made in a child process, its items on
  disk, and a group's references packed: under 450 bytes of RSS an item after the plan (885
  with the plan made in the client), under 3 kB at the peak; before decision 0065, 5.9 kB
  after the plan and 20.9 kB at the peak (the plan's models, a group's context unpacked on
  the client).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.dask_procs import DaskProcs

pytest.importorskip("distributed")

HARNESS = Path(__file__).resolve().parents[2] / "bench" / "scale_harness.py"


def harness(
    cells: int, scheduler: str, work: Path, *extra: str, dask_log: bool = False
) -> dict[str, Any]:
    """One harness run's figures; ``dask_log``: dask's own low-level logs as a user has them
    (the client's is off since decision 0068, the workers' and the scheduler's on), else off."""
    work.mkdir()
    env = dict(os.environ)
    if not dask_log:
        env["DASK_DISTRIBUTED__ADMIN__LOW_LEVEL_LOG_LENGTH"] = "0"
    done = subprocess.run(
        [sys.executable, str(HARNESS), "run", "--cells", str(cells), "--months", "24",
         "--scheduler", scheduler, "--work", str(work), *(extra or ("--trace",))],
        capture_output=True, text=True, timeout=900, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def test_client_and_scheduler_flat_in_cells(dask_procs: DaskProcs, tmp_path: Path) -> None:
    small = harness(256, dask_procs.address, tmp_path / "small")
    large = harness(1024, dask_procs.address, tmp_path / "large")
    assert (small["cells"], large["cells"]) == (256, 1024)
    assert large["tasks"] == 1024 + 256 + 64 + 16 + 4 + 1  # every level of the pyramid ran
    grown = large["client_peak_mb"] - small["client_peak_mb"]
    # main grew ~60 kB a cell: ~45 MB for these 768 cells; flat is a few MB (allocator noise,
    # the plan's 4x items, a float and an int per task)
    assert grown < 15, (
        f"client peak RSS grew {grown:.1f} MB from 256 to 1,024 cells: {small} {large}"
    )
    # two level-0 tasks per worker thread, the upper tasks ready, the contexts of two groups
    for row in (small, large):
        assert row["scheduler_tasks_peak"] <= 40, row
    # main before decision 0049: +0.66 MB for these 1,024 more tasks (0.42 -> 1.09 MB, 24
    # months; 0.57 -> 1.22 at 120); flat: a few bytes a task
    # (the folded results' arrays, 25 bytes) and what is in flight
    live = large["client_live_heap_mb"] - small["client_live_heap_mb"]
    assert live < 0.3, f"the client's live heap grew {live:.3f} MB: {small} {large}"


def test_client_flat_in_items(dask_procs: DaskProcs, tmp_path: Path) -> None:
    """The client holds a few bytes an item, not the items (decision 0065): the same 256
    cells with 1 and then 8 acquisitions of each tile a month (tiles of 4 x 4 cells: 384 and
    2,992 items over 24 months), built on the cluster, dask's logs as a user has them. Per
    added item, decision 0060's plan (each item a model with its STAC dict packed, a group's
    context unpacked on the client) held 5.9 kB of RSS after the plan and 20.9 kB at its peak
    (86.5 -> 101.3 MB and 117.5 -> 169.4 MB, 2026-12-07); decision 0065's (the plan made in the
    client, the items on disk) 885 bytes and 1.8 kB (85.2 -> 87.4 MB, 110.7 -> 115.2 MB, main
    at a5e9e2a, 2026-12-07 14:35 UTC); decision 0068's (the plan made in a child process, the
    client keeping the spool's index) 80 bytes and 1.3 kB (82.0 -> 82.2 MB, 110.4 -> 113.7
    MB, the same run)."""
    few = harness(256, dask_procs.address, tmp_path / "few", "--tile", "4", "--per-month", "1",
                  dask_log=True)  # fmt: skip
    many = harness(256, dask_procs.address, tmp_path / "many", "--tile", "4", "--per-month",
                   "8", dask_log=True)  # fmt: skip
    added = many["items"] - few["items"]
    assert (few["cells"], many["cells"]) == (256, 256) and added > 2000, (few, many)
    plan = (many["client_rss_plan_mb"] - few["client_rss_plan_mb"]) * 2**20 / added
    assert plan < 450, f"the plan holds {plan:.0f} bytes of RSS an item: {few} {many}"
    peak = (many["client_peak_mb"] - few["client_peak_mb"]) * 2**20 / added
    assert peak < 3000, f"the client's peak grew {peak:.0f} bytes an item: {few} {many}"
    assert many["scheduler_tasks_peak"] <= 40, many  # a window's worth, whatever the items


def test_the_client_keeps_no_log_of_what_it_sent(
    dask_procs: DaskProcs, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0068: a cluster build's client keeps none of the batches it sent the scheduler
    (distributed keeps the last ``distributed.admin.low-level-log-length`` of them, 1,000 by
    default: each task's graph with its arguments, a group's packed references among them);
    ``CZ_DEBUG=1`` keeps dask's own setting. Oracle: distributed's own log of the stream, after
    tasks were sent through it."""
    import dask

    from cz.build.executor import Executor
    from cz.build.options import BuildOptions

    default = dask.config.get("distributed.admin.low-level-log-length")
    assert default > 0, "dask's default changed: this test no longer tells the two apart"
    for debug, kept in (("", 0), ("1", default)):
        monkeypatch.setenv("CZ_DEBUG", debug)
        if not debug:
            monkeypatch.delenv("CZ_DEBUG")
        executor = Executor(BuildOptions(scheduler=dask_procs.address))
        try:
            client = executor.client
            assert client.gather([client.submit(abs, -k, pure=False) for k in range(5)]) == list(
                range(5)
            )
            log = client.scheduler_comm.recent_message_log
            assert log.maxlen == kept and len(log) <= kept, (debug, log.maxlen, len(log))
            if kept:
                assert len(log) > 0  # what was sent, kept: the oracle sees the log when it is on
        finally:
            executor.close()
    assert dask.config.get("distributed.admin.low-level-log-length") == default  # not changed

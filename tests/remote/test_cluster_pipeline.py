"""The pipelined pyramid on a real dask cluster (decision 0026): a level-k task starts
once the four cells below it are written, not when the whole level is, and never before them;
the small phases (the auto sample) are spread over the workers; the bytes stay the local ones.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from tests.chronozarr import test_bytes_pinned as pinned
from tests.dask_procs import DaskProcs

distributed = pytest.importorskip("distributed")

CS, N_TIME = 16, 2
GRID = 4  # level 0: 4 x 4 cells, level 1: 2 x 2, level 2: 1


@pytest.fixture(scope="module")
def client(dask_procs: DaskProcs) -> Iterator[Any]:
    with distributed.Client(dask_procs.address, timeout="20s", set_as_default=False) as c:
        yield c


class SlowSeries:
    """A cell source over a numpy series whose planes take a while on the worker (so that task
    order and overlap are visible in dask's task stream)."""

    has_mask = False
    has_coverage = False
    ndim = 4

    def __init__(self, data: np.ndarray, delay: float) -> None:
        self.data, self.delay = data, delay
        self.shape = data.shape
        self.dtype = data.dtype

    def open_cell(self, row: int, col: int, ys: slice, xs: slice, times: Any) -> Any:
        def planes(t: int) -> tuple[np.ndarray, None, None]:
            time.sleep(self.delay)
            return np.ascontiguousarray(self.data[t, :, ys, xs]), None, None

        return planes


def _spans(stream: list[dict[str, Any]], family: str) -> dict[int, tuple[float, float, str]]:
    """(start, stop, worker) of each task of ``family`` by its position in the stage."""
    out: dict[int, tuple[float, float, str]] = {}
    for rec in stream:
        key = str(rec["key"])
        if not key.startswith(f"{family}-") or "-context-" in key:
            continue
        for ss in rec["startstops"]:
            if ss["action"] == "compute":
                out[int(key.rsplit("-", 1)[1])] = (ss["start"], ss["stop"], str(rec["worker"]))
    return out


def test_upper_tasks_wait_for_their_cells_only_and_the_bytes_are_the_local_ones(
    tmp_path: Path, client: Any
) -> None:
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=7)
    kw: dict[str, Any] = dict(
        times=monthly(N_TIME), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=CS, encoding="auto",
    )  # fmt: skip
    chronozarr.encode(data, tmp_path / "local.zarr", workers=2, **kw)
    with distributed.get_task_stream(client=client) as stream:
        chronozarr.encode(SlowSeries(data, 0.1), tmp_path / "cluster.zarr", scheduler=client, **kw)
    assert pinned.digests(tmp_path / "local.zarr") == pinned.digests(tmp_path / "cluster.zarr")
    level0 = _spans(stream.data, "cz-level0")
    level1 = _spans(stream.data, "cz-level1")
    level2 = _spans(stream.data, "cz-level2")
    # one task per cell (2 worker threads, 16 cells: no time split), in row-major positions
    assert sorted(level0) == list(range(GRID * GRID)) and sorted(level1) == list(range(4))
    for pos, (start, _stop, _w) in level1.items():
        r, c = divmod(pos, 2)
        below = [level0[(2 * r + dr) * GRID + 2 * c + dc] for dr in (0, 1) for dc in (0, 1)]
        assert start >= max(stop for _s, stop, _w in below)  # never before its cells
    for start, _stop, _w in level2.values():
        assert start >= max(stop for _s, stop, _w in level1.values())
    # pipelined: the first level-1 cell is written while level 0 is still running
    assert min(s for s, _e, _w in level1.values()) < max(e for _s, e, _w in level0.values())
    # the auto sample's three tasks ran on both workers (they all once went where the context
    # was, one after the other)
    auto = _spans(stream.data, "cz-auto")
    assert len(auto) == 3 and len({w for _s, _e, w in auto.values()}) == 2


class FailOnce(SlowSeries):
    """``SlowSeries`` whose cell ``cell`` fails while ``marker`` exists (an interrupted build)."""

    def __init__(self, data: np.ndarray, delay: float, marker: Path, cell: tuple[int, int]):
        super().__init__(data, delay)
        self.marker, self.cell = marker, cell

    def open_cell(self, row: int, col: int, ys: slice, xs: slice, times: Any) -> Any:
        if (row, col) == self.cell and self.marker.exists():
            raise RuntimeError(f"cell {row}.{col} failed on purpose")
        return super().open_cell(row, col, ys, xs, times)


def test_a_pipelined_run_interrupted_with_coarser_cells_written_resumes_to_the_local_bytes(
    tmp_path: Path, client: Any
) -> None:
    """The last level-0 cell (Z-order) fails after coarser cells of the others were written; the
    re-run skips what has a summary, level 1 included, and gives the local bytes."""
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=9)
    kw: dict[str, Any] = dict(
        times=monthly(N_TIME), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=CS, encoding="star-delta",
    )  # fmt: skip
    chronozarr.encode(data, tmp_path / "local.zarr", workers=2, **kw)
    marker = tmp_path / "fail"
    marker.touch()
    target = tmp_path / "cluster.zarr"
    source = FailOnce(data, 0.1, marker, (GRID - 1, GRID - 1))
    with pytest.raises(RuntimeError, match="on purpose"):
        chronozarr.encode(source, target, scheduler=client, retries=0, resume_key="pipe", **kw)
    assert not (target / "zarr.json").exists()
    # a coarser cell already running when the failure reached the client finishes on its worker
    # (a running task is not interrupted); wait for it, so the re-run's task stream below holds
    # the re-run's tasks only and the summaries listed are all there will be
    deadline = time.monotonic() + 60
    while any(client.processing().values()) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(client.processing().values())
    level1_done = list((target / ".cz-build" / "pipe" / "1").glob("*.json"))
    assert level1_done  # coarser cells were written before level 0 ended
    marker.unlink()
    with distributed.get_task_stream(client=client) as stream:
        summary = chronozarr.encode(source, target, scheduler=client, resume_key="pipe", **kw)
    assert summary.resumed
    assert len(_spans(stream.data, "cz-level1")) == 4 - len(level1_done)
    assert pinned.digests(tmp_path / "local.zarr") == pinned.digests(target)


def contexts(dask_scheduler: Any) -> list[str]:
    """(On the scheduler) the keys of the shared contexts it holds."""
    return [str(k) for k in dask_scheduler.tasks if "-context-" in str(k)]


def test_a_run_keeps_the_clients_stream_to_the_scheduler(tmp_path: Path, client: Any) -> None:
    """The end of a run releases the shared context and never loses the client: the forced
    cancel it used to send recursed into finished, released tasks, tripped an assertion in the
    scheduler, which dropped the client's stream; the client reconnected, and the reconnect
    still in flight at ``client.close()`` leaked a socket (a ResourceWarning in a later test)."""
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=3)
    kw: dict[str, Any] = dict(
        times=monthly(N_TIME), bands=["a", "b"], crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=CS, encoding="auto",
    )  # fmt: skip
    comm = client.scheduler_comm
    before = set(client.run_on_scheduler(contexts))  # an earlier test's failed run may hold one
    for run in range(2):  # the auto sample and the pyramid: several runs, each with a context
        chronozarr.encode(data, tmp_path / f"s{run}.zarr", scheduler=client, **kw)

    def client_actions(dask_scheduler: Any, cid: str = client.id) -> list[str]:
        return [e.get("action") for _t, e in dask_scheduler.get_events(cid) if isinstance(e, dict)]

    actions = client.run_on_scheduler(client_actions)
    assert "remove-client" not in actions, actions
    assert client.scheduler_comm is comm and client.status == "running"
    # the released contexts are forgotten (the release travels on the batched stream: poll)
    deadline = time.monotonic() + 10
    while (
        leftovers := set(client.run_on_scheduler(contexts)) - before
    ) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not leftovers

"""A streamed cluster build killed mid-stream resumes to the local bytes (decisions 0017, 0049),
on a real dask scheduler and workers.

The client is a child process that SIGKILLs itself (no cleanup, no ``finally``: as a crash or an
OOM kill would) after its N-th level-0 result, at several points of the stream: the first cell,
mid-level 0 with coarser cells written, and near its end. Each time the same command re-run in
this process finds the tasks whose summaries were written, runs the rest, and the store is the
one the local build writes, byte for byte (the oracle: ``encode`` on local threads over the
same numpy series).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import chronozarr
from tests.chronozarr import test_bytes_pinned as pinned
from tests.dask_procs import DaskProcs

distributed = pytest.importorskip("distributed")

CS, N_TIME, GRID, SEED = 16, 2, 8, 11  # 64 level-0 cells; levels of 8, 4, 2, 1 cells a side
KW = dict(
    bands=["a", "b"], crs="EPSG:32631", transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0],
    chunk_size=CS, encoding="star-delta",
)  # fmt: skip
REPO = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import distributed
    import chronozarr
    from tests.conftest import monthly, synthetic_series
    from tests.remote.test_cluster_pipeline import SlowSeries
    from tests.remote.test_cluster_stream_resume import CS, GRID, KW, N_TIME, SEED

    address, target, kill_after = sys.argv[1], sys.argv[2], int(sys.argv[3])
    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=SEED)
    seen = [0]

    def on_task(_result):
        seen[0] += 1
        if seen[0] == kill_after:  # a crash: nothing of this process runs after it
            os.kill(os.getpid(), signal.SIGKILL)

    with distributed.Client(address, timeout="20s", set_as_default=False) as client:
        chronozarr.encode(SlowSeries(data, 0.02), target, scheduler=client, resume_key="stream",
                          on_task=on_task, times=monthly(N_TIME), **KW)
    """
)


@pytest.fixture(scope="module")
def client(dask_procs: DaskProcs) -> Iterator[Any]:
    with distributed.Client(dask_procs.address, timeout="20s", set_as_default=False) as c:
        yield c


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    from tests.conftest import monthly, synthetic_series

    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=SEED)
    out = tmp_path_factory.mktemp("local") / "local.zarr"
    chronozarr.encode(data, out, workers=2, times=monthly(N_TIME), **KW)
    return pinned.digests(out)


@pytest.mark.parametrize("kill_after", [1, 24, 56])
def test_a_client_killed_mid_stream_resumes_to_the_local_bytes(
    kill_after: int, tmp_path: Path, client: Any, dask_procs: DaskProcs, local: dict[str, str]
) -> None:
    from tests.conftest import monthly, synthetic_series
    from tests.remote.test_cluster_pipeline import SlowSeries

    target = tmp_path / "cluster.zarr"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    child = subprocess.run(
        [sys.executable, "-c", CHILD, dask_procs.address, str(target), str(kill_after)],
        capture_output=True, text=True, timeout=120, cwd=REPO, env=env,
    )  # fmt: skip
    assert child.returncode == -signal.SIGKILL, child.stderr[-3000:]
    assert not (target / "zarr.json").exists()  # no root: no reader sees the partial
    written = list((target / ".cz-build" / "stream" / "0").glob("*.json"))
    assert kill_after <= len(written) < GRID * GRID  # killed with level-0 cells still to come
    data = synthetic_series(N_TIME, 2, GRID * CS, GRID * CS, "uint16", seed=SEED)
    summary = chronozarr.encode(
        SlowSeries(data, 0.0), target, scheduler=client, resume_key="stream",
        times=monthly(N_TIME), **KW,
    )  # fmt: skip
    assert summary.resumed
    assert pinned.digests(target) == local

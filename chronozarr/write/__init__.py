"""Writing a store (spec 2-9, 14): ``encode`` a new store, ``append`` timesteps to one.

Both write per cell and level (level 0 from the input, each coarser level from the one below
read back from the target, spec 6), through one runner that executes the per-cell tasks on local
threads or on a dask.distributed cluster, and finish with the metadata commit of spec 9: every
chunk object, then coordinates and volatility, then every zarr.json below the root, the root
last. A resumable run keeps one summary per finished task under ``.cz-build/<key>/`` (decision
0017); an append keeps the pre-append volatility in its journal (decision 0020).

The modules are private; this is the surface (the toolkit, the benchmarks and the tests use the
runner and the cell-source protocol of :func:`is_cell_source`).
"""

from __future__ import annotations

from chronozarr.write._append import append
from chronozarr.write._cell_tasks import ArrayInput, is_cell_source, level0_task
from chronozarr.write._cells import split_tasks
from chronozarr.write._encode import EncodeSummary, encode
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner, Stage
from chronozarr.write._worklog import WorkLog, clear_work

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_WORKER_TIMEOUT",
    "ArrayInput",
    "EncodeSummary",
    "Runner",
    "Stage",
    "WorkLog",
    "append",
    "clear_work",
    "encode",
    "is_cell_source",
    "level0_task",
    "split_tasks",
]

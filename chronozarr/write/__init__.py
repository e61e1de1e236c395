"""Writing a store (spec 2-9, 14): ``encode`` a new store, ``append`` timesteps to one.

Each makes a plan (:class:`WritePlan`): one :class:`Stage` of cell tasks per level (level 0
from the input, each coarser level from the one below read back from the target, spec 6) and
the commit of spec 9 (every chunk object, then coordinates and volatility, then every zarr.json
below the root, the root last). One :class:`Runner` executes the stages on local threads or on
a dask.distributed cluster, then the plan commits. A resumable run keeps one summary per finished task under ``.cz-build/<key>/`` (decision
0017); an append keeps the pre-append volatility in its journal (decision 0020).

The modules are private; this is the surface (the toolkit, the benchmarks and the tests use the
runner and the cell-source protocol of :func:`is_cell_source`).
"""

from __future__ import annotations

from chronozarr.write._append import AppendSummary, append
from chronozarr.write._cell_tasks import ArrayInput, is_cell_source, level0_task
from chronozarr.write._cells import split_tasks
from chronozarr.write._encode import EncodeSummary, encode
from chronozarr.write._plan import Stage, WritePlan
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner, RunOptions
from chronozarr.write._worklog import WorkLog, clear_work

__all__ = [
    "DEFAULT_RETRIES",
    "DEFAULT_WORKER_TIMEOUT",
    "AppendSummary",
    "ArrayInput",
    "EncodeSummary",
    "RunOptions",
    "Runner",
    "Stage",
    "WorkLog",
    "WritePlan",
    "append",
    "clear_work",
    "encode",
    "is_cell_source",
    "level0_task",
    "split_tasks",
]

"""The cost model of a build, in one place (decision 0050): the constants ``cz build --dry-run``
prints its size from and ``bench/scale_model.py`` (docs/scale.md) writes its tables from, each
with the measurement it was calibrated on, and :func:`plan_size`: a plan's cells, tasks, bytes,
PUT requests and CPU-hours before anything starts.

Pure arithmetic on the plan's grid and months; no I/O. A new measurement changes a constant
here, and both the dry run and docs/scale.md's tables follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from cz.plan.grid import GridPlan

if TYPE_CHECKING:
    from cz.plan.model import Plan

__all__ = [
    "BYTES_PER_CELL_MONTH",
    "CALIBRATION_BANDS",
    "CALIBRATION_CELL_PX",
    "CLIENT_BASE_MB",
    "CLIENT_BYTES_PER_TASK",
    "CPU_S_PER_CELL_MONTH",
    "DATA_RATIO",
    "DATA_SHARE",
    "FOOTPRINTS_KEPT",
    "FOOTPRINT_KB",
    "ITEMS_FACTOR",
    "ITEMS_PER_CELL_MONTH",
    "LEVEL0_SHARE",
    "PLANE_RATIO",
    "PLAN_KB_PER_ITEM",
    "PRICE_EGRESS_GB",
    "PRICE_GB_MONTH",
    "PRICE_GET_1K",
    "PRICE_PUT_1K",
    "SAMPLE_CELLS",
    "PlanSize",
    "cpu_seconds",
    "plan_size",
    "size_of",
]

# --- measured (docs/scale.md, "Inputs"; docs/benchmarks-archive.md, "Build on a dask cluster":
# ``python bench/bench_cluster.py --size 1024 --months 4 --chunk 256``, 1 worker, the demo
# catalog with 2 items a month over each block) -------------------------------------------------

#: Worker CPU seconds per level-0 cell-month of CALIBRATION_CELL_PX px square and
#: CALIBRATION_BANDS bands (composite, encode, its share of the upper levels): the marginal
#: 0.082 s per 256 px cell-month (4x AOI minus 1x) times 4 for the pixels.
CPU_S_PER_CELL_MONTH = 0.33
CALIBRATION_CELL_PX = 512
CALIBRATION_BANDS = 4
#: Stored bytes per level-0 cell-month over every level (data, mask, coverage): 406 KiB per
#: 256 px cell-month times 4.
BYTES_PER_CELL_MONTH = 1.66e6
#: Level 0's share of the store's bytes (the pyramid is 1/4 + 1/16 + ... of level 0).
LEVEL0_SHARE = 0.76
#: Level 0's data array's share of the store's bytes (mask and coverage compress to little).
DATA_SHARE = 0.76

#: A cluster build's client (decisions 0049, 0060, 0065, 0068; docs/scale.md, "After decision
#: 0068": ``python bench/scale_harness.py sweep``, 2026-12-07): its peak RSS at 1,024 level-0
#: cells less the other parts there (interpreter, libraries, dask client, what is in flight);
#: the plan's RSS per item (the spool's index and each month's item indices, the plan made in a
#: child process: (82.9 - 81.2) MB / 24,000 items, the harness's 10^5-cell catalog planned in a
#: fresh process with the client's imports; 0.55 kB when the client planned, 4.7 kB with
#: decision 0060's packed models, 15.3 kB before); a footprint kept (decision 0060: ~5 kB of
#: GEOS and Python objects, at most :data:`FOOTPRINTS_KEPT`); per task ((0.465 - 0.387) MB /
#: 1,024 tasks, the runner's live heap, ``--trace``; 81 bytes from the peaks at 10^4 and 10^5
#: cells, decision 0068).
CLIENT_BASE_MB = 117.2
PLAN_KB_PER_ITEM = 0.07
FOOTPRINT_KB = 4.7
FOOTPRINTS_KEPT = 1024
CLIENT_BYTES_PER_TASK = 80.0

# --- assumed (docs/scale.md, "Inputs") ------------------------------------------------------

#: Items per level-0 cell-month over a real Sentinel-2 region (a 512 px cell is 5.12 km; a
#: 100 km x 100 km region of ~400 cells meets ~4 tiles x 6 acquisitions a month).
ITEMS_PER_CELL_MONTH = 0.06

#: CPU grows with the items read: Sentinel-2 at mid-latitudes gives about 6 acquisitions a month
#: where two orbits overlap, 3 times the calibration catalog's 2.
ITEMS_FACTOR = 3.0
#: zstd stored / raw bytes on real Sentinel-2 uint16 chunks (spec 8: 1,376,469 / 2,097,152).
DATA_RATIO = 0.66
#: Mask and coverage planes are mostly runs of one value; assumed stored / raw.
PLANE_RATIO = 0.05
#: Cells the ``auto`` temporal choice samples (spec 4.3): one task each, before level 0.
SAMPLE_CELLS = 3
#: Amazon S3 Standard, us-east-1 list prices (docs/scale.md, "Prices"): storage per GB-month,
#: PUT and GET per 1,000 requests, egress to the internet per GB.
PRICE_GB_MONTH = 0.023
PRICE_PUT_1K = 0.005
PRICE_GET_1K = 0.0004
PRICE_EGRESS_GB = 0.09


def cpu_seconds(
    pixels: float, months: int, bands: int, items_factor: float = ITEMS_FACTOR
) -> float:
    """Worker CPU seconds to composite and write ``pixels`` level-0 pixels over ``months``
    months with ``bands`` bands: the calibrated cost per cell-month, scaled by the pixels and
    the bands (decoding and compositing are per pixel and band) and the items factor."""
    per_pixel = CPU_S_PER_CELL_MONTH / CALIBRATION_CELL_PX**2 / CALIBRATION_BANDS
    return pixels * months * bands * per_pixel * items_factor


class PlanSize(BaseModel):
    """What a planned build costs before it starts (``cz build --dry-run``, decision 0050)."""

    cells: int  # level 0
    cells_all_levels: int
    months: int
    cell_months: int  # level-0 cells x months
    tasks: int  # level-0 + upper-level tasks + the auto sample's (at least: see plan_size)
    level0_tasks: int
    upper_tasks: int
    sample_tasks: int
    bytes: int  # the store, estimated (cz.plan.estimate)
    puts: int  # PUT requests: the store's objects, and the work log's on a cluster
    cpu_hours: float
    basis: str


def plan_size(
    grid: GridPlan,
    months: int,
    bands: int,
    *,
    objects: int,
    stored_bytes: int,
    encoding: str,
    cluster: bool,
) -> PlanSize:
    """The size of a build of ``months`` months on ``grid`` (see :class:`PlanSize`).

    Tasks: one per level-0 cell (its whole series) and one per upper-level cell (spec 6), plus
    one per sampled cell when the encoding is ``auto`` (spec 4.3): a lower bound, as a level
    with fewer cells than twice the worker threads is split in (cell, time group) tasks, which
    the plan cannot know (the threads are the cluster's). A cluster build (decision 0017) also
    PUTs its work log: ``started.json`` and one summary per task.
    The work log's PUTs: ``started.json``, one summary per level-0 and upper task, and the
    ``auto`` choice (``chronozarr.write``'s work prefix).
    """
    level0 = grid.cells
    upper = grid.cells_all_levels - level0
    sample = min(SAMPLE_CELLS, level0) if encoding == "auto" else 0
    tasks = level0 + upper + sample
    pixels = grid.shape[0] * grid.shape[1]
    cpu = cpu_seconds(pixels, months, bands)
    return PlanSize(
        cells=level0,
        cells_all_levels=grid.cells_all_levels,
        months=months,
        cell_months=level0 * months,
        tasks=tasks,
        level0_tasks=level0,
        upper_tasks=upper,
        sample_tasks=sample,
        bytes=stored_bytes,
        puts=objects + (1 + level0 + upper + (1 if sample else 0) if cluster else 0),
        cpu_hours=cpu / 3600,
        basis=(
            f"CPU: {CPU_S_PER_CELL_MONTH} s per {CALIBRATION_CELL_PX} px cell-month of "
            f"{CALIBRATION_BANDS} bands (measured with 2 items a month, bench/bench_cluster.py) "
            f"x {ITEMS_FACTOR:g} for ~6 acquisitions a month, scaled by pixels and bands; "
            "excludes waiting on network reads (docs/scale.md). Tasks: one per cell and level, "
            "more where a level has fewer cells than twice the worker threads. PUTs: one per "
            "store object" + ("; and the work log's summaries" if cluster else "")
        ),
    )


def size_of(plan: Plan, *, cluster: bool) -> PlanSize:
    """:func:`plan_size` of a plan: its grid, periods, bands, estimated store and encoding."""
    est = plan.estimate
    return plan_size(
        plan.grid,
        len(plan.months),
        est.bands,
        objects=est.objects,
        stored_bytes=est.estimated_bytes,
        encoding=str(plan.store["encoding"]),
        cluster=cluster,
    )

"""Scale harness: ``cz build --scheduler`` over a huge synthetic region with no pixel work.

What grows with the region on the client, the scheduler and the workers (decision 0058) is
measured here without reading a pixel, so 10^3-10^5 level-0 cells x 120 months fit this machine:

- **the catalog** is synthetic (:func:`write_catalog`): a local ItemCollection of tiles of
  ``--tile`` x ``--tile`` cells, ``--per-month`` acquisitions of every tile a month, Sentinel-2
  STAC items whose assets are never opened; the recipe over it is planned by ``cz.plan`` as any
  recipe is (the plan's items are real plan items);
- **the pixels** are skipped: the cell source's composite is :func:`tiny_block` (a constant
  block, every item of the block reported read, as a real composite reports them), so each
  level-0 task runs the real writer over tiny planes (``--chunk`` px cells) and returns the
  real summary;
- **the writer** is skipped by default (``--pixels none``): the level-0 task returns the
  summary a real one returns (the items touching the cell, by index), an upper task returns an empty
  one, so what is measured is the orchestration (plan, contexts, submission, summaries,
  metadata); ``--pixels tiny`` runs the real writer over the tiny cells (0.3 s a cell-decade);
- **the chunks** are dropped: the target is a :class:`NullTarget`, a folder that keeps every
  metadata object (coordinates, volatility, provenance, zarr.json, the resumable work log) and
  discards chunk objects of the data, mask and coverage arrays (an upper level reads them back as
  absent: the fill value). The metadata the client writes is measured as it is.

Measured per size (``sweep``): the client's peak RSS (its VmHWM, a fresh process per size) and
its RSS after the plan, the scheduler's and each worker's peak RSS (fresh processes per size),
the largest number of tasks the scheduler held (sampled every 0.2 s), the tasks submitted and
their rate, the client's wall time of plan and build, and the metadata's bytes and objects. The
catalog is written by another process (``catalog``), so the client's figures are the build's.
``run --trace`` adds the Python heap the build holds live (decision 0049), and every run prints
the client's RSS on stderr every 5% of the cells (a long run's figures as it goes).

Usage: python bench/scale_harness.py sweep --cells 1000,10000 [--months 120] [--workers 2]
       python bench/scale_harness.py run --cells N --scheduler ADDRESS [--trace]  (JSON out)
       python bench/scale_harness.py catalog --cells N --work DIR  (the catalog only)
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from chronozarr.io import LocalStore  # noqa: E402
from cz.build.options import Progress  # noqa: E402

CRS = "EPSG:32631"
X0, Y1 = 500000.0, 5100000.0  # the region's north-west corner (UTM 31N)
RES = 10.0

RECIPE = """\
name: scale-harness
catalog:
  path: items.json
  collection: sentinel-2-l2a
aoi:
  bbox: {aoi}
grid:
  crs: 32631
  resolution: 10
time:
  start: "{start}"
  end: "{end}"
bands:
  - name: red
    asset: red
    common_name: red
  - name: nir
    asset: nir
    common_name: nir
mask:
  asset: scl
  keep: [4, 5, 6, 7, 11]
gap_fill:
  method: carry-forward
  max_age: 2
store:
  dtype: uint16
  chunk_size: {chunk}
  encoding: star-delta
"""


def _lonlat_inside(x0: float, y0: float, x1: float, y1: float) -> list[float]:
    """The lon/lat box just inside the projected rectangle (the grid stays inside it)."""
    from pyproj import Transformer

    tr = Transformer.from_crs(CRS, "EPSG:4326", always_xy=True)
    pts = [tr.transform(x, y) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    lons = sorted(p[0] for p in pts)
    lats = sorted(p[1] for p in pts)
    return [lons[1] + 1e-6, lats[1] + 1e-6, lons[2] - 1e-6, lats[2] - 1e-6]


def write_catalog(
    folder: Path, cells: int, months: int, chunk: int, tile: int, per_month: int
) -> Path:
    """A recipe over ``cells`` level-0 cells (a square of whole cells) and its synthetic
    catalog: tiles of ``tile`` x ``tile`` cells, ``per_month`` acquisitions of each a month
    (their asset files are placeholders, never opened). Returns the recipe's path."""
    from cz.demo_catalog import s2_item

    side = math.isqrt(cells)
    side += side * side < cells
    cell_m = chunk * RES
    tiles = math.ceil(side / tile)
    features = []
    start = datetime(2015, 1, 1, tzinfo=UTC)
    for m in range(months):
        year, month = divmod(m, 12)
        first = start.replace(year=start.year + year, month=month + 1)
        for k in range(per_month):
            when = first + timedelta(days=3 + 9 * k, hours=10)
            for ty in range(tiles):
                for tx in range(tiles):
                    item_id = f"S2_T{ty:02d}{tx:02d}_{when:%Y%m%d}_{k}"
                    base = f"scenes/{ty}-{tx}"
                    features.append(
                        s2_item(
                            item_id,
                            when,
                            tile=f"31T{ty:02d}{tx:02d}"[:8],
                            x0=X0 + tx * tile * cell_m,
                            y1=Y1 - ty * tile * cell_m,
                            size_px=tile * chunk,
                            assets={
                                "red": f"{base}/B04.tif",
                                "nir": f"{base}/B08.tif",
                                "scl": f"{base}/SCL.tif",
                            },
                            baseline="05.09",
                            cloud_cover=5.0,
                            orbit=8 + k,
                            scl_resolution=10.0,
                        )
                    )
    folder.mkdir(parents=True, exist_ok=True)
    for ty in range(tiles):  # never read, but a cluster's pre-flight opens a few (decision 0047)
        for tx in range(tiles):
            (folder / "scenes" / f"{ty}-{tx}").mkdir(parents=True, exist_ok=True)
            for name in ("B04.tif", "B08.tif", "SCL.tif"):
                (folder / "scenes" / f"{ty}-{tx}" / name).write_bytes(b"never read")
    (folder / "items.json").write_text(
        json.dumps({"type": "FeatureCollection", "features": features})
    )
    end_year, end_month = divmod(months - 1, 12)
    aoi = _lonlat_inside(X0, Y1 - side * cell_m, X0 + side * cell_m, Y1)
    text = RECIPE.format(
        aoi=json.dumps(aoi), start="2015-01", end=f"{2015 + end_year}-{end_month + 1:02d}",
        chunk=chunk,
    )  # fmt: skip
    path = folder / "recipe.yaml"
    path.write_text(text)
    return path


def tiny_block(task: Any, ctx: Any) -> Any:
    """A (month, block) composite that reads nothing: constant values, full coverage, every
    item of the block reported read (what a real composite's summary carries)."""
    from cz.build.tasks import BlockResult, spill_codec

    y0, y1, x0, x1 = task.window
    n_band = len(ctx.load.bands)
    values = np.full((n_band, y1 - y0, x1 - x0), 1000 + task.t, dtype=np.dtype(ctx.dtype))
    coverage = np.ones((y1 - y0, x1 - x0), dtype=np.uint8)
    codec = spill_codec()
    return BlockResult(
        task.t, task.row, task.col, bytes(codec.encode(values)), bytes(codec.encode(coverage)),
        [ref.id for ref in task.items], len({ref.solar_day for ref in task.items}), [],
    )  # fmt: skip


def level0_stub(ctx: Any, task: tuple[Any, ...]) -> Any:
    """Level 0 of one (cell, time range) without the writer (``--pixels none``): the summary a
    real task returns (:meth:`cz.build.sources.CellPlanes.summary`: the items touching the cell
    each month, by their index in the month, as read), no composite, no chunk."""
    from chronozarr.write._cells import CellResult

    (r, c), times = task[0], task[1]
    source = task[2] if len(task) > 2 and task[2] is not None else ctx.source
    source = getattr(source, "source", source)  # the build's SourceArray wraps it
    read = {t: source.members_of(t, r, c) for t in times}
    read = {t: m for t, m in read.items() if m}
    cs = ctx.layout.cs
    summary = {
        "months": len(times),
        "items_read": {str(t): sorted(m) for t, m in read.items()},
        "observations": {str(t): len(m) for t, m in read.items()},
        "skipped": [],
        "valid": cs * cs * len(read),
        "filled": 0,
    }
    return CellResult(r, c, {}, 0.0, 0, summary)


def upper_stub(ctx: Any, task: tuple[tuple[int, int], range]) -> Any:
    """An upper level's task without the writer (``--pixels none``)."""
    from chronozarr.write._cells import CellResult

    (r, c), _times = task
    return CellResult(r, c, {})


_CHUNK = re.compile(r"^(\d+/(data|mask|coverage)/c/|\.cz-build/[^/]+/\d+/)")


class NullTarget(LocalStore):
    """A folder that keeps the metadata and drops the chunk objects of the data, mask and
    coverage arrays (absent when read back: the fill value) and the tasks' resume summaries
    (decision 0017; a harness run is not resumed). Counts what it dropped."""

    def __init__(self, root: str | os.PathLike[str]):
        super().__init__(root)
        self.dropped = [0, 0]  # objects, bytes

    def put(self, key: str, data: bytes) -> None:
        if _CHUNK.match(key):
            self.dropped[0] += 1
            self.dropped[1] += len(data)
            return
        super().put(key, data)

    def size(self, key: str) -> int | None:
        return 1 if _CHUNK.match(key) else super().size(key)


def _rss_kb(field: str = "VmHWM", pid: str = "self") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1])
    return 0


def _scheduler_tasks(dask_scheduler: Any) -> int:
    return len(dask_scheduler.tasks)


class _Sampler(threading.Thread):
    """The scheduler's task count every 0.2 s: its largest value."""

    def __init__(self, client: Any) -> None:
        super().__init__(daemon=True)
        self.client, self.peak, self.stop = client, 0, threading.Event()

    def run(self) -> None:
        while not self.stop.wait(0.2):
            try:
                self.peak = max(self.peak, int(self.client.run_on_scheduler(_scheduler_tasks)))
            except Exception:  # the client closing at the end
                return


class _LiveHeap(Progress):
    """With ``trace``, the Python heap the build holds live (``tracemalloc`` started as the
        build starts, so the plan is not counted; a full garbage collection first, so that cycles
        not yet collected are not counted), sampled when half and nine tenths of the level-0 cells
        are written: :attr:`live` is the larger, and the lines whose allocations grew most between
    the two marks go to stderr (``trace:``). Every 5% of the cells, a line on stderr (cells
        written, seconds, the client's RSS and peak RSS so far): a long run's figures as it goes."""

    def __init__(self, trace: bool) -> None:
        self.trace, self.live, self.total, self.done, self.marks = trace, 0, 0.0, 0.0, [0.5, 0.9]
        self.said, self.clock, self.snapshot = 0, time.perf_counter(), None
        if trace:
            tracemalloc.start()

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        if phase == "cells":
            self.total = total or 0.0

    def advance(self, phase: str, amount: float = 1.0) -> None:
        if phase != "cells":
            return
        self.done += amount
        if self.total and self.done >= (self.said + 1) * self.total / 20:  # every 5%, stderr
            self.said += 1
            line = {"cells_done": round(self.done), "s": round(time.perf_counter() - self.clock),
                    "rss_mb": round(_rss_kb("VmRSS") / 1024, 1),
                    "peak_mb": round(_rss_kb() / 1024, 1)}  # fmt: skip
            print(json.dumps(line), file=sys.stderr, flush=True)
        if self.trace and self.marks and self.done >= self.marks[0] * self.total:
            self.marks.pop(0)
            gc.collect()
            self.live = max(self.live, tracemalloc.get_traced_memory()[0])
            self._diff(tracemalloc.take_snapshot())

    def _diff(self, snapshot: Any) -> None:
        """On stderr, the lines whose live allocations grew most since the previous mark
        (what grows with the cells, by where it was allocated)."""
        if self.snapshot is not None:
            for stat in snapshot.compare_to(self.snapshot, "lineno")[:12]:
                print(f"trace: {stat}", file=sys.stderr, flush=True)
        self.snapshot = snapshot


def run_one(cells: int, months: int, chunk: int, tile: int, per_month: int, scheduler: str,
            work: Path, pixels: str = "none", trace: bool = False) -> dict[str, Any]:  # fmt: skip
    """One harness build in this process (see the module docstring): its figures. The catalog
    is written by another process (its generation is not the client's); ``trace``: the Python
    heap the build holds live is measured too (:class:`_LiveHeap`; slower)."""
    import cz.build.cluster as cluster
    from cz.build import BuildOptions, build
    from cz.plan.spooled import plan_recipe_spooled
    from cz.recipe import load_recipe

    recipe_path = work / "catalog" / "recipe.yaml"
    if not recipe_path.exists():  # another process writes it: a real client reads a catalog
        subprocess.run(
            [sys.executable, __file__, "catalog", "--cells", str(cells), "--months", str(months),
             "--chunk", str(chunk), "--tile", str(tile), "--per-month", str(per_month),
             "--work", str(work)],
            check=True,
        )  # fmt: skip
    rss_start = _rss_kb("VmRSS")
    clock = time.perf_counter()
    recipe = load_recipe(recipe_path)
    out = work / "store.zarr"
    plan = plan_recipe_spooled(recipe, out=str(out))  # as cz build --scheduler plans
    plan_s = time.perf_counter() - clock
    rss_plan = _rss_kb("VmRSS")
    dropped: list[NullTarget] = []

    def target(_recipe: Any, where: str, _n: int) -> NullTarget:
        dropped.append(NullTarget(where))
        return dropped[-1]

    made = cluster.region_source
    # the stubs by their module's name, not ``__main__``'s: pickled by reference (a few bytes a
    # task, as the library's own functions are), not by value (~3 kB a task)
    from bench import scale_harness as harness

    def region_source(*args: Any) -> Any:
        source = made(*args)
        source.composite = harness.tiny_block
        return source

    if pixels == "none":  # the stages' functions, pickled by reference to this module
        import chronozarr.write._encode_plan as encode_plan

        setattr(encode_plan, "level0_task", harness.level0_stub)  # noqa: B010
        setattr(encode_plan, "upper_task", harness.upper_stub)  # noqa: B010
    setattr(cluster, "_target", target)  # noqa: B010
    setattr(cluster, "region_source", region_source)  # noqa: B010
    from distributed import Client

    with Client(scheduler, set_as_default=False) as probe:
        sampler = _Sampler(probe)
        sampler.start()
        progress = _LiveHeap(trace)
        clock = time.perf_counter()
        build(recipe, out=str(out), plan=plan, options=BuildOptions(scheduler=scheduler),
              progress=progress)  # fmt: skip
        build_s = time.perf_counter() - clock
        tracemalloc.stop()
        sampler.stop.set()
        sampler.join()
    grid = plan.grid
    meta = [(k, n) for k, n in LocalStore(out).list("")]
    upper = sum(lv.grid[0] * lv.grid[1] for lv in grid.levels[1:])
    return {
        "cells": grid.cells, "months": len(plan.months),
        "items": sum(len(m.items) for m in plan.months),
        "tasks": grid.cells + upper,
        "plan_s": round(plan_s, 2), "build_s": round(build_s, 2),
        "tasks_per_s": round((grid.cells + upper) / build_s, 1),
        "client_rss_start_mb": round(rss_start / 1024, 1),
        "client_rss_plan_mb": round(rss_plan / 1024, 1),
        "client_peak_mb": round(_rss_kb() / 1024, 1),
        "scheduler_tasks_peak": sampler.peak,
        **({"client_live_heap_mb": round(progress.live / 2**20, 3)} if trace else {}),
        "metadata_objects": len(meta), "metadata_bytes": sum(n for _k, n in meta),
        "root_bytes": (out / "zarr.json").stat().st_size,
    }  # fmt: skip


def sweep(sizes: list[int], args: argparse.Namespace) -> list[dict[str, Any]]:
    """Each size on a fresh scheduler and workers, its client a fresh process."""
    from bench.bench_cluster import Cluster

    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
    )  # the workers import tiny_block from this file
    rows = []
    for cells in sizes:
        with tempfile.TemporaryDirectory(prefix="cz-scale-") as tmp:
            cl = Cluster(args.workers, Path(tmp))
            try:
                cmd = [
                    sys.executable, __file__, "run", "--cells", str(cells), "--months",
                    str(args.months), "--chunk", str(args.chunk), "--tile", str(args.tile),
                    "--per-month", str(args.per_month), "--scheduler", cl.address,
                    "--work", tmp, "--pixels", args.pixels, *(["--trace"] if args.trace else []),
                ]  # fmt: skip
                done = subprocess.run(cmd, capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(f"the harness run failed:\n{done.stderr[-5000:]}")
                for line in done.stderr.splitlines():  # the run's RSS every 5%, its trace
                    if line.startswith(('{"cells_done"', "trace:")):
                        print(line, file=sys.stderr, flush=True)
                row = json.loads(done.stdout.strip().splitlines()[-1])
                row["worker_peak_mb"] = [round(kb / 1024, 1) for kb in cl.worker_rss_kb()]
                row["scheduler_peak_mb"] = round(_rss_kb(pid=str(cl.scheduler.pid)) / 1024, 1)
            finally:
                cl.stop()
        print(json.dumps(row), flush=True)
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mode", choices=("run", "sweep", "catalog"))
    ap.add_argument("--cells", default="1000", help="level-0 cells (sweep: comma-separated)")
    ap.add_argument("--months", type=int, default=120)
    ap.add_argument("--chunk", type=int, default=16, help="cell size in pixels (tiny)")
    ap.add_argument("--tile", type=int, default=32, help="tile size in cells")
    ap.add_argument("--per-month", type=int, default=2, help="acquisitions of a tile a month")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--pixels", choices=("none", "tiny"), default="none",
        help="none: the cell tasks composite (tiny_block) and summarise but write nothing; "
        "tiny: the real writer over --chunk px cells (slow: about 0.3 s a cell-decade here)",
    )  # fmt: skip
    ap.add_argument("--scheduler")
    ap.add_argument("--work")
    ap.add_argument("--trace", action="store_true", help="trace the client's build heap")
    args = ap.parse_args(argv)
    if args.mode == "catalog":
        write_catalog(Path(args.work) / "catalog", int(args.cells), args.months, args.chunk,
                      args.tile, args.per_month)  # fmt: skip
        return
    if args.mode == "run":
        row = run_one(int(args.cells), args.months, args.chunk, args.tile, args.per_month,
                      args.scheduler, Path(args.work), args.pixels, args.trace)  # fmt: skip
        print(json.dumps(row), flush=True)
        return
    sweep([int(c) for c in args.cells.split(",")], args)


if __name__ == "__main__":
    main()

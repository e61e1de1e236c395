"""The paper model of docs/scale.md: objects, bytes per level, build CPU-hours, cluster size,
object-store cost and browser bytes, from the per-cell costs bench_cluster.py measures.

Every input is an argument; the defaults are the cost model's constants in ``cz.plan.costs``
(decision 0050: the figures of docs/benchmarks-archive.md, "Build on a dask cluster", and the
list prices docs/scale.md states, each with its calibration), the same ones ``cz build
--dry-run`` prints its CPU-hours from. The output is the markdown of the model's tables. Pure
arithmetic, no I/O.

Usage: python bench/scale_model.py [--cpu-per-cell-month 0.33] [--bytes-per-cell-month 1.66e6]
       [--level0-share 0.76] [--data-share 0.76] [--items-factor 3] ...
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from cz.plan import costs


def level_cells(side_px: int, cs: int) -> list[int]:
    """Cells per level of a square grid (spec 2.1, 6: halve until one cell holds the level)."""
    out = []
    px = side_px
    while True:
        n = math.ceil(px / cs)
        out.append(n * n)
        if px <= cs:
            return out
        px = math.ceil(px / 2)


def fmt_bytes(n: float) -> str:
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n:.0f} B"


def client_peak(args: argparse.Namespace, items: float, tasks: int) -> tuple[float, ...]:
    """The client's peak RSS of a cluster build of ``items`` planned items and ``tasks`` tasks,
    in bytes, in four parts (decisions 0049, 0060, 0065): the fixed part (interpreter,
    libraries, dask client, what is in flight), the plan (the spool's index and what planning
    left in the allocator), the footprints kept (at most ``--footprints-kept``) and the runner
    (a few bytes a task: the folded results' arrays)."""
    return (
        args.client_base_mb * 1e6,
        items * args.plan_kb_per_item * 1e3,
        min(items, args.footprints_kept) * args.footprint_kb * 1e3,
        tasks * args.client_bytes_per_task,
    )


def client_memory(args: argparse.Namespace, level0: int, tasks: int) -> tuple[float, ...]:
    """:func:`client_peak` of a region (items = level-0 cells x months x items per cell-month,
    an assumption)."""
    return client_peak(args, level0 * args.months * args.items_per_cell_month, tasks)


def print_client_at(args: argparse.Namespace) -> None:
    """The client's predicted peak at each ``ITEMS:TASKS`` of ``--client-at`` (a harness run's
    plan items and tasks, docs/scale.md)."""
    print("| items, tasks | client peak RSS predicted: fixed + plan + footprints + runner |")
    print("|---|---:|")
    for pair in args.client_at.split(","):
        items, tasks = (int(v) for v in pair.split(":"))
        parts = client_peak(args, items, tasks)
        text = " + ".join(f"{x / 1e6:.1f}" for x in parts)
        print(f"| {items:,}, {tasks:,} | {sum(parts) / 1e6:.1f} MB = {text} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cpu-per-cell-month", type=float, default=costs.CPU_S_PER_CELL_MONTH)
    ap.add_argument("--bytes-per-cell-month", type=float, default=costs.BYTES_PER_CELL_MONTH)
    ap.add_argument("--level0-share", type=float, default=costs.LEVEL0_SHARE)
    ap.add_argument("--data-share", type=float, default=costs.DATA_SHARE)
    ap.add_argument("--items-factor", type=float, default=costs.ITEMS_FACTOR)
    ap.add_argument("--months", type=int, default=120)
    ap.add_argument("--cs", type=int, default=costs.CALIBRATION_CELL_PX)
    ap.add_argument("--shard-time", type=int, default=12)
    ap.add_argument("--price-gb-month", type=float, default=costs.PRICE_GB_MONTH)
    ap.add_argument("--price-put-1k", type=float, default=costs.PRICE_PUT_1K)
    ap.add_argument("--price-get-1k", type=float, default=costs.PRICE_GET_1K)
    ap.add_argument("--price-egress-gb", type=float, default=costs.PRICE_EGRESS_GB)
    # the client's memory (docs/scale.md, "After decision 0065"): a fixed part, the plan per
    # item, the footprints kept, the runner per task; items per level-0 cell-month is assumed
    ap.add_argument("--client-base-mb", type=float, default=costs.CLIENT_BASE_MB)
    ap.add_argument("--plan-kb-per-item", type=float, default=costs.PLAN_KB_PER_ITEM)
    ap.add_argument("--client-bytes-per-task", type=float, default=costs.CLIENT_BYTES_PER_TASK)
    ap.add_argument("--footprint-kb", type=float, default=costs.FOOTPRINT_KB)
    ap.add_argument("--footprints-kept", type=int, default=costs.FOOTPRINTS_KEPT)
    ap.add_argument("--items-per-cell-month", type=float, default=costs.ITEMS_PER_CELL_MONTH)
    ap.add_argument("--client-at", help="ITEMS:TASKS,...: the client's peak at each, and stop")
    args = ap.parse_args()
    if args.client_at:
        print_client_at(args)
        return
    months = args.months
    cpu = args.cpu_per_cell_month * args.items_factor
    rows = []
    for label, side in (("(a) 100 km x 100 km", 10_000), ("(b) 10^4 cells", 100 * args.cs)):
        cells = level_cells(side, args.cs)
        l0 = cells[0]
        all_cells = sum(cells)
        objects = all_cells * months * 3  # data, mask, coverage: one object per timestep
        sharded = all_cells * math.ceil(months / args.shard_time) * 3
        total = l0 * months * args.bytes_per_cell_month
        level0 = total * args.level0_share
        per_level = [level0 / 4**k for k in range(len(cells))]
        cpu_h = l0 * months * cpu / 3600
        cores_day = cpu_h / 24
        storage = total / 1e9 * args.price_gb_month
        puts = objects / 1000 * args.price_put_1k
        puts_sharded = sharded / 1000 * args.price_put_1k
        gets = (objects - cells[-1] * months * 3) / 1000 * args.price_get_1k  # upper levels
        rows.append(
            (label, side, cells, all_cells, objects, sharded, total, per_level, cpu_h, cores_day,
             storage, puts, puts_sharded, gets, client_memory(args, l0, all_cells))
        )  # fmt: skip
    print("| | " + " | ".join(r[0] for r in rows) + " |")
    print("|---|" + "---:|" * len(rows))

    def line(name: str, values: list[str]) -> None:
        print(f"| {name} | " + " | ".join(values) + " |")

    line("grid (10 m px)", [f"{r[1]:,} x {r[1]:,}" for r in rows])
    line(
        "levels; cells per level",
        [f"{len(r[2])}; {', '.join(f'{c:,}' for c in r[2])}" for r in rows],
    )
    line("level-0 cell-months", [f"{r[2][0] * months:,}" for r in rows])
    line("chunk objects, unsharded", [f"{r[4]:,}" for r in rows])
    line(f"shard objects, shard_time {args.shard_time}", [f"{r[5]:,}" for r in rows])
    line("bytes, all levels", [fmt_bytes(r[6]) for r in rows])
    line(
        "bytes per level 0, 1, 2, ...",
        [", ".join(fmt_bytes(b) for b in r[7][:4]) + ", ..." for r in rows],
    )
    line("build CPU-hours", [f"{r[8]:,.0f}" for r in rows])
    line("cores busy for a one-day build", [f"{r[9]:.1f}" for r in rows])
    line("storage per month", [f"${r[10]:,.2f}" for r in rows])
    line(
        "PUTs of the build (unsharded / sharded)", [f"${r[11]:,.2f} / ${r[12]:,.2f}" for r in rows]
    )
    line("GETs of the build (upper levels read back)", [f"${r[13]:,.2f}" for r in rows])
    line(
        "client peak RSS: fixed + plan (items) + footprints kept + runner (tasks)",
        [f"{fmt_bytes(sum(r[14]))} = {' + '.join(fmt_bytes(x) for x in r[14])}" for r in rows],
    )
    # a city-sized view (20 km) in a 1280 x 800 viewport: level 1 (20 m, 1000 px), 3 x 3 cells
    chunk = args.bytes_per_cell_month * args.data_share  # one data chunk of a full cell
    scrub = 9 * months * chunk
    print()
    print(
        f"Browser, scrubbing a 20 km x 20 km city view through {months} months at level 1 "
        f"(20 m: 1000 x 1000 px, 3 x 3 cells of {args.cs}): 9 data chunks of about "
        f"{fmt_bytes(chunk)} per timestep, {fmt_bytes(9 * chunk)} per frame, "
        f"{fmt_bytes(scrub)} for the decade (egress at ${args.price_egress_gb}/GB: "
        f"${scrub / 1e9 * args.price_egress_gb:.2f} per session); one level coarser (40 m, 2 x 2 "
        f"cells): {fmt_bytes(4 * months * chunk)}."
    )


if __name__ == "__main__":
    main()

"""Benchmark of ``cz append --scheduler`` (decision 0022): one month appended locally vs on 2 dask
worker processes, in one run, on the same store, for an AOI of 1x and 4x area.

On the demo catalog of bench_build.py (two overlapping tiles, clouds, four bands), a store of
``months - 1`` months is built locally (untimed), copied twice, and the last month appended:

- ``local``: ``cz append`` in-process (threads; the month's composites spilled to the work
  folder, then ``chronozarr.append`` on this process: the plain alternative and the default);
- ``2 workers``: ``cz append --scheduler`` against a real ``dask scheduler`` and two
  single-thread workers on 127.0.0.1 started as ``cz worker`` starts them (bench_cluster.py's
  ``Cluster``: the profiler off, dask's nanny); the workers composite the month per cell
  (gap-fill's look-back read from the store), and write the chunks to the store folder
  themselves (a shared filesystem: the same disk here). The workers import the toolkit once
  before the timed run.

Measured per run, as bench_cluster.py does: wall time of the client process (imports, checks,
plan, append), its peak RSS (VmHWM), the peak bytes under its work folder (sampled every 20 ms),
the bytes it moved through read/write syscalls (``rchar + wchar``: every byte through the
client, files and sockets). The two grown stores are compared object by object.

Usage: python bench/bench_cluster_append.py [--size 512] [--months 4] [--chunk 256] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_build import RECIPE, bbox, catalog, layout_for  # noqa: E402
from bench.bench_cluster import Cluster, digest, folder_bytes, mb  # noqa: E402
from bench.common import update_section  # noqa: E402

CLIENT = """
import time
start = time.perf_counter()
import json, sys
sys.path.insert(0, {root!r})
from cz.recipe import load_recipe
from cz.build import append_months, BuildOptions
options = BuildOptions(scheduler={scheduler!r}, work_dir={work!r})
result = append_months(load_recipe({recipe!r}), [{month!r}], store={store!r}, options=options)
seconds = time.perf_counter() - start
status = open("/proc/self/status").read().splitlines()
hwm = next(int(l.split()[1]) for l in status if l.startswith("VmHWM"))
io = dict(l.split(": ") for l in open("/proc/self/io").read().splitlines())
print(json.dumps({{"seconds": seconds, "rss_kb": hwm, "bytes": result.bytes,
                  "write": result.write_seconds,
                  "io": int(io["rchar"]) + int(io["wchar"])}}))
"""


def run_append(recipe: Path, store: Path, month: str, work: Path, scheduler: str | None) -> dict:
    work.mkdir(parents=True, exist_ok=True)
    code = CLIENT.format(
        root=str(ROOT), recipe=str(recipe), store=str(store), month=month, work=str(work),
        scheduler=scheduler,
    )  # fmt: skip
    peak = [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            peak[0] = max(peak[0], folder_bytes(work))
            time.sleep(0.02)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    done.set()
    watcher.join()
    if proc.returncode != 0:
        raise SystemExit(f"client failed:\n{proc.stderr[-3000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["disk"] = peak[0]
    return result


def _warm_append() -> None:
    """Import what an append task imports beyond the build's (bench_cluster warms those)."""
    import chronozarr.write  # noqa: F401
    import cz.build.cluster_append  # noqa: F401


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--size", type=int, default=512, help="AOI side in pixels at 1x")
    ap.add_argument("--months", type=int, default=4, help="months of the grown store")
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    from cz.build import BuildOptions, build
    from cz.recipe import load_recipe

    cat = catalog(args.size, args.months)
    layout = layout_for(args.size, args.months)

    def month(i: int) -> str:  # the i-th month from 2023-04 (0-based)
        m = 4 + i - 1
        return f"{2023 + m // 12}-{m % 12 + 1:02d}"

    last = month(args.months - 1)
    before = uptime()
    rows: dict[tuple[str, str], dict] = {}
    sides = {"1x": args.size, "4x": 2 * args.size}
    (ROOT / ".bench").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="cz-bench-append-", dir=ROOT / ".bench") as tmp:
        base = Path(tmp)
        recipes, stores = {}, {}
        for scale, side in sides.items():
            text = textwrap.dedent(RECIPE).format(
                catalog=cat, bbox=json.dumps(bbox(layout, side)), end=month(args.months - 2)
            )
            recipes[scale] = base / f"recipe-{scale}.yaml"
            recipes[scale].write_text(text.replace("chunk_size: 512", f"chunk_size: {args.chunk}"))
            stores[scale] = base / f"base-{scale}.zarr"
            build(load_recipe(recipes[scale]), out=str(stores[scale]), options=BuildOptions())
            local = base / f"local-{scale}.zarr"
            shutil.copytree(stores[scale], local)
            rows[(scale, "local")] = run_append(
                recipes[scale], local, last, base / f"w-local-{scale}", None
            )
            rows[(scale, "local")]["digest"] = digest(local)
            print(scale, "local", rows[(scale, "local")], file=sys.stderr)
        # the workers unpickle bench_cluster's warm-up function by reference: bench/ importable
        paths = [str(ROOT), os.environ.get("PYTHONPATH", "")]
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
        cluster = Cluster(2, base)
        try:
            from distributed import Client

            with Client(cluster.address, timeout="30s", set_as_default=False) as client:
                client.run(_warm_append)  # untimed, as the build's imports
            for scale in sides:
                remote = base / f"cluster-{scale}.zarr"
                shutil.copytree(stores[scale], remote)
                row = run_append(
                    recipes[scale], remote, last, base / f"w-2-{scale}", cluster.address
                )
                row["digest"] = digest(remote)
                rows[(scale, "2w")] = row
                print(scale, "2 workers", row, file=sys.stderr)
            worker_rss = cluster.worker_rss_kb()
        finally:
            cluster.stop()
    after = uptime()
    lines = [
        "| AOI | level-0 cells | run | wall time | vs local | client peak RSS | client "
        "work-folder peak | bytes through the client | identical to local |",
        "|---|---:|---|---:|---:|---:|---:|---:|---|",
    ]
    for scale, side in sides.items():
        cells = (-(-side // args.chunk)) ** 2
        local_row = rows[(scale, "local")]
        for key, label in (("local", "local threads"), ("2w", "2 workers")):
            r = rows[(scale, key)]
            lines.append(
                f"| {scale} | {cells} | {label} | {r['seconds']:.1f} s | "
                f"{local_row['seconds'] / r['seconds']:.2f}x | {mb(r['rss_kb'])} | "
                f"{r['disk'] / 2**20:.1f} MB | {r['io'] / 2**20:.1f} MB | "
                f"{'yes' if r['digest'] == local_row['digest'] else 'NO'} |"
            )

    def growth(mode: str, key: str) -> str:
        a, b = rows[("1x", mode)][key], rows[("4x", mode)][key]
        return f"{b / a:.2f}x" if a else ("flat (0 -> 0)" if not b else f"0 -> {b}")

    body = f"""
Command: `python bench/bench_cluster_append.py --size {args.size} --months {args.months} --chunk {args.chunk}`

Input: the demo catalog of "Build from a recipe" (two overlapping tiles, clouds, 4 bands at
10 m, SCL at 20 m), AOI {args.size} x {args.size} px (1x) and {2 * args.size} x
{2 * args.size} px (4x), chunk {args.chunk}, gap-fill carry-forward 2: a store of
{args.months - 1} months from 2023-04 built locally (untimed), then {last} appended. `local` is
`cz append` on local threads (the month's composites spilled to the work folder, the append
written by this process); `2 workers` is `cz append --scheduler` against a real
`dask scheduler` and two single-thread `dask worker` processes on 127.0.0.1 that composite the
month per cell and write the store folder themselves. One run each (no repeats). Wall time is
the client process's (imports, checks, plan, append). Bytes through the client: its
`rchar + wchar` (/proc/self/io; the source GeoTIFFs it reads in the local run included, and in
both runs the Python modules it imports).

Machine load (`uptime`), before: `{before}`; after: `{after}`. Two cores shared with the other
engineers' jobs: the wall-time ratios are disturbed by that load.

{chr(10).join(lines)}

When the AOI grows 4x, on 2 workers: client peak RSS {growth("2w", "rss_kb")}, client work-folder
peak {growth("2w", "disk")}, bytes through the client {growth("2w", "io")} (local threads:
{growth("local", "rss_kb")}, {growth("local", "disk")}, {growth("local", "io")}). Per-worker peak
RSS: {", ".join(mb(k) for k in worker_rss)} (over both AOIs).
"""
    print(body)
    if not args.no_doc:
        update_section("Append on a dask cluster", body)


if __name__ == "__main__":
    main()

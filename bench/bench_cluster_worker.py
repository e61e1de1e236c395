"""What dask's statistical profiler costs a busy build worker: ``cz worker`` against ``dask worker``.

One worker at a time (a real ``dask scheduler`` and one single-thread worker with dask's default
nanny, on 127.0.0.1) runs one task of CPU-bound work for ``--seconds``: the work of a composite
(a median over 12 observations of 4 x 256 x 256 uint16, then zstd 5, as
bench_machine_scaling.py), counting its iterations. The worker is started as ``cz worker``
(profiler off) or plain ``dask worker`` (dask's default: the profiler samples every task thread
every 10 ms from the event loop), alternating, ``--rounds`` times each. Reported: iterations per
second (best round of each; the plain alternative is ``dask worker``), and the worker's CPU per
thread during the task (task thread, event loop) and the nanny's.

Usage: python bench/bench_cluster_worker.py [--seconds 6] [--rounds 3] [--no-doc]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.bench_cluster import _thread_cpu, cz_exe, dask_exe, free_port, process_cpu  # noqa: E402
from bench.common import update_section  # noqa: E402


def busy(seconds: float) -> int:
    """Iterations of median + zstd in ``seconds`` (on the worker's task thread)."""
    import time

    import numcodecs
    import numpy as np

    a = np.random.default_rng(0).integers(0, 10000, (12, 4, 256, 256), dtype=np.uint16)
    z = numcodecs.Zstd(5)
    start, n = time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        z.encode(np.median(a, axis=0).astype(np.uint16).tobytes())
        n += 1
    return n


def trial(kind: str, seconds: float) -> dict[str, float]:
    from distributed import Client

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore"}
    env.pop("DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED", None)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    scheduler = subprocess.Popen(
        [dask_exe(), "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard",
         "--dashboard-address", "127.0.0.1:0"],
        start_new_session=True, env=env, **quiet,
    )  # fmt: skip
    start = [cz_exe(), "worker"] if kind == "cz" else [dask_exe(), "worker"]
    nanny = subprocess.Popen(
        [*start, address, "--nthreads", "1", "--no-dashboard", "--host", "127.0.0.1"],
        start_new_session=True, env=env, **quiet,
    )  # fmt: skip
    try:
        with Client(address, timeout="30s", set_as_default=False) as client:
            client.wait_for_workers(1, timeout=120)
            client.submit(busy, 0.5, pure=False).result()  # imports, first run
            before = next(iter(client.run(_thread_cpu).values()))
            nanny0 = process_cpu(nanny.pid)
            n = client.submit(busy, seconds, pure=False).result()
            after = next(iter(client.run(_thread_cpu).values()))
            nanny1 = process_cpu(nanny.pid)
    finally:
        for proc in (nanny, scheduler):
            os.killpg(proc.pid, signal.SIGTERM)
        for proc in (nanny, scheduler):
            proc.wait(timeout=20)
    return {
        "rate": n / seconds,
        "task": after.get("task threads", 0.0) - before.get("task threads", 0.0),
        "loop": after.get("event loop", 0.0) - before.get("event loop", 0.0),
        "nanny": nanny1 - nanny0,
    }


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seconds", type=float, default=6.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    runs: dict[str, list[dict[str, float]]] = {"dask": [], "cz": []}
    for _ in range(args.rounds):
        for kind in ("dask", "cz"):
            runs[kind].append(trial(kind, args.seconds))
            print(kind, runs[kind][-1], file=sys.stderr)
    load1 = os.getloadavg()[0]
    best = {k: max(runs[k], key=lambda r: r["rate"]) for k in runs}
    labels = {"dask": "`dask worker` (profiler on)", "cz": "`cz worker` (profiler off)"}
    lines = [
        "| worker | iterations / s (best) | all rounds | task thread CPU | iterations per "
        "task-thread CPU second | event loop CPU | nanny CPU |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for kind in ("dask", "cz"):
        b = best[kind]
        rounds = ", ".join(f"{r['rate']:.2f}" for r in runs[kind])
        lines.append(
            f"| {labels[kind]} | {b['rate']:.2f} | {rounds} | {b['task']:.2f} s | "
            f"{b['rate'] * args.seconds / b['task']:.1f} | {b['loop']:.2f} s | {b['nanny']:.2f} s |"
        )
    ratio = best["cz"]["rate"] / best["dask"]["rate"]
    per_cpu = {k: best[k]["rate"] * args.seconds / best[k]["task"] for k in best}
    body = f"""
Command: `python bench/bench_cluster_worker.py --seconds {args.seconds:g} --rounds {args.rounds}`

One single-thread worker (dask's default nanny) at a time runs one {args.seconds:g} s task of a
composite's CPU work (median of 12 observations of 4 x 256 x 256 uint16, zstd 5), started as
`cz worker` or as plain `dask worker`, alternating, {args.rounds} rounds each (best kept). Load
average {load0:.1f} before, {load1:.1f} after, on 2 cores shared with other sessions.

{chr(10).join(lines)}

`cz worker` / `dask worker`: **{ratio:.2f}x** the iterations per second, {per_cpu["cz"] / per_cpu["dask"]:.2f}x
per task-thread CPU second (under load the wall rate measures the CPU share the worker got; the
rate per CPU second does not), event-loop CPU {best["cz"]["loop"] / max(best["dask"]["loop"], 1e-9):.2f}x.
The CPU columns are the best round's, over the {args.seconds:g} s task.
"""
    print(body)
    if not args.no_doc:
        update_section("Build on a dask cluster: worker settings", body)


if __name__ == "__main__":
    main()

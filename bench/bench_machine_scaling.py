"""The machine's own ceiling for 2 processes against 1: the plain alternative to a 2-worker build.

The same CPU-bound work a composite task does (a median over 12 observations of 4 x 256 x 256
uint16, then zstd 5 of the result) run in 1 process and in 2 concurrent processes, twice each,
alternating. Throughput 2 / throughput 1 is what this machine gives two independent processes;
a 2-worker cluster build (bench/bench_cluster.py) cannot beat it. Also prints each process' CPU
seconds: if they rise with 2 processes, the cores share something (SMT siblings, the host).

Usage: python bench/bench_machine_scaling.py [--iterations 40]
"""

from __future__ import annotations

import argparse
import os
import time
from multiprocessing import Process, Queue

import numcodecs
import numpy as np


def work(n: int, q: Queue) -> None:  # type: ignore[type-arg]
    """``n`` iterations of median + zstd; puts (CPU seconds, wall seconds)."""
    rng = np.random.default_rng(0)
    a = rng.integers(0, 10000, (12, 4, 256, 256), dtype=np.uint16)
    z = numcodecs.Zstd(5)
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(n):
        z.encode(np.median(a, axis=0).astype(np.uint16).tobytes())
    q.put((time.process_time() - cpu, time.perf_counter() - wall))


def run(procs: int, n: int) -> tuple[float, list[float]]:
    """Throughput (iterations / s) of ``procs`` concurrent processes, and their CPU seconds."""
    q: Queue = Queue()  # type: ignore[type-arg]
    ps = [Process(target=work, args=(n, q)) for _ in range(procs)]
    start = time.perf_counter()
    for p in ps:
        p.start()
    for p in ps:
        p.join()
    wall = time.perf_counter() - start
    return procs * n / wall, [q.get()[0] for _ in ps]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--iterations", type=int, default=40)
    n = ap.parse_args().iterations
    load = os.getloadavg()[0]
    rates: dict[int, list[float]] = {1: [], 2: []}
    for procs in (1, 2, 1, 2):
        rate, cpus = run(procs, n)
        rates[procs].append(rate)
        print(
            f"{procs} process(es): {rate:.2f} it/s, CPU per process {[round(c, 2) for c in cpus]} s"
        )
    ratio = max(rates[2]) / max(rates[1])
    print(
        f"2 processes / 1: {ratio:.2f}x (best of 2 each); load {load:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after"
    )


if __name__ == "__main__":
    main()

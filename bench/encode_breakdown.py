"""Where one ``encode``'s CPU goes, part by part (decisions 0057, 0059).

The parts of an encode of the same input as ``bench/bench_encode.py`` (24 months x 4 bands x
2048^2 uint16, zstd 5, auto, 2 threads by default): each of the library's functions named below
is wrapped so that the CPU seconds of the thread running it (``time.thread_time``, its callees'
own parts taken out) add up under its name. Thread CPU time, not samples, so the shares do not
depend on the load, and the zstd calls are counted: the chunks stored, plus the auto sample's
encoding that is not kept (spec 4.3) and the metadata's small objects.

``--timeline`` instead records, per thread, the wall-clock span (``time.perf_counter``) and the
thread CPU of each task of the encode (the auto sample's tasks, the fused stage's, a level read
back, the commit's metadata) and of each compression and object write inside them, and prints
where each thread is idle (between tasks, at a stage's barrier, in the commit) and where a task's
wall exceeds its CPU (the GIL held by the other thread, or the thread descheduled).

``--limit`` also times the codec's limit (zstd alone over the same chunks) after each encode
and prints encode's CPU without its object writes against it, in the same process.

Usage: python bench/encode_breakdown.py [--months 24] [--size 2048] [--repeat 1] [--timeline]
       [--limit]
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numcodecs

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import chronozarr
import chronozarr.format._codecs as codecs
import chronozarr.io._storage as storage
import chronozarr.write._auto as auto
import chronozarr.write._cells as cells
import chronozarr.write._encode_plan as plan
from bench.bench_encode import (
    BANDS,
    THREADS,
    TRANSFORM,
    compressed,
    level0_chunks,
    pyramid_chunks,
    run_timed,
)
from bench.common import series_block

#: (owner, attribute, part): what is wrapped, under which name its CPU is counted
PARTS: list[tuple[Any, str, str]] = [
    (type(numcodecs.Zstd(level=5)), "encode", "zstd compression"),
    (codecs.ChunkCodec, "encode", "chunk copy to contiguous (the limit does it too)"),
    (cells, "contiguous_cell", "chunk copy to contiguous (the limit does it too)"),
    (codecs.ChunkCodec, "decode", "decoding a level read back"),
    (cells, "abs_diff_sum", "volatility sums (spec 5)"),
    (cells, "reduce_region", "block means (spec 6)"),
    (cells, "residual", "residuals (spec 4.2)"),
    (auto, "residual", "residuals (spec 4.2)"),
    (storage.LocalStore, "put", "object writes (LocalStore.put)"),
    (cells.CellWriter, "write", "per-chunk bookkeeping (CellWriter.write)"),
    (cells.Readback, "region", "assembling a level read back"),
]


class Breakdown:
    """Thread CPU seconds and calls by part; a part's callees are taken out of its own."""

    def __init__(self) -> None:
        self.seconds: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()
        self.local = threading.local()

    def wrap(self, owner: Any, name: str, part: str) -> None:
        fn: Callable[..., Any] = getattr(owner, name)

        def counted(*args: Any, **kwargs: Any) -> Any:
            stack = self.local.__dict__.setdefault("stack", [])
            start = time.thread_time()
            stack.append(0.0)
            try:
                return fn(*args, **kwargs)
            finally:
                spent, inner = time.thread_time() - start, stack.pop()
                with self.lock:
                    self.seconds[part] += spent - inner
                    self.calls[part] += 1
                if stack:
                    stack[-1] += spent

        setattr(owner, name, counted)


#: (owner, attribute, kind): the spans of the timeline; a "task" span is one unit of a
#: thread's work, an "inner" span a compression or a write inside it
SPANS: list[tuple[Any, str, str]] = [
    (auto, "encode_sample", "task: auto sample"),
    (plan, "fused_task", "task: fused levels"),
    (plan, "upper_task", "task: level read back"),
    (plan, "write_metadata", "task: metadata (commit)"),
    (type(numcodecs.Zstd(level=5)), "encode", "inner: zstd"),
    (storage.LocalStore, "put", "inner: put"),
]


class Timeline:
    """Per thread: (kind, start, end, thread CPU) of each wrapped call (wall clock from
    ``time.perf_counter``, CPU from ``time.thread_time``)."""

    def __init__(self) -> None:
        self.spans: dict[str, list[tuple[str, float, float, float]]] = collections.defaultdict(list)

    def wrap(self, owner: Any, name: str, kind: str) -> None:
        fn: Callable[..., Any] = getattr(owner, name)

        def spanned(*args: Any, **kwargs: Any) -> Any:
            start, cpu = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                span = (kind, start, time.perf_counter(), time.thread_time() - cpu)
                self.spans[threading.current_thread().name].append(span)  # list.append: atomic

        setattr(owner, name, spanned)

    def report(self, t0: float, t1: float, phases: dict[str, float]) -> None:
        """Each thread's task time, CPU within its tasks and idle time over [t0, t1]; the
        gaps between its tasks; a row of 100 columns per thread (task kind's initial, '.' idle)."""
        wall = t1 - t0
        print(
            f"encode {wall:.2f} s wall; phases: "
            + ", ".join(f"{k} {v:.2f} s" for k, v in phases.items())
        )
        print(
            "| thread | tasks | task wall s | task CPU s | zstd s | put s | idle s (of the wall) |"
        )
        print("|---|---:|---:|---:|---:|---:|---:|")
        for thread, spans in sorted(self.spans.items()):
            tasks = [s for s in spans if s[0].startswith("task")]
            busy = sum(e - b for _k, b, e, _c in tasks)
            inner = collections.Counter()
            for k, b, e, _c in spans:
                inner[k] += e - b
            print(
                f"| {thread} | {len(tasks)} | {busy:.2f} | {sum(c for *_x, c in tasks):.2f} | "
                f"{inner['inner: zstd']:.2f} | {inner['inner: put']:.2f} | {wall - busy:.2f} |"
            )
        for thread, spans in sorted(self.spans.items()):
            tasks = sorted(s for s in spans if s[0].startswith("task"))
            tasks.sort(key=lambda s: s[1])
            edges = [t0, *[x for _k, b, e, _c in tasks for x in (b, e)], t1]
            gaps = [
                f"{edges[i] - t0:.2f}+{edges[i + 1] - edges[i]:.3f}"
                for i in range(0, len(edges), 2)
                if edges[i + 1] - edges[i] > 0.005
            ]
            spans_text = ", ".join(
                f"{k.split(': ')[1]} {b - t0:.2f}-{e - t0:.2f} (CPU {c:.2f})"
                for k, b, e, c in tasks
            )
            print(f"{thread}: idle gaps (start+length s): {', '.join(gaps) or 'none'}")
            print(f"{thread}: tasks: {spans_text}")
            row = ["."] * 100
            for k, b, e, _c in tasks:
                for i in range(
                    int((b - t0) / wall * 100), min(100, int((e - t0) / wall * 100) + 1)
                ):
                    row[i] = k.split(": ")[1][0]
            print(f"{thread:>24} |{''.join(row)}|")


def timeline(data: Any, times: list[str], work: Path) -> None:
    """One encode with :data:`SPANS` recorded (see the module docstring)."""
    line = Timeline()
    for owner, name, kind in SPANS:
        line.wrap(owner, name, kind)
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    summary = chronozarr.encode(
        data, work / "t.zarr", times=times, bands=BANDS, crs="EPSG:32631", transform=TRANSFORM,
        workers=THREADS,
    )  # fmt: skip
    t1 = time.perf_counter()
    print(f"load {load:.1f} -> {os.getloadavg()[0]:.1f}")
    line.report(t0, t1, summary.phases)


WRITES = "object writes (LocalStore.put)"


def limit_cpu(data: Any, path: Path, unwritten: float) -> None:
    """The codec's limit (``bench/bench_encode.py``: zstd 5 alone over every chunk the store
    holds, level 0 from the input and the pyramid's read back before the clock, on THREADS
    threads) by process CPU, against encode's CPU without its object writes' thread CPU."""
    from concurrent.futures import ThreadPoolExecutor

    comp = numcodecs.Zstd(level=5)
    items: list[Any] = [*level0_chunks(data), *pyramid_chunks(path)]

    def limit() -> None:
        with ThreadPoolExecutor(THREADS) as pool:
            sum(pool.map(lambda item: len(compressed(comp, data, item)), items))

    run = run_timed(limit, 0.0)
    print(
        f"the limit ({len(items)} compressions): {run.wall:.2f} s wall, {run.cpu:.2f} s CPU; "
        f"load {run.load[0]:.1f} -> {run.load[1]:.1f}. encode's CPU without its object writes "
        f"{unwritten:.2f} s: **{unwritten / run.cpu:.2f}x** the limit's CPU"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--months", type=int, default=24)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--timeline", action="store_true", help="per-thread spans, not parts")
    ap.add_argument(
        "--limit",
        action="store_true",
        help="after each encode, zstd alone over the same chunks (decision 0070): encode's CPU "
        "without its object writes against the limit's, in the same process",
    )
    args = ap.parse_args()
    data = series_block(0, args.months, 4, 0, args.size, 0, args.size)
    times = [f"{2024 + m // 12}-{m % 12 + 1:02d}-01" for m in range(args.months)]
    if args.timeline:
        work = Path(tempfile.mkdtemp(prefix="cz-timeline-"))
        try:
            timeline(data, times, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        return
    parts = Breakdown()
    for owner, name, part in PARTS:
        parts.wrap(owner, name, part)
    work = Path(tempfile.mkdtemp(prefix="cz-breakdown-"))
    try:
        for i in range(args.repeat):
            parts.seconds.clear()
            parts.calls.clear()
            load = os.getloadavg()[0]
            before, start = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            chronozarr.encode(
                data, work / f"{i}.zarr", times=times, bands=BANDS, crs="EPSG:32631",
                transform=TRANSFORM, workers=THREADS,
            )  # fmt: skip
            wall, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF)
            cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
            print(
                f"encode {wall:.2f} s wall, {cpu:.2f} s CPU ({after.ru_stime - before.ru_stime:.2f}"
                f" s in the kernel) on {THREADS} threads; load {load:.1f} -> {os.getloadavg()[0]:.1f}"
            )
            print("| part | CPU s | share | calls |\n|---|---:|---:|---:|")
            for part, seconds in parts.seconds.most_common():
                print(f"| {part} | {seconds:.2f} | {seconds / cpu:.1%} | {parts.calls[part]} |")
            rest = cpu - sum(parts.seconds.values())
            print(
                f"| the rest (Python between, the main thread, metadata) | {rest:.2f} | {rest / cpu:.1%} | |"
            )
            if args.limit:
                limit_cpu(data, work / f"{i}.zarr", cpu - parts.seconds[WRITES])
            shutil.rmtree(work / f"{i}.zarr")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

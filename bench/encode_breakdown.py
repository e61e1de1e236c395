"""Where one ``encode``'s CPU goes, part by part (decisions 0057, 0059).

The parts of an encode of the same input as ``bench/bench_encode.py`` (24 months x 4 bands x
2048^2 uint16, zstd 5, auto, 2 threads by default): each of the library's functions named below
is wrapped so that the CPU seconds of the thread running it (``time.thread_time``, its callees'
own parts taken out) add up under its name. Thread CPU time, not samples, so the shares do not
depend on the load, and the zstd calls are counted: the chunks stored, plus the auto sample's
encoding that is not kept (spec 4.3) and the metadata's small objects.

Usage: python bench/encode_breakdown.py [--months 24] [--size 2048] [--repeat 1]
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
from bench.bench_encode import BANDS, THREADS, TRANSFORM
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


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--months", type=int, default=24)
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    data = series_block(0, args.months, 4, 0, args.size, 0, args.size)
    times = [f"{2024 + m // 12}-{m % 12 + 1:02d}-01" for m in range(args.months)]
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
            shutil.rmtree(work / f"{i}.zarr")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()

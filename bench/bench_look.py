"""Benchmark of the look commands (docs/look.md), each against the plain alternative in one run.

- ``cz series``' reader (``cz.look.series.read_series``: the pixel's cell only) against reading
  every full frame with ``Reader.read`` and indexing the pixel: bytes read from the store and
  wall time.
- ``cz quicklook``'s renderer (``cz.look.quicklook.quicklook``: numpy stretch, matplotlib frame,
  exact pixels pasted) against plain matplotlib ``imshow`` + ``colorbar`` + ``savefig`` of the
  same physical array at the same size: wall time.

Store: MONTHS x 4 bands x SIZE x SIZE uint16 (bench.common.series_block), cs 512, star-delta
with anchor_interval 6, written by chronozarr.encode.

Usage: python bench/bench_look.py [--size 1024] [--months 24] [--repeat 5] [--no-doc]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import chronozarr
from bench.common import series_block, update_section
from chronozarr.io import LocalStore

BANDS = [
    {"name": n, "common_name": n, "scale": 0.0001, "offset": -0.1, "units": "reflectance"}
    for n in ("blue", "green", "red", "nir")
]


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--months", type=int, default=24)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--no-doc", action="store_true", help="print only, leave docs/benchmarks-archive.md"
    )
    args = ap.parse_args()

    from cz.look.quicklook import quicklook, resolve_view
    from cz.look.series import read_series

    n, size = args.months, args.size
    with tempfile.TemporaryDirectory(prefix="bench-look-") as tmp:
        path = Path(tmp) / "look.zarr"
        data = series_block(0, n, 4, 0, size, 0, size)
        chronozarr.encode(
            data,
            path,
            times=[f"{2020 + m // 12}-{m % 12 + 1:02d}-01" for m in range(n)],
            bands=BANDS,
            crs="EPSG:32631",
            transform=[10, 0, 600000, 0, -10, 5100000],
            nodata=0,
            encoding="star-delta",
            anchor_interval=6,
            chunk_size=512,
        )
        row, col = size // 2 + 7, size // 3 + 5

        def fresh() -> tuple[LocalStore, chronozarr.Reader]:
            store = LocalStore(path)
            reader = chronozarr.open_store(store)
            store.stats.reset()
            return store, reader

        store, reader = fresh()
        series = read_series(reader, row, col)
        cell_bytes, cell_gets = store.stats.bytes_read, store.stats.gets
        store, reader = fresh()
        frames = np.stack([reader.read(t)[:, row, col] for t in range(n)])
        frame_bytes, frame_gets = store.stats.bytes_read, store.stats.gets
        assert np.array_equal(frames, series.stored), "the two readings differ"
        t_cell = _median_time(lambda: read_series(fresh()[1], row, col), args.repeat)
        t_frames = _median_time(
            lambda: [r.read(t)[:, row, col] for r in [fresh()[1]] for t in range(n)], args.repeat
        )

        reader = chronozarr.open_store(path)
        view = resolve_view(reader)  # red, green, blue by common_name
        out = Path(tmp) / "q.png"
        t_quick = _median_time(
            lambda: quicklook(reader, view, times=[n - 1], level=0, out=out), args.repeat
        )
        box = quicklook(reader, view, times=[n - 1], level=0, out=out)
        width, height = box["width"], box["height"]

        def plain() -> None:
            from matplotlib.backends.backend_agg import FigureCanvasAgg
            from matplotlib.figure import Figure

            values = reader.read(n - 1)
            rgb = values[[2, 1, 0]].astype(np.float64) * 0.0001 - 0.1
            lo = np.percentile(rgb, 2, axis=(1, 2))[:, None, None]
            hi = np.percentile(rgb, 98, axis=(1, 2))[:, None, None]
            img = np.clip((rgb - lo) / (hi - lo), 0, 1).transpose(1, 2, 0)
            fig = Figure(figsize=(width / 100, height / 100), dpi=100)
            FigureCanvasAgg(fig)
            ax = fig.add_axes((0.02, 0.02, 0.96, 0.86))
            ax.imshow(img, interpolation="nearest")
            ax.set_title(f"look.zarr {n - 1}")
            ax.set_axis_off()
            fig.savefig(Path(tmp) / "plain.png")

        t_plain = _median_time(plain, args.repeat)

    load = os.getloadavg()[0]
    body = f"""
Command: `python bench/bench_look.py --size {size} --months {n} --repeat {args.repeat}`

Store: {n} months x 4 bands x {size} x {size} uint16, cs 512, star-delta (anchor every 6), zstd 5,
unsharded, local disk. Load average {load:.1f} at the end (2 cores shared with other work): wall
times are medians of {args.repeat} runs with a fresh reader each, and move with the load.

| pixel history of one pixel, {n} months | bytes read | GETs | wall time | vs full frames |
|---|---:|---:|---:|---:|
| `cz series` reader (its cell only) | {cell_bytes:,} | {cell_gets} | {t_cell * 1000:.0f} ms | {cell_bytes / frame_bytes:.3f}x bytes, {t_cell / t_frames:.2f}x time |
| `Reader.read(t)` of every full frame, then index the pixel | {frame_bytes:,} | {frame_gets} | {t_frames * 1000:.0f} ms | 1.00x |

| one RGB picture of level 0 ({size} x {size}, {width} x {height} px PNG) | wall time | ratio |
|---|---:|---:|
| `cz quicklook` renderer (read, stretch, frame, exact pixels, PNG) | {t_quick * 1000:.0f} ms | {t_quick / t_plain:.2f}x |
| plain matplotlib `imshow` + `savefig` of the same stretched array (read included) | {t_plain * 1000:.0f} ms | 1.00x |
"""
    print(body)
    if not args.no_doc:
        update_section("Look at a store (quicklook, series)", body)


if __name__ == "__main__":
    main()

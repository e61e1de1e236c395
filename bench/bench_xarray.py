"""Benchmark of the xarray backend (decision 0012): a month and a pixel series, backend vs Reader.

In one run, on a star-delta uint16 store (default 24 months x 4 bands x 1024 x 1024, cs 512, so
2 x 2 cells) with a mask, every figure the median of ``--repeat`` cold reads (a new Reader or
Dataset each time, so no cached anchor helps):

- a month (one timestep, every band, the whole level 0): ``Reader.read`` (stored values), and
  ``Reader.read`` + ``Reader.physical`` over ``Reader.valid_bands`` (physical values), against
  ``xr.open_dataset(engine="chronozarr")`` with ``physical=False`` and with physical values, lazily
  indexed and with ``chunks={}`` (dask, the threaded scheduler);
- a pixel series (every timestep of one pixel): ``Reader.read_cell`` per timestep against
  ``ds["data"].isel(y=, x=)`` of the backend.

Usage: python bench/bench_xarray.py [--months 24] [--size 1024] [--repeat 5] [--no-doc]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import chronozarr
from bench.common import series_block, update_section

BANDS = [{"name": n, "scale": 0.0001, "offset": -0.1} for n in ("B02", "B03", "B04", "B08")]
TRANSFORM = [10.0, 0.0, 600000.0, 0.0, -10.0, 5000000.0]


def median_s(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def write_store(path: Path, months: int, size: int) -> None:
    data = series_block(0, months, len(BANDS), 0, size, 0, size)
    mask = np.ones((months, size, size), dtype=np.uint8)
    mask[:, : size // 8, : size // 8] = 0  # a cloud in one corner
    times = [f"{2024 + m // 12}-{m % 12 + 1:02d}-01" for m in range(months)]
    chronozarr.encode(
        data,
        path,
        times=times,
        bands=BANDS,
        crs="EPSG:32631",
        transform=TRANSFORM,
        mask=mask,
        encoding="star-delta",
    )


def run(path: Path, repeat: int) -> list[tuple[str, float, float]]:
    import xarray as xr

    reader0 = chronozarr.open_store(path)
    months = reader0.n_time
    t = next(i for i in range(months) if i not in reader0.attrs.temporal.anchor_indices)
    _, _, height, width = reader0.levels[0].shape
    y, x = height - height // 3, width // 4  # cell (1, 0) at 1024 x 1024, cs 512
    cs = reader0.chunk_size(0)

    def reader_month_stored() -> np.ndarray:
        return chronozarr.open_store(path).read(t)

    def reader_month_physical() -> np.ndarray:
        r = chronozarr.open_store(path)
        return r.physical(r.read(t), r.valid_bands(t)).astype(np.float32)

    def xr_month(physical: bool, chunks: dict | None) -> Callable[[], np.ndarray]:
        def go() -> np.ndarray:
            ds = xr.open_dataset(path, engine="chronozarr", physical=physical, chunks=chunks)
            return ds["data"].isel(time=t).values

        return go

    def reader_series() -> np.ndarray:
        r = chronozarr.open_store(path)
        return np.stack(
            [r.read_cell(i, y // cs, x // cs)[:, y % cs, x % cs] for i in range(months)]
        )

    def reader_series_physical() -> np.ndarray:
        r = chronozarr.open_store(path)
        row, col = y // cs, x // cs
        out = []
        for i in range(months):
            v = r.read_cell(i, row, col)[:, y % cs, x % cs]
            m = r.plane_cell("mask", i, row, col)[y % cs, x % cs]
            out.append(r.physical(v[:, None, None], np.array(m, bool))[:, 0, 0].astype(np.float32))
        return np.stack(out)

    def xr_series(physical: bool, chunks: dict | None) -> Callable[[], np.ndarray]:
        def go() -> np.ndarray:
            ds = xr.open_dataset(path, engine="chronozarr", physical=physical, chunks=chunks)
            return ds["data"].isel(y=y, x=x).values

        return go

    # the answers agree before anything is timed
    np.testing.assert_array_equal(xr_month(False, None)(), reader_month_stored())
    np.testing.assert_array_equal(xr_month(True, {})(), reader_month_physical())
    np.testing.assert_array_equal(xr_series(False, None)(), reader_series())
    np.testing.assert_array_equal(xr_series(True, None)(), reader_series_physical())

    rows: list[tuple[str, float, float]] = []
    base = median_s(reader_month_stored, repeat)
    rows.append(("month, stored: Reader.read", base, base))
    rows.append(
        ("month, stored: backend physical=False", median_s(xr_month(False, None), repeat), base)
    )
    base_p = median_s(reader_month_physical, repeat)
    rows.append(("month, physical: Reader.read + physical", base_p, base_p))
    rows.append(
        (
            "month, physical: backend (lazily indexed)",
            median_s(xr_month(True, None), repeat),
            base_p,
        )
    )
    rows.append(
        ("month, physical: backend chunks={} (dask)", median_s(xr_month(True, {}), repeat), base_p)
    )
    base_s = median_s(reader_series, repeat)
    rows.append(("pixel series, stored: Reader.read_cell per month", base_s, base_s))
    rows.append(
        (
            "pixel series, stored: backend physical=False",
            median_s(xr_series(False, None), repeat),
            base_s,
        )
    )
    base_sp = median_s(reader_series_physical, repeat)
    rows.append(("pixel series, physical: Reader.read_cell + mask + physical", base_sp, base_sp))
    rows.append(
        ("pixel series, physical: backend", median_s(xr_series(True, None), repeat), base_sp)
    )
    rows.append(
        (
            "pixel series, physical: backend chunks={} (dask)",
            median_s(xr_series(True, {}), repeat),
            base_sp,
        )
    )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--months", type=int, default=24)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument(
        "--no-doc", action="store_true", help="print only; leave docs/benchmarks-archive.md"
    )
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-xr-"))
    load_before = os.getloadavg()[0]
    try:
        store = work / "s.zarr"
        write_store(store, args.months, args.size)
        rows = run(store, args.repeat)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load = f"load average {load_before:.1f} before, {os.getloadavg()[0]:.1f} after (1 min)"
    table = [f"| read (cold, median of {args.repeat}) | time | vs Reader |", "|---|---:|---:|"]
    for name, seconds, base in rows:
        table.append(f"| {name} | {seconds * 1000:.1f} ms | {seconds / base:.2f}x |")
    print("\n".join(table))
    print(load)
    if not args.no_doc:
        body = (
            f"Command: `python bench/bench_xarray.py --months {args.months} --size {args.size} "
            f"--repeat {args.repeat}`\n\n"
            f"Store: {args.months} months x {len(BANDS)} bands x {args.size} x {args.size} uint16, "
            "star-delta (anchor_interval 6), cs 512, zstd 5, with a mask; a non-anchor month and "
            "one pixel (row H - H/3, column W/4). Each figure opens a new Reader or Dataset (cold: no anchor "
            "cached). Physical values are stored * scale + offset as float32, NaN where the mask "
            f"is 0. Machine {load}: the figures move with the load of the shared machine; the "
            "ratios compare reads of the same run.\n\n" + "\n".join(table)
        )
        update_section('xarray backend (engine="chronozarr") vs Reader', body)


if __name__ == "__main__":
    main()

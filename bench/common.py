"""Shared pieces of the benchmarks: a realistic synthetic series and the updater of the benchmark
notebook (docs/benchmarks-archive.md; the headline table is docs/benchmarks.md)."""

from __future__ import annotations

import platform
import re
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
BENCH_DOC = ROOT / "docs" / "benchmarks-archive.md"
SUMMARY_DOC = ROOT / "docs" / "benchmarks.md"


def series_block(
    t0: int, t1: int, n_band: int, y0: int, y1: int, x0: int, x1: int, seed: int = 7
) -> np.ndarray:
    """uint16 (time, band, y, x) Sentinel-2-like reflectance: fields with a seasonal vegetation
    cycle per field, a river, and sensor noise. Deterministic per pixel (any block, same values)."""
    yy, xx = np.mgrid[y0:y1, x0:x1].astype(np.float32)
    field = ((xx // 64) * 7 + (yy // 48) * 13) % 5
    river = np.abs(yy - (1000 + 200 * np.sin(xx / 300.0))) < 15
    soil = np.array([900, 1200, 1500, 2600, 2200, 1800], dtype=np.float32)[:n_band]
    veg = np.array([-350, -150, -650, 2400, 600, 200], dtype=np.float32)[:n_band]
    out = np.empty((t1 - t0, n_band, y1 - y0, x1 - x0), dtype=np.uint16)
    for i, t in enumerate(range(t0, t1)):
        rng = np.random.default_rng((seed, t, y0, x0))
        green = np.clip(0.5 + 0.5 * np.sin(2 * np.pi * (t % 12 - 3 - field) / 12), 0, 1)
        plane = soil[:, None, None] + veg[:, None, None] * green[None]
        plane = np.where(river[None], 500.0, plane) + rng.normal(0, 40, size=plane.shape)
        out[i] = np.clip(np.rint(plane), 1, 10000).astype(np.uint16)
    return out


def dask_series(n_time: int, n_band: int, height: int, width: int, chunk: int):
    """The same series as a lazy dask array chunked per (1 timestep, cell)."""
    import dask.array as da

    def block(block_info=None):
        loc = block_info[None]["array-location"]
        (t0, t1), _, (y0, y1), (x0, x1) = loc
        return series_block(t0, t1, n_band, y0, y1, x0, x1)

    return da.map_blocks(
        block,
        dtype=np.uint16,
        chunks=((1,) * n_time, (n_band,), _split(height, chunk), _split(width, chunk)),
    )


def _split(n: int, c: int) -> tuple[int, ...]:
    return tuple(min(c, n - i) for i in range(0, n, c))


def machine() -> str:
    try:
        cpu = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
    except OSError:
        cpu = "?"
    return f"{platform.machine()}, {cpu} cores, Python {sys.version.split()[0]}"


GENERATED_BEGIN = "<!-- written by the benchmark script: begin -->"
GENERATED_END = "<!-- written by the benchmark script: end -->"


def update_section(title: str, body: str) -> None:
    """Write a benchmark's figures into the ``## title`` section of the notebook
    (docs/benchmarks-archive.md), keeping the others; the headline table (docs/benchmarks.md) is
    edited by hand.

    Only the block between the section's GENERATED_BEGIN and GENERATED_END markers is the
    script's: it is replaced, and the hand-written analysis around it is kept. A section written
    before the markers existed keeps its whole old text below the new block, so a run never
    loses what a person wrote there."""
    BENCH_DOC.parent.mkdir(parents=True, exist_ok=True)
    text = (
        BENCH_DOC.read_text()
        if BENCH_DOC.exists()
        else "# Benchmarks: the notebook\n\nMeasured figures; each section says its command.\n"
    )
    stamp = datetime.now(UTC).strftime("%Y-%m-%d")
    block = (
        f"{GENERATED_BEGIN}\n_Last run {stamp} on {machine()}._\n\n{body.strip()}\n{GENERATED_END}"
    )
    pattern = re.compile(rf"^## {re.escape(title)}\n.*?(?=^## |\Z)", re.S | re.M)
    found = pattern.search(text)
    if found is None:
        text = text.rstrip() + f"\n\n## {title}\n\n{block}\n"
    else:
        old = found.group(0)
        start, end = old.find(GENERATED_BEGIN), old.find(GENERATED_END)
        if 0 <= start < end:
            section = old[:start] + block + old[end + len(GENERATED_END) :]
        else:
            kept = old[old.index("\n") + 1 :].strip()
            section = f"## {title}\n\n{block}\n" + (f"\n{kept}\n" if kept else "")
        text = text[: found.start()] + section.rstrip() + "\n\n" + text[found.end() :]
    BENCH_DOC.write_text(text.rstrip() + "\n")
    print(
        f"wrote the section {title!r} of {BENCH_DOC.relative_to(ROOT)}; if it holds a headline"
        f" figure, update its row in {SUMMARY_DOC.relative_to(ROOT)}",
        file=sys.stderr,
    )

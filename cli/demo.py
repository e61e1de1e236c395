"""The offline demo series: a synthetic, Sentinel-2-like monthly stack encoded as a store.

``python -m cz.demo OUT`` writes 24 months x 4 bands (B02, B03, B04, B08) x 600 x 700 pixels of
uint16 reflectance (scale 1e-4) with a seasonal vegetation cycle, a river, fields, cloud gaps
(mask 0 with nodata) and per-pixel observation counts (coverage), at 10 m in EPSG:32631.
It stands in for the STAC demo recipe until the toolkit's builder exists.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import chronozarr

__all__ = ["demo_series", "main"]

BANDS = [
    {"name": "B02", "common_name": "blue", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B03", "common_name": "green", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
]


def demo_series(
    n_time: int = 24, height: int = 600, width: int = 700, seed: int = 42
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(data, mask, coverage, times) of the demo: deterministic for a given seed."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    river = np.abs(yy - (height * 0.5 + 60 * np.sin(xx / 90.0))) < 12
    fields = ((xx // 70 + yy // 55) % 3).astype(np.float32)  # three crop calendars
    soil = np.array([900, 1200, 1500, 2600], dtype=np.float32)  # blue, green, red, nir
    veg = np.array([-350, -150, -650, 2400], dtype=np.float32)
    water = np.array([600, 700, 450, 250], dtype=np.float32)
    data = np.empty((n_time, 4, height, width), dtype=np.uint16)
    mask = np.ones((n_time, height, width), dtype=np.uint8)
    coverage = np.empty((n_time, height, width), dtype=np.uint8)
    times = []
    for t in range(n_time):
        year, month = 2024 + t // 12, t % 12 + 1
        times.append(f"{year}-{month:02d}-01T00:00:00Z")
        phase = 2 * np.pi * (month - 4 - 2 * fields) / 12
        greenness = np.clip(0.5 + 0.5 * np.sin(phase), 0, 1)
        plane = soil[:, None, None] + veg[:, None, None] * greenness[None]
        plane = np.where(river[None], water[:, None, None], plane)
        plane += rng.normal(0, 25, size=plane.shape)
        data[t] = np.clip(np.rint(plane), 1, 10000).astype(np.uint16)
        # clouds: a few blobs per month; month 7 of the first year is mostly cloudy
        n_clouds = 12 if t == 6 else rng.integers(0, 4)
        cloud = np.zeros((height, width), dtype=bool)
        for _ in range(int(n_clouds)):
            cy, cx, r = rng.uniform(0, height), rng.uniform(0, width), rng.uniform(40, 140)
            cloud |= (yy - cy) ** 2 + (xx - cx) ** 2 < r**2
        mask[t] = (~cloud).astype(np.uint8)
        data[t][:, cloud] = 0  # nodata where the mask is 0 (the producer's duty, spec 2.3)
        coverage[t] = np.where(cloud, 0, rng.integers(1, 7, size=(height, width))).astype(np.uint8)
    return data, mask, coverage, times


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "out/demo.zarr")
    if out.exists() and (out / "zarr.json").exists():
        import shutil

        shutil.rmtree(out)  # the demo owns its output folder: rebuild it
    data, mask, coverage, times = demo_series()
    start = time.perf_counter()
    chronozarr.encode(
        data,
        out,
        times=times,
        bands=BANDS,
        crs="EPSG:32631",
        transform=[10.0, 0.0, 600000.0, 0.0, -10.0, 5100000.0],
        mask=mask,
        coverage=coverage,
        chunk_size=256,
        provenance={
            "sources": ["synthetic demo (cz.demo)"],
            "composite": "monthly median",
            "gap_fill": "none",
            "notes": "synthetic Sentinel-2-like series; clouds masked",
        },
    )
    took = time.perf_counter() - start
    print(
        f"wrote {out} ({data.shape[0]} months, {data.nbytes / 1e6:.0f} MB of input) in {took:.1f} s"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

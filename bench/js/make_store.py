"""Write the browser benchmark's store with the Python writer.

    python bench/js/make_store.py OUT.zarr [--timesteps 24] [--shard] [--encoding none]

2 bands (red, nir) x 1024 x 1024 uint16, cs 512 (a 2 x 2 cell viewport), star-delta with
anchor_interval 6 (``--encoding none``: every timestep stored whole, which every map library
reads; bench/js/peers.mjs), zstd level 5 (the writer default). The scene is a smooth synthetic landscape
with sensor-like noise and a seasonal cycle, so chunks compress like real reflectance.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import chronozarr  # noqa: E402


def scene(nt: int, size: int, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    seeds = rng.random((160, 2)).astype(np.float32) * size
    field = np.zeros((size, size), dtype=np.int32)
    best = np.full((size, size), np.inf, dtype=np.float32)
    for k, (sy, sx) in enumerate(seeds):  # Voronoi fields, one seed at a time (bounded memory)
        d = (yy - sy) ** 2 + (xx - sx) ** 2
        closer = d < best
        best[closer] = d[closer]
        field[closer] = k
    phase = rng.random(160).astype(np.float32) * 2 * np.pi
    amp = (0.25 + 0.45 * rng.random(160)).astype(np.float32)
    out = np.empty((nt, 2, size, size), dtype=np.uint16)
    for t in range(nt):
        ndvi = np.clip(
            0.2 + amp[field] * (0.5 + 0.5 * np.sin(2 * np.pi * t / 12 + phase[field])), 0.02, 0.92
        )
        noise = rng.normal(0, 0.006, size=(2, size, size)).astype(np.float32)
        red = 0.155 - 0.125 * ndvi + noise[0]
        nir = 0.23 + 0.25 * ndvi + noise[1]
        out[t, 0] = np.clip(red * 10000, 1, 10000).astype(np.uint16)
        out[t, 1] = np.clip(nir * 10000, 1, 10000).astype(np.uint16)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out")
    ap.add_argument("--timesteps", type=int, default=24)
    ap.add_argument("--shard", action="store_true")
    ap.add_argument("--encoding", default="star-delta", choices=["star-delta", "none"])
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    data = scene(args.timesteps, 1024)
    chronozarr.encode(
        data,
        str(out),
        times=[f"{2020 + m // 12}-{m % 12 + 1:02d}-01" for m in range(args.timesteps)],
        bands=[
            {
                "name": "B04",
                "common_name": "red",
                "scale": 0.0001,
                "offset": 0.0,
                "units": "reflectance",
            },
            {
                "name": "B08",
                "common_name": "nir",
                "scale": 0.0001,
                "offset": 0.0,
                "units": "reflectance",
            },
        ],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 600000.0, 0.0, -10.0, 5000000.0],
        encoding=args.encoding,
        anchor_interval=6,
        chunk_size=512,
        shard=args.shard,
        shard_time=12 if args.shard else None,
    )
    print(out)


if __name__ == "__main__":
    main()

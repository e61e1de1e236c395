"""Base stores of the fuzz harness: small, written by the project's own encoder.

Three layouts cover the reader's code paths: unsharded ``none`` with zstd; sharded star-delta
with mask and coverage and gzip; unsharded ``none`` float32 with blosc. Each has two levels
(a 2 x 2 cell grid at level 0) so that level paths, grids and pyramids are all exercised.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["BASES", "build_base"]

BASES = ("none-zstd", "delta-sharded-gzip", "none-blosc-f32")


def _series(dtype: str, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = rng.integers(100, 3000, size=(1, 2, 40, 40))
    t = np.arange(4)[:, None, None, None]
    values = base + 50 * t + rng.integers(0, 20, size=(4, 2, 40, 40))
    if dtype == "float32":
        return (values / 1000).astype(np.float32)
    return values.astype(dtype)


def build_base(name: str, root: Path) -> Path:
    """Write base store ``name`` under ``root`` (once) and return its path."""
    import chronozarr

    path = root / name
    if (path / "zarr.json").exists():
        return path
    times = [f"2024-{m:02d}-01T00:00:00Z" for m in range(1, 5)]
    common = {
        "times": times,
        "bands": ["B04", "B08"],
        "crs": "EPSG:32633",
        "transform": (10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0),
        "chunk_size": 32,
        "anchor_interval": 2,
    }
    if name == "none-zstd":
        chronozarr.encode(
            _series("uint16", 1), path, encoding="none", nodata=0, codec="zstd", **common
        )
    elif name == "delta-sharded-gzip":
        data = _series("uint16", 2)
        mask = (data[:, 0] % 7 != 0).astype(np.uint8)
        coverage = (data[:, 1] % 5).astype(np.uint8)
        chronozarr.encode(
            data,
            path,
            encoding="star-delta",
            nodata=0,
            mask=mask,
            coverage=coverage,
            shard=True,
            codec="gzip",
            **common,
        )
    elif name == "none-blosc-f32":
        chronozarr.encode(
            _series("float32", 3),
            path,
            encoding="none",
            nodata=-1.0,
            codec="blosc",
            **common,
        )
    else:
        raise ValueError(f"unknown base store {name!r}")
    return path

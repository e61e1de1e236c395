"""The size of a planned store, estimated before a build (spec 7, 8 ratios measured)."""

from __future__ import annotations

import math

from pydantic import BaseModel

from cz.plan.costs import DATA_RATIO, PLANE_RATIO  # the cost model's constants (decision 0050)
from cz.plan.grid import GridPlan

__all__ = [
    "DATA_RATIO",
    "ITEMSIZE",
    "METADATA_PER_LEVEL",
    "METADATA_ROOT",
    "PLANE_RATIO",
    "Estimate",
    "estimate_store",
]

#: Root objects besides the per-timestep provenance chunks: zarr.json, volatility (2), time (2),
#: band (2), provenance_items' zarr.json.
METADATA_ROOT = 8
#: Per level: the group's zarr.json, 7 arrays' zarr.json, the time, band, y and x chunks.
METADATA_PER_LEVEL = 12

ITEMSIZE = {"uint8": 1, "uint16": 2, "int16": 2, "float32": 4}


class Estimate(BaseModel):
    """What the store will cost: timesteps, bytes and objects. Bytes are an estimate."""

    timesteps: int
    bands: int
    levels: int
    arrays: list[str]
    raw_bytes: int
    estimated_bytes: int
    chunk_objects: int
    metadata_objects: int
    objects: int
    basis: str


def estimate_store(
    grid: GridPlan,
    timesteps: int,
    bands: int,
    dtype: str,
    *,
    shard: bool = False,
    shard_time: int | None = None,
) -> Estimate:
    """Raw and estimated bytes and the object count of a store with data, mask and coverage.

    Objects per level: one per (timestep, cell) for each of the three arrays, or one per
    (time shard, cell) when sharded (spec 7.1); plus the metadata: the root zarr.json, the
    volatility array (zarr.json + one chunk), the root's time and band arrays (zarr.json + one
    chunk each), the ``provenance_items`` array a build writes (zarr.json + one chunk per
    timestep, chronozarr.provenance) and per level the group zarr.json, seven array zarr.json files (data,
    mask, coverage, time, band, y, x) and four coordinate chunks.
    """
    arrays = ["data", "mask", "coverage"]
    itemsize = ITEMSIZE[dtype]
    data_raw = plane_raw = 0
    chunks = 0
    n_time_objects = timesteps
    if shard:
        n_time_objects = math.ceil(timesteps / (shard_time or max(timesteps, 1)))
    for level in grid.levels:
        h, w = level.shape
        data_raw += timesteps * bands * h * w * itemsize
        plane_raw += 2 * timesteps * h * w
        chunks += len(arrays) * n_time_objects * level.grid[0] * level.grid[1]
    metadata = METADATA_ROOT + timesteps + METADATA_PER_LEVEL * len(grid.levels)
    return Estimate(
        timesteps=timesteps,
        bands=bands,
        levels=len(grid.levels),
        arrays=arrays,
        raw_bytes=data_raw + plane_raw,
        estimated_bytes=round(data_raw * DATA_RATIO + plane_raw * PLANE_RATIO),
        chunk_objects=chunks,
        metadata_objects=metadata,
        objects=chunks + metadata,
        basis=(
            f"raw = array bytes over every level; estimated = data x {DATA_RATIO} (zstd on real "
            f"Sentinel-2 uint16 chunks, spec 8) + mask/coverage x {PLANE_RATIO}; star-delta, "
            "scene content and edge padding move the real figure"
        ),
    )

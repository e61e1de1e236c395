"""The levels mirror checked against the array it describes, before anything is allocated.

A reader sizes its buffers and loops from ``chronozarr.levels`` (spec 3.7: shape and grid mirror
the level's data array). A mirror that disagrees with the array's own zarr.json, or sizes no
real array could have, would make it allocate 10^12 elements or loop over 10^12 cells; so the
reader compares the two when it opens a level and refuses a mismatch with a typed error. The
array may have grown along time beyond the mirror (an append writes the array's zarr.json
before the root, spec 9/14); every other axis must be equal.
"""

from __future__ import annotations

import math

import numpy as np

from chronozarr.errors import CorruptStoreError
from chronozarr.format._arrays import ArrayInfo
from chronozarr.format._attrs import LevelInfo

__all__ = ["MAX_CHUNK_BYTES", "check_level_mirror", "check_nodata"]

#: No inner chunk of a chronozarr array is this large (cs = 512, 16 float32 bands: 16 MiB).
MAX_CHUNK_BYTES = 1 << 31


def check_level_mirror(level: LevelInfo, info: ArrayInfo, n_time: int | None = None) -> None:
    """Raise CorruptStoreError unless ``level`` (the mirror) describes ``info`` (the array)."""
    where = f"chronozarr.levels[{level.path!r}]"
    shape = tuple(level.shape)
    if len(info.shape) != 4 or len(info.inner_chunk_shape) != 4:
        raise CorruptStoreError(
            f"{info.key}: expected a (time, band, y, x) array, got {info.shape}"
        )
    if info.shape[1:] != shape[1:] or info.shape[0] < shape[0]:
        raise CorruptStoreError(
            f"{where}.shape {list(shape)} does not mirror {info.key} shape {list(info.shape)}"
        )
    if n_time is not None and shape[0] != n_time:
        raise CorruptStoreError(
            f"{where}.shape has {shape[0]} timesteps, chronozarr.times {n_time}"
        )
    inner = info.inner_chunk_shape
    cs = inner[-2]
    if inner[0] != 1 or inner[1] != shape[1] or cs < 1 or inner[-1] != cs:
        raise CorruptStoreError(
            f"{info.key}: inner chunk shape {list(inner)} is not (1, bands, cs, cs) (spec 2.1)"
        )
    nbytes = math.prod(inner) * _itemsize(info.dtype)
    if nbytes > MAX_CHUNK_BYTES:
        raise CorruptStoreError(f"{info.key}: an inner chunk of {nbytes} bytes is absurd")
    grid = (math.ceil(shape[2] / cs), math.ceil(shape[3] / cs))
    if tuple(level.grid) != grid:
        raise CorruptStoreError(
            f"{where}.grid {list(level.grid)} does not match shape {list(shape)} in cells of"
            f" {cs} (expected {list(grid)}, spec 3.7)"
        )


def _itemsize(dtype: str) -> int:
    return int(np.dtype(dtype).itemsize)


def check_nodata(nodata: float | int | None, dtype: str) -> None:
    """Raise CorruptStoreError unless ``nodata`` is a value of ``dtype`` (spec 2.3): a
    4,000-digit integer or a float nodata in an integer array cannot be compared with data."""
    if nodata is None:
        return
    kind = np.dtype(dtype)
    if kind.kind in "iu":
        info = np.iinfo(kind)
        if not (float(nodata).is_integer() if isinstance(nodata, float) else True) or not (
            info.min <= nodata <= info.max
        ):
            raise CorruptStoreError(f"chronozarr.nodata {nodata!r:.40} is not a {dtype} value")
    elif not isinstance(nodata, int | float) or (
        isinstance(nodata, int) and abs(nodata) > int(np.finfo(kind).max)
    ):
        raise CorruptStoreError(f"chronozarr.nodata {nodata!r:.40} is not a {dtype} value")

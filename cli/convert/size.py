"""How much a conversion writes, known before it starts: the estimate ``cz convert`` prints
and the bounds it applies (decision 0047).

A source's declared size decides the work, not its size on disk: three GeoTIFFs declaring
10^6 x 10^6 px each (46 MB of tile index, no pixel) ask for 6 TB of values, and
``--resolution 1e-9`` over a 400 x 300 m raster for 10^20 pixels. Main passed both through
``--dry-run`` with every check "ok" and then ran out of memory or ran for ever. Here:

- a conversion whose values (every level, uncompressed, mask included) exceed ``MAX_BYTES`` is
  refused unless ``--yes`` is given;
- one whose level 0 has more than ``MAX_CELLS`` cells is refused even with ``--yes``: the writer
  plans a task and keeps a result per cell (a few hundred bytes each), so the number of cells,
  not the options, must bound its memory; split such a conversion by area or by time.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.format import grid_shape, level_shapes
from cz.convert.errors import ConvertError

__all__ = ["MAX_BYTES", "MAX_CELLS", "Estimate", "check_size", "estimate"]

#: Uncompressed values of every level beyond which ``--yes`` is needed (a decade of monthly
#: timesteps of four bands over 10,000 x 10,000 px is 96 GB).
MAX_BYTES = 100e9
#: Level-0 cells beyond which a conversion is refused, ``--yes`` or not.
MAX_CELLS = 1_000_000


@dataclass(frozen=True)
class Estimate:
    """The size of a conversion: values of every level (uncompressed), cells, objects."""

    timesteps: int
    bands: int
    height: int
    width: int
    levels: int
    cells: int  # level 0
    value_bytes: int  # every level, data and mask, uncompressed
    objects: int  # chunk (or shard) objects of every level

    def text(self) -> str:
        return (
            f"{self.timesteps} timestep(s) x {self.bands} band(s) x {self.height} x "
            f"{self.width} px: {_bytes(self.value_bytes)} of values before compression over "
            f"{self.levels} level(s), {self.cells:,} level-0 cell(s), {self.objects:,} objects"
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "timesteps": self.timesteps,
            "bands": self.bands,
            "shape": [self.height, self.width],
            "levels": self.levels,
            "cells": self.cells,
            "value_bytes": self.value_bytes,
            "objects": self.objects,
            "max_bytes": int(MAX_BYTES),
            "max_cells": MAX_CELLS,
        }


def _bytes(n: float) -> str:
    for unit, size in (("EB", 1e18), ("PB", 1e15), ("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n / 1e3:.1f} kB"


def estimate(plan: Any, spec: Any, n_time: int) -> Estimate:
    """The size of writing ``plan`` (``n_time`` timesteps) with the store options ``spec``."""
    height, width = int(plan.grid.height), int(plan.grid.width)
    n_band = len(plan.band_names)
    cs = int(spec.chunk_size)
    itemsize = np.dtype(plan.dtype).itemsize
    per_pixel = n_band * itemsize + (1 if plan.mask is not None else 0)
    arrays = 1 + (1 if plan.mask is not None else 0)
    shards = math.ceil(n_time / spec.shard_time) if spec.shard and spec.shard_time else 1
    per_cell = shards if spec.shard else n_time
    value_bytes = objects = 0
    shapes = level_shapes(height, width, cs)
    for h, w in shapes:
        rows, cols = grid_shape(h, w, cs)
        value_bytes += n_time * h * w * per_pixel
        objects += rows * cols * per_cell * arrays
    rows, cols = grid_shape(height, width, cs)
    return Estimate(n_time, n_band, height, width, len(shapes), rows * cols, value_bytes, objects)


def check_size(size: Estimate, *, yes: bool) -> None:
    """Refuse a conversion beyond the bounds (see the module docstring)."""
    if size.cells > MAX_CELLS:
        raise ConvertError(
            "size",
            f"{size.text()}: more than {MAX_CELLS:,} level-0 cells, which one conversion does "
            "not plan (--yes or not); convert it in parts (by area, or by time with --append), "
            "or choose a coarser --resolution",
        )
    if size.value_bytes > MAX_BYTES and not yes:
        raise ConvertError(
            "size",
            f"{size.text()}: more than {_bytes(MAX_BYTES)}; check the source's declared size "
            "and --resolution, then give --yes to convert it",
        )

"""Lazy views of the spill that the streaming writer reads, and the cells counter."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from cz.build.options import Progress
from cz.build.spill import Spill, SpillPlanes
from cz.build.store_args import gap_method
from cz.plan import GridPlan


class PlaneView:
    """A lazy (time, band, y, x) or (time, y, x) array over :class:`SpillPlanes` for the writer.

    It has ``shape``, ``dtype``, ``ndim`` and ``compute`` (the writer's test for a lazy input);
    indexing with slices returns numpy, assembled from the blocks the slice covers.
    """

    def __init__(self, planes: SpillPlanes, kind: str) -> None:
        self.planes = planes
        self.kind = kind
        h, w = planes.height, planes.width
        if kind == "data":
            self.shape: tuple[int, ...] = (planes.n_months, planes.n_band, h, w)
            self.dtype = planes.dtype
        else:
            self.shape = (planes.n_months, h, w)
            self.dtype = np.dtype(np.uint8)
        self.ndim = len(self.shape)

    def compute(self) -> np.ndarray:
        return self[tuple(slice(None) for _ in self.shape)]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.compute()
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, key: Any) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key,)
        key = key + (slice(None),) * (self.ndim - len(key))
        squeeze: list[int] = []
        ranges: list[range] = []
        for axis, (k, n) in enumerate(zip(key, self.shape, strict=True)):
            if isinstance(k, int | np.integer):
                k = int(k) + (n if k < 0 else 0)
                ranges.append(range(k, k + 1))
                squeeze.append(axis)
            elif isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step != 1:
                    raise IndexError("only unit-step slices are supported")
                ranges.append(range(start, max(start, stop)))
            else:
                raise IndexError(f"unsupported index {k!r}")
        times, ys, xs = ranges[0], ranges[-2], ranges[-1]
        bands = ranges[1] if self.kind == "data" else range(0)
        cs = self.planes.cs
        if self.kind == "data":
            out = np.empty((len(times), len(bands), len(ys), len(xs)), dtype=self.dtype)
        else:
            out = np.empty((len(times), len(ys), len(xs)), dtype=self.dtype)
        if len(ys) and len(xs):
            for row in range(ys.start // cs, (ys.stop - 1) // cs + 1):
                for col in range(xs.start // cs, (xs.stop - 1) // cs + 1):
                    by0, bx0 = row * cs, col * cs
                    y0, y1 = max(ys.start, by0), min(ys.stop, by0 + cs)
                    x0, x1 = max(xs.start, bx0), min(xs.stop, bx0 + cs)
                    oy, ox = (
                        slice(y0 - ys.start, y1 - ys.start),
                        slice(x0 - xs.start, x1 - xs.start),
                    )
                    iy, ix = slice(y0 - by0, y1 - by0), slice(x0 - bx0, x1 - bx0)
                    for i, t in enumerate(times):
                        if self.kind == "data":
                            block = self.planes.values(t, row, col)
                            out[i, :, oy, ox] = block[bands.start : bands.stop, iy, ix]
                        elif self.kind == "mask":
                            out[i, oy, ox] = self.planes.mask(t, row, col)[iy, ix]
                        else:
                            out[i, oy, ox] = self.planes.coverage(t, row, col)[iy, ix]
        if squeeze:
            out = out.squeeze(axis=tuple(squeeze))
        return out


def spill_planes(
    spill: Spill, recipe: Any, plan: Any, options: Any, progress: Any, **extra: Any
) -> SpillPlanes:
    """The writer's view of a plan's spilled composites (build and append read them alike)."""
    grid = plan.grid
    return SpillPlanes(
        spill,
        n_months=len(plan.months),
        shape=(grid.shape[0], grid.shape[1]),
        cs=grid.chunk_size,
        n_band=len(recipe.bands),
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        on_data=CellCounter(len(plan.months), grid, progress),
        readers=options.threads(),
        gap=gap_method(recipe),
        **extra,
    )


class CellCounter:
    """Counts level-0 (month, cell) planes handed to the writer, for the ``cells`` bar."""

    def __init__(self, n_months: int, grid: GridPlan, progress: Progress) -> None:
        rows, cols = grid.levels[0].grid
        self.seen = np.zeros((n_months, rows, cols), dtype=bool)
        self.remaining = n_months * rows * cols
        self.share = 1.0 / max(1, n_months)
        self.progress = progress
        self.lock = threading.Lock()

    def __call__(self, t: int, row: int, col: int) -> None:
        with self.lock:
            if self.seen[t, row, col]:
                return
            self.seen[t, row, col] = True
            self.remaining -= 1
            last = self.remaining == 0
        self.progress.advance("cells", self.share)
        if last:
            self.progress.finish("cells")
            self.progress.start("pyramid", None, "upper levels, volatility, metadata")

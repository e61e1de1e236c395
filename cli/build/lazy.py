"""The raw monthly composites as a lazy, dask-backed xarray (for notebooks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chronozarr.format import pixel_centres
from cz.build.blocks import blocks_touched, grid_blocks, item_refs
from cz.build.options import BuildOptions
from cz.build.tasks import (
    BlockTask,
    CompositeContext,
    composite_context,
    compute_block,
    spill_codec,
)
from cz.composite import fill_value
from cz.plan import Plan, plan_recipe
from cz.recipe import Recipe


def _decoded_block(task: BlockTask, ctx: CompositeContext) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compute_block`, decompressed: (values (nb, h, w), coverage (h, w))."""
    result = compute_block(task, ctx)
    codec = spill_codec()
    y0, y1, x0, x1 = task.window
    nb = len(ctx.load.bands)
    values = np.frombuffer(codec.decode(result.values), dtype=ctx.dtype)
    coverage = np.frombuffer(codec.decode(result.coverage), dtype=np.uint8)
    return values.reshape(nb, y1 - y0, x1 - x0), coverage.reshape(y1 - y0, x1 - x0)


def lazy_composites(
    recipe: Recipe, *, plan: Plan | None = None, options: BuildOptions | None = None
) -> Any:
    """The raw monthly composites of a recipe as a lazy, dask-backed ``xarray.Dataset``.

    ``data`` (time, band, y, x) in the store dtype and ``coverage`` (time, y, x) uint8, chunked
    per (1 month, cell); each chunk is :func:`compute_block` of that (month, block), run when it
    is computed, on whatever dask scheduler is active. Nothing is written. Gap-fill is not
    applied (it belongs to the store: ``cz build``). Signed URLs are signed now, so compute
    within the token's lifetime. For notebooks; ``cz build`` does not go through it (see the
    module docstring).
    """
    import dask
    import dask.array as da
    import xarray as xr

    options = options or BuildOptions()
    plan = plan or plan_recipe(recipe)
    ctx = composite_context(recipe, plan, options)
    grid = plan.grid
    height, width = grid.shape
    nb = len(recipe.bands)
    dtype = np.dtype(recipe.store.dtype)
    fill = fill_value(dtype, recipe.store.effective_nodata)
    blocks = grid_blocks(grid)
    rows = 1 + max(r for r, _c, _w in blocks)
    cols = 1 + max(c for _r, c, _w in blocks)
    data_months, cov_months = [], []
    for t, month in enumerate(plan.months):
        touched = blocks_touched(month, grid, ctx.rules.halo) if month.items else {}
        refs = item_refs(month, recipe) if touched else []
        data_grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
        cov_grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
        for row, col, window in blocks:
            h, w = window[1] - window[0], window[3] - window[2]
            members = touched.get((row, col))
            if not members:
                data_grid[row][col] = da.full((1, nb, h, w), fill, dtype=dtype)
                cov_grid[row][col] = da.zeros((1, h, w), dtype=np.uint8)
                continue
            task = BlockTask(t, month.month, row, col, window, tuple(refs[i] for i in members))
            pair = dask.delayed(_decoded_block, pure=True)(task, ctx)
            data_grid[row][col] = da.from_delayed(pair[0], (nb, h, w), dtype=dtype)[None]
            cov_grid[row][col] = da.from_delayed(pair[1], (h, w), dtype=np.uint8)[None]
        data_months.append(da.block(data_grid))  # rows along y, cells along x
        cov_months.append(da.block(cov_grid))
    ys, xs = pixel_centres(grid.transform, height, width)
    coords = {
        "time": np.array([np.datetime64(m.time.rstrip("Z"), "ns") for m in plan.months]),
        "band": [b.name for b in recipe.bands],
        "y": np.asarray(ys),
        "x": np.asarray(xs),
    }
    data = da.concatenate(data_months, axis=0)
    coverage = da.concatenate(cov_months, axis=0)
    return xr.Dataset(
        {
            "data": (("time", "band", "y", "x"), data),
            "coverage": (("time", "y", "x"), coverage),
        },
        coords=coords,
        attrs={"crs": grid.crs, "transform": list(grid.transform), "nodata": fill},
    )

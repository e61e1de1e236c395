"""One composite task: read, correct, mosaic and composite one (month, block) (spec 2.3 values)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from cz.build.options import BuildOptions
from cz.composite import composite_block
from cz.load import BandLoad, ItemRef, LoadSpec, SkippedAsset, gdal_options, load_block
from cz.plan import Plan
from cz.recipe import Recipe

#: zstd level of the spill: fast, the files live only as long as the build
SPILL_CODEC_LEVEL = 1


@dataclass(frozen=True)
class CompositeContext:
    """What every block task shares: the load spec and the composite rules (picklable)."""

    load: LoadSpec
    dtype: str
    nodata: float | None
    keep: tuple[int, ...] | None
    harmonized: tuple[bool, ...]


@dataclass(frozen=True)
class BlockTask:
    """One unit of work: the items of month ``t`` that touch block (row, col)."""

    t: int
    month: str
    row: int
    col: int
    window: tuple[int, int, int, int]
    items: tuple[ItemRef, ...]


@dataclass
class BlockResult:
    """The raw composite of one (month, block), compressed, and what went into it."""

    t: int
    row: int
    col: int
    values: bytes
    coverage: bytes
    items_read: list[str]
    observations: int
    skipped: list[SkippedAsset]


def spill_codec() -> Any:
    from numcodecs import Zstd

    return Zstd(level=SPILL_CODEC_LEVEL)


def compute_block(task: BlockTask, ctx: CompositeContext) -> BlockResult:
    """Read, correct, mosaic and composite one (month, block); runs on any worker."""
    loaded = load_block(task.items, ctx.load, task.window, month=task.month)
    values, coverage = composite_block(
        loaded.values,
        loaded.scl,
        corrections=[r.correction for r in loaded.items],
        solar_days=[r.solar_day for r in loaded.items],
        keep=ctx.keep,
        src_nodata=loaded.src_nodata,
        harmonized=ctx.harmonized,
        dtype=ctx.dtype,
        nodata=ctx.nodata,
    )
    codec = spill_codec()
    return BlockResult(
        task.t,
        task.row,
        task.col,
        bytes(codec.encode(np.ascontiguousarray(values))),
        bytes(codec.encode(np.ascontiguousarray(coverage))),
        [r.id for r in loaded.items],
        len({r.solar_day for r in loaded.items}),
        loaded.skipped,
    )


def composite_context(recipe: Recipe, plan: Plan, options: BuildOptions) -> CompositeContext:
    grid = plan.grid
    spec = LoadSpec(
        crs=grid.crs,
        transform=tuple(float(v) for v in grid.transform),  # type: ignore[arg-type]
        bands=tuple(BandLoad(b.name, b.resampling, b.harmonize) for b in recipe.bands),
        mask_keep=None if recipe.mask is None else tuple(recipe.mask.keep),
        attempts=options.read_attempts,
        retry_delay=options.retry_delay,
        skip_failed=options.skip_failed,
        gdal=gdal_options(options.gdal),
    )
    return CompositeContext(
        load=spec,
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        keep=spec.mask_keep,
        harmonized=tuple(b.harmonize for b in recipe.bands),
    )

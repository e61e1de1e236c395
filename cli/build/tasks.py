"""One composite task: read, correct, mosaic and composite one (month, block) (spec 2.3 values)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cz.build.options import BuildOptions
from cz.composite import BandTerms, CompositeRules, composite_block, grow_window
from cz.composite.bits import BitRule
from cz.composite.derived import DerivedBand
from cz.composite.methods import require_geomad
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
    rules: CompositeRules = field(default_factory=CompositeRules)


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
    """Read, correct, mosaic and composite one (month, block); runs on any worker.

    The block is read with the mask cleaning's halo around it (``ctx.rules.halo`` pixels), so the
    cleaning is the same across block edges; the composite is the block alone."""
    window = grow_window(task.window, ctx.rules.halo)
    loaded = load_block(task.items, ctx.load, window, month=task.month)
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
        cloud=loaded.cloud,
        rules=ctx.rules,
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
        bands=tuple(
            BandLoad(b.name, b.resampling, bool(b.harmonize)) for b in recipe.bands if not b.derived
        ),
        # () for a mask of bit flags alone: the asset is read, no class is kept (cz.load)
        mask_keep=None if recipe.mask is None else tuple(recipe.mask.keep or ()),
        attempts=options.read_attempts,
        retry_delay=options.retry_delay,
        skip_failed=options.skip_failed,
        gdal=gdal_options(options.gdal),
        cloud=recipe.mask is not None and recipe.mask.cloud_probability_max is not None,
    )
    return CompositeContext(
        load=spec,
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        keep=None if recipe.mask is None or recipe.mask.keep is None else spec.mask_keep,
        harmonized=tuple(bool(b.harmonize) for b in recipe.bands if not b.derived),
        rules=composite_rules(recipe, plan),
    )


def composite_rules(recipe: Recipe, plan: Plan | None = None) -> CompositeRules:
    """The recipe's mask cleaning and composite method for :func:`cz.composite.composite_block`;
    the bit-flag rules as the plan resolved them against its items (cz.plan.bitfields)."""
    mask = recipe.mask
    comp = recipe.composite
    if comp.method == "geomedian":
        require_geomad()
    # the bands as a block holds them: read, then derived per observation, then from the
    # composite (cz.composite.derived); store_order puts them back in the recipe's order
    internal = sorted(
        range(len(recipe.bands)),
        key=lambda i: (
            (0 if not recipe.bands[i].derived else 2 if recipe.bands[i].when == "composite" else 1),
            i,
        ),
    )
    ordered = [recipe.bands[i] for i in internal]
    return CompositeRules(
        method=comp.method,
        q=comp.q,
        index=comp.index,
        bands=tuple(BandTerms(b.name, b.common_name, b.scale, b.physical_offset) for b in ordered),
        derived=tuple(
            DerivedBand(
                b.name,
                str(b.expression),
                b.scale,
                b.physical_offset,
                after=b.when == "composite",
            )
            for b in ordered
            if b.derived
        ),
        store_order=tuple(internal.index(i) for i in range(len(internal)))
        if internal != sorted(internal)
        else (),
        open_radius=0 if mask is None else mask.open,
        dilate_radius=0 if mask is None else mask.dilate,
        cloud_max=None if mask is None else mask.cloud_probability_max,
        clean=() if mask is None else tuple(c for c in mask.clean or () if isinstance(c, int)),
        bits=_bit_rules(plan),
    )


def _bit_rules(plan: Plan | None) -> tuple[BitRule, ...]:
    entries = [] if plan is None or plan.mask is None else plan.mask.get("bits") or []
    return tuple(
        BitRule(e["name"], e["offset"], e["length"], tuple(e["values"]), e["cloud"])
        for e in entries
    )

"""From a recipe to the store's arguments: bands (spec 3.6), codec (spec 8), provenance (spec 3.8)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chronozarr import provenance
from cz.load import SkippedAsset
from cz.plan import MonthPlan
from cz.recipe import Recipe


def store_bands(recipe: Recipe) -> list[dict[str, Any]]:
    """The band objects of the store (spec 3.6): name, common_name, scale, offset, units."""
    out = []
    for band in recipe.bands:
        entry: dict[str, Any] = {"name": band.name, "scale": band.scale}
        entry["offset"] = band.physical_offset
        if band.common_name:
            entry["common_name"] = band.common_name
        if band.units:
            entry["units"] = band.units
        out.append(entry)
    return out


def codec_options(recipe: Recipe) -> dict[str, Any]:
    """The writer's ``codec_options`` for the recipe's codec (spec 8)."""
    return recipe.store.codec.writer_options()


def composite_parameters(recipe: Recipe) -> dict[str, Any]:
    """The composite method's parameters as recorded (``geomedian``: the library and its
    iteration limit and tolerance, which decide the numbers)."""
    params = recipe.composite.parameters()
    if recipe.composite.method == "geomedian":
        from cz.composite.methods import GEOMEDIAN_EPS, GEOMEDIAN_MAXITERS, GEOMEDIAN_SCALE

        params.update(
            library="geomad",
            scale=GEOMEDIAN_SCALE,
            eps=GEOMEDIAN_EPS,
            maxiters=GEOMEDIAN_MAXITERS,
        )
    return params


def mask_rules(recipe: Recipe) -> dict[str, Any]:
    """The provenance's ``mask_cleaning`` entry (empty without opening, dilation, probability)."""
    mask = recipe.mask
    if mask is None:
        return {}
    return provenance.mask_fields(
        open_radius=mask.open,
        dilate_radius=mask.dilate,
        cloud_probability_max=mask.cloud_probability_max,
    )


def recipe_fingerprint(recipe: Recipe) -> dict[str, Any]:
    """The recipe choices an append must repeat, as recorded in the store's provenance.

    The mask cleaning and the composite's parameters appear only when used, so a store built with
    the defaults records what it did before they existed."""
    out = {
        "collection": recipe.catalog.collection,
        "composite": recipe.composite.method,
        "gap_fill": recipe.gap_fill.method,
        "gap_fill_max_age": recipe.gap_fill.max_age,
        "mask_keep": None if recipe.mask is None else list(recipe.mask.keep),
        "dn_offset": recipe.store_dn_offset if any(b.harmonize for b in recipe.bands) else 0,
        "harmonized": [b.name for b in recipe.bands if b.harmonize],
        "resampling": {b.name: b.resampling for b in recipe.bands},
    }
    params = composite_parameters(recipe)
    if params:
        out["composite_parameters"] = params
    out.update(mask_rules(recipe))
    return out


def provenance_block(recipe: Recipe, skipped: Sequence[SkippedAsset]) -> dict[str, Any]:
    """The root's ``chronozarr.provenance`` (spec 3.8): small, whatever the number of items."""
    gap = recipe.gap_fill
    keep = None if recipe.mask is None else ", ".join(str(k) for k in recipe.mask.keep)
    notes = recipe.provenance.notes
    if notes is None and keep is not None:
        notes = f"SCL classes {keep} kept"
    catalog = recipe.catalog.url or f"local file {Path(str(recipe.catalog.path)).name}"
    out: dict[str, Any] = {
        "sources": [recipe.catalog.collection],
        **provenance.composite_fields(recipe.composite.method, composite_parameters(recipe)),
        **mask_rules(recipe),
        "gap_fill": gap.method,
        "notes": notes,
    }
    if gap.method == "carry-forward":
        out["gap_fill_max_age"] = gap.max_age
    out["catalog"] = catalog
    if recipe.name:
        out["recipe"] = recipe.name
    out["software"] = "cz build (chronozarr toolkit)"
    out["items"] = provenance.items_reference()
    out["build"] = recipe_fingerprint(recipe)
    out["skipped_items"] = provenance.skipped_entries(skipped)
    return out


def month_document(month: MonthPlan, skipped: Sequence[SkippedAsset]) -> str:
    """The JSON of one month in ``provenance_items``: the items kept and skipped."""
    return provenance.items_document(
        month.month,
        items=[p.id for p in month.items],
        solar_days=month.solar_days,
        corrections={p.id: p.correction for p in month.items if p.correction},
        dropped=len(month.dropped),
        skipped=skipped,
    )


def carry_forward_months(recipe: Recipe) -> int:
    """Months a value may be carried forward (0: no gap-fill)."""
    if recipe.gap_fill.method != "carry-forward":
        return 0
    return int(recipe.gap_fill.max_age or 0)

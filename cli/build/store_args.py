"""From a recipe to the store's arguments: bands (spec 3.6), provenance (spec 3.8). The layout
(chunk size, encoding, sharding, codec) is the recipe's own ``store.layout``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from chronozarr import Band, provenance
from cz.load import SkippedAsset
from cz.periods import period_adjective
from cz.plan import MonthPlan, Plan, grid_for
from cz.recipe import Recipe


def store_bands(recipe: Recipe) -> list[Band]:
    """The band objects of the store (spec 3.6): name, common_name, scale, offset, units."""
    return [
        Band(
            name=band.name,
            common_name=band.common_name or None,
            scale=float(band.scale),
            offset=float(band.physical_offset),
            units=band.units or None,
        )
        for band in recipe.bands
    ]


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
        cleaned=list(mask.clean or ()),
    )


def legacy_fingerprint(recipe: Recipe) -> dict[str, Any]:
    """The short fingerprint stores built before decision 0018 recorded under ``provenance.build``
    (compared with those stores only; new stores record :func:`recipe_fingerprint`), with the
    keys of ``OPTIONAL_FINGERPRINT`` when used: such a store was built without them, so it
    refuses a recipe that cleans the mask or gives the method parameters."""
    out = {
        "collection": recipe.catalog.collection,
        "composite": recipe.composite.method,
        "gap_fill": recipe.gap_fill.method,
        "gap_fill_max_age": recipe.gap_fill.max_age,
        "mask_keep": None if recipe.mask is None else recipe.mask.keep,
        "dn_offset": recipe.store_dn_offset if any(b.harmonize for b in recipe.bands) else 0,
        "harmonized": [b.name for b in recipe.bands if b.harmonize],
        "resampling": {b.name: b.resampling for b in recipe.bands},
    }
    params = composite_parameters(recipe)
    if params:
        out["composite_parameters"] = params
    out.update(mask_rules(recipe))
    return out


def _dump(section: BaseModel) -> dict[str, Any]:
    return section.model_dump(mode="json", by_alias=True)


def fingerprint_sections(recipe: Recipe) -> dict[str, Any]:
    """The recipe sections that change what a month of the store means, normalised.

    Whole sections are dumped from their models, so a field added to ``filters``, ``mask``,
    ``composite``, ``gap_fill``, a band or ``grid`` is part of the fingerprint without a change
    here. Left out: where the items come from besides the collection (URL, paging, retries,
    signing), the AOI and the store layout (``cz append`` compares the grid and the layout with
    the store itself), and free text.
    """
    filters = _dump(recipe.filters)
    filters["properties"] = {k: c.operators() for k, c in recipe.filters.properties.items()}
    bands = []
    for band in recipe.bands:
        entry = _dump(band)
        entry["offset"] = band.physical_offset  # the default resolved (harmonised: -1000 x scale)
        for key in ("expression", "when", "dtype"):  # added with derived bands: absent is none
            if entry.get(key) is None:
                entry.pop(key, None)
        if band.derived and entry.get("when") is None:
            entry["when"] = "observation"
        bands.append(entry)
    harmonised = any(b.harmonize for b in recipe.bands)
    grid = _dump(recipe.grid)
    if grid.get("crs") == "utm":  # the zone it resolves to: `utm` and its EPSG code are one grid
        grid["crs"] = grid_for(recipe).crs
    composite = _dump(recipe.composite)
    if recipe.composite.period.kind == "month":  # added with periods: absent is the month
        composite.pop("period", None)
    for key, value in composite_parameters(recipe).items():  # geomedian: library, eps, ...
        composite.setdefault(key, value)
    return {
        "catalog": {"collection": recipe.catalog.collection},
        "filters": filters,
        "mask": _mask_section(recipe),
        "composite": composite,
        "gap_fill": _dump(recipe.gap_fill),
        "harmonization": {"store_dn_offset": recipe.store_dn_offset if harmonised else 0},
        "bands": bands,
        "grid": grid,
        "store": {"dtype": recipe.store.dtype, "nodata": recipe.store.effective_nodata},
    }


def _mask_section(recipe: Recipe) -> dict[str, Any] | None:
    """The mask section as the fingerprint records it: ``clean`` only when something is cleaned
    (it changes nothing otherwise, so stores without cleaning keep the bytes they had before the
    field existed; a store built with cleaning before it refuses an append, since its cleaning
    opened every rejected class: decision 0043)."""
    if recipe.mask is None:
        return None
    section = _dump(recipe.mask)
    if not (recipe.mask.open or recipe.mask.dilate):
        section.pop("clean", None)
    if recipe.mask.bits is None:  # added with bit-flag masks: absent is "none"
        section.pop("bits", None)
    return section


def recipe_fingerprint(recipe: Recipe) -> dict[str, Any]:
    """The recipe's fingerprint as the store records it: flattened dotted fields."""
    return provenance.flatten_fingerprint(fingerprint_sections(recipe))


def _at_defaults(section: Any, keep: tuple[str, ...] = ()) -> Any:
    """The section with every optional field at its default (required ones kept, and those of
    ``keep``: what makes a band the band it is, its asset or its expression and own scale)."""
    cls = type(section)
    required = {
        name: getattr(section, name)
        for name, f in cls.model_fields.items()
        if f.is_required() or (name in keep and getattr(section, name) is not None)
    }
    return cls.model_validate(required)


def fingerprint_defaults(recipe: Recipe) -> dict[str, Any]:
    """The fingerprint of ``recipe`` with every optional field of its sections at its default:
    what a store built before a field existed is taken to have used."""
    update: dict[str, Any] = {
        name: _at_defaults(getattr(recipe, name))
        for name in ("filters", "composite", "gap_fill", "grid", "store")
    }
    update["mask"] = None if recipe.mask is None else _at_defaults(recipe.mask)
    update["bands"] = [
        _at_defaults(b, ("asset", "expression", "scale") if b.derived else ("asset",))
        for b in recipe.bands
    ]
    return recipe_fingerprint(recipe.model_copy(update=update))


def compare_with_store(recipe: Recipe, store_provenance: Any) -> provenance.FingerprintCheck:
    """The recipe's fingerprint against the one the store recorded (old stores: legacy)."""
    return provenance.compare_fingerprint(
        store_provenance,
        recipe_fingerprint(recipe),
        defaults=fingerprint_defaults(recipe),
        legacy=legacy_fingerprint(recipe),
    )


def _mask_notes(mask: Any) -> str:
    """The provenance's default notes: the classes kept (``SCL classes 4, 5 kept``, as stores have
    always said) and the bit flags that reject."""
    parts = []
    if mask.keep is not None:
        parts.append(f"SCL classes {', '.join(str(k) for k in mask.keep)} kept")
    if mask.bits:
        flags = ", ".join(f"{k} in {v}" for k, v in mask.bits.items())
        parts.append(f"{'|'.join(mask.asset)} bits rejected: {flags}")
    return "; ".join(parts)


def provenance_block(
    recipe: Recipe, skipped: Sequence[SkippedAsset], plan: Plan | None = None
) -> dict[str, Any]:
    """The root's ``chronozarr.provenance`` (spec 3.8): small, whatever the number of items;
    with a period other than the month, the period and each timestep's bounds (``periods``)."""
    gap = recipe.gap_fill
    notes = recipe.provenance.notes
    if notes is None and recipe.mask is not None:
        notes = _mask_notes(recipe.mask)
    catalog = recipe.catalog.url or f"local file {Path(str(recipe.catalog.path)).name}"
    out: dict[str, Any] = {
        "sources": [recipe.catalog.collection],
        **provenance.composite_fields(
            recipe.composite.method,
            composite_parameters(recipe),
            period=period_adjective(recipe.composite.period.rule()),
        ),
        **period_entries(recipe, plan),
        **_derived_entries(recipe),
        **({"mask_bits": dict(recipe.mask.bits)} if recipe.mask and recipe.mask.bits else {}),
        **mask_rules(recipe),
        "gap_fill": gap.method,
        "notes": notes,
    }
    if gap.method != "none":
        out["gap_fill_max_age"] = gap.max_age
    out["catalog"] = catalog
    if recipe.name:
        out["recipe"] = recipe.name
    out["software"] = "cz build (chronozarr toolkit)"
    out["items"] = provenance.items_reference()
    out["fingerprint"] = provenance.fingerprint_entry(recipe_fingerprint(recipe))
    out["skipped_items"] = provenance.skipped_entries(skipped)
    return out


def _derived_entries(recipe: Recipe) -> dict[str, Any]:
    """``derived_bands`` of the provenance: each derived band's expression and when it is
    computed (none without derived bands: the block stays as it was)."""
    derived = {
        b.name: {"expression": b.expression, "when": b.when or "observation"}
        for b in recipe.bands
        if b.derived
    }
    return {"derived_bands": derived} if derived else {}


def period_entries(recipe: Recipe, plan: Plan | None) -> dict[str, Any]:
    """``period`` and ``periods`` of the provenance (none for calendar months)."""
    bounds = period_bounds(plan) if plan is not None else []
    return provenance.period_fields(
        recipe.composite.period.model_dump(mode="json", exclude_none=True), bounds
    )


def period_bounds(plan: Plan) -> list[tuple[str, str]]:
    """Each timestep's ``[start, end)`` of a plan (what an append adds to ``periods``)."""
    return [(m.time, m.end or m.time) for m in plan.months]


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
    """Periods gap-fill reaches (0: no gap-fill): back for carry-forward, back and ahead for
    linear."""
    if recipe.gap_fill.method == "none":
        return 0
    return int(recipe.gap_fill.max_age or 0)


def gap_method(recipe: Recipe) -> str:
    """How gaps are filled inside the reach: carry-forward (also with none: nothing to reach) or
    linear (cz.composite.gapfill)."""
    return "linear" if recipe.gap_fill.method == "linear" else "carry-forward"

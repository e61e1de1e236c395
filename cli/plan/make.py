"""Making a plan: checks, de-duplication, DN corrections, periods, grid, estimate, warnings."""

from __future__ import annotations

import dataclasses
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from shapely.geometry import shape

from chronozarr.io import is_url
from cz.composite.bits import BitRule
from cz.errors import RecipeError
from cz.months import iso_utc
from cz.periods import Period, period_adjective
from cz.plan.assets import AssetCensus
from cz.plan.bitfields import plan_bit_rules
from cz.plan.estimate import estimate_store
from cz.plan.grid import GridPlan, grid_for, utm_epsg
from cz.plan.items import (
    DnDecision,
    baseline_of,
    dn_offset_of,
    mgrs_tile,
    raster_scale_offset,
)
from cz.plan.model import DroppedItem, DropReason, MonthPlan, Plan, PlannedItem, Totals
from cz.plan.rules import Candidate, Checks, asset_needs, deduplicate, solar_day
from cz.recipe import Recipe
from cz.recipe.collections import harmonised_by_default
from cz.stac import PageCallback, Resolution, RetryPolicy, resolve_items, signing_available

_DTYPE_MAX = {"uint8": 255, "uint16": 65535}


def make_plan(recipe: Recipe, resolution: Resolution, *, out: str | None = None) -> Plan:
    """Decide the plan of ``recipe`` from the candidate items in ``resolution`` (no I/O)."""
    periods = recipe.periods()
    candidates: list[Candidate] = []
    screened = screen(
        recipe, periods, resolution.items, lambda cand, _item: candidates.append(cand)
    )
    refuse_absent_assets(recipe, screened.census)
    kept = deduplicate(candidates, screened.drop)
    bit_rules = plan_bit_rules(recipe, [mask_entry(c) for c in kept] if recipe.mask else [])
    planned = [planned_item(recipe, cand) for cand in kept]
    month_plans, outside = _month_plans(periods, planned, screened.dropped)
    return assemble(recipe, resolution, screened, planned, (month_plans, outside), bit_rules, out)


def mask_entry(cand: Candidate) -> tuple[str, Any, str]:
    """What :func:`cz.plan.bitfields.plan_bit_rules` reads of a candidate: its id, its mask
    asset and the asset's key."""
    item = cand.item
    return (str(item["id"]), item["assets"][cand.assets["mask"]], cand.assets["mask"])


def assemble(
    recipe: Recipe,
    resolution: Resolution,
    screened: Screened,
    planned: Sequence[PlannedItem],
    months: tuple[list[MonthPlan], list[DroppedItem]],
    bit_rules: Sequence[BitRule] | None,
    out: str | None,
) -> Plan:
    """The plan of ``planned`` items in ``months`` (and the drops outside them): the grid, the
    estimate, the warnings and the totals around them."""
    month_plans, outside = months
    n_periods = len(month_plans)  # one entry per period, empty ones too
    dropped, found = screened.dropped, screened.found
    grid = grid_for(recipe)
    store = recipe.store
    estimate = estimate_store(
        grid,
        n_periods,
        len(recipe.bands),
        store.dtype,
        shard=store.shard,
        shard_time=store.shard_time,
    )
    store_path = out if out is not None else store.path
    if store_path is not None and not is_url(store_path):
        store_path = str(Path(store_path).expanduser().resolve())
    warnings = (
        list(resolution.warnings)
        + screened.census.summaries(_needs(recipe))
        + _plan_warnings(recipe, grid, planned, month_plans, store_path)
    )
    corrections = Counter(f"{p.correction:+d}" for p in planned)
    reasons = Counter(d.reason for d in dropped)
    return Plan(
        recipe=recipe.source,
        name=recipe.name,
        collection=recipe.catalog.collection,
        source=resolution.source,
        signing=recipe.catalog.sign,
        grid=grid,
        **_recipe_sections(recipe, n_periods, store_path, bit_rules),
        months=month_plans,
        outside=outside,
        totals=Totals(
            months=n_periods,
            empty_months=sum(1 for m in month_plans if not m.items),
            items_found=found,
            items_kept=len(planned),
            dropped=dict(sorted(reasons.items())),
            observations=sum(len(m.solar_days) for m in month_plans),
            corrections=dict(sorted(corrections.items())),
        ),
        estimate=estimate,
        warnings=warnings,
    )


DropFn = Callable[..., None]


@dataclass
class Screened:
    """Rule 1 over every item: the items dropped so far, the function that records a drop
    (de-duplication drops more through it), what the items' assets were and how many items
    there were."""

    dropped: list[DroppedItem]
    drop: DropFn
    census: AssetCensus
    found: int


def screen(
    recipe: Recipe,
    periods: list[Period],
    items: Iterable[dict[str, Any]],
    keep: Callable[[Candidate, dict[str, Any]], None],
) -> Screened:
    """Rule 1 on every item as it comes: each candidate, its STAC dict trimmed and packed
    (decision 0060), handed to ``keep`` with the item it came from (the plan keeps it in a
    list, a cluster build's on disk: decision 0065)."""
    dropped: list[DroppedItem] = []
    checks = Checks(recipe, periods)

    def drop(
        item: dict[str, Any],
        moment: datetime | None,
        reason: DropReason,
        detail: str,
        duplicate_of: str | None = None,
    ) -> None:
        dropped.append(
            DroppedItem(
                id=str(item.get("id", "?")),
                datetime=iso_utc(moment) if moment else None,
                month=checks.period_of(moment) if moment else None,
                reason=reason,
                detail=detail,
                duplicate_of=duplicate_of,
            )
        )

    found = 0
    for item in items:
        found += 1
        outcome = checks.check(item)
        if isinstance(outcome, Candidate):
            outcome.pack(_kept_stac(item, outcome.assets.values()))
            keep(outcome, item)
        else:
            drop(item, *outcome)
    return Screened(dropped, drop, checks.census, found)


def _needs(recipe: Recipe) -> dict[str, list[str]]:
    """Each asset need's aliases (:func:`cz.plan.rules.asset_needs`)."""
    return {need: aliases for need, (_f, aliases) in asset_needs(recipe).items()}


def refuse_absent_assets(recipe: Recipe, census: AssetCensus) -> None:
    """A band or mask asset that no candidate item has is a mistake of the recipe, not a
    month without data: a :class:`RecipeError` naming the field, the aliases tried and the
    asset keys the items do have (exit 2). Absence from some items only is a drop each."""
    problems = [
        recipe.problem(field, census.describe_absent(need, aliases))
        for need, (field, aliases) in asset_needs(recipe).items()
        if census.absent(need)
    ]
    if problems:
        raise RecipeError(problems)


def _month_plans(
    periods: list[Period], planned: list[PlannedItem], dropped: list[DroppedItem]
) -> tuple[list[MonthPlan], list[DroppedItem]]:
    """Rule 4: the items of each period (empty ones kept), and the drops outside them."""
    labels = [p.label for p in periods]
    by_period: dict[str, list[PlannedItem]] = {m: [] for m in labels}
    for p in planned:
        by_period[p.month].append(p)
    dropped_by: dict[str, list[DroppedItem]] = {m: [] for m in labels}
    outside: list[DroppedItem] = []
    for d in dropped:
        dropped_by.get(d.month or "", outside).append(d)
    month_plans = []
    for period in periods:
        items = sorted(by_period[period.label], key=lambda p: (p.datetime, p.id))
        month_plans.append(
            MonthPlan(
                month=period.label,
                time=period.time,
                end=period.bounds[1],
                items=items,
                dropped=sorted(dropped_by[period.label], key=lambda d: (d.datetime or "", d.id)),
                solar_days=sorted({p.solar_day for p in items}),
            )
        )
    outside.sort(key=lambda d: (d.datetime or "", d.id))
    return month_plans, outside


def _plan_warnings(
    recipe: Recipe,
    grid: GridPlan,
    planned: Sequence[PlannedItem],
    month_plans: list[MonthPlan],
    store_path: str | None,
) -> list[str]:
    """What a person should know before building (the plan is still valid)."""
    warnings: list[str] = []
    assumed = [p.id for p in planned if p.dn_offset_rule == "acquisition-date"]
    if assumed:
        warnings.append(
            f"{len(assumed)} item(s) say nothing about their digital-number offset; assumed "
            f"from the acquisition date (first: {assumed[0]})"
        )
    lossy = [p for p in planned if not p.lossless]
    if lossy:
        warnings.append(
            f"{len(lossy)} item(s) need a negative correction: their numbers below "
            f"{-min(p.correction for p in lossy)} clip (store offset "
            f"{recipe.store_dn_offset}); keep the +1000 convention to stay lossless"
        )
    if (why := signing_available(recipe)) is not None:
        warnings.append(why)
    if recipe.grid.crs == "utm":
        lons = [c[0] for c in _coords(recipe.aoi.geojson())]
        zones = {utm_epsg(lon, 0) % 100 for lon in (min(lons), max(lons))}
        if len(zones) > 1:
            warnings.append(
                f"the AOI spans UTM zones {min(zones)}..{max(zones)}; the grid uses "
                f"{grid.crs} ({grid.crs_reason})"
            )
    empty = [m.month for m in month_plans if not m.items]
    if empty:
        warnings.append(
            f"{len(empty)} of {len(month_plans)} {_unit(recipe)}(s) have no items: "
            + ", ".join(empty[:6])
            + (" ..." if len(empty) > 6 else "")
        )
    if store_path is None:
        warnings.append("store.path is not set: give --out when building")
    return warnings + _scale_warnings(recipe, planned)


def _scale_warnings(recipe: Recipe, planned: Sequence[PlannedItem]) -> list[str]:
    """A band stored as the items give it (not harmonised) whose recipe scale or offset differs
    from the items' ``raster:bands``: its stored numbers would read as other physical values
    (a Landsat recipe left at the Sentinel-2 default 0.0001, say)."""
    out = []
    for band in recipe.bands:
        if band.harmonize or band.derived:
            continue
        seen: dict[tuple[float, float], int] = {}
        for p in planned:
            asset = ((p.stac_dict() or {}).get("assets") or {}).get(p.assets.get(band.name, ""), {})
            declared = raster_scale_offset(asset)
            if declared is not None:
                seen[declared] = seen.get(declared, 0) + 1
        for (scale, offset), count in sorted(seen.items()):
            if math.isclose(scale, band.scale, rel_tol=1e-9) and math.isclose(
                offset, band.physical_offset, rel_tol=1e-9, abs_tol=1e-12
            ):
                continue
            out.append(
                f"band {band.name}: {count} item(s) declare scale {scale:g} and offset "
                f"{offset:g} (raster:bands), the recipe stores their numbers with scale "
                f"{band.scale:g} and offset {band.physical_offset:g}: set the band's scale and "
                "offset to the items' so the stored numbers mean the same reflectance"
            )
    return out


def _recipe_sections(
    recipe: Recipe,
    n_months: int,
    store_path: str | None,
    bit_rules: Sequence[BitRule] | None = None,
) -> dict[str, Any]:
    """The recipe's choices as the plan records them, defaults resolved."""
    store = recipe.store
    rule = recipe.composite.period.rule()
    harmonised = [b.name for b in recipe.bands if b.harmonize]
    codec = {
        "name": store.codec.name,
        "level": store.codec.effective_level,
        "cname": store.codec.cname,
        "shuffle": store.codec.shuffle,
    }
    return {
        "bands": [
            {
                "name": b.name,
                "asset": list(b.asset or ()),
                "common_name": b.common_name,
                "scale": b.scale,
                "offset": b.physical_offset,
                "units": b.units,
                "resampling": b.resampling,
                "harmonize": b.harmonize,
                **(
                    {"expression": b.expression, "when": b.when or "observation"}
                    if b.derived
                    else {}
                ),
            }
            for b in recipe.bands
        ],
        "mask": (
            {
                "asset": list(recipe.mask.asset),
                "keep": None if recipe.mask.keep is None else list(recipe.mask.keep),
                "resampling": "nearest",
                **_mask_extras(recipe),
                **_bits_entry(bit_rules),
            }
            if recipe.mask is not None
            else None
        ),
        "composite": _composite_entry(recipe),
        "period": recipe.composite.period.model_dump(mode="json", exclude_none=True),
        "gap_fill": recipe.gap_fill.model_dump(mode="json"),
        "store": {
            "path": store_path,
            "dtype": store.dtype,
            "nodata": store.effective_nodata,
            "encoding": store.encoding,
            "anchor_interval": store.anchor_interval,
            "chunk_size": store.chunk_size,
            "shard": store.shard,
            "shard_time": (store.shard_time or n_months) if store.shard else None,
            "codec": {k: v for k, v in codec.items() if v is not None},
        },
        "provenance": {
            "sources": [recipe.catalog.collection],
            "composite": f"{period_adjective(rule)} {recipe.composite.method}",
            "gap_fill": recipe.gap_fill.method,
            "notes": recipe.provenance.notes,
        },
        "dn_convention": {
            "store_dn_offset": recipe.store_dn_offset if harmonised else 0,
            "harmonized_bands": harmonised,
            "rule": (
                "stored = item number + correction, correction = store_dn_offset - item dn_offset "
                "(valid pixels of harmonised bands only; nodata stays nodata)"
            ),
            "saturation": (
                f"corrected numbers are clipped to [1, {_DTYPE_MAX[store.dtype]}]"
                if store.dtype in _DTYPE_MAX
                else "none (signed or float store)"
            ),
        },
    }


def _mask_extras(recipe: Recipe) -> dict[str, Any]:
    """The plan's mask entries beyond the keep-set, only those in use (cz.composite.masks)."""
    mask = recipe.mask
    out: dict[str, Any] = {}
    if mask is None:
        return out
    if mask.open:
        out["open"] = mask.open
    if mask.dilate:
        out["dilate"] = mask.dilate
    if mask.open or mask.dilate:
        out["clean"] = list(mask.clean or ())
    if mask.cloud_probability_max is not None:
        out["cloud_probability_max"] = mask.cloud_probability_max
        out["cloud_probability_asset"] = list(mask.cloud_probability_asset)
    return out


def _unit(recipe: Recipe) -> str:
    """The period in words, for warnings (``month``, ``dekad``, ``5-day``...)."""
    return recipe.composite.period.rule().describe()


def _label_of(recipe: Recipe, moment: datetime) -> str:
    period = recipe.composite.period.rule().containing(moment)
    assert period is not None  # only items inside a period of the plan are planned
    return period.label


def _bits_entry(rules: Sequence[BitRule] | None) -> dict[str, Any]:
    """The plan's resolved bit-flag rules (cz.plan.bitfields), only with ``mask.bits``."""
    if rules is None:
        return {}
    return {"bits": [{**dataclasses.asdict(r), "values": list(r.values)} for r in rules]}


def _composite_entry(recipe: Recipe) -> dict[str, Any]:
    """The plan's composite: the method, its parameters and its rounding rule."""
    from cz.composite import ROUNDING

    method = recipe.composite.method
    if method == "median":
        rule = {
            "even_count": "mean of the two middle values, rounded half to even (integer dtypes)"
        }
    else:
        rule = {"rounding": ROUNDING[method]}
    return {"method": method, **recipe.composite.parameters(), **rule}


def _coords(geojson: dict[str, Any]) -> list[tuple[float, float]]:
    geom = shape(geojson)
    return [tuple(c) for poly in getattr(geom, "geoms", [geom]) for c in poly.exterior.coords]


def planned_item(recipe: Recipe, cand: Candidate) -> PlannedItem:
    item = cand.item
    props = item.get("properties") or {}
    harmonised = [cand.assets[b.name] for b in recipe.bands if b.harmonize]
    if harmonised or harmonised_by_default(recipe.catalog.collection):
        decision = dn_offset_of(item, harmonised)
    else:  # Landsat, HLS, ...: no Sentinel-2 offset to decide (cz.recipe.collections)
        decision = DnDecision(
            0,
            "not-applied",
            f"no Sentinel-2 digital-number offset in collection {recipe.catalog.collection}: "
            "numbers stored as the item gives them",
            [],
        )
    dn_offset, source, notes = decision.offset, decision.source, list(decision.notes)
    if harmonised:
        correction = recipe.store_dn_offset - dn_offset
    elif decision.rule != "not-applied":
        correction = 0
        source = f"not applied (no harmonised band); {source}"
    else:
        correction = 0
    lossless = correction >= 0 or recipe.store.dtype in ("int16", "float32")
    if correction < 0 and not lossless:
        notes.append(f"numbers 1..{-correction} clip to 1 (lossy)")
    baseline = baseline_of(props)
    cloud = props.get("eo:cloud_cover")
    assets = item.get("assets") or {}
    hrefs = {name: _unsigned(str(assets[key].get("href"))) for name, key in cand.assets.items()}
    return PlannedItem(
        id=str(item["id"]),
        collection=item.get("collection"),
        datetime=iso_utc(cand.moment),
        month=_label_of(recipe, cand.moment),
        solar_day=solar_day(item, cand.moment, cand.footprint),
        platform=props.get("platform"),
        mgrs_tile=mgrs_tile(item),
        cloud_cover=float(cloud) if isinstance(cloud, int | float) else None,
        processing_baseline=f"{baseline[0]:02d}.{baseline[1]:02d}" if baseline else None,
        dn_offset=dn_offset,
        dn_offset_rule=decision.rule,
        dn_offset_source=source,
        correction=correction,
        lossless=lossless,
        notes=notes,
        assets=dict(cand.assets),
        hrefs=hrefs,
        stac=cand.packed,
    )


_SAS = re.compile(r"[?&](sig|se|st|sv|sp|sr)=")


def _unsigned(href: str) -> str:
    """An href without a SAS-style query (a token copied into a catalog must not be frozen)."""
    if "?" in href and _SAS.search(href) and "sig=" in href:
        return href.split("?", 1)[0]
    return href


def _kept_stac(item: dict[str, Any], keys: Iterable[str]) -> dict[str, Any]:
    """The STAC dict a plan keeps of an item (decision 0060): the assets it reads (``keys``)
    with their hrefs unsigned, no links, the rest as the catalog wrote it; what
    :func:`cz.build.blocks.item_refs` hands a worker (it trims the same way), so the build
    reads the same."""
    wanted = set(keys)
    assets = item.get("assets") or {}
    out = {k: v for k, v in item.items() if k not in ("links", "assets")}
    out["assets"] = {
        k: {**a, "href": _unsigned(str(a.get("href")))} if "sig=" in str(a.get("href", "")) else a
        for k, a in assets.items()
        if k in wanted
    }
    out["links"] = []
    return out


def plan_recipe(
    recipe: Recipe,
    *,
    out: str | None = None,
    policy: RetryPolicy | None = None,
    on_page: PageCallback | None = None,
) -> Plan:
    """Resolve the recipe's items and make its plan (what ``cz build --dry-run`` does)."""
    # a local file's items streamed: each screened and packed before the next is read (0060)
    resolution = resolve_items(recipe, policy=policy, on_page=on_page, stream=True)
    return make_plan(recipe, resolution, out=out)

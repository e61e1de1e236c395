"""The client-side checks of rule 1 and the de-duplication of rule 2 (docs/recipes.md)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from shapely import prepared
from shapely.geometry import shape
from shapely.ops import unary_union

from cz.months import iso_utc
from cz.periods import Period
from cz.plan.assets import AssetCensus
from cz.plan.assets import resolve_asset as _resolve
from cz.plan.items import item_datetime, item_footprint, scene_key, version_order
from cz.plan.model import DropReason, PackedStac
from cz.recipe import Recipe

#: An item is a duplicate when better items of its scene cover this share of its footprint.
DUPLICATE_COVER = 0.9


def _compare(value: Any, op: str, target: Any) -> bool:
    if op == "eq":
        return bool(value == target)
    if op == "neq":
        return bool(value != target)
    if op == "in":
        return value in target
    if value is None:
        return False
    numeric = isinstance(value, int | float) and not isinstance(value, bool)
    if numeric != (isinstance(target, int | float) and not isinstance(target, bool)):
        return False
    try:
        return {
            "lt": value < target,
            "lte": value <= target,
            "gt": value > target,
            "gte": value >= target,
        }[op]
    except TypeError:  # incomparable types: the condition fails
        return False


def resolve_asset(assets: dict[str, Any], aliases: Sequence[str]) -> str | None:
    """The asset key the aliases find (keys first, then band metadata: :mod:`cz.plan.assets`)."""
    found = _resolve(assets, aliases)
    return None if found is None else found.key


def solar_day(item: dict[str, Any], moment: datetime, footprint: Any | None) -> str:
    """Local solar date (as odc-stac's ``groupby='solar_day'``): UTC + longitude / 15 hours."""
    lon = footprint.centroid.x if footprint is not None and not footprint.is_empty else 0.0
    return (moment.astimezone(UTC) + timedelta(seconds=lon * 240)).date().isoformat()


def asset_needs(recipe: Recipe) -> dict[str, tuple[tuple[str | int, ...], list[str]]]:
    """The assets every item must have: ``{need: (recipe field, aliases)}``, a need being a
    band name, ``mask`` or ``cloud`` (the cloud probability of ``mask.cloud_probability_max``).
    One place, so an asset a new recipe rule reads is resolved, dropped and refused like the
    others once it is listed here."""
    needs: dict[str, tuple[tuple[str | int, ...], list[str]]] = {
        b.name: (("bands", i, "asset"), list(b.asset))
        for i, b in enumerate(recipe.bands)
        if b.asset is not None  # a derived band reads no asset
    }
    if recipe.mask is not None:
        needs["mask"] = (("mask", "asset"), list(recipe.mask.asset))
        if recipe.mask.cloud_probability_max is not None:
            aliases = list(recipe.mask.cloud_probability_asset)
            needs["cloud"] = (("mask", "cloud_probability_asset"), aliases)
    return needs


#: How a drop names a need that is not a band (the names ``mask`` and ``cloud`` are reserved).
NEED_LABELS = {"mask": "no mask asset", "cloud": "no cloud probability asset"}


class Candidate:
    """An item that passed the client-side checks, awaiting de-duplication. Once
    :meth:`pack` ed it keeps its STAC dict packed (decision 0060): :attr:`item` unpacks it."""

    def __init__(self, item: dict[str, Any], moment: datetime, footprint: Any) -> None:
        self._item: dict[str, Any] | None = item
        self.packed: PackedStac | None = None
        self.moment = moment
        self.footprint = footprint
        self.assets: dict[str, str] = {}

    @property
    def item(self) -> dict[str, Any]:
        """The item's STAC dict (a fresh copy each time once packed)."""
        if self._item is not None:
            return self._item
        assert self.packed is not None
        return self.packed.unpack()

    def pack(self, doc: dict[str, Any]) -> None:
        """Keep ``doc`` (the item as the plan keeps it) packed instead of the parsed item."""
        self.packed, self._item = PackedStac.of(doc), None


Failure = tuple[DropReason, str]  # why an item is dropped, and the detail


class Checks:
    """The client-side checks of rule 1, prepared once per plan."""

    def __init__(self, recipe: Recipe, periods: list[Period]) -> None:
        self.recipe = recipe
        self.periods = periods
        self.labels = {p.label for p in periods}
        self.rule = recipe.composite.period.rule()
        self.aoi = shape(recipe.aoi.geojson())
        self.aoi_prepared = prepared.prep(self.aoi)
        self.max_cloud = recipe.filters.max_cloud_cover
        self.conditions = {k: c.operators() for k, c in recipe.filters.properties.items()}
        self.seen_ids: set[str] = set()
        #: the needs of every item: each band's aliases, and the mask's
        self.needs = {need: aliases for need, (_f, aliases) in asset_needs(recipe).items()}
        self.census = AssetCensus()

    def period_of(self, moment: datetime) -> str | None:
        """The label of the plan's period holding ``moment``, or ``None``."""
        period = self.rule.containing(moment)
        return period.label if period is not None and period.label in self.labels else None

    def check(
        self, item: dict[str, Any]
    ) -> Candidate | tuple[datetime | None, DropReason, str, str | None]:
        """A candidate, or ``(datetime, reason, detail, duplicate_of)`` of the first failure."""
        moment = item_datetime(item)
        item_id = item.get("id")
        if not isinstance(item_id, str) or not item_id or moment is None:
            return moment, "invalid", "no id or no valid datetime", None
        if item_id in self.seen_ids:
            return moment, "duplicate", "the same item id was listed twice", item_id
        self.seen_ids.add(item_id)
        failed = self._collection_or_time(item, moment)
        footprint = None if failed else item_footprint(item)
        failed = failed or self._outside(footprint) or self._properties(item)
        cand = None if failed else Candidate(item, moment, footprint)
        failed = failed or self._assets(item_id, item, cand)
        if failed:
            reason, detail = failed
            return moment, reason, detail, None
        assert cand is not None  # no check failed
        return cand

    def _collection_or_time(self, item: dict[str, Any], moment: datetime) -> Failure | None:
        collection = item.get("collection")
        if collection is not None and collection != self.recipe.catalog.collection:
            return "collection", f"collection {collection!r}"
        if self.period_of(moment) is None:
            span = f"{self.periods[0].label}..{self.periods[-1].label}"
            return "time", f"acquired {iso_utc(moment)}, outside {span}"
        return None

    def _outside(self, footprint: Any) -> Failure | None:
        if footprint is None or footprint.is_empty:
            return "aoi", "no geometry or bbox"
        if not self.aoi_prepared.intersects(footprint) or self.aoi.touches(footprint):
            return "aoi", "footprint does not overlap the AOI"
        return None

    def _properties(self, item: dict[str, Any]) -> Failure | None:
        """The cloud cover and the recipe's property conditions."""
        props = item.get("properties") or {}
        if self.max_cloud is not None:
            cloud = props.get("eo:cloud_cover")
            if not isinstance(cloud, int | float) or isinstance(cloud, bool):
                return "cloud", "no eo:cloud_cover"
            if cloud > self.max_cloud:
                return "cloud", f"eo:cloud_cover {cloud:g} > {self.max_cloud:g}"
        for prop, ops in self.conditions.items():
            for op, target in ops.items():
                if not _compare(props.get(prop), op, target):
                    return "property", f"{prop} = {props.get(prop)!r} fails {op} {target!r}"
        return None

    def _assets(self, item_id: str, item: dict[str, Any], cand: Any) -> Failure | None:
        """Every need resolved to one of the item's assets (``cand.assets``), or the first not."""
        assets = item.get("assets") or {}
        found = self.census.record(item_id, assets if isinstance(assets, dict) else {}, self.needs)
        for need, resolved in found.items():
            if resolved is None:
                tried = ", ".join(self.needs[need])
                what = NEED_LABELS.get(need, f"no asset for band {need}")
                return "asset", f"{what} (tried {tried})"
            cand.assets[need] = resolved.key
        return None


def deduplicate(candidates: list[Candidate], drop: Any) -> list[Candidate]:
    """Rule 2 of the module docstring: keep the best version of a scene, and any item that adds
    footprint (a granule split across datastrips is not a duplicate)."""
    groups: dict[tuple[Any, ...], list[Candidate]] = {}
    for cand in candidates:
        groups.setdefault(scene_key(cand.item), []).append(cand)
    kept: list[Candidate] = []
    for group in groups.values():
        group.sort(key=lambda c: version_order(c.item))
        chosen: list[Candidate] = []
        for cand in group:
            if chosen:
                covered = unary_union([c.footprint for c in chosen])
                area = cand.footprint.area
                share = cand.footprint.intersection(covered).area / area if area > 0 else 1.0
                if share >= DUPLICATE_COVER:
                    best = chosen[0].item
                    drop(
                        cand.item,
                        cand.moment,
                        "duplicate",
                        f"same scene as {best['id']} ({_why_better(best, cand.item)})",
                        str(best["id"]),
                    )
                    continue
            chosen.append(cand)
        kept.extend(chosen)
    return kept


def _why_better(best: dict[str, Any], other: dict[str, Any]) -> str:
    b, o = version_order(best), version_order(other)
    if b[:2] != o[:2]:
        pb = best.get("properties", {}).get("s2:processing_baseline")
        po = other.get("properties", {}).get("s2:processing_baseline")
        return f"kept baseline {pb} over {po}"
    if b[2] != o[2]:
        return f"kept the more complete footprint: nodata {b[2]:g} % vs {o[2]:g} %"
    if b[3] != o[3]:
        return "kept the newer processing"
    return "kept the smaller id"

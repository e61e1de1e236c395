"""The plan model: planned and dropped items, months, totals; JSON as ``cz build --dry-run --json``."""

from __future__ import annotations

import json
import sys
import zlib
from typing import Annotated, Any, Literal

import pystac
from pydantic import BaseModel, Field, PlainSerializer, PlainValidator

from cz.plan.estimate import Estimate
from cz.plan.grid import GridPlan

PLAN_VERSION = "1"

DropReason = Literal[
    "invalid", "collection", "time", "aoi", "cloud", "property", "asset", "duplicate"
]


class PackedStac:
    """An item's STAC dict kept as zlib-compressed JSON (decision 0060): ~0.6 kB instead of the
    ~8 kB of Python objects a parsed item dict takes, so a continent's plan fits the client.
    :meth:`unpack` gives a fresh dict each time (callers may change it)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    @classmethod
    def of(cls, doc: dict[str, Any]) -> PackedStac:
        """``doc`` packed (JSON, compact separators, zlib level 1: fast and ~3x smaller)."""
        return cls(zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 1))

    def unpack(self) -> dict[str, Any]:
        """The STAC dict, as it was packed; its keys interned (``json.loads`` of a whole
        catalog shares them between items: so do the items unpacked for a group's context,
        in memory and in its pickle)."""
        doc: dict[str, Any] = json.loads(zlib.decompress(self.data), object_pairs_hook=_interned)
        return doc

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PackedStac) and self.unpack() == other.unpack()

    __hash__ = None  # type: ignore[assignment]  # equal as dicts, which are not hashable


def _interned(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {sys.intern(k): v for k, v in pairs}


def _packed(value: Any) -> PackedStac | None:
    """The plan's STAC field from a dict (JSON, a test) or an already packed one."""
    if value is None or isinstance(value, PackedStac):
        return value
    if isinstance(value, dict):
        return PackedStac.of(value)
    raise ValueError(f"a STAC item dict, not {type(value).__name__}")


def _unpacked(value: PackedStac | None) -> dict[str, Any] | None:
    return None if value is None else value.unpack()


#: A plan item's STAC dict: a dict in the plan's JSON, packed in memory (decision 0060).
StacField = Annotated[
    PackedStac | None,
    PlainValidator(_packed),
    PlainSerializer(_unpacked, return_type=dict[str, Any] | None),
]


class PlannedItem(BaseModel):
    """An item kept for a month, with its digital-number correction and its (unsigned) hrefs."""

    id: str
    collection: str | None
    datetime: str
    month: str
    solar_day: str
    platform: str | None
    mgrs_tile: str | None
    cloud_cover: float | None
    processing_baseline: str | None
    dn_offset: int
    dn_offset_rule: str
    dn_offset_source: str
    correction: int
    lossless: bool
    notes: list[str] = Field(default_factory=list)
    assets: dict[str, str]
    hrefs: dict[str, str]
    stac: StacField = None

    def stac_dict(self) -> dict[str, Any] | None:
        """The item's STAC dict (trimmed to the assets the recipe reads, no links, unsigned:
        decision 0060), unpacked; ``None`` when the plan carries none."""
        return None if self.stac is None else self.stac.unpack()

    def to_pystac(self) -> pystac.Item:
        """The item as a ``pystac.Item`` (needs the plan to have been made with its STAC dicts)."""
        doc = self.stac_dict()
        if doc is None:
            raise ValueError(f"plan item {self.id!r} carries no STAC dict")
        # no migration: it rewrites fields and may warn; odc-stac reads STAC 1.0 items as they are
        return pystac.Item.from_dict(doc, preserve_dict=False, migrate=False)


class DroppedItem(BaseModel):
    """An item left out, and why."""

    id: str
    datetime: str | None
    month: str | None
    reason: DropReason
    detail: str
    duplicate_of: str | None = None


class MonthPlan(BaseModel):
    """One timestep of the store: a period (a UTC calendar month by default; ``month`` is its
    label, cz.periods), its items and the items dropped. ``time`` is the period's start, ``end``
    its end (exclusive)."""

    month: str
    time: str
    end: str | None = None
    items: list[PlannedItem]
    dropped: list[DroppedItem]
    solar_days: list[str]


class Totals(BaseModel):
    """Counts over the plan."""

    months: int
    empty_months: int
    items_found: int
    items_kept: int
    dropped: dict[str, int]
    observations: int
    corrections: dict[str, int]


class Plan(BaseModel):
    """The checked plan of a recipe, one entry per period (what ``cz build --dry-run`` prints)."""

    plan_version: str = PLAN_VERSION
    recipe: str
    name: str | None
    collection: str
    source: dict[str, Any]
    signing: str
    grid: GridPlan
    bands: list[dict[str, Any]]
    mask: dict[str, Any] | None
    composite: dict[str, Any]
    period: dict[str, Any] = Field(default_factory=lambda: {"kind": "month"})
    gap_fill: dict[str, Any]
    store: dict[str, Any]
    provenance: dict[str, Any]
    dn_convention: dict[str, Any]
    months: list[MonthPlan]
    outside: list[DroppedItem]
    totals: Totals
    estimate: Estimate
    warnings: list[str]

    def to_dict(self, *, include_stac: bool = False) -> dict[str, Any]:
        """The plan as JSON-ready data; the items' STAC dicts (trimmed to the assets read,
        decision 0060) only with ``include_stac``."""
        exclude = None
        if not include_stac:
            exclude = {"months": {"__all__": {"items": {"__all__": {"stac"}}}}}
        return self.model_dump(mode="json", exclude=exclude)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """A plan from :meth:`to_dict` output."""
        return cls.model_validate(data)

    def month(self, month: str) -> MonthPlan:
        """The plan of one period, by its label (``YYYY-MM`` for a month)."""
        for entry in self.months:
            if entry.month == month:
                return entry
        raise KeyError(month)

    def month_items(self, month: str) -> list[pystac.Item]:
        """The kept items of a month as ``pystac.Item`` (unsigned; see ``cz.stac.sign_items``)."""
        return [item.to_pystac() for item in self.month(month).items]

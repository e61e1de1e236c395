"""The monthly plan: which items make each month of the store, on which grid, at what cost.

A plan is what ``cz build --dry-run`` prints and what a build consumes. It is made from a recipe
and the candidate items of its catalog (:mod:`cz.stac`) by pure rules, each documented in
``docs/recipes.md`` and ``docs/decisions/0003-dedupe-and-dn-correction.md``:

1. Checks on the client, whatever the server did, in this order (the first failure is the
   reason shown): item is well formed, in the collection, in the months, touches the AOI,
   cloud cover at most the ceiling, property conditions hold, has every asset needed.
2. De-duplication of the survivors: items of the same scene (satellite, MGRS tile, relative
   orbit, UTC day) are ranked (newest processing baseline, then least nodata, then newest
   generation time, then id) and an item is dropped as a duplicate when at least 90 % of its
   footprint is covered by better-ranked items of that scene. Different tiles are kept.
3. The digital-number convention of each item (:func:`dn_offset_of`) and the correction that
   brings it to the store's one convention.
4. Grouping by UTC calendar month; months without items are kept, empty.
5. The grid (:func:`grid_for`): the AOI projected to the CRS, its bounds snapped outward to whole
   multiples of the resolution, and the pyramid levels and cells of spec 2.1 / 6.

A plan is JSON (``Plan.to_dict``), holds unsigned hrefs only, and keeps each kept item's STAC
dict so a build needs no second search (``Plan.month_items``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, Literal, NamedTuple

import pystac
from pydantic import BaseModel, Field
from shapely import prepared
from shapely.geometry import box, shape
from shapely.ops import unary_union

from chronozarr.grid import grid_shape, level_resolution, level_shapes, level_transform
from cz.recipe import Recipe
from cz.stac import PageCallback, Resolution, RetryPolicy, resolve_items, signing_available

__all__ = [
    "PLAN_VERSION",
    "DnDecision",
    "DroppedItem",
    "Estimate",
    "GridPlan",
    "LevelPlan",
    "MonthPlan",
    "Plan",
    "PlannedItem",
    "aligned_bounds",
    "dn_offset_of",
    "estimate_store",
    "grid_for",
    "make_plan",
    "month_bounds",
    "month_of",
    "month_range",
    "plan_recipe",
    "project_lonlat",
    "scene_key",
    "utm_epsg",
]

PLAN_VERSION = "1"

#: Processing baseline from which Sentinel-2 L2A numbers carry BOA_ADD_OFFSET = -1000 (+1000 DN).
OFFSET_BASELINE = (4, 0)
#: The date that baseline entered operations, used only when an item says nothing at all.
OFFSET_BASELINE_DATE = date(2022, 1, 25)
S2_DN_OFFSET = 1000
#: An item is a duplicate when better items of its scene cover this share of its footprint.
DUPLICATE_COVER = 0.9
#: zstd stored / raw bytes on real Sentinel-2 uint16 chunks (spec 8: 1,376,469 / 2,097,152).
DATA_RATIO = 0.66
#: mask and coverage planes are mostly runs of one value; assumed stored / raw.
PLANE_RATIO = 0.05

DropReason = Literal[
    "invalid", "collection", "time", "aoi", "cloud", "property", "asset", "duplicate"
]
_ITEMSIZE = {"uint8": 1, "uint16": 2, "int16": 2, "float32": 4}
_DTYPE_MAX = {"uint8": 255, "uint16": 65535}


# --------------------------------------------------------------------------------------------
# months (pure)


def _parse_month(month: str) -> tuple[int, int]:
    year, mon = month.split("-")
    return int(year), int(mon)


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``[start, next month start)`` of a ``YYYY-MM`` month, as UTC datetimes."""
    year, mon = _parse_month(month)
    start = datetime(year, mon, 1, tzinfo=UTC)
    after = datetime(year + (mon == 12), mon % 12 + 1, 1, tzinfo=UTC)
    return start, after


def month_range(start: str, end: str) -> list[str]:
    """Every month from ``start`` to ``end``, both included (empty if ``end`` < ``start``)."""
    y0, m0 = _parse_month(start)
    y1, m1 = _parse_month(end)
    first, last = y0 * 12 + m0 - 1, y1 * 12 + m1 - 1
    return [f"{i // 12:04d}-{i % 12 + 1:02d}" for i in range(first, last + 1)]


def month_of(moment: datetime) -> str:
    """The UTC calendar month of a datetime (a naive datetime is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment.year:04d}-{moment.month:02d}"


def _iso(moment: datetime) -> str:
    """``2020-06-01T08:06:11.024Z`` style: UTC, ``Z``, fractional seconds only when non-zero."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"


# --------------------------------------------------------------------------------------------
# grid (pure arithmetic, then odc-geo)


def utm_epsg(lon: float, lat: float) -> int:
    """EPSG code of the standard 6-degree UTM zone at (lon, lat): 326zz north, 327zz south.

    The Norway and Svalbard exceptions of MGRS are not applied.
    """
    zone = math.floor((lon + 180.0) / 6.0) % 60 + 1
    return (32600 if lat >= 0 else 32700) + zone


def aligned_bounds(
    bounds: Sequence[float], resolution: float
) -> tuple[tuple[int, int, int, int], tuple[float, float, float, float]]:
    """Snap ``(minx, miny, maxx, maxy)`` outward to whole multiples of ``resolution``.

    Returns the integer pixel indices ``(kx0, ky0, kx1, ky1)`` (edges at ``k * resolution``) and
    the snapped bounds. The result always spans at least one pixel per axis. A relative
    tolerance of 1e-9 pixel keeps an edge that already sits on the grid from moving by a pixel
    through floating-point noise.
    """
    minx, miny, maxx, maxy = (float(v) for v in bounds)
    eps = 1e-9
    kx0 = math.floor(minx / resolution + eps)
    ky0 = math.floor(miny / resolution + eps)
    kx1 = math.ceil(maxx / resolution - eps)
    ky1 = math.ceil(maxy / resolution - eps)
    kx1 = max(kx1, kx0 + 1)
    ky1 = max(ky1, ky0 + 1)
    snapped = (kx0 * resolution, ky0 * resolution, kx1 * resolution, ky1 * resolution)
    return (kx0, ky0, kx1, ky1), snapped


class LevelPlan(BaseModel):
    """One pyramid level as the store will describe it (spec 3.7)."""

    path: str
    resolution: float
    transform: list[float]
    shape: list[int]
    grid: list[int]


class GridPlan(BaseModel):
    """The store's level-0 grid and its pyramid."""

    crs: str
    crs_reason: str
    resolution: float
    transform: list[float]
    shape: list[int]
    bounds: list[float]
    chunk_size: int
    levels: list[LevelPlan]
    cells: int
    cells_all_levels: int

    def geobox(self) -> Any:
        """The level-0 grid as an ``odc.geo.geobox.GeoBox`` (what odc-stac loads onto)."""
        from affine import Affine
        from odc.geo.geobox import GeoBox

        a, b, c, d, e, f = self.transform
        return GeoBox((self.shape[0], self.shape[1]), Affine(a, b, c, d, e, f), self.crs)


def project_lonlat(geojson: dict[str, Any], crs: str, densify: float = 0.001) -> Any:
    """A lon/lat GeoJSON geometry in ``crs`` (shapely), edges densified to ``densify`` degrees.

    Densifying first makes the projected bounds follow the curved image of straight lon/lat
    edges (about 100 m spacing by default).
    """
    import shapely
    from pyproj import Transformer

    transformer = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    geom = shapely.segmentize(shape(geojson), densify)

    def forward(coords: Any) -> Any:
        import numpy as np

        x, y = transformer.transform(coords[:, 0], coords[:, 1])
        return np.column_stack([x, y])

    return shapely.transform(geom, forward)


def grid_for(recipe: Recipe) -> GridPlan:
    """The grid of a recipe: AOI projected (edges densified), bounds snapped to the resolution."""
    aoi = shape(recipe.aoi.geojson())
    if recipe.grid.crs == "utm":
        lon, lat = aoi.centroid.x, aoi.centroid.y
        epsg = utm_epsg(lon, lat)
        crs = f"EPSG:{epsg}"
        hemisphere = "N" if epsg < 32700 else "S"
        reason = f"utm: zone {epsg % 100}{hemisphere} of the AOI centroid ({lon:.4f}, {lat:.4f})"
    else:
        crs = recipe.grid.crs
        reason = "grid.crs"
    res = float(recipe.grid.resolution)
    projected = project_lonlat(recipe.aoi.geojson(), crs)
    (kx0, ky0, kx1, ky1), (x0, y0, x1, y1) = aligned_bounds(projected.bounds, res)
    height, width = ky1 - ky0, kx1 - kx0
    transform = [res, 0.0, x0, 0.0, -res, y1]
    cs = recipe.store.chunk_size
    levels = []
    for k, (h, w) in enumerate(level_shapes(height, width, cs)):
        levels.append(
            LevelPlan(
                path=str(k),
                resolution=level_resolution(res, k),
                transform=level_transform(transform, k),
                shape=[h, w],
                grid=list(grid_shape(h, w, cs)),
            )
        )
    return GridPlan(
        crs=crs,
        crs_reason=reason,
        resolution=res,
        transform=transform,
        shape=[height, width],
        bounds=[x0, y0, x1, y1],
        chunk_size=cs,
        levels=levels,
        cells=levels[0].grid[0] * levels[0].grid[1],
        cells_all_levels=sum(lv.grid[0] * lv.grid[1] for lv in levels),
    )


# --------------------------------------------------------------------------------------------
# size estimate (pure)


class Estimate(BaseModel):
    """What the store will cost: timesteps, bytes and objects. Bytes are an estimate."""

    timesteps: int
    bands: int
    levels: int
    arrays: list[str]
    raw_bytes: int
    estimated_bytes: int
    chunk_objects: int
    metadata_objects: int
    objects: int
    basis: str


def estimate_store(
    grid: GridPlan,
    timesteps: int,
    bands: int,
    dtype: str,
    *,
    shard: bool = False,
    shard_time: int | None = None,
) -> Estimate:
    """Raw and estimated bytes and the object count of a store with data, mask and coverage.

    Objects per level: one per (timestep, cell) for each of the three arrays, or one per
    (time shard, cell) when sharded (spec 7.1); plus the metadata: the root zarr.json, the
    volatility array (zarr.json + one chunk) and per level the group zarr.json, seven array
    zarr.json files (data, mask, coverage, time, band, y, x) and four coordinate chunks.
    """
    arrays = ["data", "mask", "coverage"]
    itemsize = _ITEMSIZE[dtype]
    data_raw = plane_raw = 0
    chunks = 0
    n_time_objects = timesteps
    if shard:
        n_time_objects = math.ceil(timesteps / (shard_time or max(timesteps, 1)))
    for level in grid.levels:
        h, w = level.shape
        data_raw += timesteps * bands * h * w * itemsize
        plane_raw += 2 * timesteps * h * w
        chunks += len(arrays) * n_time_objects * level.grid[0] * level.grid[1]
    metadata = 3 + 12 * len(grid.levels)
    return Estimate(
        timesteps=timesteps,
        bands=bands,
        levels=len(grid.levels),
        arrays=arrays,
        raw_bytes=data_raw + plane_raw,
        estimated_bytes=round(data_raw * DATA_RATIO + plane_raw * PLANE_RATIO),
        chunk_objects=chunks,
        metadata_objects=metadata,
        objects=chunks + metadata,
        basis=(
            f"raw = array bytes over every level; estimated = data x {DATA_RATIO} (zstd on real "
            f"Sentinel-2 uint16 chunks, spec 8) + mask/coverage x {PLANE_RATIO}; star-delta, "
            "scene content and edge padding move the real figure"
        ),
    )


# --------------------------------------------------------------------------------------------
# item facts (pure functions of STAC item dicts)


def _item_datetime(item: dict[str, Any]) -> datetime | None:
    props = item.get("properties") or {}
    value = props.get("datetime") or props.get("start_datetime")
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _baseline(props: dict[str, Any]) -> tuple[int, int] | None:
    value = props.get("s2:processing_baseline") or props.get("processing:version")
    if isinstance(value, str | int | float):
        match = re.match(r"^\s*N?(\d+)(?:\.(\d+))?", str(value))
        if match:
            return int(match.group(1)), int(match.group(2) or 0)
    return None


def _satellite(item: dict[str, Any]) -> str | None:
    platform = str((item.get("properties") or {}).get("platform") or "")
    match = re.search(r"sentinel-?2([a-d])", platform, re.IGNORECASE)
    if match:
        return "S2" + match.group(1).upper()
    match = re.match(r"^(S2[A-D])_", str(item.get("id", "")))
    return match.group(1) if match else None


def _mgrs_tile(item: dict[str, Any]) -> str | None:
    props = item.get("properties") or {}
    if isinstance(props.get("s2:mgrs_tile"), str):
        return props["s2:mgrs_tile"].removeprefix("T")
    zone, band, square = (
        props.get("mgrs:utm_zone"),
        props.get("mgrs:latitude_band"),
        props.get("mgrs:grid_square"),
    )
    if zone is not None and band and square:
        return f"{int(zone):02d}{band}{square}"
    code = props.get("grid:code")
    if isinstance(code, str) and code.startswith("MGRS-"):
        return code[5:]
    match = re.search(r"_T?(\d{2}[C-X][A-Z]{2})_", str(item.get("id", "")))
    return match.group(1) if match else None


def _relative_orbit(item: dict[str, Any]) -> int | None:
    props = item.get("properties") or {}
    if isinstance(props.get("sat:relative_orbit"), int):
        return props["sat:relative_orbit"]
    for text in (props.get("s2:product_uri"), item.get("id")):
        match = re.search(r"_R(\d{3})_", str(text or ""))
        if match:
            return int(match.group(1))
    return None


def scene_key(item: dict[str, Any]) -> tuple[Any, ...]:
    """What makes two items the same acquisition (see the module docstring, rule 2).

    Sentinel-2: (satellite, MGRS tile, relative orbit, UTC day). A satellite images a tile at
    most once per orbit, so this is one overpass whatever the processing baseline, the ``_0_`` /
    ``_1_`` sequence or the receiving station. Other items: only exact repeats (same platform,
    datetime and bbox) are the same.
    """
    moment = _item_datetime(item)
    sat, tile = _satellite(item), _mgrs_tile(item)
    if sat and tile and moment is not None:
        return ("s2", sat, tile, _relative_orbit(item), moment.astimezone(UTC).date().isoformat())
    props = item.get("properties") or {}
    bbox = tuple(round(v, 4) for v in item.get("bbox") or ())
    return ("exact", props.get("platform"), _iso(moment) if moment else None, bbox)


def _generation_time(item: dict[str, Any]) -> float:
    props = item.get("properties") or {}
    for value in (props.get("s2:generation_time"), props.get("updated"), props.get("created")):
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:
                continue
    match = re.search(r"_(\d{8}T\d{6})$", str(item.get("id", "")))  # PC product discriminator
    if match:
        return datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC).timestamp()
    return 0.0


def _version_order(item: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key, best first: newest baseline, least nodata, newest generation, smallest id."""
    props = item.get("properties") or {}
    baseline = _baseline(props) or (-1, 0)
    nodata = props.get("s2:nodata_pixel_percentage")
    nodata = float(nodata) if isinstance(nodata, int | float) else 101.0
    return (-baseline[0], -baseline[1], nodata, -_generation_time(item), str(item.get("id")))


def _footprint(item: dict[str, Any]) -> Any | None:
    """The item's lon/lat footprint (shapely): its geometry, else its bbox, else ``None``."""
    try:
        if item.get("geometry"):
            return shape(item["geometry"])
        bbox = item.get("bbox")
        if bbox and len(bbox) in (4, 6):
            west, south, east, north = (
                (bbox[0], bbox[1], bbox[3], bbox[4]) if len(bbox) == 6 else bbox
            )
            return box(west, south, east, north)
    except (TypeError, ValueError, AttributeError):
        return None
    return None


def _raster_offsets(asset: dict[str, Any]) -> tuple[float, float] | None:
    """(scale, offset) of the first band of an asset, from raster:bands or STAC 1.1 bands."""
    for key in ("raster:bands", "bands"):
        bands = asset.get(key)
        if isinstance(bands, list) and bands and isinstance(bands[0], dict):
            first = bands[0]
            scale = first.get("scale", first.get("raster:scale"))
            offset = first.get("offset", first.get("raster:offset"))
            if offset is not None:
                return float(scale if scale is not None else 1.0), float(offset)
    return None


class DnDecision(NamedTuple):
    """How an item's digital numbers relate to reflectance: ``reflectance = (DN - offset) x 1e-4``.

    ``rule`` names the rule that decided (``earthsearch-flag``, ``baseline``, ``raster-bands``,
    ``acquisition-date``), ``source`` says it in words, ``notes`` hold disagreements.
    """

    offset: int
    rule: str
    source: str
    notes: list[str]


def dn_offset_of(item: dict[str, Any], asset_keys: Iterable[str]) -> DnDecision:
    """The additive offset in an item's Sentinel-2 L2A digital numbers, and why.

    Rule (first that applies wins):

    1. ``earthsearch:boa_offset_applied: true``: Earth Search removed the offset: 0. (``false``
       falls through to the baseline.)
    2. ``s2:processing_baseline`` >= 04.00 (Planetary Computer items carry only this): 1000;
       below: 0.
    3. ``raster:bands`` offset / scale of the band assets (e.g. -0.1 / 0.0001): its negative.
    4. Nothing said: by acquisition date against 2022-01-25 (baseline 04.00 in operations), with
       a note, since reprocessed collections may disagree.

    ``raster:bands`` are checked against the decision and a disagreement is noted: Earth Search
    ``sentinel-2-l2a`` items flagged as offset-applied still carry offset -0.1 there, and trusting
    them would remove the offset twice.
    """
    props = item.get("properties") or {}
    assets = item.get("assets") or {}
    raster: dict[str, int] = {}
    for key in asset_keys:
        found = _raster_offsets(assets.get(key) or {})
        if found is not None and found[0]:
            raster[key] = round(-found[1] / found[0])
    notes: list[str] = []
    baseline = _baseline(props)
    flag = props.get("earthsearch:boa_offset_applied")
    if flag is True:
        offset, rule, source = 0, "earthsearch-flag", "earthsearch:boa_offset_applied is true"
    elif baseline is not None:
        text = f"{baseline[0]:02d}.{baseline[1]:02d}"
        rule = "baseline"
        if baseline >= OFFSET_BASELINE:
            offset, source = S2_DN_OFFSET, f"s2:processing_baseline {text} >= 04.00"
        else:
            offset, source = 0, f"s2:processing_baseline {text} < 04.00"
        if flag is False:
            source += " (earthsearch:boa_offset_applied is false)"
    elif raster:
        values = sorted(set(raster.values()))
        offset, rule = values[-1], "raster-bands"
        source = f"raster:bands offset of the band assets ({offset} DN)"
        if len(values) > 1:
            notes.append(f"raster:bands offsets differ between assets: {raster}")
    else:
        moment = _item_datetime(item)
        later = moment is not None and moment.date() >= OFFSET_BASELINE_DATE
        offset, rule = (S2_DN_OFFSET if later else 0), "acquisition-date"
        source = "assumed from the acquisition date (no baseline, flag or raster:bands offset)"
        notes.append(f"digital-number offset assumed {offset} from the acquisition date")
    disagree = sorted(k for k, v in raster.items() if v != offset)
    if disagree and rule in ("earthsearch-flag", "baseline"):
        trusted = "the flag" if rule == "earthsearch-flag" else "the processing baseline"
        notes.append(
            f"raster:bands of {', '.join(disagree)} imply an offset of "
            f"{raster[disagree[0]]} DN; trusting {trusted}"
        )
    return DnDecision(offset, rule, source, notes)


# --------------------------------------------------------------------------------------------
# plan model


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
    stac: dict[str, Any] | None = None

    def to_pystac(self) -> pystac.Item:
        """The item as a ``pystac.Item`` (needs the plan to have been made with its STAC dicts)."""
        if self.stac is None:
            raise ValueError(f"plan item {self.id!r} carries no STAC dict")
        # no migration: it rewrites fields and may warn; odc-stac reads STAC 1.0 items as they are
        return pystac.Item.from_dict(self.stac, preserve_dict=True, migrate=False)


class DroppedItem(BaseModel):
    """An item left out, and why."""

    id: str
    datetime: str | None
    month: str | None
    reason: DropReason
    detail: str
    duplicate_of: str | None = None


class MonthPlan(BaseModel):
    """One timestep of the store: a UTC calendar month, its items and the items dropped."""

    month: str
    time: str
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
    """The checked monthly plan of a recipe (what ``cz build --dry-run`` prints)."""

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
        """The plan as JSON-ready data; the items' full STAC dicts only with ``include_stac``."""
        exclude = None
        if not include_stac:
            exclude = {"months": {"__all__": {"items": {"__all__": {"stac"}}}}}
        return self.model_dump(mode="json", exclude=exclude)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        """A plan from :meth:`to_dict` output."""
        return cls.model_validate(data)

    def month(self, month: str) -> MonthPlan:
        """The plan of one ``YYYY-MM`` month."""
        for entry in self.months:
            if entry.month == month:
                return entry
        raise KeyError(month)

    def month_items(self, month: str) -> list[pystac.Item]:
        """The kept items of a month as ``pystac.Item`` (unsigned; see ``cz.stac.sign_items``)."""
        return [item.to_pystac() for item in self.month(month).items]


# --------------------------------------------------------------------------------------------
# decisions


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
    except TypeError:
        return False


def _resolve_asset(assets: dict[str, Any], aliases: Sequence[str]) -> str | None:
    return next((a for a in aliases if a in assets), None)


def _solar_day(item: dict[str, Any], moment: datetime, footprint: Any | None) -> str:
    """Local solar date (as odc-stac's ``groupby='solar_day'``): UTC + longitude / 15 hours."""
    lon = footprint.centroid.x if footprint is not None and not footprint.is_empty else 0.0
    return (moment.astimezone(UTC) + timedelta(seconds=lon * 240)).date().isoformat()


class _Candidate:
    """An item that passed the client-side checks, awaiting de-duplication."""

    def __init__(self, item: dict[str, Any], moment: datetime, footprint: Any | None) -> None:
        self.item = item
        self.moment = moment
        self.footprint = footprint
        self.assets: dict[str, str] = {}


class _Checks:
    """The client-side checks of rule 1, prepared once per plan."""

    def __init__(self, recipe: Recipe, months: list[str]) -> None:
        self.recipe = recipe
        self.months = months
        self.month_set = set(months)
        self.aoi = shape(recipe.aoi.geojson())
        self.aoi_prepared = prepared.prep(self.aoi)
        self.max_cloud = recipe.filters.max_cloud_cover
        self.conditions = {k: c.operators() for k, c in recipe.filters.properties.items()}
        self.seen_ids: set[str] = set()

    def check(
        self, item: dict[str, Any]
    ) -> _Candidate | tuple[datetime | None, DropReason, str, str | None]:
        """A candidate, or ``(datetime, reason, detail, duplicate_of)`` of the first failure."""
        moment = _item_datetime(item)
        item_id = item.get("id")
        if not isinstance(item_id, str) or not item_id or moment is None:
            return moment, "invalid", "no id or no valid datetime", None
        if item_id in self.seen_ids:
            return moment, "duplicate", "the same item id was listed twice", item_id
        self.seen_ids.add(item_id)
        collection = item.get("collection")
        if collection is not None and collection != self.recipe.catalog.collection:
            return moment, "collection", f"collection {collection!r}", None
        if month_of(moment) not in self.month_set:
            span = f"{self.months[0]}..{self.months[-1]}"
            return moment, "time", f"acquired {_iso(moment)}, outside {span}", None
        footprint = _footprint(item)
        if footprint is None or footprint.is_empty:
            return moment, "aoi", "no geometry or bbox", None
        if not self.aoi_prepared.intersects(footprint) or self.aoi.touches(footprint):
            return moment, "aoi", "footprint does not overlap the AOI", None
        props = item.get("properties") or {}
        if self.max_cloud is not None:
            cloud = props.get("eo:cloud_cover")
            if not isinstance(cloud, int | float) or isinstance(cloud, bool):
                return moment, "cloud", "no eo:cloud_cover", None
            if cloud > self.max_cloud:
                return moment, "cloud", f"eo:cloud_cover {cloud:g} > {self.max_cloud:g}", None
        for prop, ops in self.conditions.items():
            for op, target in ops.items():
                if not _compare(props.get(prop), op, target):
                    detail = f"{prop} = {props.get(prop)!r} fails {op} {target!r}"
                    return moment, "property", detail, None
        cand = _Candidate(item, moment, footprint)
        assets = item.get("assets") or {}
        for band in self.recipe.bands:
            key = _resolve_asset(assets, band.asset)
            if key is None:
                tried = ", ".join(band.asset)
                return moment, "asset", f"no asset for band {band.name} (tried {tried})", None
            cand.assets[band.name] = key
        if self.recipe.mask is not None:
            key = _resolve_asset(assets, self.recipe.mask.asset)
            if key is None:
                tried = ", ".join(self.recipe.mask.asset)
                return moment, "asset", f"no mask asset (tried {tried})", None
            cand.assets["mask"] = key
        return cand


def make_plan(recipe: Recipe, resolution: Resolution, *, out: str | None = None) -> Plan:
    """Decide the plan of ``recipe`` from the candidate items in ``resolution`` (no I/O)."""
    months = month_range(recipe.time.start, recipe.time.end)
    month_set = set(months)
    dropped: list[DroppedItem] = []
    candidates: list[_Candidate] = []

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
                datetime=_iso(moment) if moment else None,
                month=month_of(moment) if moment else None,
                reason=reason,
                detail=detail,
                duplicate_of=duplicate_of,
            )
        )

    checks = _Checks(recipe, months)
    for item in resolution.items:
        outcome = checks.check(item)
        if isinstance(outcome, _Candidate):
            candidates.append(outcome)
        else:
            drop(item, *outcome)

    kept = _deduplicate(candidates, drop)
    planned = [_planned_item(recipe, cand) for cand in kept]
    by_month: dict[str, list[PlannedItem]] = {m: [] for m in months}
    for p in planned:
        by_month[p.month].append(p)
    dropped_by_month: dict[str, list[DroppedItem]] = {m: [] for m in months}
    outside: list[DroppedItem] = []
    for d in dropped:
        (dropped_by_month[d.month] if d.month in month_set else outside).append(d)

    month_plans = []
    for m in months:
        items = sorted(by_month[m], key=lambda p: (p.datetime, p.id))
        month_plans.append(
            MonthPlan(
                month=m,
                time=_iso(month_bounds(m)[0]),
                items=items,
                dropped=sorted(dropped_by_month[m], key=lambda d: (d.datetime or "", d.id)),
                solar_days=sorted({p.solar_day for p in items}),
            )
        )
    outside.sort(key=lambda d: (d.datetime or "", d.id))

    grid = grid_for(recipe)
    store = recipe.store
    estimate = estimate_store(
        grid,
        len(months),
        len(recipe.bands),
        store.dtype,
        shard=store.shard,
        shard_time=store.shard_time,
    )
    store_path = out if out is not None else store.path
    if store_path is not None and not re.match(r"^[A-Za-z][A-Za-z0-9+.\-]*://", store_path):
        store_path = str(Path(store_path).expanduser().resolve())
    warnings = list(resolution.warnings) + _plan_warnings(
        recipe, grid, planned, month_plans, store_path
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
        **_recipe_sections(recipe, len(months), store_path),
        months=month_plans,
        outside=outside,
        totals=Totals(
            months=len(months),
            empty_months=sum(1 for m in month_plans if not m.items),
            items_found=len(resolution.items),
            items_kept=len(planned),
            dropped=dict(sorted(reasons.items())),
            observations=sum(len(m.solar_days) for m in month_plans),
            corrections=dict(sorted(corrections.items())),
        ),
        estimate=estimate,
        warnings=warnings,
    )


def _plan_warnings(
    recipe: Recipe,
    grid: GridPlan,
    planned: list[PlannedItem],
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
            f"{len(empty)} of {len(month_plans)} month(s) have no items: "
            + ", ".join(empty[:6])
            + (" ..." if len(empty) > 6 else "")
        )
    if store_path is None:
        warnings.append("store.path is not set: give --out when building")
    return warnings


def _recipe_sections(recipe: Recipe, n_months: int, store_path: str | None) -> dict[str, Any]:
    """The recipe's choices as the plan records them, defaults resolved."""
    store = recipe.store
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
                "asset": list(b.asset),
                "common_name": b.common_name,
                "scale": b.scale,
                "offset": b.physical_offset,
                "units": b.units,
                "resampling": b.resampling,
                "harmonize": b.harmonize,
            }
            for b in recipe.bands
        ],
        "mask": (
            {
                "asset": list(recipe.mask.asset),
                "keep": list(recipe.mask.keep),
                "resampling": "nearest",
            }
            if recipe.mask is not None
            else None
        ),
        "composite": {
            "method": recipe.composite.method,
            "even_count": "mean of the two middle values, rounded half to even (integer dtypes)",
        },
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
            "composite": f"monthly {recipe.composite.method}",
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


def _coords(geojson: dict[str, Any]) -> list[tuple[float, float]]:
    geom = shape(geojson)
    return [tuple(c) for poly in getattr(geom, "geoms", [geom]) for c in poly.exterior.coords]


def _deduplicate(candidates: list[_Candidate], drop: Any) -> list[_Candidate]:
    """Rule 2 of the module docstring: keep the best version of a scene, and any item that adds
    footprint (a granule split across datastrips is not a duplicate)."""
    groups: dict[tuple[Any, ...], list[_Candidate]] = {}
    for cand in candidates:
        groups.setdefault(scene_key(cand.item), []).append(cand)
    kept: list[_Candidate] = []
    for group in groups.values():
        group.sort(key=lambda c: _version_order(c.item))
        chosen: list[_Candidate] = []
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
    b, o = _version_order(best), _version_order(other)
    if b[:2] != o[:2]:
        pb = best.get("properties", {}).get("s2:processing_baseline")
        po = other.get("properties", {}).get("s2:processing_baseline")
        return f"kept baseline {pb} over {po}"
    if b[2] != o[2]:
        return f"kept the more complete footprint: nodata {b[2]:g} % vs {o[2]:g} %"
    if b[3] != o[3]:
        return "kept the newer processing"
    return "kept the smaller id"


def _planned_item(recipe: Recipe, cand: _Candidate) -> PlannedItem:
    item = cand.item
    props = item.get("properties") or {}
    harmonised = [cand.assets[b.name] for b in recipe.bands if b.harmonize]
    decision = dn_offset_of(item, harmonised)
    dn_offset, source, notes = decision.offset, decision.source, list(decision.notes)
    if harmonised:
        correction = recipe.store_dn_offset - dn_offset
    else:
        correction = 0
        source = f"not applied (no harmonised band); {source}"
    lossless = correction >= 0 or recipe.store.dtype in ("int16", "float32")
    if correction < 0 and not lossless:
        notes.append(f"numbers 1..{-correction} clip to 1 (lossy)")
    baseline = _baseline(props)
    cloud = props.get("eo:cloud_cover")
    assets = item.get("assets") or {}
    hrefs = {name: _unsigned(str(assets[key].get("href"))) for name, key in cand.assets.items()}
    return PlannedItem(
        id=str(item["id"]),
        collection=item.get("collection"),
        datetime=_iso(cand.moment),
        month=month_of(cand.moment),
        solar_day=_solar_day(item, cand.moment, cand.footprint),
        platform=props.get("platform"),
        mgrs_tile=_mgrs_tile(item),
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
        stac=_unsigned_item(item),
    )


_SAS = re.compile(r"[?&](sig|se|st|sv|sp|sr)=")


def _unsigned(href: str) -> str:
    """An href without a SAS-style query (a token copied into a catalog must not be frozen)."""
    if "?" in href and _SAS.search(href) and "sig=" in href:
        return href.split("?", 1)[0]
    return href


def _unsigned_item(item: dict[str, Any]) -> dict[str, Any]:
    assets = item.get("assets") or {}
    if not any("sig=" in str(a.get("href", "")) for a in assets.values()):
        return item
    out = dict(item)
    out["assets"] = {k: {**a, "href": _unsigned(str(a.get("href")))} for k, a in assets.items()}
    return out


def plan_recipe(
    recipe: Recipe,
    *,
    out: str | None = None,
    policy: RetryPolicy | None = None,
    on_page: PageCallback | None = None,
) -> Plan:
    """Resolve the recipe's items and make its plan (what ``cz build --dry-run`` does)."""
    resolution = resolve_items(recipe, policy=policy, on_page=on_page)
    return make_plan(recipe, resolution, out=out)

"""Facts of STAC item dicts (pure): datetime, scene, baseline, footprint, DN convention."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, date, datetime
from typing import Any, NamedTuple

from shapely.geometry import box, shape

from cz.months import iso_utc

#: Processing baseline from which Sentinel-2 L2A numbers carry BOA_ADD_OFFSET = -1000 (+1000 DN).
OFFSET_BASELINE = (4, 0)
#: The date that baseline entered operations, used only when an item says nothing at all.
OFFSET_BASELINE_DATE = date(2022, 1, 25)
S2_DN_OFFSET = 1000


def item_datetime(item: dict[str, Any]) -> datetime | None:
    props = item.get("properties") or {}
    value = props.get("datetime") or props.get("start_datetime")
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:  # not ISO 8601: no usable datetime
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def baseline_of(props: dict[str, Any]) -> tuple[int, int] | None:
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


def mgrs_tile(item: dict[str, Any]) -> str | None:
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
    moment = item_datetime(item)
    sat, tile = _satellite(item), mgrs_tile(item)
    if sat and tile and moment is not None:
        return ("s2", sat, tile, _relative_orbit(item), moment.astimezone(UTC).date().isoformat())
    props = item.get("properties") or {}
    bbox = tuple(round(v, 4) for v in item.get("bbox") or ())
    return ("exact", props.get("platform"), iso_utc(moment) if moment else None, bbox)


def _generation_time(item: dict[str, Any]) -> float:
    props = item.get("properties") or {}
    for value in (props.get("s2:generation_time"), props.get("updated"), props.get("created")):
        if isinstance(value, str):
            try:
                return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
            except ValueError:  # not ISO 8601: no usable datetime
                continue
    match = re.search(r"_(\d{8}T\d{6})$", str(item.get("id", "")))  # PC product discriminator
    if match:
        return datetime.strptime(match.group(1), "%Y%m%dT%H%M%S").replace(tzinfo=UTC).timestamp()
    return 0.0


def version_order(item: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key, best first: newest baseline, least nodata, newest generation, smallest id."""
    props = item.get("properties") or {}
    baseline = baseline_of(props) or (-1, 0)
    nodata = props.get("s2:nodata_pixel_percentage")
    nodata = float(nodata) if isinstance(nodata, int | float) else 101.0
    return (-baseline[0], -baseline[1], nodata, -_generation_time(item), str(item.get("id")))


def item_footprint(item: dict[str, Any]) -> Any | None:
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
    except (TypeError, ValueError, AttributeError):  # malformed geometry or bbox: no footprint
        return None
    return None


def _declared_scale_offset(asset: dict[str, Any]) -> tuple[Any, Any] | None:
    """The ``(scale, offset)`` entries of the asset's first band as declared (``raster:bands``
    or STAC 1.1 ``bands``; either may be ``None``), ``None`` without such a band."""
    for key in ("raster:bands", "bands"):
        bands = asset.get(key)
        if isinstance(bands, list) and bands and isinstance(bands[0], dict):
            first = bands[0]
            return (
                first.get("scale", first.get("raster:scale")),
                first.get("offset", first.get("raster:offset")),
            )
    return None


def _raster_offsets(asset: dict[str, Any]) -> tuple[float, float] | None:
    """(scale, offset) of the first band of an asset, when it declares an offset."""
    declared = _declared_scale_offset(asset)
    if declared is None or declared[1] is None:
        return None
    scale, offset = declared
    return float(scale if scale is not None else 1.0), float(offset)


def raster_scale_offset(asset: dict[str, Any]) -> tuple[float, float] | None:
    """(scale, offset) the asset's first band declares (``raster:bands`` or STAC 1.1 ``bands``),
    a missing one being 1 or 0; ``None`` when it declares neither."""
    declared = _declared_scale_offset(asset)
    if declared is None or declared == (None, None):
        return None
    scale, offset = declared
    try:
        return float(1.0 if scale is None else scale), float(offset or 0.0)
    except (TypeError, ValueError):  # a malformed declaration: say nothing
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
    baseline = baseline_of(props)
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
        moment = item_datetime(item)
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

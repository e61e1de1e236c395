"""The AOI's GeoJSON: a lon/lat Polygon or MultiPolygon, valid, read from a file when given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def check_geojson_geometry(value: dict[str, Any]) -> dict[str, Any]:
    """Check a lon/lat GeoJSON geometry: Polygon or MultiPolygon, valid, inside lon/lat bounds."""
    from shapely.geometry import shape
    from shapely.validation import explain_validity

    gtype = value.get("type") if isinstance(value, dict) else None
    if gtype not in ("Polygon", "MultiPolygon"):
        raise ValueError(f"expected a GeoJSON Polygon or MultiPolygon, got type {gtype!r}")
    try:
        geom = shape(value)
    except Exception as exc:  # shapely raises several types for malformed coordinates
        raise ValueError(f"malformed GeoJSON {gtype}: {exc}") from None
    if geom.is_empty:
        raise ValueError(f"the {gtype} is empty")
    if not geom.is_valid:
        raise ValueError(f"invalid {gtype}: {explain_validity(geom)}")
    west, south, east, north = geom.bounds
    if west < -180 or east > 180 or south < -90 or north > 90:
        raise ValueError(
            "coordinates must be lon/lat (EPSG:4326); "
            f"the bounds are {west}, {south}, {east}, {north}"
        )
    return value


def read_geojson_file(path: Path) -> dict[str, Any]:
    """Read a GeoJSON geometry, Feature or FeatureCollection (union of its polygons) from a file."""
    from shapely.geometry import mapping, shape
    from shapely.ops import unary_union

    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a GeoJSON object")
    if doc.get("type") == "Feature":
        doc = doc.get("geometry") or {}
    if doc.get("type") == "FeatureCollection":
        parts = [
            shape(check_geojson_geometry(f.get("geometry") or {})) for f in doc.get("features", [])
        ]
        if not parts:
            raise ValueError(f"{path}: the FeatureCollection has no features")
        doc = dict(mapping(unary_union(parts)))
        doc = json.loads(json.dumps(doc))  # tuples -> lists: plain GeoJSON
    return check_geojson_geometry(doc)

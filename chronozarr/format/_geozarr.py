"""The zarr-conventions attributes a store carries at its root (docs/spec.md C26, decision 0054).

Map libraries that follow the conventions read only the root group's attributes: OpenLayers'
``ol/source/GeoZarr`` places a store from ``proj:*`` and ``spatial:*`` there, GDAL 3.13 and
deck.gl-raster read the ``multiscales`` object form. So the root carries, beside the ndpyramid
list of spec 3.4:

- ``zarr_conventions``: the registration of each convention used (its uuid, name, schema and
  spec URLs), as the zarr-conventions specification requires;
- ``proj:code`` (an EPSG CRS) or ``proj:wkt2`` and ``proj:projjson`` (any other), as on the data
  arrays (spec 3.3, C16);
- ``spatial:dimensions``, ``spatial:shape``, ``spatial:transform``, ``spatial:bbox`` of level 0;
- in each ``multiscales`` entry (either form) the level's ``spatial:shape`` and
  ``spatial:transform``, so a reader needs no coordinate array to place a coarser level.

``multiscales_list`` writes the ndpyramid list (the default, spec 3.4); ``multiscales_layout`` the
conventions' object form with ``layout[]`` (the writer's ``multiscales="layout"`` option). A
store carries one form under the key, never both (spec 3.4).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chronozarr.format._attrs import LevelInfo
from chronozarr.format._common import SPEC_VERSION
from chronozarr.format._crs import crs_attributes

__all__ = [
    "CONVENTIONS",
    "MULTISCALES_FORMS",
    "level_spatial",
    "multiscales_layout",
    "multiscales_list",
    "root_geo_attributes",
]

MULTISCALES_FORMS = ("list", "layout")  # spec 3.4 list (default), the conventions' object form

_GH = "https://github.com/zarr-conventions"
_RAW = "https://raw.githubusercontent.com/zarr-conventions"

# The registrations as each convention's README gives them (name, uuid, schema and spec URLs).
CONVENTIONS: dict[str, dict[str, str]] = {
    "proj": {
        "schema_url": f"{_RAW}/geo-proj/refs/tags/v1/schema.json",
        "spec_url": f"{_GH}/geo-proj/blob/v1/README.md",
        "uuid": "f17cb550-5864-4468-aeb7-f3180cfb622f",
        "name": "proj:",
        "description": "Coordinate reference system information for geospatial data",
    },
    "spatial": {
        "schema_url": f"{_RAW}/spatial/refs/tags/v1/schema.json",
        "spec_url": f"{_GH}/spatial/blob/v1/README.md",
        "uuid": "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",
        "name": "spatial",
        "description": "Spatial coordinate information",
    },
    "multiscales": {
        "schema_url": f"{_RAW}/multiscales/refs/tags/v1/schema.json",
        "spec_url": f"{_GH}/multiscales/blob/v1/README.md",
        "uuid": "d35379db-88df-4056-af3a-620245f8e347",
        "name": "multiscales",
        "description": "Multiscale layout of zarr datasets",
    },
}


def level_spatial(level: LevelInfo) -> dict[str, Any]:
    """``spatial:shape`` [height, width] and ``spatial:transform`` [a, b, c, d, e, f] of a level."""
    return {
        "spatial:shape": [int(level.shape[2]), int(level.shape[3])],
        "spatial:transform": [float(v) for v in level.transform],
    }


def _bbox(level: LevelInfo) -> list[float]:
    """[xmin, ymin, xmax, ymax] of the level's pixel edges (spatial: pixel registration)."""
    a, _b, c, _d, e, f = (float(v) for v in level.transform)
    height, width = int(level.shape[2]), int(level.shape[3])
    xs = [c, c + a * width]
    ys = [f, f + e * height]
    return [min(xs), min(ys), max(xs), max(ys)]


def root_geo_attributes(
    crs: str | None, levels: Sequence[LevelInfo], form: str = "list"
) -> dict[str, Any]:
    """The root's ``zarr_conventions``, ``proj:*`` and ``spatial:*`` (level 0's grid)."""
    names = ["proj", "spatial"] + (["multiscales"] if form == "layout" else [])
    out: dict[str, Any] = {"zarr_conventions": [dict(CONVENTIONS[n]) for n in names]}
    out.update({k: v for k, v in crs_attributes(crs).items() if k.startswith("proj:")})
    level0 = levels[0]
    out["spatial:dimensions"] = ["y", "x"]
    out.update(level_spatial(level0))
    out["spatial:bbox"] = _bbox(level0)
    return out


def multiscales_list(levels: Sequence[LevelInfo], crs: str | None) -> list[dict[str, Any]]:
    """The ndpyramid list (spec 3.4), each dataset with its level's ``spatial:*`` (C26)."""
    return [
        {
            "datasets": [{"path": lv.path, "crs": crs, **level_spatial(lv)} for lv in levels],
            "type": "reduce",
            "metadata": {
                "method": "block_mean",
                "version": f"chronozarr {SPEC_VERSION}",
                "args": [],
            },
        }
    ]


def multiscales_layout(levels: Sequence[LevelInfo]) -> dict[str, Any]:
    """The conventions' object form: one ``layout`` entry per level, each derived from the one
    before by a 2 x 2 validity-aware mean (spec 6), with the level's ``spatial:*``."""
    layout: list[dict[str, Any]] = []
    for i, lv in enumerate(levels):
        entry: dict[str, Any] = {"asset": lv.path}
        if i == 0:
            entry["transform"] = {"scale": [1.0, 1.0], "translation": [0.0, 0.0]}
        else:
            entry["derived_from"] = levels[i - 1].path
            entry["transform"] = {"scale": [2.0, 2.0], "translation": [0.0, 0.0]}
        entry.update(level_spatial(lv))
        layout.append(entry)
    return {"layout": layout, "resampling_method": "average"}

"""The group documents of a store (spec 3.1, 3.3, 3.4): the root zarr.json with its
consolidated metadata, level groups and their attributes, the ndpyramid ``multiscales`` list."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from chronozarr.format._attrs import RootAttrs
from chronozarr.format._common import SPEC_VERSION

__all__ = [
    "consolidated",
    "consolidated_entry",
    "group_doc",
    "level_group_attrs",
    "multiscales",
    "root_doc",
]


def multiscales(level_paths: Sequence[str], crs: str | None) -> list[dict[str, Any]]:
    """The ndpyramid multiscales list (spec 3.4): path and crs per dataset, no pixels_per_tile."""
    return [
        {
            "datasets": [{"path": p, "crs": crs} for p in level_paths],
            "type": "reduce",
            "metadata": {
                "method": "block_mean",
                "version": f"chronozarr {SPEC_VERSION}",
                "args": [],
            },
        }
    ]


def root_doc(
    attrs: RootAttrs,
    multiscales_attr: Any,
    consolidated: Mapping[str, Any] | None,
    other_attrs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The root zarr.json: group with multiscales + chronozarr and consolidated metadata (3.1)."""
    attributes: dict[str, Any] = {"multiscales": multiscales_attr, "chronozarr": attrs.to_json()}
    if other_attrs:
        for k, v in other_attrs.items():
            if k not in attributes:
                attributes[k] = v
    doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": attributes}
    if consolidated is not None:
        doc["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": dict(consolidated),
        }
    return doc


def group_doc(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {"zarr_format": 3, "node_type": "group", "attributes": dict(attributes)}


def consolidated_entry(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A child's entry in the root's consolidated metadata, shaped as zarr-python 3.1 writes it."""
    entry = dict(doc)
    if entry.get("node_type") == "group":
        entry["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": {},
        }
    return entry


def level_group_attrs(
    crs: str | None, transform: Sequence[float], resolution: float
) -> dict[str, Any]:
    """Level group attributes (spec 3.3): crs, transform, resolution."""
    return {"crs": crs, "transform": [float(v) for v in transform], "resolution": float(resolution)}


def consolidated(root: Mapping[str, Any]) -> Mapping[str, Any]:
    """The consolidated metadata entries of a root document (empty when it has none)."""
    cons = root.get("consolidated_metadata")
    entries = cons.get("metadata") if isinstance(cons, Mapping) else None
    return entries if isinstance(entries, Mapping) else {}

"""The zarr-conventions attributes of the root (spec 3.1, 3.4; docs/spec.md C26, decision 0054).

A store need not carry them (stores written before C26 do not), but what it carries must be
true: ``proj:*`` and ``spatial:*`` at the root describe level 0 and its CRS, ``spatial:*`` in a
``multiscales`` entry describe that level, and every convention whose attributes are present is
registered in ``zarr_conventions`` (a reader that follows the conventions looks there first).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from chronozarr.format import CONVENTIONS, LevelInfo, RootAttrs, level_spatial, parse_crs
from chronozarr.validate.context import Context

__all__ = ["check_geozarr", "check_layout"]

_KEY = "zarr.json#"


def check_geozarr(ctx: Context, attributes: Mapping[str, Any], attrs: RootAttrs) -> None:
    """Root ``proj:*``/``spatial:*`` against level 0, entries' ``spatial:*``, registrations."""
    levels = list(attrs.levels or ())
    if levels:
        _check_root_values(ctx, attributes, attrs, levels[0])
        _check_entries(ctx, attributes.get("multiscales"), levels)
    _check_registered(ctx, attributes)


def _close(a: Any, b: Sequence[float]) -> bool:
    """Same numbers, to the float rounding of a JSON round trip."""
    if not isinstance(a, list) or len(a) != len(b):
        return False
    try:
        return all(
            math.isclose(float(x), float(y), rel_tol=1e-12, abs_tol=1e-9)
            for x, y in zip(a, b, strict=True)
        )
    except (TypeError, ValueError):  # a non-number in the list: not the same numbers
        return False


def _want_root(attrs: RootAttrs, level0: LevelInfo) -> dict[str, Any]:
    spatial = level_spatial(level0)
    a, _b, c, _d, e, f = spatial["spatial:transform"]
    height, width = spatial["spatial:shape"]
    xs, ys = [c, c + a * width], [f, f + e * height]
    want: dict[str, Any] = {
        "spatial:dimensions": ["y", "x"],
        **spatial,
        "spatial:bbox": [min(xs), min(ys), max(xs), max(ys)],
    }
    info = parse_crs(attrs.crs)
    if info is not None and info.epsg is not None:
        want["proj:code"] = f"EPSG:{info.epsg}"
    return want


def _check_root_values(
    ctx: Context, attributes: Mapping[str, Any], attrs: RootAttrs, level0: LevelInfo
) -> None:
    for name, value in _want_root(attrs, level0).items():
        if name not in attributes:
            continue
        got = attributes[name]
        same = got == value if isinstance(value, str) or name == "spatial:dimensions" else None
        if same is None:
            same = _close(got, value)
        if not same:
            ctx.add(
                "root.spatial",
                f"root {name} is {got!r}, level 0 and chronozarr.crs give {value!r}",
                f"{_KEY}{name}",
            )
    code = attributes.get("proj:code")
    if "proj:code" in attributes and "proj:code" not in _want_root(attrs, level0):
        ctx.add(
            "root.spatial",
            f"root proj:code is {code!r} but chronozarr.crs {attrs.crs!r} has no EPSG code",
            f"{_KEY}proj:code",
        )


def _entries(ms: Any) -> list[Any]:
    if isinstance(ms, list) and ms and isinstance(ms[0], Mapping):
        datasets = ms[0].get("datasets")
        return datasets if isinstance(datasets, list) else []
    layout = ms.get("layout") if isinstance(ms, Mapping) else None
    return list(layout) if isinstance(layout, list) else []


def _check_entries(ctx: Context, ms: Any, levels: Sequence[LevelInfo]) -> None:
    for i, entry in enumerate(_entries(ms)):
        if not isinstance(entry, Mapping) or i >= len(levels):
            continue
        for name, value in level_spatial(levels[i]).items():
            if name in entry and not _close(entry[name], value):
                ctx.add(
                    "multiscales.spatial",
                    f"multiscales entry {i} {name} is {entry[name]!r}, level "
                    f"{levels[i].path!r} has {value!r}",
                    f"{_KEY}multiscales",
                )


def _check_registered(ctx: Context, attributes: Mapping[str, Any]) -> None:
    registered = attributes.get("zarr_conventions")
    uuids = (
        {c.get("uuid") for c in registered if isinstance(c, Mapping)}
        if isinstance(registered, list)
        else set()
    )
    if "zarr_conventions" in attributes and not isinstance(registered, list):
        ctx.add("root.conventions", "zarr_conventions must be a list", f"{_KEY}zarr_conventions")
        return
    used = {
        "proj": any(k.startswith("proj:") for k in attributes),
        "spatial": any(k.startswith("spatial:") for k in attributes),
        "multiscales": isinstance(attributes.get("multiscales"), Mapping),
    }
    for name, present in used.items():
        if present and CONVENTIONS[name]["uuid"] not in uuids:
            ctx.add(
                "root.conventions",
                f"the root carries {name} attributes but zarr_conventions does not register "
                f"the {name} convention (uuid {CONVENTIONS[name]['uuid']})",
                f"{_KEY}zarr_conventions",
            )


def check_layout(ctx: Context, ms: Mapping[str, Any]) -> list[str] | None:
    """The conventions' object form (C26): assets '0', '1', ... each derived from the one before
    at scale 2; returns the level paths it lists."""
    key = f"{_KEY}multiscales"
    layout = ms.get("layout")
    if (
        not isinstance(layout, list)
        or not layout
        or not all(isinstance(e, Mapping) for e in layout)
    ):
        ctx.add(
            "multiscales.datasets", "multiscales.layout must be a non-empty list of objects", key
        )
        return None
    paths = [e.get("asset") for e in layout]
    if paths != [str(i) for i in range(len(paths))]:
        ctx.add(
            "multiscales.order",
            f"layout assets must be '0', '1', ... without gaps, got {paths}",
            key,
        )
    for i, entry in enumerate(layout[1:], start=1):
        scale = (
            (entry.get("transform") or {}).get("scale")
            if isinstance(entry.get("transform"), Mapping)
            else None
        )
        if entry.get("derived_from") != str(i - 1) or not _close(scale, [2.0, 2.0]):
            ctx.add(
                "multiscales.order",
                f"layout[{i}] must be derived_from {str(i - 1)!r} at scale [2, 2] (spec 6), "
                f"got derived_from {entry.get('derived_from')!r}, scale {scale!r}",
                key,
            )
    return [p if isinstance(p, str) else repr(p) for p in paths]

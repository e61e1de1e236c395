"""The root group and its chronozarr block (spec 2, 3, 3.1, 3.2, 3.4, 3.6): a Zarr v3 group, a
parsable block with every required key, the multiscales list, band objects and nodata."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chronozarr.errors import ChronozarrError
from chronozarr.format import RootAttrs, name_problem, store_names
from chronozarr.validate.context import Context, Stop
from chronozarr.validate.geozarr import check_geozarr, check_layout

__all__ = ["check_band_objects", "check_multiscales", "check_nodata", "check_root"]


def check_root(ctx: Context) -> tuple[Mapping[str, Any], RootAttrs]:
    """The root group and its chronozarr block; returns (the raw block, its parsed form).
    Raises :class:`Stop` when nothing further can be checked."""
    root = ctx.doc("")
    attributes = _root_attributes(ctx, root)
    raw = attributes.get("chronozarr")
    if raw is None:
        ctx.add("root.chronozarr", "root attributes have no 'chronozarr' block", "zarr.json")
        raise Stop
    attrs = _parsed(ctx, raw)
    ctx.attrs = attrs
    _check_names(ctx, raw, attributes)
    cons = root.get("consolidated_metadata") if root is not None else None
    if isinstance(cons, Mapping) and isinstance(cons.get("metadata"), Mapping):
        ctx.consolidated = cons["metadata"]
    else:
        ctx.add("root.consolidated", "no consolidated metadata (SHOULD be written)", "zarr.json")
    _check_required_keys(ctx, raw, attrs.spec_version.startswith("0.2."))
    check_multiscales(ctx, attributes.get("multiscales"), attrs)
    check_geozarr(ctx, attributes, attrs)
    check_band_objects(ctx, raw, attrs)
    check_nodata(ctx, raw)
    return raw, attrs


def _root_attributes(ctx: Context, root: Any) -> Mapping[str, Any]:
    """The root group's attributes (spec 3.1); Stop when there is no usable root group."""
    if root is None:
        ctx.add("root.missing", "no root zarr.json: not a store", "zarr.json")
        raise Stop
    if root.get("zarr_format") != 3 or root.get("node_type") != "group":
        ctx.add("root.group", "root zarr.json is not a Zarr v3 group", "zarr.json")
        raise Stop
    attributes = root.get("attributes") or {}
    if not isinstance(attributes, Mapping):
        ctx.add("root.attributes", "root attributes must be an object", "zarr.json")
        raise Stop
    return attributes


def _parsed(ctx: Context, raw: Any) -> RootAttrs:
    """The block as the reader parses it (spec 3.2); Stop when it does not parse."""
    try:
        return RootAttrs.from_json(raw)
    except ChronozarrError as exc:  # typed: the field it names picks the rule
        if exc.field == "shard_bytes":
            ctx.add("shard_bytes.malformed", str(exc), "zarr.json#chronozarr.shard_bytes")
        else:
            ctx.add("root.chronozarr", str(exc), "zarr.json#chronozarr")
        raise Stop from exc
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:  # untyped slip
        ctx.add(
            "root.chronozarr",
            f"malformed chronozarr block: {type(exc).__name__}: {exc}",
            "zarr.json#chronozarr",
        )
        raise Stop from exc


def _check_names(ctx: Context, raw: Mapping[str, Any], attributes: Mapping[str, Any]) -> None:
    """Node names a reader joins to the store's location (decision 0013); Stop on the first bad."""
    for where, name in store_names(raw, attributes.get("multiscales")):
        problem = name_problem(name)
        if problem is not None:  # a name that would leave the store (decision 0013)
            ctx.add("name.unsafe", f"{name!r}: {problem}", f"zarr.json#{where}")
            raise Stop
    for name in ("variable", "volatility_path", "mask_variable", "coverage_variable"):
        value = raw.get(name)
        if value is not None and not (isinstance(value, str) and value):
            ctx.add(
                "chronozarr.key",
                f"chronozarr.{name} must be a name (a non-empty string), got {value!r}",
                f"zarr.json#chronozarr.{name}",
            )
            raise Stop


def _check_required_keys(ctx: Context, raw: Mapping[str, Any], v02: bool) -> None:
    """The keys spec 3.2 requires (v0.2 adds band_names, levels and volatility_path)."""
    required = ["variable", "times", "bands", "nodata", "crs", "temporal"]
    if v02:
        required += ["band_names", "levels", "volatility_path"]
    for key in required:
        if key not in raw:
            ctx.add("chronozarr.key", f"chronozarr.{key} is missing", f"zarr.json#chronozarr.{key}")
    if not v02 and "volatility_path" not in raw:
        ctx.add(
            "volatility.path",
            "no volatility_path: decodable but not conforming",
            "zarr.json#chronozarr.volatility_path",
        )


def check_multiscales(ctx: Context, ms: Any, attrs: RootAttrs) -> None:
    key = "zarr.json#multiscales"
    if isinstance(ms, Mapping) and "layout" in ms:  # the conventions' object form (C26)
        ctx.levels_from_ms = check_layout(ctx, ms)
        return
    if not isinstance(ms, list) or not ms or not isinstance(ms[0], Mapping):
        ctx.add(
            "multiscales.missing",
            "multiscales must be the ndpyramid list with one entry or the conventions' object "
            "with layout[]",
            key,
        )
        return
    entry = ms[0]
    datasets = entry.get("datasets")
    if not isinstance(datasets, list) or not datasets:
        ctx.add(
            "multiscales.datasets",
            "multiscales[0].datasets must be a non-empty list",
            key,
        )
        return
    paths = [d.get("path") if isinstance(d, Mapping) else None for d in datasets]
    if paths != [str(i) for i in range(len(paths))]:
        ctx.add(
            "multiscales.order",
            f"levels must be listed as '0', '1', ... without gaps, got {paths}",
            key,
        )
    for i, d in enumerate(datasets):
        if isinstance(d, Mapping) and "crs" in d and d["crs"] != attrs.crs:
            ctx.add(
                "multiscales.crs",
                f"datasets[{i}].crs {d['crs']!r} differs from chronozarr.crs {attrs.crs!r}",
                key,
            )
    _check_ndpyramid_schema(ctx, entry, key)
    ctx.levels_from_ms = paths  # type: ignore[assignment]  # non-strings fail 3.7's check


def _check_ndpyramid_schema(ctx: Context, entry: Mapping[str, Any], key: str) -> None:
    """The ndpyramid entry's own keys: metadata (method, version, args), type, no layout."""
    meta = entry.get("metadata")
    if "method" in entry:
        ctx.add(
            "multiscales.method",
            "method must be nested under metadata, not top-level",
            key,
        )
    if not isinstance(meta, Mapping) or not {"method", "version", "args"} <= set(meta):
        ctx.add(
            "multiscales.metadata",
            "metadata must hold method, version and args (ndpyramid schema)",
            key,
        )
    if "type" not in entry:
        ctx.add("multiscales.type", "multiscales[0].type is missing (ndpyramid schema)", key)
    if "layout" in entry:
        ctx.add(
            "multiscales.layout",
            "the zarr-conventions layout[] form cannot be mixed with the ndpyramid list form",
            key,
        )


def check_band_objects(ctx: Context, raw: Mapping[str, Any], attrs: RootAttrs) -> None:
    names = [b.name for b in attrs.bands]
    if len(set(names)) != len(names):
        ctx.add(
            "bands.unique",
            f"band names are not unique: {names}",
            "zarr.json#chronozarr.bands",
        )
    if attrs.band_names is not None and list(attrs.band_names) != names:
        ctx.add(
            "mirror.band_names",
            f"band_names {list(attrs.band_names)} differ from bands {names}",
            "zarr.json#chronozarr.band_names",
        )
    for i, b in enumerate(raw.get("bands", [])):
        if isinstance(b, Mapping) and ("scale" not in b or "offset" not in b):
            ctx.add(
                "bands.scale",
                f"bands[{i}] has no explicit scale/offset (SHOULD)",
                f"zarr.json#chronozarr.bands[{i}]",
            )


def check_nodata(ctx: Context, raw: Mapping[str, Any]) -> None:
    nodata = raw.get("nodata")
    if isinstance(nodata, float) and math.isnan(nodata):
        ctx.add("nodata.nan", "NaN is not a valid nodata", "zarr.json#chronozarr.nodata")

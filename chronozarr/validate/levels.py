"""Levels (spec 2.1, 2.3, 2.4, 2.5, 3.3, 3.7, 6): each level group, its data array and its
mask/coverage planes, the nodata profile, the pyramid geometry and the levels mirror.

``check_levels`` returns one dict per usable level (path, shape, info, resolution, transform,
grid) for the checks of the later sections.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from chronozarr.format import (
    CODEC_NAMES,
    ArrayInfo,
    RootAttrs,
    grid_shape,
    level_transform,
    parse_crs,
)
from chronozarr.validate.arrays import check_array, compressors
from chronozarr.validate.context import Context, fits, is_transform

__all__ = ["check_levels", "check_spatial_values"]

_SPATIAL_ATTRS = (
    "proj:code",
    "spatial:dimensions",
    "spatial:shape",
    "spatial:transform",
    "spatial:bbox",
)


@dataclass
class _Seen:
    """What the levels checked so far established: level 0's chunk size, data type and codecs,
    which levels hold mask/coverage arrays, and the usable levels."""

    cs: int | None = None
    dtype: str | None = None
    codecs: list[Any] | None = None
    planes: dict[str, list[bool]] = field(default_factory=lambda: {"mask": [], "coverage": []})
    levels: list[dict[str, Any]] = field(default_factory=list)


def _paths(ctx: Context, attrs: RootAttrs) -> list[str]:
    """The level paths: chronozarr.levels (3.7), else multiscales (3.4); they must agree."""
    paths = ctx.levels_from_ms
    if attrs.levels is not None:
        lpaths = [lv.path for lv in attrs.levels]
        if paths is not None and lpaths != paths:
            ctx.add(
                "mirror.levels",
                f"levels paths {lpaths} differ from multiscales {paths}",
                "zarr.json#chronozarr.levels",
            )
        paths = lpaths
    ctx.level_paths = list(paths or [])
    if not paths:
        ctx.add(
            "levels.missing", "no levels found in chronozarr.levels or multiscales", "zarr.json"
        )
        return []
    if paths != [str(i) for i in range(len(paths))]:
        ctx.add(
            "levels.consecutive",
            f"levels must be consecutive from '0', got {paths}",
            "zarr.json#chronozarr.levels",
        )
    return list(paths)


def check_levels(ctx: Context, attrs: RootAttrs) -> list[dict[str, Any]]:
    """Check every level; the usable ones, in order (empty when none is)."""
    paths = _paths(ctx, attrs)
    if not paths:
        return []
    seen = _Seen()
    for k, path in enumerate(paths):
        _check_level(ctx, attrs, k, path, seen)
    _check_plane_presence(ctx, attrs, paths, seen.planes)
    if attrs.levels is not None and len(attrs.levels) != len(paths):
        ctx.add(
            "mirror.levels",
            "levels mirror length differs from the level groups",
            "zarr.json#chronozarr.levels",
        )
    return seen.levels


def _check_level(ctx: Context, attrs: RootAttrs, k: int, path: str, seen: _Seen) -> None:
    gkey = f"{path}/zarr.json"
    ga = _group_attrs(ctx, path)
    if ga is None:
        return
    info = check_array(ctx, f"{path}/{attrs.variable}")
    if info is None:
        return
    dkey = f"{path}/{attrs.variable}/zarr.json"
    doc = ctx.doc(f"{path}/{attrs.variable}")
    if not _check_data(ctx, attrs, info, dkey, seen):
        return
    _check_nodata_profile(ctx, attrs, info, doc, dkey)
    _check_geometry(ctx, k, path, info, ga, seen.levels, gkey, dkey)
    _check_spatial_attrs(ctx, attrs, doc, ga, dkey)
    if seen.codecs is not None and list(info.codecs) != seen.codecs:
        ctx.add("codec.same", "data codecs differ between levels", dkey)
    _check_planes(ctx, path, info, seen.planes)
    lv = {
        "path": path,
        "shape": list(info.shape),
        "info": info,
        "resolution": float(ga["resolution"])
        if isinstance(ga.get("resolution"), int | float)
        else None,
        "transform": ga.get("transform"),
        "grid": list(grid_shape(info.shape[2], info.shape[3], info.cs)),
    }
    _check_mirror(ctx, attrs, k, lv)
    if ga.get("crs") is not None and ga.get("crs") != attrs.crs:
        ctx.add(
            "level.crs",
            f"level crs {ga.get('crs')!r} differs from chronozarr.crs {attrs.crs!r}",
            gkey,
        )
    seen.levels.append(lv)


def _group_attrs(ctx: Context, path: str) -> Mapping[str, Any] | None:
    """The level group's attributes without the malformed ones (3.3); None when not a group."""
    gdoc = ctx.doc(path)
    gkey = f"{path}/zarr.json"
    if gdoc is None or gdoc.get("node_type") != "group":
        ctx.add("level.group", f"level {path} is not a group", gkey)
        return None
    ga = gdoc.get("attributes") or {}
    if not isinstance(ga, Mapping):
        ctx.add("level.attrs", "level group attributes must be an object", gkey)
        ga = {}
    if "transform" in ga and not is_transform(ga["transform"]):
        ctx.add(
            "level.attrs",
            f"transform must be six numbers [a, b, c, d, e, f], got {ga['transform']!r}",
            gkey,
        )
        ga = {k: v for k, v in ga.items() if k != "transform"}
    res = ga.get("resolution")
    if "resolution" in ga and (
        isinstance(res, bool) or not isinstance(res, int | float) or not res > 0
    ):
        ctx.add("level.attrs", f"resolution must be a positive number, got {res!r}", gkey)
        ga = {k: v for k, v in ga.items() if k != "resolution"}
    for name in ("crs", "transform", "resolution"):
        if name not in ga:
            ctx.add("level.attrs", f"level group attribute {name!r} is missing", gkey)
    return ga


def _check_data(ctx: Context, attrs: RootAttrs, info: ArrayInfo, dkey: str, seen: _Seen) -> bool:
    """The data array's layout (2.1, 2.3, 3.5, 7.1, 8); False when it is not 4-d."""
    dims = info.dimension_names
    if dims is not None and list(dims) != ["time", "band", "y", "x"]:
        ctx.add("data.dims", f"dimension_names must be [time, band, y, x], got {list(dims)}", dkey)
    if len(info.shape) != 4:
        ctx.add("data.shape", f"data array must be 4-d, got shape {list(info.shape)}", dkey)
        return False
    cs = info.cs
    if cs % 2 or cs < 2:
        ctx.add("data.cs", f"chunk size {cs} must be even", dkey)
    if info.inner_chunk_shape != (1, info.shape[1], cs, cs):
        ctx.add(
            "data.chunks",
            f"inner chunk shape must be (1, n_band, cs, cs), got {list(info.inner_chunk_shape)}",
            dkey,
        )
    if seen.cs is None:
        seen.cs, seen.dtype, seen.codecs = cs, info.dtype, list(info.codecs)
    else:
        if cs != seen.cs:
            ctx.add("data.cs", f"chunk size {cs} differs from level 0's {seen.cs}", dkey)
        if info.dtype != seen.dtype:
            ctx.add(
                "data.dtype", f"data_type {info.dtype} differs from level 0's {seen.dtype}", dkey
            )
    n_time, n_band = len(attrs.times), len(attrs.bands)
    if info.shape[0] != n_time:
        ctx.add(
            "data.time",
            f"time axis {info.shape[0]} differs from len(chronozarr.times) {n_time}",
            dkey,
        )
    if info.shape[1] != n_band:
        ctx.add(
            "data.band",
            f"band axis {info.shape[1]} differs from len(chronozarr.bands) {n_band}",
            dkey,
        )
    if info.sharded and info.chunk_shape[1:] != (info.shape[1], cs, cs):
        ctx.add(
            "data.shard",
            f"shard shape must be (shard_time, n_band, cs, cs), got {list(info.chunk_shape)}",
            dkey,
        )
    names = [c.get("name") for c in info.codecs]
    if len(names) != 2 or names[1] not in CODEC_NAMES:
        ctx.add(
            "codec.one",
            f"writers MUST use bytes then exactly one of {list(CODEC_NAMES)}, got {names}",
            dkey,
        )
    return True


def _check_nodata_profile(
    ctx: Context, attrs: RootAttrs, info: ArrayInfo, doc: Mapping[str, Any], dkey: str
) -> None:
    """fill_value and the nodata attribute follow chronozarr.nodata (2.3)."""
    nodata = attrs.nodata
    array_attrs = doc.get("attributes") or {}
    if nodata is None:
        if info.fill_value not in (0, 0.0):
            ctx.add(
                "nodata.fill",
                f"nodata is null so fill_value must be 0, got {info.fill_value!r}",
                dkey,
            )
        if "nodata" in array_attrs:
            ctx.add("nodata.attr", "nodata is null so the nodata attribute must be absent", dkey)
    else:
        if info.fill_value != nodata:
            ctx.add(
                "nodata.fill",
                f"fill_value {info.fill_value!r} differs from chronozarr.nodata {nodata!r}",
                dkey,
            )
        attr_nodata = array_attrs.get("nodata", None)
        if attr_nodata != nodata:
            ctx.add(
                "nodata.attr",
                f"attribute nodata {attr_nodata!r} differs from chronozarr.nodata {nodata!r}",
                dkey,
            )
    if nodata is not None and not fits(nodata, info.dtype):
        ctx.add(
            "nodata.range",
            f"chronozarr.nodata {nodata!r} is not a value of the data type {info.dtype}",
            "zarr.json#chronozarr.nodata",
        )


def _check_geometry(
    ctx: Context,
    k: int,
    path: str,
    info: ArrayInfo,
    ga: Mapping[str, Any],
    below: list[dict[str, Any]],
    gkey: str,
    dkey: str,
) -> None:
    """Level k is level 0 at 2^k the pixel size, same outer corner; its shape is the ceil of half
    the level below and its resolution twice it (6)."""
    tf: Any = ga.get("transform")
    if (
        below
        and k > 0
        and below[0]["path"] == "0"
        and is_transform(tf)
        and is_transform(below[0]["transform"])
    ):
        want_tf = level_transform(below[0]["transform"], k)
        if not all(
            math.isclose(float(a), b, rel_tol=1e-9, abs_tol=1e-9)
            for a, b in zip(tf, want_tf, strict=True)
        ):
            ctx.add(
                "pyramid.transform",
                f"level {path} transform {list(tf)} is not level 0's at 2^{k} the pixel size: {want_tf}",
                gkey,
            )
    if not below:
        return
    ph, pw = below[-1]["shape"][2:]
    want = (math.ceil(ph / 2), math.ceil(pw / 2))
    if tuple(info.shape[2:]) != want:
        ctx.add(
            "pyramid.shape",
            f"level {path} is {list(info.shape[2:])}, expected ceil of half the level below: {list(want)}",
            dkey,
        )
    pres = below[-1]["resolution"]
    if (
        ga.get("resolution") is not None
        and pres is not None
        and not math.isclose(float(ga["resolution"]), 2 * pres)
    ):
        ctx.add("pyramid.resolution", f"resolution {ga['resolution']} is not twice {pres}", gkey)


def _check_spatial_attrs(
    ctx: Context, attrs: RootAttrs, doc: Mapping[str, Any], ga: Mapping[str, Any], dkey: str
) -> None:
    """proj:code, spatial:* and _CRS are present (3.3, SHOULD) and carry the level's values."""
    array_attrs = doc.get("attributes") or {}
    epsg = str(attrs.crs or "").upper().startswith("EPSG:")
    for attr in _SPATIAL_ATTRS:
        if attr not in array_attrs and not (attr == "proj:code" and not epsg):
            ctx.add("data.spatial", f"data array attribute {attr!r} is missing (SHOULD)", dkey)
    check_spatial_values(ctx, doc, attrs, ga, dkey)
    if epsg and "_CRS" not in array_attrs:
        ctx.add("data.crs", "EPSG store without the _CRS attribute GDAL reads (SHOULD)", dkey)
    if _crs_wkt_attrs(str(attrs.crs or "")) and "proj:wkt2" not in array_attrs:
        ctx.add(
            "data.crs",
            "a WKT crs without the proj:wkt2 attribute other readers look for (SHOULD, C16)",
            dkey,
        )


def _check_planes(ctx: Context, path: str, info: ArrayInfo, present: dict[str, list[bool]]) -> None:
    """mask (2.4) and coverage (2.5) arrays of one level: shaped and chunked like the data."""
    cs = info.cs
    for plane in ("mask", "coverage"):
        pdoc = ctx.doc(f"{path}/{plane}")
        present[plane].append(pdoc is not None)
        if pdoc is None:
            continue
        pinfo = check_array(ctx, f"{path}/{plane}", allowed=("uint8",), kind=plane)
        pkey = f"{path}/{plane}/zarr.json"
        if pinfo is None:
            continue
        want_shape = (info.shape[0], *info.shape[2:])
        if pinfo.shape != want_shape:
            ctx.add(
                f"{plane}.shape",
                f"shape {list(pinfo.shape)} must be [n_time, H, W] = {list(want_shape)}",
                pkey,
            )
        if pinfo.fill_value != 0:
            ctx.add(f"{plane}.fill", f"fill_value must be 0, got {pinfo.fill_value!r}", pkey)
        dims = pinfo.dimension_names
        if dims is not None and list(dims) != ["time", "y", "x"]:
            ctx.add(
                f"{plane}.dims", f"dimension_names must be [time, y, x], got {list(dims)}", pkey
            )
        if pinfo.inner_chunk_shape != (1, cs, cs):
            ctx.add(
                f"{plane}.chunks",
                f"inner chunk shape must be (1, cs, cs), got {list(pinfo.inner_chunk_shape)}",
                pkey,
            )
        if pinfo.sharded != info.sharded or (
            info.sharded and tuple(pinfo.chunk_shape) != (info.chunk_shape[0], cs, cs)
        ):
            ctx.add(
                f"{plane}.layout",
                "mask/coverage must be chunked like data (same sharding and shard_time)",
                pkey,
            )
        if compressors(pinfo.codecs) != compressors(info.codecs):
            ctx.add(
                f"{plane}.codec", "the same codec chain applies to data, mask and coverage", pkey
            )


def _check_mirror(ctx: Context, attrs: RootAttrs, k: int, lv: dict[str, Any]) -> None:
    """chronozarr.levels[k] mirrors the level: shape, grid, resolution, transform (3.7)."""
    if attrs.levels is None or k >= len(attrs.levels):
        return
    m = attrs.levels[k]
    mkey = f"zarr.json#chronozarr.levels[{k}]"
    if list(m.shape) != lv["shape"]:
        ctx.add(
            "mirror.levels", f"shape {list(m.shape)} differs from the array's {lv['shape']}", mkey
        )
    if list(m.grid) != lv["grid"]:
        ctx.add(
            "mirror.levels", f"grid {list(m.grid)} differs from ceil(shape / cs) {lv['grid']}", mkey
        )
    if lv["resolution"] is not None and m.resolution != lv["resolution"]:
        ctx.add(
            "mirror.levels",
            f"resolution {m.resolution} differs from the level group's {lv['resolution']}",
            mkey,
        )
    if lv["transform"] is not None and [float(v) for v in lv["transform"]] != list(m.transform):
        ctx.add(
            "mirror.levels",
            f"transform {list(m.transform)} differs from the level group's {lv['transform']}",
            mkey,
        )


def _check_plane_presence(
    ctx: Context, attrs: RootAttrs, paths: list[str], planes: dict[str, list[bool]]
) -> None:
    """A plane exists at every level or none, as chronozarr.*_variable declares (2.4, 2.5)."""
    for plane, present in planes.items():
        declared = attrs.mask_variable if plane == "mask" else attrs.coverage_variable
        if any(present) and not all(present):
            at = [p for p, x in zip(paths, present, strict=False) if x]
            ctx.add(
                f"{plane}.levels",
                f"{plane} must exist at every level or at none (present at {at})",
                f"{plane}",
            )
        if any(present) and declared != plane:
            ctx.add(
                f"{plane}.variable",
                f"{plane} arrays exist but chronozarr.{plane}_variable is {declared!r}",
                f"zarr.json#chronozarr.{plane}_variable",
            )
        if not any(present) and declared is not None:
            ctx.add(
                f"{plane}.variable",
                f"chronozarr.{plane}_variable is {declared!r} but no {plane} array exists",
                f"zarr.json#chronozarr.{plane}_variable",
            )


def _spatial_want(
    doc: Mapping[str, Any], attrs: RootAttrs, ga: Mapping[str, Any]
) -> dict[str, Any]:
    """The values proj:code, spatial:* and _CRS carry for this level (spec 3.3)."""
    shape = doc.get("shape") or []
    crs = str(attrs.crs or "")
    tf: Any = ga.get("transform")
    want: dict[str, Any] = {"spatial:dimensions": ["y", "x"]}
    if len(shape) == 4:
        want["spatial:shape"] = list(shape[2:])
    if crs.upper().startswith("EPSG:"):
        want["proj:code"] = crs.upper()
        want["_CRS"] = f"http://www.opengis.net/def/crs/EPSG/0/{crs.split(':', 1)[1]}"
    else:  # a CRS without EPSG code (docs/spec.md C16): the WKT2 where other readers look
        want.update(_crs_wkt_attrs(crs))
    if is_transform(tf):
        want["spatial:transform"] = [float(v) for v in tf]
        if len(shape) == 4:
            ta, _, tc, _, te, tf_ = (float(v) for v in tf)
            xs, ys = [tc, tc + ta * shape[3]], [tf_, tf_ + te * shape[2]]
            want["spatial:bbox"] = [min(xs), min(ys), max(xs), max(ys)]
    return want


def _close_numbers(got: Any, value: list[float]) -> bool:
    return (
        isinstance(got, list)
        and len(got) == len(value)
        and all(
            isinstance(x, int | float) and math.isclose(float(x), y, rel_tol=1e-9, abs_tol=1e-9)
            for x, y in zip(got, value, strict=True)
        )
    )


def check_spatial_values(
    ctx: Context, doc: Mapping[str, Any], attrs: RootAttrs, ga: Mapping[str, Any], dkey: str
) -> None:
    """proj:code, spatial:* and _CRS carry the same values as the level (spec 3.3, SHOULD)."""
    a = doc.get("attributes") or {}
    epsg = str(attrs.crs or "").upper().startswith("EPSG:")
    for name, value in _spatial_want(doc, attrs, ga).items():
        if name not in a:
            continue
        got = a[name]
        if name == "_CRS":
            member = "url" if epsg else "wkt"
            got = got.get(member) if isinstance(got, Mapping) else got
        same = got == value
        if not same and name in ("spatial:transform", "spatial:bbox"):
            same = _close_numbers(got, value)
        if not same:
            ctx.add(
                "data.spatial",
                f"attribute {name} is {got!r}, the level says {value!r} (same values SHOULD)",
                dkey,
            )


def _crs_wkt_attrs(crs: str) -> dict[str, Any]:
    """What proj:wkt2 and _CRS.wkt say for a store whose crs is a WKT (C16); {} otherwise."""
    info = parse_crs(crs)
    if info is None or info.wkt2 is None:
        return {}
    return {"proj:wkt2": info.wkt2, "_CRS": info.wkt2}

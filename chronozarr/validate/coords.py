"""Coordinate arrays (spec 2.2, 3.5): time, band, y and x at every level, their types, their
values (pixel centres, strictly increasing times) and the root's mirrors of them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from chronozarr.format import (
    CODEC_NAMES,
    RootAttrs,
    compressor_for,
    decode_at_most,
    format_time,
    parse_time,
    pixel_centres,
    vlen_utf8_decode,
)
from chronozarr.validate.context import Context

__all__ = ["check_coords"]


def _coord(ctx: Context, path: str, dtype: str) -> Any:
    try:
        return _coord_values(ctx, path, dtype)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:  # odd JSON types
        ctx.add(
            "coord.malformed",
            f"malformed coordinate array metadata: {type(exc).__name__}: {exc}",
            f"{path}/zarr.json",
        )
        return None


def _coord_doc_ok(ctx: Context, path: str, doc: Mapping[str, Any], dtype: str) -> bool:
    """The coordinate array's document (spec 2.2): its dimension names (reported, not fatal),
    then a codec, data type and single chunk the values can be read with."""
    key = f"{path}/zarr.json"
    dims = doc.get("dimension_names")
    ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
    if dims is None or ad is None or list(dims) != list(ad):
        ctx.add(
            "array.dimension_names",
            "dimension_names and _ARRAY_DIMENSIONS must both be set and equal",
            key,
        )
    name = path.rsplit("/", 1)[-1]
    if dims is not None and list(dims) != [name]:
        ctx.add(
            "coord.dims",
            f"dimension_names of the {name} coordinate must be [{name!r}], got {list(dims)}",
            key,
        )
    comp = [c.get("name") for c in (doc.get("codecs") or [])[1:]]
    if any(c not in CODEC_NAMES for c in comp) or len(comp) > 1:
        ctx.add(
            "coord.codec",
            f"coordinate arrays MAY use one of {list(CODEC_NAMES)}, got {comp}",
            key,
        )
        return False
    if doc.get("data_type") != dtype:
        ctx.add("coord.dtype", f"data_type must be {dtype}, got {doc.get('data_type')!r}", key)
        return False
    chunks = doc.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape", [0])
    if list(chunks) != list(doc.get("shape") or [0]):
        ctx.add("coord.single_chunk", "coordinate arrays SHOULD be a single chunk", key)
        return False
    return True


def _coord_values(ctx: Context, path: str, dtype: str) -> Any:
    doc = ctx.doc(path)
    if doc is None:
        ctx.add("coord.missing", f"coordinate array {path} is missing", f"{path}/zarr.json")
        return None
    if not _coord_doc_ok(ctx, path, doc, dtype):
        return None
    raw = ctx.store.get(f"{path}/c/0")
    if raw is None:
        ctx.add("coord.chunk", "coordinate chunk c/0 is missing", f"{path}/c/0")
        return None
    try:
        return _decoded(ctx, path, doc, dtype, raw)
    except Exception as exc:  # any decoding failure of stored bytes is a finding
        ctx.add("coord.decode", f"cannot decode: {exc}", f"{path}/c/0")
        return None


def _decoded(ctx: Context, path: str, doc: Mapping[str, Any], dtype: str, raw: bytes) -> Any:
    """The coordinate chunk's values, decoded within a bound (decision 0013)."""
    shape = doc.get("shape") or [0]
    limit = _decoded_limit(path, dtype, shape, ctx)
    data = raw
    for c in reversed(doc.get("codecs", [])[1:]):  # bounded: a bomb is a finding, not GB
        data = decode_at_most(c.get("name"), compressor_for(c), data, limit)
    if len(data) > limit:  # no compressor: the object itself is the decoded bytes
        raise ValueError(f"{len(data)} bytes, at most {limit} expected")
    if dtype == "string":
        return vlen_utf8_decode(data)
    values = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"))
    if path.rsplit("/", 1)[-1] == "time" and len(values) > shape[0]:
        # spec 14 write order: time/c/0 is rewritten before the zarr.json files
        ctx.add(
            "append.in_progress",
            f"time/c/0 holds {len(values)} values, the root describes {shape[0]}: an unfinished append; re-run it",
            f"{path}/c/0",
        )
        values = values[: shape[0]]
    if len(values) != shape[0]:
        raise ValueError(f"{len(values)} values, expected {shape[0]}")
    return values


#: Decoded bytes a coordinate chunk may have beyond what its metadata implies: a time chunk
#: that an unfinished append already grew (spec 14), a band coordinate's strings (vlen-utf8).
COORD_SLACK = 16 << 20


def _decoded_limit(path: str, dtype: str, shape: Any, ctx: Context) -> int:
    """The most bytes the coordinate chunk at ``path`` may decode to (spec 2.2): exactly its
    shape for x/y; more for time (an append in progress) and for strings."""
    n = int(shape[0]) if shape and isinstance(shape[0], int) and shape[0] >= 0 else 0
    if dtype == "string":
        return 8 + n * (4 + 1024) + COORD_SLACK
    exact = n * np.dtype(dtype).itemsize
    return exact + COORD_SLACK if path.rsplit("/", 1)[-1] == "time" else exact


def check_coords(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    """Every level's time, band, y and x (spec 2.2): mirrors of the block, the pixel centres."""
    band_names = [b.name for b in attrs.bands]
    for lv in levels:
        path = lv["path"]
        _check_times(ctx, attrs, path)
        bands = _coord(ctx, f"{path}/band", "string")
        # None: missing or malformed (reported), or an integer band coordinate (no names)
        if bands is not None and list(bands) != band_names:
            ctx.add(
                "mirror.band_coord",
                f"band coordinate {list(bands)} differs from band names {band_names}",
                f"{path}/band",
            )
        h, w = lv["shape"][2:]
        for axis, n in (("y", h), ("x", w)):
            _check_axis(ctx, lv, axis, n)
        ctx.count("coordinates", 4)
    _check_root_coords(ctx, attrs, band_names)


def _check_times(ctx: Context, attrs: RootAttrs, path: str) -> None:
    """A level's time: the ISO renderings chronozarr.times mirrors (3.5), strictly increasing."""
    times = _coord(ctx, f"{path}/time", "int64")
    if times is None:
        return
    rendered = [format_time(int(t)) for t in times]
    if len(rendered) != len(attrs.times):
        ctx.add(
            "mirror.times",
            f"time has {len(rendered)} values, chronozarr.times {len(attrs.times)}",
            f"{path}/time",
        )
    else:
        for i, (a, b) in enumerate(zip(rendered, attrs.times, strict=True)):
            try:
                same = parse_time(b) == int(times[i])
            except (TypeError, ValueError):  # an unparsable mirror entry differs
                same = False
            if not same or a != b:
                ctx.add(
                    "mirror.time_values",
                    f"chronozarr.times[{i}] = {b!r} is not the ISO rendering of time[{i}] ({a})",
                    f"{path}/time",
                )
                break
    if len(times) > 1 and np.any(np.diff(times) <= 0):
        ctx.add("time.order", "time values must be strictly increasing", f"{path}/time")


def _check_axis(ctx: Context, lv: dict[str, Any], axis: str, n: int) -> None:
    """A level's y or x: ``n`` values, the pixel centres of the level transform (3.3)."""
    path = lv["path"]
    values = _coord(ctx, f"{path}/{axis}", "float64")
    if values is None:
        return
    if len(values) != n:
        ctx.add("coord.length", f"{axis} has {len(values)} values, expected {n}", f"{path}/{axis}")
        return
    if lv["transform"] is None:
        return
    pixel = float(lv["transform"][0])
    # only this axis: the other may be huge (hostile shapes stay cheap)
    ys, xs = pixel_centres(lv["transform"], *((n, 0) if axis == "y" else (0, n)))
    want = np.asarray(ys if axis == "y" else xs)
    if not np.allclose(values, want, rtol=0, atol=abs(pixel) * 1e-6):
        ctx.add(
            "coord.centres",
            f"{axis} values are not the pixel centres of the level transform",
            f"{path}/{axis}",
        )


def _check_root_coords(ctx: Context, attrs: RootAttrs, band_names: list[str]) -> None:
    """Root-level time and band, when present, mirror chronozarr.times and band_names like
    every level's (root_coordinates; spec 2.2, 3.5). Stores without them are conforming."""
    if ctx.doc("time") is not None:
        times = _coord(ctx, "time", "int64")
        if times is not None and [format_time(int(t)) for t in times] != list(attrs.times):
            ctx.add(
                "mirror.time_values",
                "root-level time differs from chronozarr.times (it must equal every level's)",
                "time",
            )
    if ctx.doc("band") is not None:
        bands = _coord(ctx, "band", "string")
        if bands is not None and list(bands) != band_names:
            ctx.add(
                "mirror.band_coord",
                f"root-level band {list(bands)} differs from band names {band_names}",
                "band",
            )

"""Checks of the time-series companion (docs/spec.md C25; decision 0048).

Shallow: the root's ``chronozarr.history`` block names levels of the store; each of them holds
the group with ``values`` and ``field``; ``values`` is (time, field, y, x) of the level's shape
with the data's type, fill value and codec chain, in unsharded chunks (T, n_field, B, B); the
``field`` coordinate lists the bands, then mask and coverage. Deep: every companion chunk decodes
and equals the data's reconstructed values, the mask and the coverage it copies.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from chronozarr.errors import ChronozarrError
from chronozarr.format import (
    HISTORY_ARRAY,
    HISTORY_FIELD,
    ArrayInfo,
    RootAttrs,
    compressor_for,
    history_fields,
    vlen_utf8_decode,
)
from chronozarr.read import Reader, history_array
from chronozarr.validate.arrays import check_array
from chronozarr.validate.context import Context

__all__ = ["check_history", "check_history_deep"]


def check_history(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    """The companion's metadata, at every level the root lists (C25)."""
    block = attrs.history
    if block is None:
        return
    by_path = {lv["path"]: lv for lv in levels}
    for path in block.levels:
        lv = by_path.get(path)
        if lv is None:
            ctx.add(
                "history.block",
                f"chronozarr.history lists level {path!r}, which the store does not have",
                "zarr.json#chronozarr.history",
            )
            continue
        _check_level(ctx, attrs, f"{path}/{block.path}", lv)


def _check_level(ctx: Context, attrs: RootAttrs, group: str, lv: dict[str, Any]) -> None:
    gdoc = ctx.doc(group)
    if not isinstance(gdoc, Mapping) or gdoc.get("node_type") != "group":
        ctx.add("history.missing", f"{group} is not a group", f"{group}/zarr.json")
        return
    key = f"{group}/{HISTORY_ARRAY}/zarr.json"
    if ctx.doc(f"{group}/{HISTORY_ARRAY}") is None or ctx.doc(f"{group}/{HISTORY_FIELD}") is None:
        ctx.add("history.missing", f"{group} lacks its {HISTORY_ARRAY} or {HISTORY_FIELD}", key)
        return
    info = check_array(ctx, f"{group}/{HISTORY_ARRAY}")
    data: ArrayInfo = lv["info"]
    fields = history_fields(
        [b.name for b in attrs.bands],
        attrs.mask_variable is not None,
        attrs.coverage_variable is not None,
    )
    if info is not None:
        want = [data.shape[0], len(fields), data.shape[2], data.shape[3]]
        problems = []
        if list(info.shape) != want:
            problems.append(f"shape {list(info.shape)}, expected {want}")
        if info.dimension_names != ("time", "field", "y", "x"):
            problems.append(f"dimension_names {info.dimension_names}, expected time, field, y, x")
        if info.dtype != data.dtype or info.fill_value != data.fill_value:
            problems.append(
                f"{info.dtype} fill {info.fill_value!r}, the data's is {data.dtype} fill"
                f" {data.fill_value!r}"
            )
        c = info.chunk_shape
        if info.sharded or len(c) != 4 or c[1] != len(fields) or c[2] != c[3]:
            problems.append(f"chunks {list(c)}, expected unsharded (T, {len(fields)}, B, B)")
        if problems:
            ctx.add("history.layout", "; ".join(problems), key)
        if list(info.codecs) != list(data.codecs):
            ctx.add("history.codec", "the companion does not use the data's codec chain", key)
    _check_fields(ctx, f"{group}/{HISTORY_FIELD}", fields)


def _check_fields(ctx: Context, path: str, fields: list[str]) -> None:
    """The ``field`` coordinate names the fields in the C25 order."""
    doc = ctx.doc(path)
    raw = ctx.store.get(f"{path}/c/0")
    names: list[str] | None = None
    try:
        if isinstance(doc, Mapping) and raw is not None:
            data = raw
            for codec in reversed(list(doc.get("codecs") or [])[1:]):
                data = bytes(compressor_for(codec).decode(data))
            names = vlen_utf8_decode(data)
    except (ValueError, TypeError, KeyError, ChronozarrError) as exc:  # bad bytes: a finding
        ctx.add("history.field", f"the field coordinate does not decode: {exc}", path)
        return
    if names != fields:
        ctx.add("history.field", f"field is {names}, expected {fields}", f"{path}/c/0")


def check_history_deep(ctx: Context, reader: Reader) -> None:
    """Decode every companion chunk and compare it with the data's reconstructed values, mask
    and coverage (C25); one finding per level, naming the first chunk that differs."""
    block = reader.attrs.history
    if block is None:
        return
    for k, lv in enumerate(reader.levels):
        if lv.path not in block.levels:
            continue
        array = f"{lv.path}/{block.path}/{HISTORY_ARRAY}"
        try:
            _deep_level(ctx, reader, k, array)
        except ChronozarrError as exc:  # a chunk that does not decode
            ctx.add("history.values", f"decoding failed: {exc}", array)


def _deep_level(ctx: Context, reader: Reader, k: int, array: str) -> None:
    """Cell by cell and time block by time block (memory: one cell's time block, twice)."""
    lv = reader.levels[k]
    cs = reader.chunk_size(k)
    rows, cols = lv.grid
    h, w = lv.shape[2:]
    info = history_array(reader, k)
    step = info.info.chunk_shape[0] if info is not None else reader.n_time
    for r in range(rows):
        for c in range(cols):
            ys = range(r * cs, min((r + 1) * cs, h))
            xs = range(c * cs, min((c + 1) * cs, w))
            for t0 in range(0, reader.n_time, step):
                ts = range(t0, min(t0 + step, reader.n_time))
                got = reader.read_history(ts, ys, xs, k, use_history=True)
                want = reader.read_history(ts, ys, xs, k, use_history=False)
                ctx.count("history blocks compared")
                for name, a, b in (
                    ("values", got.values, want.values),
                    ("mask", got.mask, want.mask),
                    ("coverage", got.coverage, want.coverage),
                ):
                    if (
                        a is None
                        or b is None
                        or np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
                    ):
                        continue
                    t = t0 + int(np.argwhere((a != b).reshape(len(ts), -1).any(axis=1))[0][0])
                    ctx.add(
                        "history.values",
                        f"level {lv.path} cell ({r}, {c}): the companion's {name} at t={t}"
                        " differs from the data's (C25)",
                        array,
                    )
                    return

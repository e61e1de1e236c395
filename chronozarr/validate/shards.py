"""shard_bytes (spec 7.3): every listed shard exists with the listed length, every shard object
is listed, nothing outside the shard grid; an unfinished append (spec 14) is told apart."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from chronozarr.errors import ChronozarrError
from chronozarr.format import ArrayInfo, RootAttrs, chunk_key, index_nbytes, parse_index
from chronozarr.validate.context import Context, is_count

__all__ = ["check_shard_bytes"]

_MAX_SHARDS = 1_000_000  # beyond this a shard grid is not enumerated (spec 7.3 checks)


def _n_shards(ctx: Context, lv: dict[str, Any]) -> int:
    info: ArrayInfo = lv["info"]
    rows, cols = lv["grid"]
    return int(math.ceil(info.shape[0] / info.chunk_shape[0]) * rows * cols)


def _in_grid(ctx: Context, sk: str, lv: dict[str, Any]) -> bool:
    """True when ``sk`` is "<t_shard>/<row>/<col>" inside the level's shard grid (7.3)."""
    parts = sk.split("/")
    if len(parts) != 3 or not all(p.isdigit() and str(int(p)) == p for p in parts):
        return False
    info: ArrayInfo = lv["info"]
    ts, r, c = (int(p) for p in parts)
    rows, cols = lv["grid"]
    return ts < math.ceil(info.shape[0] / info.chunk_shape[0]) and r < rows and c < cols


def _expected_shards(ctx: Context, lv: dict[str, Any]) -> list[str]:
    info: ArrayInfo = lv["info"]
    st = info.chunk_shape[0]
    n_ts = math.ceil(info.shape[0] / st)
    rows, cols = lv["grid"]
    return [f"{ts}/{r}/{c}" for ts in range(n_ts) for r in range(rows) for c in range(cols)]


def _well_formed(shard_bytes: Any) -> bool:
    return isinstance(shard_bytes, Mapping) and all(
        isinstance(v, Mapping) and all(isinstance(sk, str) and is_count(n) for sk, n in v.items())
        for v in shard_bytes.values()
    )


def check_shard_bytes(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    """shard_bytes (spec 7.3): for sharded stores only, one length per shard of every level,
    each the length of the shard object (or a length an unfinished append left, spec 14)."""
    key = "zarr.json#chronozarr.shard_bytes"
    if attrs.shard_bytes is None:
        return
    if not levels[0]["info"].sharded:
        ctx.add("shard_bytes.unsharded", "shard_bytes is for sharded stores only", key)
        return
    if not _well_formed(attrs.shard_bytes):
        ctx.add(
            "shard_bytes.malformed",
            "shard_bytes must map level paths to {'<t_shard>/<row>/<col>': byte length}",
            key,
        )
        return
    for lvl in sorted(set(attrs.shard_bytes) - set(ctx.level_paths)):
        ctx.add(
            "shard_bytes.exists",
            f"shard_bytes lists level {lvl!r}, which is not a level of the store",
            key,
        )
    listing = ctx.listing()
    for lv in levels:
        listed = attrs.shard_bytes.get(lv["path"], {})
        for sk in _shards_to_check(ctx, lv, listed, key):
            _check_shard(ctx, attrs, lv, sk, listed, listing)
            ctx.count("shards")
        extra = [sk for sk in listed if not _in_grid(ctx, sk, lv)]
        for sk in sorted(extra):
            ctx.add("shard_bytes.exists", f"lists {sk}, outside the shard grid", key)


def _shards_to_check(
    ctx: Context, lv: dict[str, Any], listed: Mapping[str, Any], key: str
) -> list[str]:
    """Every shard of the level's grid, or, for a grid too large to enumerate (or a shape gone
    wrong), the listed ones."""
    if _n_shards(ctx, lv) <= _MAX_SHARDS:
        return _expected_shards(ctx, lv)
    ctx.add(
        "shard_bytes.unchecked",
        f"level {lv['path']}: {_n_shards(ctx, lv)} shards; only listed ones checked",
        key,
    )
    return sorted(sk for sk in listed if _in_grid(ctx, sk, lv))


def _check_shard(
    ctx: Context,
    attrs: RootAttrs,
    lv: dict[str, Any],
    sk: str,
    listed: Mapping[str, Any],
    listing: Mapping[str, int] | None,
) -> None:
    """Shard ``sk`` of level ``lv``: listed exactly when it exists, with its length."""
    ts, row, col = (int(p) for p in sk.split("/"))
    obj = chunk_key(f"{lv['path']}/{attrs.variable}", ts, row, col, has_band=True)
    size = listing.get(obj) if listing is not None else ctx.store.size(obj)
    if sk not in listed:
        if size is not None:
            ctx.add("shard_bytes.missing", f"shard {sk} exists but is not listed", obj)
    elif size is None:
        ctx.add("shard_bytes.exists", f"lists {sk} but the shard object does not exist", obj)
    elif size != listed[sk]:
        if _index_at(ctx, obj, listed[sk], lv["info"]):
            # an unfinished append rewrote the trailing shard keeping its old bytes, old index
            # included: the listed length still locates a valid index
            ctx.add(
                "append.in_progress",
                f"shard {sk} has {size} bytes; shard_bytes lists {listed[sk]}, which still locates a valid index: an unfinished append; re-run it",
                obj,
            )
        else:
            ctx.add(
                "shard_bytes.size", f"lists {listed[sk]} bytes for {sk}, the object has {size}", obj
            )


def _index_at(ctx: Context, key: str, length: int, info: ArrayInfo) -> bool:
    """True when the bytes ending at ``length`` are a shard index with a valid crc32c."""
    n = info.chunk_shape[0] // info.inner_chunk_shape[0]
    with_crc = any(c.get("name") == "crc32c" for c in info.index_codecs)
    nbytes = index_nbytes(n, with_crc)
    if not with_crc or length < nbytes:
        return False
    raw = ctx.store.get_range(key, length - nbytes, length)
    try:
        parse_index(raw or b"", n, with_crc=True, where=key)
    except ChronozarrError:  # a bad crc or length: no index there
        return False
    return True

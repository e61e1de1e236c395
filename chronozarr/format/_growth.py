"""What an append may change (spec 14, "What stays byte-identical"), on root documents.

:func:`append_differences` compares two root zarr.json documents and says what in the newer one
an append of the older could not have produced. Publishing uses it to refuse a re-encode over an
existing store (spec 9: a re-encode goes under a new prefix): the local store must be the
target's store grown by zero or more appends.

An append never changes: the block's variable, bands, nodata, CRS and variable names; the
multiscales; the existing times (it only adds times after them); the encoding, the anchor
interval, the existing anchors and delta references; the levels' paths, resolutions,
transforms, grids and spatial shapes; the arrays' data types, chunking, codecs, fill values and
dimension names (the time coordinate's chunk grid grows with the axis); the recorded lengths of
the shards it cannot touch (the trailing time shard may only grow).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chronozarr.format._documents import consolidated

__all__ = ["append_differences"]

#: chronozarr block keys an append keeps as they are (spec 14)
_BLOCK_INVARIANT_KEYS = (
    "spec_version",
    "variable",
    "bands",
    "band_names",
    "nodata",
    "crs",
    "volatility_path",
    "mask_variable",
    "coverage_variable",
)
#: array document keys an append keeps as they are (spec 14)
_ARRAY_INVARIANT_KEYS = (
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "codecs",
    "fill_value",
    "dimension_names",
)


def append_differences(old_root: Mapping[str, Any], new_root: Mapping[str, Any]) -> list[str]:
    """What in ``new_root`` an append of ``old_root`` could not have produced; empty when
    ``new_root`` is ``old_root`` grown by zero or more appends. Both are root documents."""
    old_attrs = old_root.get("attributes") or {}
    new_attrs = new_root.get("attributes") or {}
    old = old_attrs.get("chronozarr")
    new = new_attrs.get("chronozarr")
    if not isinstance(old, Mapping):
        return ["the target's root zarr.json is not a chronozarr store"]
    if not isinstance(new, Mapping):
        return ["the local root zarr.json is not a chronozarr store"]
    diffs: list[str] = []
    for key in _BLOCK_INVARIANT_KEYS:
        if old.get(key) != new.get(key):
            diffs.append(f"chronozarr.{key}: target {old.get(key)!r}, local {new.get(key)!r}")
    if old_attrs.get("multiscales") != new_attrs.get("multiscales"):
        diffs.append("multiscales differ")
    diffs += _time_differences(old, new)
    diffs += _temporal_differences(old.get("temporal") or {}, new.get("temporal") or {})
    diffs += _level_differences(list(old.get("levels") or []), list(new.get("levels") or []))
    old_cons, new_cons = consolidated(old_root), consolidated(new_root)
    diffs += _node_differences(old_cons, new_cons)
    diffs += _shard_byte_differences(old, new, old_cons)
    return diffs


def _time_differences(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """An append only adds times after the existing ones (spec 14)."""
    old_times, new_times = list(old.get("times") or []), list(new.get("times") or [])
    if len(new_times) < len(old_times):
        return [
            f"the target has {len(old_times)} timesteps, the local store {len(new_times)}:"
            " publishing would take timesteps away"
        ]
    if new_times[: len(old_times)] != old_times:
        i = next(i for i, (a, b) in enumerate(zip(old_times, new_times, strict=False)) if a != b)
        return [f"times[{i}]: target {old_times[i]}, local {new_times[i]}"]
    return []


def _temporal_differences(ot: Mapping[str, Any], nt: Mapping[str, Any]) -> list[str]:
    """Encoding, anchor interval, anchors and delta references stay (spec 4, 14)."""
    diffs = [
        f"temporal.{key}: target {ot.get(key)!r}, local {nt.get(key)!r}"
        for key in ("encoding", "anchor_interval")
        if ot.get(key) != nt.get(key)
    ]
    missing = sorted(set(ot.get("anchor_indices") or []) - set(nt.get("anchor_indices") or []))
    if missing:
        diffs.append(f"temporal.anchor_indices: the target's anchors {missing} are not anchors")
    old_refs, new_refs = ot.get("delta_reference") or {}, nt.get("delta_reference") or {}
    changed = sorted((k for k, v in old_refs.items() if new_refs.get(k) != v), key=int)
    if changed:
        diffs.append(f"temporal.delta_reference changes the reference of timesteps {changed}")
    return diffs


def _level_differences(old_levels: list[Any], new_levels: list[Any]) -> list[str]:
    """Levels keep their geometry; only the time length of their shape grows (spec 3.7)."""
    diffs: list[str] = []
    if len(old_levels) != len(new_levels):
        diffs.append(f"levels: target {len(old_levels)}, local {len(new_levels)}")
    for a, b in zip(old_levels, new_levels, strict=False):
        for key in ("path", "resolution", "transform", "grid"):
            if a.get(key) != b.get(key):
                diffs.append(f"levels[{a.get('path')}].{key}: {a.get(key)!r} vs {b.get(key)!r}")
        sa, sb = list(a.get("shape") or []), list(b.get("shape") or [])
        if sa[1:] != sb[1:]:
            diffs.append(f"levels[{a.get('path')}].shape: {sa} vs {sb}")
    return diffs


def _node_differences(old_cons: Mapping[str, Any], new_cons: Mapping[str, Any]) -> list[str]:
    """Every node of the old store is in the new one, with the same array layout or group
    attributes; arrays along time grow along time only."""
    diffs: list[str] = []
    for path, doc in old_cons.items():
        other = new_cons.get(path)
        if other is None:
            if new_cons:
                diffs.append(f"{path}: in the target, not in the local store")
            continue
        if doc.get("node_type") == "array":
            # the 1-d time coordinate is one chunk of the whole axis: its chunk grid grows
            time_coordinate = list(doc.get("dimension_names") or []) == ["time"]
            for key in _ARRAY_INVARIANT_KEYS:
                if key == "chunk_grid" and time_coordinate:
                    continue
                if doc.get(key) != other.get(key):
                    diffs.append(f"{path}/zarr.json: {key} differs")
            sa, sb = list(doc.get("shape") or []), list(other.get("shape") or [])
            along_time = (doc.get("dimension_names") or [None])[0] == "time"
            if (sa[1:] if along_time else sa) != (sb[1:] if along_time else sb):
                diffs.append(f"{path}/zarr.json: shape {sa} vs {sb}")
        elif (doc.get("attributes") or {}) != (other.get("attributes") or {}):
            diffs.append(f"{path}/zarr.json: group attributes differ")
    return diffs


def _shard_byte_differences(
    old: Mapping[str, Any], new: Mapping[str, Any], old_cons: Mapping[str, Any]
) -> list[str]:
    """Recorded shard lengths stay, except the trailing time shard's, which may grow (7.3)."""
    old_sb, new_sb = old.get("shard_bytes") or {}, new.get("shard_bytes") or {}
    diffs: list[str] = []
    n_old = len(list(old.get("times") or []))
    for level, shards in old_sb.items():
        st = _shard_time(old_cons, level, old.get("variable", "data"))
        last = (n_old - 1) // st if st else None
        for sk, length in shards.items():
            grown = new_sb.get(level, {}).get(sk)
            ts = int(sk.split("/", 1)[0])
            if ts == last:
                if grown is None or grown < length:
                    diffs.append(f"shard_bytes[{level}][{sk}]: {length} -> {grown}")
            elif grown != length:
                diffs.append(f"shard_bytes[{level}][{sk}]: {length} -> {grown}")
    return diffs


def _shard_time(cons: Mapping[str, Any], level: str, variable: str) -> int | None:
    doc = cons.get(f"{level}/{variable}") or {}
    try:
        return int(doc["chunk_grid"]["configuration"]["chunk_shape"][0])
    except (KeyError, TypeError, IndexError, ValueError):  # unsharded or absent: no shard time
        return None

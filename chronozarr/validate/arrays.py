"""Array documents (spec 2, 2.2, 7.2, 8): usable Zarr v3 metadata, a supported data type, codecs
and shard index, the default chunk key encoding and dimension names on every array."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chronozarr.errors import ChronozarrError, CorruptStoreError
from chronozarr.format import ArrayInfo
from chronozarr.validate.context import Context, is_count

__all__ = ["check_array", "compressors"]

#: the rule of an unsupported array field (the error's ``field``); data_type depends on the array
_UNSUPPORTED_RULE = {"chunk_grid": "array.chunk_grid", "shard_index": "array.shard_index"}


def compressors(codecs: Any) -> list[tuple[Any, Any]]:
    """The compressors of a chunk chain, without the dtype-dependent blosc typesize (spec 8:
    the same chain applies to data, mask and coverage, whose item sizes differ)."""
    out: list[tuple[Any, Any]] = []
    for c in list(codecs)[1:]:
        if not isinstance(c, Mapping):
            out.append((repr(c), []))
            continue
        raw = c.get("configuration") or {}
        conf = dict(raw) if isinstance(raw, Mapping) else {"configuration": repr(raw)}
        if c.get("name") == "blosc":
            conf.pop("typesize", None)
        out.append((c.get("name"), sorted(conf.items(), key=lambda kv: str(kv[0]))))
    return out


def _counts(value: Any, n: int) -> bool:
    """A list of ``n`` positive integers (a chunk shape of an ``n``-d array)."""
    return isinstance(value, list) and len(value) == n and all(is_count(v) and v > 0 for v in value)


def _codec_list(value: Any) -> bool:
    """A list of codec objects, each with an object (or absent) configuration."""
    return isinstance(value, list) and all(
        isinstance(c, Mapping) and isinstance(c.get("configuration", {}), Mapping) for c in value
    )


def _malformed_codecs(codecs: list[Any], ndim: int) -> str | None:
    """What is malformed in a sharding codec of ``codecs`` (types only), or None."""
    for c in codecs:
        if c.get("name") != "sharding_indexed":
            continue
        sc = c.get("configuration") or {}
        inner = sc.get("chunk_shape")
        if not _counts(inner, ndim):
            return f"sharding chunk_shape {inner!r}"
        for name in ("codecs", "index_codecs"):
            if not _codec_list(sc.get(name, [])):
                return f"sharding {name} {sc.get(name, [])!r}"
    return None


def _malformed_names(doc: Mapping[str, Any]) -> str | None:
    """What is malformed in the key encoding, attributes and dimension names, or None."""
    for name in ("chunk_key_encoding", "attributes"):
        if name in doc and not isinstance(doc[name], Mapping):
            return f"{name} {doc[name]!r}"
    cke = doc.get("chunk_key_encoding") or {}
    if cke.get("configuration") is not None and not isinstance(cke["configuration"], Mapping):
        return f"chunk_key_encoding {cke!r}"
    value = doc.get("dimension_names")
    if value is not None and not (
        isinstance(value, list) and all(isinstance(v, str | type(None)) for v in value)
    ):
        return f"dimension_names {value!r}"
    ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
    if ad is not None and not (isinstance(ad, list) and all(isinstance(v, str) for v in ad)):
        return f"attributes._ARRAY_DIMENSIONS {ad!r}"
    return None


def _malformed_array(doc: Any) -> str | None:
    """What makes ``doc`` unusable as Zarr v3 array metadata (types only), or None."""
    if not isinstance(doc, Mapping):
        return "not an object"
    shape = doc.get("shape")
    if not isinstance(shape, list) or not all(is_count(v) for v in shape):
        return f"shape {shape!r}"
    grid = doc.get("chunk_grid")
    conf = grid.get("configuration") if isinstance(grid, Mapping) else None
    if not _counts(conf.get("chunk_shape") if isinstance(conf, Mapping) else None, len(shape)):
        return f"chunk_grid {grid!r}"
    if not _codec_list(doc.get("codecs")):
        return f"codecs {doc.get('codecs')!r}"
    return _malformed_codecs(doc["codecs"], len(shape)) or _malformed_names(doc)


def _unsupported_rule(field: str | None, kind: str) -> str:
    """The rule of an unsupported field of a ``kind`` array (data, mask, coverage, volatility):
    its data type (2.3, 2.4, 2.5, 5), chunk grid (2.1), shard index (7.2), else codecs (8)."""
    if field == "data_type":
        return f"{kind}.data_type"
    return _UNSUPPORTED_RULE.get(field or "", "array.codec")


def check_array(
    ctx: Context, path: str, allowed: tuple[str, ...] | None = None, kind: str = "data"
) -> ArrayInfo | None:
    """Parse array ``path`` (of ``kind`` data, mask, coverage or volatility); None when unusable."""
    doc = ctx.doc(path)
    key = f"{path}/zarr.json"
    if doc is None:
        ctx.add("array.missing", f"array {path} is missing", key)
        return None
    malformed = _malformed_array(doc)
    if malformed:
        ctx.add("array.malformed", f"not a valid Zarr v3 array document: {malformed}", key)
        return None
    cke = doc.get("chunk_key_encoding") or {}
    if (
        cke.get("name") != "default"
        or (cke.get("configuration") or {}).get("separator", "/") != "/"
    ):
        ctx.add(
            "array.key_encoding",
            f"chunk keys must be the default encoding with '/' (c/t/.../c), got {cke!r}",
            key,
        )
        return None  # the reader refuses other key encodings (decision 0013): nothing more to check
    try:
        info = ArrayInfo.from_json(doc, path, **({"allowed_dtypes": allowed} if allowed else {}))
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:  # untyped slip
        ctx.add(
            "array.malformed",
            f"not a valid Zarr v3 array document: {type(exc).__name__}: {exc}",
            key,
        )
        return None
    except CorruptStoreError as exc:  # malformed beyond the type checks above
        ctx.add("array.malformed", f"not a valid Zarr v3 array document: {exc}", key)
        return None
    except ChronozarrError as exc:  # unsupported (typed): the field it names picks the rule
        ctx.add(_unsupported_rule(exc.field, kind), str(exc), key)
        return None
    if info.sharded:
        _check_shard_index(ctx, info, key)
    _check_dimension_names(ctx, doc, key)
    ctx.count("arrays")
    return info


def _check_shard_index(ctx: Context, info: ArrayInfo, key: str) -> None:
    """The shard index: bytes then crc32c, little-endian (7.2), at the end (SHOULD)."""
    names = [c.get("name") for c in info.index_codecs]
    endian = ((info.index_codecs[0].get("configuration") or {}) if info.index_codecs else {}).get(
        "endian", "little"
    )
    if names != ["bytes", "crc32c"] or endian != "little":
        ctx.add(
            "shard.index",
            f"the shard index is (offset, nbytes) uint64 little-endian pairs plus a crc32c: index_codecs must be bytes then crc32c, got {names}",
            key,
        )
    if info.index_location != "end":
        ctx.add(
            "shard.index_location",
            f"index_location {info.index_location!r}: writers SHOULD use 'end' (zarrita ignores index_location)",
            key,
        )


def _check_dimension_names(ctx: Context, doc: Mapping[str, Any], key: str) -> None:
    """dimension_names and the _ARRAY_DIMENSIONS attribute, present and equal (spec 2)."""
    dims = doc.get("dimension_names")
    ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
    if dims is None:
        ctx.add("array.dimension_names", "dimension_names is missing", key)
    if ad is None:
        ctx.add("array.array_dimensions", "attribute _ARRAY_DIMENSIONS is missing", key)
    elif dims is not None and list(ad) != list(dims):
        ctx.add(
            "array.array_dimensions",
            f"_ARRAY_DIMENSIONS {ad} differs from dimension_names {dims}",
            key,
        )

"""Store mutations of the fuzz harness: one hostile change to a copy of a base store.

``mutate(base, case_dir, rng)`` copies ``base`` to ``case_dir/store``, puts a decoy next to it
(``case_dir/secret``: a copy of the store's level 0 and root, the data a reader that followed
``..`` would silently decode) and applies one mutation drawn from ``rng``. It returns a short
description ("kind: detail") naming what changed, used to group outcomes.

Mutations: JSON structure and types anywhere in the root document (and so in its consolidated
copies), targeted names with path tricks, schemes and rich markup, absurd sizes, deep nesting,
huge numbers, codec configurations, key encodings; chunk and shard bytes (truncation, flipped
bytes, index entries rewritten with a valid checksum, compression bombs, symlinks out).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from pathlib import Path
from typing import Any

import crc32c
import numcodecs
import numpy as np

from tests.fuzz.bombs import blosc_claims, gzip_bomb, zstd_bomb

__all__ = ["HOSTILE_NAMES", "mutate"]

#: Strings a store may carry where a name or text is expected (spec 3.2 names, free text).
HOSTILE_NAMES = [
    "..",
    "../secret",
    "../secret/0",
    "0/../../secret/0",
    "/etc",
    "/tmp",
    "file:///etc",
    "http://127.0.0.1:9/x",
    "s3://bucket/x",
    "C:\\secret",
    "%2e%2e",
    ".",
    "",
    "a\x00b",
    "[/]",
    "[bold red]zq9boom[/]",
    "[link=http://x]zq9link",
    "\x1b[31mred",
    "x" * 5000,
    "0/",
]

HOSTILE_VALUES: list[Any] = [
    None,
    True,
    -1,
    0,
    1.5,
    float("inf"),
    10**12,
    2**63,
    2**64 + 1,
    "3",
    "[/]",
    [],
    {},
    [1, 2, 3],
    {"a": 1},
    "../secret",
]

SIZES: list[Any] = [0, -1, 1, 3, 10**12, 2**40, 2**63 - 1, 2**64, 1.5, "40", True, None]

_NAME_FIELDS = [
    ("chronozarr", "variable"),
    ("chronozarr", "volatility_path"),
    ("chronozarr", "mask_variable"),
    ("chronozarr", "coverage_variable"),
    ("chronozarr", "levels", 0, "path"),
    ("chronozarr", "levels", 1, "path"),
    ("multiscales", 0, "datasets", 0, "path"),
    ("chronozarr", "crs"),
    ("chronozarr", "bands", 0, "name"),
    ("chronozarr", "spec_version"),
    ("chronozarr", "times", 0),
    ("chronozarr", "provenance"),
]

_SIZE_FIELDS = [
    ("chronozarr", "levels", 0, "shape", 0),
    ("chronozarr", "levels", 0, "shape", 2),
    ("chronozarr", "levels", 0, "shape", 3),
    ("chronozarr", "levels", 0, "grid", 0),
    ("chronozarr", "levels", 0, "grid", 1),
    ("chronozarr", "levels", 1, "shape", 2),
    ("chronozarr", "temporal", "anchor_interval"),
    ("chronozarr", "temporal", "anchor_indices", 0),
    ("chronozarr", "nodata"),
]

_ARRAY_FIELDS = [
    ("shape", 0),
    ("shape", 2),
    ("shape", 3),
    ("chunk_grid", "configuration", "chunk_shape", 0),
    ("chunk_grid", "configuration", "chunk_shape", 2),
    ("chunk_grid", "configuration", "chunk_shape", 3),
    ("codecs", 0, "configuration", "chunk_shape", 2),
    ("codecs", 0, "configuration", "chunk_shape", 0),
    ("codecs", 0, "configuration"),
    ("codecs", 1, "configuration", "level"),
    ("codecs", 1, "configuration", "clevel"),
    ("codecs", 1, "configuration", "shuffle"),
    ("codecs", 1, "configuration", "typesize"),
    ("codecs", 1, "configuration", "blocksize"),
    ("codecs", 0, "configuration", "codecs", 1, "configuration", "level"),
    ("codecs", 0, "configuration", "index_location"),
    ("chunk_key_encoding", "configuration", "separator"),
    ("chunk_key_encoding", "name"),
    ("chunk_key_encoding",),
    ("fill_value",),
    ("data_type",),
    ("dimension_names",),
    ("codecs",),
]


def _copy_case(base: Path, case_dir: Path) -> Path:
    store = case_dir / "store"
    shutil.copytree(base, store)
    secret = case_dir / "secret"
    shutil.copytree(base / "0", secret / "0")
    shutil.copy(base / "zarr.json", secret / "zarr.json")
    (secret / "SECRET").write_text("a file outside the store\n")
    return store


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        doc = doc[p]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> bool:
    try:
        parent = _get(doc, path[:-1])
        if isinstance(parent, dict) or (
            isinstance(parent, list) and -len(parent) <= path[-1] < len(parent)
        ):
            parent[path[-1]] = value
            return True
    except (KeyError, IndexError, TypeError):
        pass
    return False


def _all_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _all_paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _all_paths(v, (*prefix, i))
    return out


def _dump(doc: Any) -> str:
    return json.dumps(doc, indent=2, allow_nan=True)


class _Root:
    """The root zarr.json and the array documents it consolidates (edited together)."""

    def __init__(self, store: Path):
        self.store = store
        self.doc = json.loads((store / "zarr.json").read_text())

    def attrs(self) -> dict[str, Any]:
        return self.doc["attributes"]

    def arrays(self) -> list[str]:
        meta = self.doc.get("consolidated_metadata", {}).get("metadata", {})
        return sorted(k for k, v in meta.items() if v.get("node_type") == "array")

    def edit_array(self, key: str, path: tuple[Any, ...], value: Any, where: str) -> bool:
        changed = False
        if where in ("both", "consolidated"):
            changed |= _set(self.doc["consolidated_metadata"]["metadata"][key], path, value)
        if where in ("both", "file"):
            f = self.store / key / "zarr.json"
            doc = json.loads(f.read_text())
            if _set(doc, path, value):
                f.write_text(_dump(doc))
                changed = True
        return changed

    def save(self, text: str | None = None) -> None:
        (self.store / "zarr.json").write_text(text if text is not None else _dump(self.doc))


def _chunk_files(store: Path) -> list[Path]:
    return sorted(
        p for p in store.rglob("*") if p.is_file() and "c" in p.relative_to(store).parts[1:-1]
    )


def _data_chunks(store: Path) -> list[Path]:
    return [p for p in _chunk_files(store) if p.relative_to(store).parts[1:2] == ("data",)]


def _index_of(blob: bytes, n: int) -> np.ndarray:
    return np.frombuffer(blob[-(16 * n + 4) : -4], dtype="<u8").reshape(n, 2).copy()


def _with_index(blob: bytes, n: int, index: np.ndarray) -> bytes:
    raw = index.astype("<u8").tobytes()
    return blob[: -(16 * n + 4)] + raw + crc32c.crc32c(raw).to_bytes(4, "little")


def _bomb_for(codec: str, expected: int, rng: random.Random) -> tuple[str, bytes]:
    size = rng.choice([64 << 20, 1 << 30, 3 << 30])
    if codec == "zstd":
        declare: bool | int = rng.choice([True, False, expected])
        return f"zstd {size >> 20} MiB declare={declare}", zstd_bomb(size, declare_size=declare)
    if codec == "gzip":
        size = min(size, 1 << 30)
        return f"gzip {size >> 20} MiB", gzip_bomb(size)
    valid = bytes(numcodecs.Blosc(cname="zstd").encode(np.zeros(expected // 2, "<u2")))
    claim = rng.choice([1 << 30, 2**31 - 1, 2**32 - 1, expected * 2])
    return f"blosc claims {claim}", blosc_claims(valid, claim)


def _codec_of(doc: dict[str, Any]) -> tuple[str, int, bool, int]:
    """(compressor name, expected decoded bytes of an inner chunk, sharded, inner per shard)."""
    codecs = doc["codecs"]
    sharded = codecs[0]["name"] == "sharding_indexed"
    inner = (
        codecs[0]["configuration"]["chunk_shape"]
        if sharded
        else doc["chunk_grid"]["configuration"]["chunk_shape"]
    )
    chain = codecs[0]["configuration"]["codecs"] if sharded else codecs
    itemsize = np.dtype(doc["data_type"]).itemsize
    per = doc["chunk_grid"]["configuration"]["chunk_shape"][0] // inner[0] if sharded else 1
    return chain[-1]["name"], int(np.prod(inner)) * itemsize, sharded, per


def _deep(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a":' * depth + "1" + "}" * depth)


def _hourly_times(n: int) -> list[str]:
    """``n`` strictly increasing valid times (spec 3.9 form), an hour apart from 2000-01-01."""
    start = np.datetime64("2000-01-01T00:00:00", "s")
    stamps = start + np.arange(n, dtype="int64") * np.timedelta64(3600, "s")
    return [f"{t}Z" for t in stamps.astype(str)]


def mutate(base: Path, case_dir: Path, rng: random.Random) -> str:
    """Copy ``base`` into ``case_dir`` and apply one mutation; return its description."""
    store = _copy_case(base, case_dir)
    root = _Root(store)
    attrs = root.attrs()
    kind = rng.choice(
        [
            "name",
            "name",
            "size",
            "array",
            "array",
            "array-name",
            "json-any",
            "json-delete",
            "deep",
            "number",
            "truncate",
            "flip",
            "index",
            "bomb",
            "bomb",
            "symlink",
            "v2-keys",
            "times",
        ]
    )
    if kind == "name":
        path = rng.choice(_NAME_FIELDS)
        value = rng.choice(HOSTILE_NAMES)
        _set(attrs, path, value)
        root.save()
        return f"name: {'.'.join(map(str, path))}={value[:40]!r}"
    if kind == "size":
        path = rng.choice(_SIZE_FIELDS)
        value = rng.choice(SIZES)
        _set(attrs, path, value)
        root.save()
        return f"size: {'.'.join(map(str, path))}={value!r}"
    if kind in ("array", "array-name"):
        key = rng.choice(root.arrays())
        where = rng.choice(["both", "both", "consolidated", "file"])
        path = rng.choice(_ARRAY_FIELDS)
        pool = HOSTILE_NAMES if kind == "array-name" else HOSTILE_VALUES + SIZES
        value = rng.choice(pool)
        if path == ("chunk_key_encoding", "name"):
            value = rng.choice(["v2", "default", "..", 5])
        root.edit_array(key, path, value, where)
        root.save()
        return f"array: {key} {'.'.join(map(str, path))}={str(value)[:40]!r} ({where})"
    if kind == "json-any":
        paths = [p for p in _all_paths(root.doc) if p]
        path = rng.choice(paths)
        value = rng.choice(HOSTILE_VALUES)
        _set(root.doc, path, value)
        root.save()
        return f"json-any: {'.'.join(map(str, path[-3:]))}={str(value)[:40]!r}"
    if kind == "json-delete":
        paths = [p for p in _all_paths(root.doc) if p and isinstance(_get(root.doc, p[:-1]), dict)]
        path = rng.choice(paths)
        del _get(root.doc, path[:-1])[path[-1]]
        root.save()
        return f"json-delete: {'.'.join(map(str, path[-3:]))}"
    if kind == "deep":
        depth = rng.choice([1000, 5000, 100_000])
        shape = rng.choice(["list", "dict"])
        target = rng.choice(["root", "provenance", "array"])
        if target == "array":
            key = rng.choice(root.arrays())
            f = store / key / "zarr.json"
            doc = json.loads(f.read_text())
            doc["attributes"] = "@DEEP@"
            f.write_text(_dump(doc).replace('"@DEEP@"', _deep(depth, shape)))
            meta = root.doc["consolidated_metadata"]["metadata"]
            meta[key]["attributes"] = "@DEEP@"
        elif target == "provenance":
            attrs["chronozarr"]["provenance"] = "@DEEP@"
        else:
            attrs["chronozarr"] = "@DEEP@"
        root.save(_dump(root.doc).replace('"@DEEP@"', _deep(depth, shape)))
        return f"deep: {target} {shape} x {depth}"
    if kind == "number":
        path = rng.choice([*_SIZE_FIELDS, ("chronozarr", "bands", 0, "scale")])
        literal = rng.choice(["1" * 5000, "1e999", "-1e999", "NaN", "Infinity", "1" * 4000])
        _set(attrs, path, "@NUM@")
        root.save(_dump(root.doc).replace('"@NUM@"', literal))
        return f"number: {'.'.join(map(str, path))}={literal[:12]}"
    if kind == "times":
        value = rng.choice(
            [[], ["x"] * 3, ["0000-01-01T00:00:00Z"] * 4, list(range(4)), None, "null", "many"]
        )
        if value == "null":  # one entry null (the xarray backend's ValueError on main)
            value = [*attrs["chronozarr"]["times"][:-1], None]
        elif value == "many":  # a root listing far more times than the arrays hold
            value = _hourly_times(rng.choice([10_000, 100_000]))
        attrs["chronozarr"]["times"] = value
        root.save()
        return f"times: {str(value)[:40]}" + (
            f" ({len(value):,})" if value and len(value) > 9 else ""
        )
    if kind == "v2-keys":
        # rename every data chunk to the v2 key form and say so in the metadata (Zarr v3 9.2)
        for key in root.arrays():
            root.edit_array(key, ("chunk_key_encoding",), {"name": "v2"}, "both")
            chunk_root = store / key / "c"  # the v3 default keys: c/<i>/<j>/...
            files = sorted(p for p in chunk_root.rglob("*") if p.is_file())
            for f in files:
                rel = f.relative_to(chunk_root).as_posix().replace("/", ".")
                f.rename(store / key / rel)
        for d in sorted(store.rglob("c"), reverse=True):
            if d.is_dir() and not any(p.is_file() for p in d.rglob("*")):
                shutil.rmtree(d)
        root.save()
        return "v2-keys: every array"
    # byte-level mutations of a data chunk / shard
    chunks = _data_chunks(store)
    target = rng.choice(chunks)
    rel = target.relative_to(store)
    array_key = "/".join(rel.parts[:2])
    doc = json.loads((store / array_key / "zarr.json").read_text())
    codec, expected, sharded, per = _codec_of(doc)
    blob = target.read_bytes()
    if kind == "truncate":
        n = rng.randrange(0, len(blob))
        target.write_bytes(blob[:n])
        return f"truncate: {rel} to {n} of {len(blob)}"
    if kind == "flip":
        data = bytearray(blob)
        for _ in range(rng.choice([1, 4, 32])):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        target.write_bytes(bytes(data))
        return f"flip: {rel}"
    if kind == "index" and sharded:
        index = _index_of(blob, per)
        i = rng.randrange(per)
        value = rng.choice(
            [
                (2**63, 16),
                (0, 2**63),
                (len(blob) - 10, 1000),
                (len(blob), 0),
                (2**64 - 2, 4),
                (0, len(blob) * 3),
                (2**64 - 1, 0),
                (int(index[0][0]), int(index[0][1])),
            ]
        )
        index[i] = value
        target.write_bytes(_with_index(blob, per, index))
        return f"index: {rel}[{i}]={value}"
    if kind == "symlink":
        outside = case_dir / "secret" / "0" / rel.relative_to(rel.parts[0])
        if not outside.exists():
            outside = case_dir / "secret" / "SECRET"
        target.unlink()
        os.symlink(os.path.relpath(outside, target.parent), target)
        return f"symlink: {rel} -> outside"
    # bomb (also the fallback of "index" on an unsharded array)
    label, bomb = _bomb_for(codec, expected, rng)
    if sharded:
        index = _index_of(blob, per)
        i = rng.randrange(per)
        payload = blob[: -(16 * per + 4)]
        index[i] = (len(payload), len(bomb))
        target.write_bytes(_with_index(payload + bomb + blob[-(16 * per + 4) :], per, index))
    else:
        target.write_bytes(bomb)
    return f"bomb: {rel} {label}"

"""Publishing a store (spec 9 and 14): copy a local store to object storage or to a directory a
web server serves, in an order that never lets a reader see a root describing missing objects.

The work has two halves. :func:`plan_publish` reads the local store and the target and decides
what to upload, or refuses; nothing is written. :func:`execute` uploads, in four phases separated
by barriers (spec 9, 14):

1. every chunk and shard object (band/x/y coordinate chunks included),
2. ``time/c/0`` of every level and ``volatility/c/0/0``,
3. every ``zarr.json`` below the root,
4. the root ``zarr.json``.

A phase starts only when every upload of the previous one has succeeded, so an interrupted
publish leaves no root on a fresh target and the old root on an existing one (the old root still
decodes every timestep it lists: spec 14, "Readers").

Object classes and cache lifetimes (spec 14, "Publishing"). An object *changes in place* when an
append may rewrite it under the same key: every zarr.json, every 1-d time coordinate chunk
(``time/c/0``), ``volatility/c/0/0``, and for every sharded array the time shard holding the last
timestep (the one an append grows). Those get :data:`SHORT_CACHE_CONTROL`; every other chunk and
shard object is immutable and gets :data:`LONG_CACHE_CONTROL`. Nothing gets a Content-Encoding.

Change detection (re-publish after an append). The target is listed once (size and ETag per
object). A local object is unchanged when the target holds an object of the same size and the
same MD5: objects up to 64 MiB go up in one PUT, for which S3 (and R2, GCS, MinIO, moto) return
the MD5 of the content as the ETag; every object also carries its MD5 as user metadata
``chronozarr-md5`` (``x-amz-meta-chronozarr-md5``), read with one HEAD when the ETag is not a
plain MD5 (multipart uploads, SSE-KMS). A directory target compares size and MD5 of the file.

Refusal (spec 9: a re-encode goes under a new prefix). When the target already holds a root, the
local store must be that store grown by appends: the same chronozarr block in everything an
append never changes (variable, bands, nodata, CRS, encoding, anchor interval, the existing
times, anchors and delta references, levels' paths, transforms, grids and spatial shapes,
multiscales, the arrays' codecs and chunking, the lengths of shards an append cannot touch), and
byte-identical chunk objects for every existing timestep (the trailing shard of the old store may
only grow: its old bytes must be a prefix of the new one). Anything else raises
:class:`PublishRefusedError` before the first byte is written.
"""

from __future__ import annotations

import abc
import hashlib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chronozarr
from chronozarr.errors import ChronozarrError
from chronozarr.storage import ObjectStore, RemoteStoreError
from cz.errors import CzError

__all__ = [
    "LONG_CACHE_CONTROL",
    "MD5_METADATA_KEY",
    "SHORT_CACHE_CONTROL",
    "DirectoryTarget",
    "Phase",
    "PublishError",
    "PublishPlan",
    "PublishRefusedError",
    "PublishResult",
    "S3Target",
    "StoreObject",
    "Target",
    "TargetObject",
    "classify_store",
    "execute",
    "open_target",
    "plan_publish",
    "publish",
    "reencode_differences",
]

log = logging.getLogger("cz.publish")

#: Objects that an append rewrites in place: a reader or CDN must see the new version soon.
SHORT_CACHE_CONTROL = "public, max-age=60"
#: Every other chunk and shard object: its bytes never change under its key (spec 9, 14).
LONG_CACHE_CONTROL = "public, max-age=31536000, immutable"
#: User metadata holding the MD5 (hex) of an uploaded object (x-amz-meta-chronozarr-md5 on S3).
MD5_METADATA_KEY = "chronozarr-md5"
#: Objects up to this size go up in one PUT (S3's ETag is then their MD5; S3 allows 5 GB).
MULTIPART_THRESHOLD = 64 << 20

_PLAIN_MD5 = re.compile(r"^[0-9a-f]{32}$")


class PublishError(CzError):
    """A publish failed part-way; the message says what was written and what was not."""


class PublishRefusedError(PublishError):
    """A publish was refused before anything was written (a re-encode over an existing store,
    an invalid local store, a target that overlaps the source, ...)."""


class Phase(IntEnum):
    """Upload phases, in order (spec 9, 14)."""

    CHUNKS = 1
    COORDINATES = 2
    METADATA = 3
    ROOT = 4

    @property
    def title(self) -> str:
        return {
            1: "chunks and shards",
            2: "time and volatility",
            3: "zarr.json below the root",
            4: "root zarr.json",
        }[int(self)]


@dataclass(frozen=True)
class StoreObject:
    """One object of the local store: its key, size, upload phase and cache class."""

    key: str
    size: int
    phase: Phase
    in_place: bool  # an append may rewrite it under the same key: short cache lifetime
    array: str | None = None

    @property
    def cache_control(self) -> str:
        return SHORT_CACHE_CONTROL if self.in_place else LONG_CACHE_CONTROL

    @property
    def content_type(self) -> str:
        if self.key.rsplit("/", 1)[-1] == "zarr.json":
            return "application/json"
        return "application/octet-stream"


@dataclass(frozen=True)
class TargetObject:
    """One object already at the target: size and (when the host gives one) ETag."""

    size: int
    etag: str | None = None


# --- the local store: objects and their classes ---------------------------------------------------


@dataclass(frozen=True)
class _Array:
    """Chunk-key geometry of one array, from its zarr.json (only what publishing needs)."""

    path: str
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    sharded: bool
    separator: str
    dimension_names: tuple[str, ...] | None

    @classmethod
    def from_doc(cls, path: str, doc: Mapping[str, Any]) -> _Array:
        try:
            shape = tuple(int(s) for s in doc["shape"])
            chunk_shape = tuple(int(s) for s in doc["chunk_grid"]["configuration"]["chunk_shape"])
        except (KeyError, TypeError, ValueError) as exc:
            raise PublishRefusedError(
                f"{path}/zarr.json: malformed array metadata ({exc!r})"
            ) from exc
        codecs = doc.get("codecs") or []
        cke = doc.get("chunk_key_encoding") or {"name": "default"}
        default_sep = "." if cke.get("name") == "v2" else "/"
        sep = (cke.get("configuration") or {}).get("separator", default_sep)
        dims = doc.get("dimension_names")
        return cls(
            path=path,
            shape=shape,
            chunk_shape=chunk_shape,
            sharded=bool(codecs) and codecs[0].get("name") == "sharding_indexed",
            separator=sep,
            dimension_names=None if dims is None else tuple(dims),
        )

    @property
    def along_time(self) -> bool:
        """The first axis is time (data, mask, coverage, and the time coordinate itself)."""
        return bool(self.dimension_names) and self.dimension_names[0] == "time"

    @property
    def is_time_coordinate(self) -> bool:
        return self.dimension_names == ("time",)

    def chunk_coords(self, key: str) -> tuple[int, ...] | None:
        """The chunk (or shard) grid coordinates of ``key``, None when it is no chunk of this array."""
        rest = key[len(self.path) :]
        if self.separator == "/":
            if not rest.startswith("/c/"):
                return None
            parts = rest[3:].split("/")
        else:
            if not rest.startswith("/c" + self.separator):
                return None
            parts = rest[3:].split(self.separator)
        if len(parts) != len(self.shape) or not all(p.isdigit() for p in parts):
            return None
        return tuple(int(p) for p in parts)

    def last_time_chunk(self, n_time: int | None = None) -> int:
        """Index along time of the chunk/shard holding the last timestep of ``n_time``."""
        n = self.shape[0] if n_time is None else n_time
        return max(n - 1, 0) // self.chunk_shape[0]


def _walk(root: Path) -> Iterator[tuple[str, int]]:
    """(key, size) of every regular file under ``root``, skipping in-flight temporary files."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            if name.startswith(".") and name.endswith(".tmp"):
                continue
            full = Path(dirpath) / name
            yield full.relative_to(root).as_posix(), full.stat().st_size


def _load_json(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise PublishRefusedError(f"{path}: cannot read JSON ({exc})") from exc


def _arrays(root: Path, keys: Iterable[str]) -> dict[str, _Array]:
    out: dict[str, _Array] = {}
    for key in keys:
        if key.endswith("/zarr.json"):
            doc = _load_json(root / key)
            if isinstance(doc, Mapping) and doc.get("node_type") == "array":
                path = key[: -len("/zarr.json")]
                out[path] = _Array.from_doc(path, doc)
    return out


def classify_store(source: str | os.PathLike[str]) -> tuple[list[StoreObject], list[str]]:
    """Every object of the local store at ``source`` with its phase and cache class, and the keys
    of files that are not part of the store (skipped: neither metadata nor a chunk of an array)."""
    root = Path(source)
    if not (root / "zarr.json").is_file():
        raise PublishRefusedError(f"no chronozarr store at {root}: zarr.json not found")
    listing = dict(_walk(root))
    arrays = _arrays(root, listing)
    root_doc = _load_json(root / "zarr.json")
    block = ((root_doc or {}).get("attributes") or {}).get("chronozarr") or {}
    volatility = block.get("volatility_path")
    by_length = sorted(arrays.values(), key=lambda a: -len(a.path))
    objects: list[StoreObject] = []
    skipped: list[str] = []
    for key, size in listing.items():
        if key == "zarr.json":
            objects.append(StoreObject(key, size, Phase.ROOT, True))
            continue
        if key.endswith("/zarr.json"):
            objects.append(StoreObject(key, size, Phase.METADATA, True))
            continue
        arr = next((a for a in by_length if key.startswith(a.path + "/")), None)
        coords = None if arr is None else arr.chunk_coords(key)
        if arr is None or coords is None:
            skipped.append(key)
            continue
        if arr.is_time_coordinate or (volatility and arr.path == volatility):
            objects.append(StoreObject(key, size, Phase.COORDINATES, True, arr.path))
        elif arr.sharded and arr.along_time:
            trailing = coords[0] == arr.last_time_chunk()
            objects.append(StoreObject(key, size, Phase.CHUNKS, trailing, arr.path))
        else:
            objects.append(StoreObject(key, size, Phase.CHUNKS, False, arr.path))
    objects.sort(key=lambda o: (o.phase, o.key))
    return objects, skipped


# --- targets ---------------------------------------------------------------------------------------


def file_md5(path: Path, limit: int | None = None) -> str:
    """MD5 (hex) of a file, or of its first ``limit`` bytes."""
    h = hashlib.md5(usedforsecurity=False)
    remaining = limit
    with open(path, "rb") as fh:
        while remaining is None or remaining > 0:
            block = fh.read(8 << 20 if remaining is None else min(8 << 20, remaining))
            if not block:
                break
            h.update(block)
            if remaining is not None:
                remaining -= len(block)
    return h.hexdigest()


class Target(abc.ABC):
    """Where a store is published. Subclasses: :class:`S3Target`, :class:`DirectoryTarget`."""

    url: str
    #: whether per-object Cache-Control is stored with the objects (object storage) or left to
    #: the web server's configuration (a directory: docs/hosting.md)
    sets_headers: bool = False

    @abc.abstractmethod
    def listing(self) -> dict[str, TargetObject]:
        """Every object already at the target (one listing)."""

    @abc.abstractmethod
    def read(self, key: str) -> bytes | None:
        """The bytes of an object at the target, None when absent."""

    @abc.abstractmethod
    def stored_md5(self, key: str, obj: TargetObject, expected: str) -> str | None:
        """The MD5 of the object at the target (``expected`` lets a matching ETag answer without
        a request); None when the host cannot tell."""

    @abc.abstractmethod
    def upload(self, obj: StoreObject, path: Path, md5: str) -> None:
        """Write one object (atomically: a reader sees the old object or the new one)."""

    def overlaps(self, source: Path) -> bool:
        return False


class S3Target(Target):
    """An ``s3://bucket/prefix`` on any S3-compatible host (AWS, R2, MinIO, moto), via obstore."""

    sets_headers = True

    def __init__(
        self,
        url: str,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        **options: Any,
    ):
        opts = dict(options)
        if endpoint:
            opts["endpoint"] = endpoint
        if region:
            opts["region"] = region
        client = {"timeout": "30m", **(opts.pop("client_options", None) or {})}
        self.store = ObjectStore(url, client_options=client, **opts)
        self.url = self.store.url

    def listing(self) -> dict[str, TargetObject]:
        return {o.key: TargetObject(o.size, o.etag) for o in self.store.list_objects("")}

    def read(self, key: str) -> bytes | None:
        return self.store.get(key)

    def stored_md5(self, key: str, obj: TargetObject, expected: str) -> str | None:
        etag = (obj.etag or "").strip('"').lower()
        plain = etag if _PLAIN_MD5.match(etag) else None
        if plain == expected:
            return plain
        attrs = self.store.attributes(key) or {}
        meta = attrs.get(MD5_METADATA_KEY)
        if meta:
            return meta.lower()
        return plain

    def upload(self, obj: StoreObject, path: Path, md5: str) -> None:
        attributes = {
            "Cache-Control": obj.cache_control,
            "Content-Type": obj.content_type,
            MD5_METADATA_KEY: md5,
        }
        self.store.put_file(obj.key, path, attributes, multipart_threshold=MULTIPART_THRESHOLD)


class DirectoryTarget(Target):
    """A local directory that a web server serves (cache headers are the server's: hosting.md)."""

    def __init__(self, path: str | os.PathLike[str]):
        self.root = Path(path).resolve()
        self.url = str(self.root)

    def overlaps(self, source: Path) -> bool:
        src = source.resolve()
        return src == self.root or src in self.root.parents or self.root in src.parents

    def listing(self) -> dict[str, TargetObject]:
        if not self.root.is_dir():
            return {}
        return {k: TargetObject(s) for k, s in _walk(self.root)}

    def read(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None

    def stored_md5(self, key: str, obj: TargetObject, expected: str) -> str | None:
        try:
            return file_md5(self.root / key)
        except FileNotFoundError:
            return None

    def upload(self, obj: StoreObject, path: Path, md5: str) -> None:
        dest = self.root.joinpath(*obj.key.split("/"))
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(path, "rb") as src, open(tmp, "wb") as out:
                while block := src.read(8 << 20):
                    out.write(block)
            os.replace(tmp, dest)  # atomic: a reader sees the old file or the new one
        finally:
            if tmp.exists():
                tmp.unlink()


def open_target(
    target: str | os.PathLike[str],
    *,
    endpoint: str | None = None,
    region: str | None = None,
    **options: Any,
) -> Target:
    """A :class:`Target` for ``s3://bucket/prefix``, ``file://`` or a local directory path."""
    text = os.fspath(target)
    parsed = urlparse(text)
    if parsed.scheme == "s3":
        return S3Target(text, endpoint=endpoint, region=region, **options)
    if endpoint or region:
        raise PublishRefusedError("--endpoint and --region apply to s3:// targets only")
    if parsed.scheme in ("http", "https"):
        raise PublishRefusedError(
            f"cannot publish to {text}: a web server is read-only here; publish to the bucket or"
            " directory it serves (s3://bucket/prefix or a local path)"
        )
    if parsed.scheme == "file":
        return DirectoryTarget(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:
        raise PublishRefusedError(f"unsupported target {text!r}: use s3://bucket/prefix or a path")
    return DirectoryTarget(text)


# --- refusing a re-encode ---------------------------------------------------------------------------

_APPEND_INVARIANT_KEYS = (
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
_ARRAY_INVARIANT_KEYS = (
    "data_type",
    "chunk_grid",
    "chunk_key_encoding",
    "codecs",
    "fill_value",
    "dimension_names",
)


def _consolidated(root: Mapping[str, Any]) -> Mapping[str, Any]:
    cons = root.get("consolidated_metadata")
    if isinstance(cons, Mapping) and isinstance(cons.get("metadata"), Mapping):
        return cons["metadata"]
    return {}


def reencode_differences(old_root: Mapping[str, Any], new_root: Mapping[str, Any]) -> list[str]:
    """What in ``new_root`` an append of ``old_root`` could not have produced (spec 14, "What
    stays byte-identical"); empty when ``new_root`` is ``old_root`` grown by zero or more appends.
    Both are root zarr.json documents."""
    diffs: list[str] = []
    old_attrs = old_root.get("attributes") or {}
    new_attrs = new_root.get("attributes") or {}
    old = old_attrs.get("chronozarr")
    new = new_attrs.get("chronozarr")
    if not isinstance(old, Mapping):
        return ["the target's root zarr.json is not a chronozarr store"]
    if not isinstance(new, Mapping):
        return ["the local root zarr.json is not a chronozarr store"]
    for key in _APPEND_INVARIANT_KEYS:
        if old.get(key) != new.get(key):
            diffs.append(f"chronozarr.{key}: target {old.get(key)!r}, local {new.get(key)!r}")
    if old_attrs.get("multiscales") != new_attrs.get("multiscales"):
        diffs.append("multiscales differ")
    old_times, new_times = list(old.get("times") or []), list(new.get("times") or [])
    if len(new_times) < len(old_times):
        diffs.append(
            f"the target has {len(old_times)} timesteps, the local store {len(new_times)}:"
            " publishing would take timesteps away"
        )
    elif new_times[: len(old_times)] != old_times:
        i = next(i for i, (a, b) in enumerate(zip(old_times, new_times, strict=False)) if a != b)
        diffs.append(f"times[{i}]: target {old_times[i]}, local {new_times[i]}")
    ot, nt = old.get("temporal") or {}, new.get("temporal") or {}
    for key in ("encoding", "anchor_interval"):
        if ot.get(key) != nt.get(key):
            diffs.append(f"temporal.{key}: target {ot.get(key)!r}, local {nt.get(key)!r}")
    missing = sorted(set(ot.get("anchor_indices") or []) - set(nt.get("anchor_indices") or []))
    if missing:
        diffs.append(f"temporal.anchor_indices: the target's anchors {missing} are not anchors")
    old_refs, new_refs = ot.get("delta_reference") or {}, nt.get("delta_reference") or {}
    changed = sorted((k for k, v in old_refs.items() if new_refs.get(k) != v), key=int)
    if changed:
        diffs.append(f"temporal.delta_reference changes the reference of timesteps {changed}")
    old_levels, new_levels = list(old.get("levels") or []), list(new.get("levels") or [])
    if len(old_levels) != len(new_levels):
        diffs.append(f"levels: target {len(old_levels)}, local {len(new_levels)}")
    for a, b in zip(old_levels, new_levels, strict=False):
        for key in ("path", "resolution", "transform", "grid"):
            if a.get(key) != b.get(key):
                diffs.append(f"levels[{a.get('path')}].{key}: {a.get(key)!r} vs {b.get(key)!r}")
        sa, sb = list(a.get("shape") or []), list(b.get("shape") or [])
        if sa[1:] != sb[1:]:
            diffs.append(f"levels[{a.get('path')}].shape: {sa} vs {sb}")
    old_cons, new_cons = _consolidated(old_root), _consolidated(new_root)
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
    old_sb, new_sb = old.get("shard_bytes") or {}, new.get("shard_bytes") or {}
    if old_sb or new_sb:
        n_old = len(old_times)
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
    except (KeyError, TypeError, IndexError, ValueError):
        return None


# --- the plan ---------------------------------------------------------------------------------------


@dataclass
class PublishPlan:
    """What a publish will do. ``uploads`` is in upload order (phase, then key)."""

    source: Path
    target: Target
    objects: list[StoreObject]
    uploads: list[StoreObject]
    reasons: dict[str, str]  # key -> "new" | "changed"
    unchanged: list[StoreObject]
    target_state: str  # "empty" | "partial" (objects, no root) | "store"
    target_times: int | None
    local_times: int
    extra: list[str] = field(default_factory=list)  # at the target only: kept, never deleted
    skipped: list[str] = field(default_factory=list)  # local files that are not store objects
    md5: dict[str, str] = field(default_factory=dict)

    @property
    def upload_bytes(self) -> int:
        return sum(o.size for o in self.uploads)

    def phases(self) -> list[tuple[Phase, list[StoreObject]]]:
        return [(p, [o for o in self.uploads if o.phase == p]) for p in Phase]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": str(self.source),
            "target": self.target.url,
            "target_state": self.target_state,
            "timesteps": {"target": self.target_times, "local": self.local_times},
            "objects": len(self.objects),
            "bytes": sum(o.size for o in self.objects),
            "upload": {
                "objects": len(self.uploads),
                "bytes": self.upload_bytes,
                "new": sum(1 for v in self.reasons.values() if v == "new"),
                "changed": sum(1 for v in self.reasons.values() if v == "changed"),
            },
            "unchanged": len(self.unchanged),
            "phases": [
                {
                    "phase": int(p),
                    "name": p.title,
                    "objects": len(objs),
                    "bytes": sum(o.size for o in objs),
                }
                for p, objs in self.phases()
            ],
            "cache_control": {
                "short": SHORT_CACHE_CONTROL,
                "long": LONG_CACHE_CONTROL,
                "short_objects": sum(1 for o in self.objects if o.in_place),
                "set_on_objects": self.target.sets_headers,
            },
            # objects replaced under an existing key: a CDN in front should invalidate them
            "changed_in_place": [o.key for o in self.uploads if self.reasons[o.key] == "changed"],
            "extra": self.extra,
            "skipped": self.skipped,
        }


def _md5s(root: Path, jobs: dict[str, int | None], workers: int) -> dict[str, str]:
    """MD5 of each ``key`` (of its first ``limit`` bytes when the value is not None), in parallel."""
    if not jobs:
        return {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {k: pool.submit(file_md5, root / k, limit) for k, limit in jobs.items()}
        return {k: f.result() for k, f in futures.items()}


def plan_publish(
    source: str | os.PathLike[str],
    target: Target | str,
    *,
    workers: int = 8,
    check: bool = True,
    endpoint: str | None = None,
    region: str | None = None,
) -> PublishPlan:
    """Decide what publishing ``source`` to ``target`` uploads; raise PublishRefusedError when it
    must not happen. Reads the local store and lists the target; writes nothing.

    ``check`` runs a shallow :func:`chronozarr.validate` of the local store first: an invalid
    store, or one with an unfinished append, is refused.
    """
    src = Path(source)
    tgt = (
        target
        if isinstance(target, Target)
        else open_target(target, endpoint=endpoint, region=region)
    )
    if urlparse(os.fspath(source)).scheme in ("http", "https", "s3"):
        raise PublishRefusedError(f"{source}: publish reads a local store (a directory)")
    if tgt.overlaps(src):
        raise PublishRefusedError(f"the target {tgt.url} overlaps the source {src.resolve()}")
    objects, skipped = classify_store(src)
    if check:
        try:
            report = chronozarr.validate(src)
        except ChronozarrError as exc:
            raise PublishRefusedError(f"{src}: {exc}") from exc
        blocking = report.errors + [f for f in report.warnings if f.rule == "append.in_progress"]
        if blocking:
            first = blocking[0]
            raise PublishRefusedError(
                f"{src} does not validate ({len(blocking)} problem(s); first: §{first.section}"
                f" {first.rule} {first.key}: {first.message}); run `cz validate {src}`"
            )
    local_root = _load_json(src / "zarr.json")
    local_block = (local_root.get("attributes") or {}).get("chronozarr") or {}
    local_times = len(local_block.get("times") or [])
    listing = tgt.listing()
    by_key = {o.key: o for o in objects}

    target_times: int | None = None
    old_arrays: dict[str, _Array] = {}
    if "zarr.json" in listing:
        raw = tgt.read("zarr.json")
        try:
            old_root = json.loads(raw or b"")
        except ValueError as exc:
            raise PublishRefusedError(
                f"{tgt.url}/zarr.json exists but is not JSON ({exc}): not a chronozarr store;"
                " publish under a new prefix"
            ) from exc
        diffs = reencode_differences(old_root, local_root)
        if diffs:
            raise PublishRefusedError(_refusal(tgt.url, src, diffs))
        old_block = old_root["attributes"]["chronozarr"]
        target_times = len(old_block.get("times") or [])
        old_arrays = {
            path: _Array.from_doc(path, doc)
            for path, doc in _consolidated(old_root).items()
            if doc.get("node_type") == "array"
        }
        state = "store"
    else:
        state = "partial" if listing else "empty"

    # which objects the target's root treats as immutable (spec 14): they must not change
    def immutable_under_old_root(key: str) -> tuple[bool, bool]:
        """(immutable, old trailing shard) of a key under the target's root."""
        obj = by_key.get(key)
        arr_path = obj.array if obj else _array_of(key, old_arrays)
        arr = old_arrays.get(arr_path or "")
        if arr is None or (obj is not None and obj.phase != Phase.CHUNKS):
            return False, False
        coords = arr.chunk_coords(key)
        if coords is None or arr.is_time_coordinate:
            return False, False
        if not arr.along_time:
            return True, False
        last = arr.last_time_chunk()
        if arr.sharded:
            return coords[0] < last, coords[0] == last
        return coords[0] <= last, False

    hash_jobs: dict[str, int | None] = {}
    prefix_jobs: dict[str, int | None] = {}
    for obj in objects:
        remote = listing.get(obj.key)
        if remote is None:
            continue
        immutable, trailing = (
            immutable_under_old_root(obj.key) if state == "store" else (False, False)
        )
        if remote.size == obj.size:
            hash_jobs[obj.key] = None
        elif immutable:
            raise PublishRefusedError(
                _refusal(
                    tgt.url,
                    src,
                    [
                        f"{obj.key}: {remote.size} bytes at the target, {obj.size} here (a chunk of"
                        " an existing timestep differs)"
                    ],
                )
            )
        elif trailing:
            if obj.size < remote.size:
                raise PublishRefusedError(
                    _refusal(tgt.url, src, [f"{obj.key}: the trailing shard shrank"])
                )
            prefix_jobs[obj.key] = remote.size
    md5 = _md5s(src, hash_jobs, workers)
    prefix_md5 = _md5s(src, prefix_jobs, workers)
    # what the target holds for the same keys: free from the listing's ETags on S3, a HEAD where
    # the ETag is no plain MD5, the file's MD5 in a directory; in parallel either way
    expected = {**md5, **prefix_md5}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {
            k: pool.submit(tgt.stored_md5, k, listing[k], want) for k, want in expected.items()
        }
        stored_md5 = {k: f.result() for k, f in futures.items()}
    reasons: dict[str, str] = {}
    uploads: list[StoreObject] = []
    unchanged: list[StoreObject] = []
    problems: list[str] = []
    for obj in objects:
        remote = listing.get(obj.key)
        immutable, trailing = (
            immutable_under_old_root(obj.key) if state == "store" else (False, False)
        )
        if remote is None:
            reasons[obj.key] = "new"
            uploads.append(obj)
            continue
        if obj.key in prefix_md5:
            stored = stored_md5[obj.key]
            if stored is not None and stored != prefix_md5[obj.key]:
                problems.append(
                    f"{obj.key}: the target's trailing shard is not a prefix of the local one"
                    " (its existing chunks differ)"
                )
            reasons[obj.key] = "changed"
            uploads.append(obj)
            continue
        if remote.size != obj.size:  # (a chunk of an existing timestep was refused above)
            reasons[obj.key] = "changed"
            uploads.append(obj)
            continue
        stored = stored_md5[obj.key]
        if stored == md5[obj.key]:
            unchanged.append(obj)
        elif stored is None and not obj.in_place:
            # the host cannot tell (no MD5 ETag, no metadata) and the object is immutable by
            # class with the same size: keep it rather than rewrite it or refuse on a guess
            log.info("%s: same size, content hash unknown at the target; kept", obj.key)
            unchanged.append(obj)
        elif immutable:
            problems.append(f"{obj.key}: a chunk of an existing timestep differs")
        else:
            reasons[obj.key] = "changed"
            uploads.append(obj)
    extra = sorted(k for k in listing if k not in by_key)
    if state == "store":
        for key in extra:
            immutable, _ = immutable_under_old_root(key)
            if immutable:
                problems.append(f"{key}: held by the target for an existing timestep, absent here")
    if problems:
        raise PublishRefusedError(_refusal(tgt.url, src, problems))
    uploads.sort(key=lambda o: (o.phase, o.key))
    return PublishPlan(
        source=src,
        target=tgt,
        objects=objects,
        uploads=uploads,
        reasons=reasons,
        unchanged=unchanged,
        target_state=state,
        target_times=target_times,
        local_times=local_times,
        extra=extra,
        skipped=skipped,
        md5={k: v for k, v in md5.items() if k in reasons},
    )


def _array_of(key: str, arrays: Mapping[str, _Array]) -> str | None:
    best = None
    for path in arrays:
        if key.startswith(path + "/") and (best is None or len(path) > len(best)):
            best = path
    return best


def _refusal(target: str, source: Path, diffs: list[str]) -> str:
    shown = "; ".join(diffs[:8]) + (f"; and {len(diffs) - 8} more" if len(diffs) > 8 else "")
    return (
        f"refusing to publish {source} over the store at {target}: it is not that store grown by"
        f" appends ({shown}). A re-encode MUST go under a new prefix (spec 9)."
    )


# --- uploading --------------------------------------------------------------------------------------


def _is_transient(exc: BaseException) -> bool:
    """Worth another attempt: connection trouble, timeouts, 5xx after obstore's own retries."""
    if isinstance(exc, PublishError):
        return False
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    if isinstance(exc, RemoteStoreError):
        cause = exc.__cause__
        if isinstance(cause, ConnectionError | TimeoutError):
            return True
        try:
            from obstore.exceptions import GenericError
        except ImportError:  # pragma: no cover - obstore is a dependency
            return False
        return isinstance(cause, GenericError)
    return False


@dataclass
class PublishResult:
    """What a publish did."""

    plan: PublishPlan
    uploaded: list[str]
    seconds: float
    retries: int
    dry_run: bool = False

    @property
    def bytes(self) -> int:
        sizes = {o.key: o.size for o in self.plan.uploads}
        return sum(sizes[k] for k in self.uploaded)

    def to_json(self) -> dict[str, Any]:
        out = self.plan.to_json()
        out.update(
            {
                "dry_run": self.dry_run,
                "uploaded": {"objects": len(self.uploaded), "bytes": self.bytes},
                "seconds": round(self.seconds, 3),
                "retries": self.retries,
            }
        )
        return out


def execute(
    plan: PublishPlan,
    *,
    workers: int = 8,
    attempts: int = 4,
    backoff: float = 0.5,
    on_phase: Callable[[Phase, list[StoreObject]], None] | None = None,
    on_uploaded: Callable[[StoreObject], None] | None = None,
) -> PublishResult:
    """Upload ``plan.uploads`` phase by phase, ``workers`` at a time. Each object is tried up to
    ``attempts`` times on transient errors (exponential ``backoff`` seconds between tries, on top
    of obstore's request-level retries). The first permanent failure stops the publish before the
    next phase: the root is written only after every other upload has succeeded."""
    t0 = time.perf_counter()
    uploaded: list[str] = []
    lock = threading.Lock()
    retries = 0
    stop = threading.Event()

    def one(obj: StoreObject) -> None:
        nonlocal retries
        path = plan.source.joinpath(*obj.key.split("/"))
        md5 = plan.md5.get(obj.key) or file_md5(path)
        for attempt in range(1, attempts + 1):
            if stop.is_set():
                raise PublishError("stopped: another upload failed")
            try:
                plan.target.upload(obj, path, md5)
                break
            except Exception as exc:
                if attempt == attempts or not _is_transient(exc):
                    stop.set()  # before raising: this worker takes no further object
                    raise
                with lock:
                    retries += 1
                log.warning("%s: attempt %d failed (%s); retrying", obj.key, attempt, exc)
                time.sleep(backoff * 2 ** (attempt - 1))
        with lock:
            uploaded.append(obj.key)
        if on_uploaded is not None:
            on_uploaded(obj)

    for phase, objs in plan.phases():
        if not objs:
            continue
        if on_phase is not None:
            on_phase(phase, objs)
        with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
            futures: list[Future[None]] = [pool.submit(one, o) for o in objs]
            try:
                done, pending = wait(futures, return_when=FIRST_EXCEPTION)
            except BaseException:  # Ctrl-C: queue nothing more, let running uploads finish
                stop.set()
                for f in futures:
                    f.cancel()
                raise
            failed = [f for f in done if f.exception() is not None]
            if failed:
                stop.set()
                for f in pending:
                    f.cancel()
                wait(pending)
                exc = failed[0].exception()
                assert exc is not None
                written = (
                    "no root zarr.json was written"
                    if plan.target_state != "store"
                    else ("the target's root zarr.json is still the old one")
                )
                raise PublishError(
                    f"publish to {plan.target.url} stopped in phase {int(phase)} ({phase.title}):"
                    f" {exc}. {len(uploaded)} of {len(plan.uploads)} objects were uploaded and"
                    f" {written}, so readers see no missing object. Run the same command again to"
                    " resume: objects already uploaded are not sent twice."
                ) from exc
    return PublishResult(plan, uploaded, time.perf_counter() - t0, retries)


def publish(
    source: str | os.PathLike[str],
    target: Target | str,
    *,
    workers: int = 8,
    dry_run: bool = False,
    endpoint: str | None = None,
    region: str | None = None,
    on_phase: Callable[[Phase, list[StoreObject]], None] | None = None,
    on_uploaded: Callable[[StoreObject], None] | None = None,
) -> PublishResult:
    """Plan and (unless ``dry_run``) execute a publish of ``source`` to ``target``."""
    plan = plan_publish(source, target, workers=workers, endpoint=endpoint, region=region)
    if dry_run:
        return PublishResult(plan, [], 0.0, 0, dry_run=True)
    return execute(plan, workers=workers, on_phase=on_phase, on_uploaded=on_uploaded)

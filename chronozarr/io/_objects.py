"""The objects of a store: which chunk of which array a key is, its write phase and whether an
append may rewrite it in place (spec 9 "write order", spec 14 "Publishing").

Phases, in order (spec 9, 14): every chunk and shard object (band/x/y coordinate chunks
included); ``time/c/0`` of every level and the volatility chunk; every ``zarr.json`` below the
root; the root ``zarr.json``. An object *changes in place* when an append may rewrite it under
the same key: every zarr.json, every 1-d time coordinate chunk, the volatility chunk, and for
every sharded array along time the shard holding the last timestep (the one an append grows), as
for every array whose chunks hold several timesteps (the time-series companion, docs/spec.md
C25: an append rewrites the chunk holding the old last timestep whole). Every other chunk and
shard object is immutable.

The array documents are read leniently (:class:`ChunkGeometry`): coordinate arrays (``int64``
time, ``string`` bands, ``float64`` x/y) are outside what :class:`chronozarr.format.ArrayInfo`
accepts for pixel arrays, and classifying needs only the chunk-key geometry.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import IntEnum
from pathlib import Path
from typing import Any

from chronozarr.errors import CorruptStoreError, StoreNotFoundError
from chronozarr.format import consolidated

__all__ = [
    "APPEND_JOURNAL",
    "LEASE_KEY",
    "ROOT_KEY",
    "WORK_PREFIX",
    "ChunkGeometry",
    "Phase",
    "StoreObject",
    "array_geometries",
    "array_of",
    "classify_objects",
    "consolidated_geometries",
    "has_root",
    "is_work_file",
    "load_document",
    "read_document",
    "read_root",
    "root_block",
    "walk",
]

ROOT_KEY = "zarr.json"


class Phase(IntEnum):
    """Write phases of a store's objects, in order (spec 9, 14)."""

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
    """One object of a store: its key, size, write phase and mutability class."""

    key: str
    size: int
    phase: Phase
    in_place: bool  # an append may rewrite it under the same key
    array: str | None = None

    @property
    def is_metadata(self) -> bool:
        return self.key.rsplit("/", 1)[-1] == ROOT_KEY


@dataclass(frozen=True)
class ChunkGeometry:
    """Chunk-key geometry of one array, from its zarr.json (Zarr v3 chunk key encodings)."""

    path: str
    shape: tuple[int, ...]
    chunk_shape: tuple[int, ...]
    sharded: bool
    separator: str
    dimension_names: tuple[str, ...] | None

    @classmethod
    def from_doc(cls, path: str, doc: Mapping[str, Any]) -> ChunkGeometry:
        """Raises :class:`CorruptStoreError` naming ``{path}/zarr.json`` when malformed."""
        try:
            shape = tuple(int(s) for s in doc["shape"])
            chunk_shape = tuple(int(s) for s in doc["chunk_grid"]["configuration"]["chunk_shape"])
        except (KeyError, TypeError, ValueError) as exc:  # the document lacks a regular grid
            raise CorruptStoreError(
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
        dims = self.dimension_names
        return dims is not None and len(dims) > 0 and dims[0] == "time"

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


#: Where a resumable build keeps its progress inside the target (decision 0017).
WORK_PREFIX = ".cz-build"

#: The journal of an append in progress (:mod:`chronozarr.write._journal`): never published.
APPEND_JOURNAL = ".chronozarr-append.json"
#: the writer's lease at a store's root (decision 0051, :mod:`chronozarr.io._lease`)
LEASE_KEY = ".chronozarr-lease.json"


def is_work_file(name: str) -> bool:
    """A file of a write in progress, not a store object: a ``.*.tmp`` temporary file (an
    atomic write's, or one a killed process left), the append journal (spec 9, 14) or the
    writer's lease (decision 0051)."""
    return (name.startswith(".") and name.endswith(".tmp")) or name in (APPEND_JOURNAL, LEASE_KEY)


def walk(root: Path) -> Iterator[tuple[str, int]]:
    """(key, size) of every regular file under ``root``, skipping in-flight work files and the
    resumable work prefix of an interrupted cluster build or append (``.cz-build/``, decision
    0017): it is not part of the store, so a publish never uploads it."""
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == Path(root):
            dirnames[:] = [d for d in dirnames if d != WORK_PREFIX]
        dirnames.sort()
        for name in sorted(filenames):
            if is_work_file(name):
                continue
            full = Path(dirpath) / name
            yield full.relative_to(root).as_posix(), full.stat().st_size


def read_document(path: Path) -> Any:
    """A zarr.json file, parsed; :class:`CorruptStoreError` naming the file when unreadable."""
    try:
        return json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:  # missing, unreadable or not JSON
        raise CorruptStoreError(f"{path}: cannot read JSON ({exc})") from exc


def has_root(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` holds a root zarr.json (a store, or the start of one)."""
    return (Path(folder) / ROOT_KEY).is_file()


def read_root(folder: str | os.PathLike[str]) -> Any:
    """The root zarr.json of the local store at ``folder``, parsed (see :func:`read_document`)."""
    return read_document(Path(folder) / ROOT_KEY)


def load_document(raw: bytes | None, where: str) -> Any:
    """A zarr.json fetched from elsewhere (a publish target), parsed; :class:`CorruptStoreError`
    naming ``where`` when it is not JSON."""
    try:
        return json.loads(raw or b"")
    except ValueError as exc:  # not JSON: not a store
        raise CorruptStoreError(f"{where} exists but is not JSON ({exc})") from exc


def array_geometries(root: Path, keys: Iterable[str]) -> dict[str, ChunkGeometry]:
    """The chunk geometry of every array whose zarr.json is among ``keys`` (store-relative)."""
    out: dict[str, ChunkGeometry] = {}
    for key in keys:
        if key.endswith("/" + ROOT_KEY):
            doc = read_document(root / key)
            if isinstance(doc, Mapping) and doc.get("node_type") == "array":
                path = key[: -len("/" + ROOT_KEY)]
                out[path] = ChunkGeometry.from_doc(path, doc)
    return out


def consolidated_geometries(root_doc: Mapping[str, Any]) -> dict[str, ChunkGeometry]:
    """The chunk geometry of every array in a root document's consolidated metadata."""
    return {
        path: ChunkGeometry.from_doc(path, doc)
        for path, doc in consolidated(root_doc).items()
        if doc.get("node_type") == "array"
    }


def array_of(key: str, arrays: Mapping[str, ChunkGeometry]) -> str | None:
    """The path of the deepest array that ``key`` lies under, None when none."""
    best = None
    for path in arrays:
        if key.startswith(path + "/") and (best is None or len(path) > len(best)):
            best = path
    return best


def root_block(root_doc: Any) -> Mapping[str, Any]:
    """The root document's ``attributes.chronozarr`` (empty when absent)."""
    return ((root_doc or {}).get("attributes") or {}).get("chronozarr") or {}


def classify_objects(source: str | os.PathLike[str]) -> tuple[list[StoreObject], list[str]]:
    """Every object of the local store at ``source`` with its phase and class, in write order,
    and the keys of files that are not part of the store (neither metadata nor a chunk)."""
    root = Path(source)
    if not has_root(root):
        raise StoreNotFoundError(f"no chronozarr store at {root}: zarr.json not found")
    listing = dict(walk(root))
    arrays = array_geometries(root, listing)
    volatility = root_block(read_root(root)).get("volatility_path")
    by_length = sorted(arrays.values(), key=lambda a: -len(a.path))
    objects: list[StoreObject] = []
    skipped: list[str] = []
    for key, size in listing.items():
        if key == ROOT_KEY:
            objects.append(StoreObject(key, size, Phase.ROOT, True))
            continue
        if key.endswith("/" + ROOT_KEY):
            objects.append(StoreObject(key, size, Phase.METADATA, True))
            continue
        arr = next((a for a in by_length if key.startswith(a.path + "/")), None)
        coords = None if arr is None else arr.chunk_coords(key)
        if arr is None or coords is None:
            skipped.append(key)
            continue
        if arr.is_time_coordinate or (volatility and arr.path == volatility):
            objects.append(StoreObject(key, size, Phase.COORDINATES, True, arr.path))
        elif arr.along_time and (arr.sharded or arr.chunk_shape[0] > 1):
            trailing = coords[0] == arr.last_time_chunk()
            objects.append(StoreObject(key, size, Phase.CHUNKS, trailing, arr.path))
        else:
            objects.append(StoreObject(key, size, Phase.CHUNKS, False, arr.path))
    objects.sort(key=lambda o: (o.phase, o.key))
    return objects, skipped

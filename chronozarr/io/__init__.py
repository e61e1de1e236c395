"""Bytes in and out of a store (spec 9, 10): where a store lives, how its objects are read and
written, and what each object of a store is.

- ``location``: the one rule telling a local path from an http(s):// or s3:// URL;
- ``Store`` (the protocol), ``LocalStore`` (a folder, atomic puts), ``ObjectStore`` (http(s)
  and s3 through obstore, imported when one is opened), ``open_store_bytes``;
- ``open_target``: what ``encode`` and ``append`` write through (a path, ``s3://``, an obstore
  object, any ``Store``);
- the objects of a store: write phases, in-place classes, chunk-key geometry, the work files a
  write leaves (``.*.tmp``, the append journal, the resumable ``.cz-build/`` prefix);
- ``fault_point``: the test-only kill hook before every durable write;
- ``LRU``: the cache every reader, the writer and the toolkit use.

The modules are private; this is the surface.
"""

from __future__ import annotations

from chronozarr.io._cache import LRU
from chronozarr.io._faults import FAULT_AT_ENV, FAULT_TRACE_ENV, fault_point
from chronozarr.io._location import REMOTE_SCHEMES, Location, is_remote, is_url, location
from chronozarr.io._objects import (
    APPEND_JOURNAL,
    ROOT_KEY,
    WORK_PREFIX,
    ChunkGeometry,
    Phase,
    StoreObject,
    array_geometries,
    array_of,
    classify_objects,
    consolidated_geometries,
    has_root,
    is_work_file,
    load_document,
    read_document,
    read_root,
    root_block,
    walk,
)
from chronozarr.io._storage import (
    LocalStore,
    ObjectInfo,
    ObjectStore,
    RemoteStoreError,
    RequestStats,
    Store,
    check_key,
    open_store_bytes,
)
from chronozarr.io._targets import ObstoreTarget, open_target, store_is_empty

__all__ = [
    "APPEND_JOURNAL",
    "FAULT_AT_ENV",
    "FAULT_TRACE_ENV",
    "LRU",
    "REMOTE_SCHEMES",
    "ROOT_KEY",
    "WORK_PREFIX",
    "ChunkGeometry",
    "LocalStore",
    "Location",
    "ObjectInfo",
    "ObjectStore",
    "ObstoreTarget",
    "Phase",
    "RemoteStoreError",
    "RequestStats",
    "Store",
    "StoreObject",
    "array_geometries",
    "array_of",
    "check_key",
    "classify_objects",
    "consolidated_geometries",
    "fault_point",
    "has_root",
    "is_remote",
    "is_url",
    "is_work_file",
    "load_document",
    "location",
    "open_store_bytes",
    "open_target",
    "read_document",
    "read_root",
    "root_block",
    "store_is_empty",
    "walk",
]

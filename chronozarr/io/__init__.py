"""Bytes in and out of a store (spec 9, 10): where a store lives, how its objects are read and
written, and what each object of a store is.

- ``location``: the one rule telling a local path from an http(s):// or s3:// URL;
- ``Store`` (the protocol), ``LocalStore`` (a folder, atomic puts), ``ObjectStore`` (http(s)
  and s3 through obstore, imported when one is opened), ``open_store_bytes``;
- ``open_target``: what ``encode`` and ``append`` write through (a path, ``s3://``, an obstore
  object, any ``Store``);
- the objects of a store: write phases, in-place classes, chunk-key geometry, the work files a
  write leaves (``.*.tmp``, the append journal, the resumable ``.cz-build/`` prefix);
- ``commit_root``, ``put_if``, ``read_versioned``: compare-and-swap writes (the root commit);
  ``Lease``/``hold_lease``: one writer at a time on a store (decision 0051);
- ``fault_point``: the test-only kill hook before every durable write;
- ``LRU``: the cache every reader, the writer and the toolkit use.

The modules are private; this is the surface.
"""

from __future__ import annotations

from chronozarr.io._cache import LRU
from chronozarr.io._cas import (
    ABSENT,
    CONDITIONAL_WRITES_ENV,
    Version,
    commit_root,
    put_if,
    read_versioned,
    set_commit_guard,
)
from chronozarr.io._faults import FAULT_AT_ENV, FAULT_TRACE_ENV, fault_point
from chronozarr.io._lease import LEASE_TTL_ENV, Lease, hold_lease, holder_gone
from chronozarr.io._location import REMOTE_SCHEMES, Location, is_remote, is_url, location
from chronozarr.io._objects import (
    APPEND_JOURNAL,
    LEASE_KEY,
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
    "ABSENT",
    "APPEND_JOURNAL",
    "CONDITIONAL_WRITES_ENV",
    "FAULT_AT_ENV",
    "FAULT_TRACE_ENV",
    "LEASE_KEY",
    "LEASE_TTL_ENV",
    "LRU",
    "REMOTE_SCHEMES",
    "ROOT_KEY",
    "WORK_PREFIX",
    "ChunkGeometry",
    "Lease",
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
    "Version",
    "array_geometries",
    "array_of",
    "check_key",
    "classify_objects",
    "commit_root",
    "consolidated_geometries",
    "fault_point",
    "has_root",
    "hold_lease",
    "holder_gone",
    "is_remote",
    "is_url",
    "is_work_file",
    "load_document",
    "location",
    "open_store_bytes",
    "open_target",
    "put_if",
    "read_document",
    "read_root",
    "read_versioned",
    "root_block",
    "set_commit_guard",
    "store_is_empty",
    "walk",
]

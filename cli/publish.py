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
import logging
import os
import re
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import chronozarr
from chronozarr import objects as layout
from chronozarr.errors import ChronozarrError
from chronozarr.growth import append_differences
from chronozarr.objects import Phase, StoreObject
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


def cache_control(obj: StoreObject) -> str:
    """The Cache-Control of an object: short when an append may rewrite it (spec 14)."""
    return SHORT_CACHE_CONTROL if obj.in_place else LONG_CACHE_CONTROL


def content_type(obj: StoreObject) -> str:
    return "application/json" if obj.is_metadata else "application/octet-stream"


@dataclass(frozen=True)
class TargetObject:
    """One object already at the target: size and (when the host gives one) ETag."""

    size: int
    etag: str | None = None


# --- the local store: objects and their classes ---------------------------------------------------


def classify_store(source: str | os.PathLike[str]) -> tuple[list[StoreObject], list[str]]:
    """Every object of the local store at ``source`` with its phase and cache class, and the keys
    of files that are not part of the store (skipped: neither metadata nor a chunk of an array).
    The classes are the format library's (:func:`chronozarr.objects.classify_objects`)."""
    try:
        return layout.classify_objects(source)
    except ChronozarrError as exc:  # no root, or a zarr.json that does not parse
        raise PublishRefusedError(str(exc)) from exc


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
            "Cache-Control": cache_control(obj),
            "Content-Type": content_type(obj),
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
        return {k: TargetObject(s) for k, s in layout.walk(self.root)}

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


def reencode_differences(old_root: Mapping[str, Any], new_root: Mapping[str, Any]) -> list[str]:
    """What in ``new_root`` an append of ``old_root`` could not have produced (spec 14, "What
    stays byte-identical"); empty when ``new_root`` is ``old_root`` grown by zero or more appends.
    Both are root zarr.json documents (:func:`chronozarr.growth.append_differences`)."""
    return append_differences(old_root, new_root)


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
    try:
        local_root = layout.read_root(src)
    except ChronozarrError as exc:  # vanished or rewritten since it was classified
        raise PublishRefusedError(str(exc)) from exc
    local_block = layout.root_block(local_root)
    local_times = len(local_block.get("times") or [])
    listing = tgt.listing()
    by_key = {o.key: o for o in objects}

    target_times: int | None = None
    old_arrays: dict[str, layout.ChunkGeometry] = {}
    if layout.ROOT_KEY in listing:
        raw = tgt.read(layout.ROOT_KEY)
        try:
            old_root = layout.load_document(raw, f"{tgt.url}/{layout.ROOT_KEY}")
        except ChronozarrError as exc:  # the target's root is not JSON: not our store
            raise PublishRefusedError(
                f"{exc}: not a chronozarr store; publish under a new prefix"
            ) from exc
        diffs = reencode_differences(old_root, local_root)
        if diffs:
            raise PublishRefusedError(_refusal(tgt.url, src, diffs))
        target_times = len(layout.root_block(old_root).get("times") or [])
        try:
            old_arrays = layout.consolidated_geometries(old_root)
        except ChronozarrError as exc:  # a malformed array entry in the target's root
            raise PublishRefusedError(str(exc)) from exc
        state = "store"
    else:
        state = "partial" if listing else "empty"

    # which objects the target's root treats as immutable (spec 14): they must not change
    def immutable_under_old_root(key: str) -> tuple[bool, bool]:
        """(immutable, old trailing shard) of a key under the target's root."""
        obj = by_key.get(key)
        arr_path = obj.array if obj else layout.array_of(key, old_arrays)
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

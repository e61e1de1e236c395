"""Deciding what a publish uploads, or refusing it, before anything is written (spec 9, 14)."""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import chronozarr
from chronozarr.errors import ChronozarrError
from chronozarr.io import (
    ABSENT,
    ROOT_KEY,
    ChunkGeometry,
    Phase,
    StoreObject,
    Version,
    array_of,
    consolidated_geometries,
    is_remote,
    load_document,
    read_root,
    root_block,
)
from cz.publish.classify import (
    LONG_CACHE_CONTROL,
    SHORT_CACHE_CONTROL,
    classify_store,
    reencode_differences,
)
from cz.publish.errors import PublishRefusedError
from cz.publish.targets import Target, TargetObject, file_md5, open_target

__all__ = ["PublishPlan", "plan_publish"]

log = logging.getLogger("cz.publish")


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
    #: the target's root as read by the plan: the commit replaces only it (decision 0051)
    root_version: Version = ABSENT

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
    if is_remote(source):
        raise PublishRefusedError(f"{source}: publish reads a local store (a directory)")
    if tgt.overlaps(src):
        raise PublishRefusedError(f"the target {tgt.url} overlaps the source {src.resolve()}")
    objects, skipped = classify_store(src)
    if check:
        _check_valid(src)
    try:
        local_root = read_root(src)
    except ChronozarrError as exc:  # vanished or rewritten since it was classified
        raise PublishRefusedError(str(exc)) from exc
    local_times = len(root_block(local_root).get("times") or [])
    listing = tgt.listing()
    old = _OldRoot.of(tgt, listing, local_root, src, objects)
    md5, prefix_md5 = _local_md5s(objects, listing, old, tgt, src, workers)
    stored_md5 = _stored_md5s(tgt, listing, {**md5, **prefix_md5}, workers)
    reasons, uploads, unchanged, problems = _decide(
        objects, listing, old, md5, prefix_md5, stored_md5
    )
    extra = sorted(k for k in listing if k not in old.by_key)
    if old.state == "store":
        problems += [
            f"{key}: held by the target for an existing timestep, absent here"
            for key in extra
            if old.immutable(key)[0]
        ]
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
        target_state=old.state,
        target_times=old.times,
        local_times=local_times,
        extra=extra,
        skipped=skipped,
        md5={k: v for k, v in md5.items() if k in reasons},
        root_version=old.version,
    )


def _check_valid(src: Path) -> None:
    """Refuse a local store that does not validate, or holds an unfinished append."""
    try:
        report = chronozarr.validate(src)
    except ChronozarrError as exc:  # not even readable as a store
        raise PublishRefusedError(f"{src}: {exc}") from exc
    blocking = report.errors + [f for f in report.warnings if f.rule == "append.in_progress"]
    if blocking:
        first = blocking[0]
        raise PublishRefusedError(
            f"{src} does not validate ({len(blocking)} problem(s); first: §{first.section}"
            f" {first.rule} {first.key}: {first.message}); run `cz validate {src}`"
        )


@dataclass
class _OldRoot:
    """The target's state: ``empty``, ``partial`` (objects, no root) or ``store`` (a root that
    the local store must have grown from by appends), and the old root's array geometry."""

    state: str
    times: int | None
    arrays: dict[str, ChunkGeometry]
    by_key: dict[str, StoreObject]
    version: Version = ABSENT

    @classmethod
    def of(
        cls,
        tgt: Target,
        listing: dict[str, TargetObject],
        local_root: Any,
        src: Path,
        objects: list[StoreObject],
    ) -> _OldRoot:
        by_key = {o.key: o for o in objects}
        if ROOT_KEY not in listing:
            return cls("partial" if listing else "empty", None, {}, by_key)
        raw, version = tgt.read_versioned(ROOT_KEY)
        if raw is None:  # removed since the listing: an empty target's rules apply
            return cls("partial", None, {}, by_key)
        try:
            old_root = load_document(raw, f"{tgt.url}/{ROOT_KEY}")
        except ChronozarrError as exc:  # the target's root is not JSON: not our store
            raise PublishRefusedError(
                f"{exc}: not a chronozarr store; publish under a new prefix"
            ) from exc
        diffs = reencode_differences(old_root, local_root)
        if diffs:
            raise PublishRefusedError(_refusal(tgt.url, src, diffs))
        times = len(root_block(old_root).get("times") or [])
        try:
            arrays = consolidated_geometries(old_root)
        except ChronozarrError as exc:  # a malformed array entry in the target's root
            raise PublishRefusedError(str(exc)) from exc
        return cls("store", times, arrays, by_key, version)

    def immutable(self, key: str) -> tuple[bool, bool]:
        """(immutable, old trailing shard) of a key under the target's root (spec 14): an
        immutable object must not change; the old trailing shard may only grow."""
        if self.state != "store":
            return False, False
        obj = self.by_key.get(key)
        arr_path = obj.array if obj else array_of(key, self.arrays)
        arr = self.arrays.get(arr_path or "")
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
        if arr.chunk_shape[0] > 1:  # several timesteps a chunk (C25): the last one is rewritten
            return coords[0] < last, False
        return coords[0] <= last, False


def _local_md5s(
    objects: list[StoreObject],
    listing: dict[str, TargetObject],
    old: _OldRoot,
    tgt: Target,
    src: Path,
    workers: int,
) -> tuple[dict[str, str], dict[str, str]]:
    """MD5s of the local objects the target also holds: whole files where the sizes agree, the
    old length of a grown trailing shard; refuses an immutable chunk whose size changed."""
    hash_jobs: dict[str, int | None] = {}
    prefix_jobs: dict[str, int | None] = {}
    for obj in objects:
        remote = listing.get(obj.key)
        if remote is None:
            continue
        immutable, trailing = old.immutable(obj.key)
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
    return _md5s(src, hash_jobs, workers), _md5s(src, prefix_jobs, workers)


def _stored_md5s(
    tgt: Target, listing: dict[str, TargetObject], expected: dict[str, str], workers: int
) -> dict[str, str | None]:
    """What the target holds for the same keys: free from the listing's ETags on S3, a HEAD
    where the ETag is no plain MD5, the file's MD5 in a directory; in parallel either way."""
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = {
            k: pool.submit(tgt.stored_md5, k, listing[k], want) for k, want in expected.items()
        }
        return {k: f.result() for k, f in futures.items()}


def _decide(
    objects: list[StoreObject],
    listing: dict[str, TargetObject],
    old: _OldRoot,
    md5: dict[str, str],
    prefix_md5: dict[str, str],
    stored_md5: dict[str, str | None],
) -> tuple[dict[str, str], list[StoreObject], list[StoreObject], list[str]]:
    """Per object: upload (``new`` or ``changed``), keep, or a problem that refuses."""
    reasons: dict[str, str] = {}
    uploads: list[StoreObject] = []
    unchanged: list[StoreObject] = []
    problems: list[str] = []
    for obj in objects:
        remote = listing.get(obj.key)
        immutable, _trailing = old.immutable(obj.key)
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
    return reasons, uploads, unchanged, problems


def _refusal(target: str, source: Path, diffs: list[str]) -> str:
    shown = "; ".join(diffs[:8]) + (f"; and {len(diffs) - 8} more" if len(diffs) > 8 else "")
    return (
        f"refusing to publish {source} over the store at {target}: it is not that store grown by"
        f" appends ({shown}). A re-encode MUST go under a new prefix (spec 9)."
    )

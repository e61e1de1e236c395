"""Where a store is published: an S3-compatible bucket (obstore) or a served directory."""

from __future__ import annotations

import abc
import hashlib
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from chronozarr.io import (
    LocalStore,
    ObjectStore,
    StoreObject,
    Version,
    commit_root,
    fault_point,
    location,
    read_versioned,
    walk,
)
from cz.publish.classify import cache_control, content_type
from cz.publish.errors import PublishRefusedError

__all__ = [
    "MD5_METADATA_KEY",
    "MULTIPART_THRESHOLD",
    "DirectoryTarget",
    "S3Target",
    "Target",
    "TargetObject",
    "file_md5",
    "open_target",
]

#: User metadata holding the MD5 (hex) of an uploaded object (x-amz-meta-chronozarr-md5 on S3).
MD5_METADATA_KEY = "chronozarr-md5"
#: Objects up to this size go up in one PUT (S3's ETag is then their MD5; S3 allows 5 GB).
MULTIPART_THRESHOLD = 64 << 20

_PLAIN_MD5 = re.compile(r"^[0-9a-f]{32}$")


@dataclass(frozen=True)
class TargetObject:
    """One object already at the target: size and (when the host gives one) ETag."""

    size: int
    etag: str | None = None


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

    @abc.abstractmethod
    def read_versioned(self, key: str) -> tuple[bytes | None, Version]:
        """The bytes of an object and its version in one read (:mod:`chronozarr.io._cas`)."""

    @abc.abstractmethod
    def commit(self, obj: StoreObject, path: Path, md5: str, expected: Version) -> None:
        """Write the root ``obj`` only if the target's root is still ``expected`` (decision
        0051); raises :class:`chronozarr.ConcurrentWriteError` when another writer moved it."""

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

    def read_versioned(self, key: str) -> tuple[bytes | None, Version]:
        return read_versioned(self.store, key)

    def commit(self, obj: StoreObject, path: Path, md5: str, expected: Version) -> None:
        attributes = {
            "Cache-Control": cache_control(obj),
            "Content-Type": content_type(obj),
            MD5_METADATA_KEY: md5,
        }
        commit_root(self.store, path.read_bytes(), expected, attributes=attributes)

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
        return {k: TargetObject(s) for k, s in walk(self.root)}

    def read(self, key: str) -> bytes | None:
        try:
            return (self.root / key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):  # absent
            return None

    def read_versioned(self, key: str) -> tuple[bytes | None, Version]:
        return read_versioned(LocalStore(self.root), key)

    def commit(self, obj: StoreObject, path: Path, md5: str, expected: Version) -> None:
        commit_root(LocalStore(self.root), path.read_bytes(), expected)

    def stored_md5(self, key: str, obj: TargetObject, expected: str) -> str | None:
        try:
            return file_md5(self.root / key)
        except FileNotFoundError:  # absent: nothing to compare
            return None

    def upload(self, obj: StoreObject, path: Path, md5: str) -> None:
        dest = self.root.joinpath(*obj.key.split("/"))
        dest.parent.mkdir(parents=True, exist_ok=True)
        tmp = dest.with_name(f".{dest.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        try:
            with open(path, "rb") as src, open(tmp, "wb") as out:
                while block := src.read(8 << 20):
                    out.write(block)
            fault_point("upload", obj.key)  # a kill here leaves the .tmp a sweep must remove
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
    where = location(text)
    if where.kind == "s3":
        return S3Target(text, endpoint=endpoint, region=region, **options)
    if endpoint or region:
        raise PublishRefusedError("--endpoint and --region apply to s3:// targets only")
    if where.kind == "http":
        raise PublishRefusedError(
            f"cannot publish to {text}: a web server is read-only here; publish to the bucket or"
            " directory it serves (s3://bucket/prefix or a local path)"
        )
    if where.kind == "unsupported":
        raise PublishRefusedError(f"unsupported target {text!r}: use s3://bucket/prefix or a path")
    return DirectoryTarget(where.path or text)

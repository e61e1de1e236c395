"""Byte access to a store: a local directory, or http(s):// and s3:// through obstore.

The reader needs four operations and nothing more: whole-object GET, bounded byte-range GET, the
length of an object (HEAD, only when shard_bytes does not list a shard, spec 7.3), and, for the
writer and the validator, put and list. Keys are store-relative and are checked so that nothing
named by a store's metadata can reach a path outside the store.

The remote :class:`ObjectStore` also lists with ETags, reads object attributes and uploads files
(single PUT up to a threshold, multipart above) for ``cz publish``. obstore is imported only
when a remote store is opened, so ``import chronozarr`` does not load it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from chronozarr._optional import require
from chronozarr.errors import (
    ChronozarrError,
    CorruptStoreError,
    RemoteStoreError,
    StoreAccessError,
    UnsupportedError,
)
from chronozarr.io._faults import fault_point
from chronozarr.io._location import location
from chronozarr.io._objects import LEASE_KEY, is_work_file

__all__ = [
    "LocalStore",
    "ObjectInfo",
    "ObjectStore",
    "RemoteStoreError",
    "RequestStats",
    "Store",
    "check_key",
    "open_store_bytes",
]


def check_key(key: str) -> str:
    """Refuse keys that could escape the store (absolute, ``..``, backslashes, empty parts)."""
    parts = key.split("/")
    if (
        not key
        or key.startswith("/")
        or "\\" in key
        or any(p in ("", ".", "..") for p in parts)
        or "\x00" in key
    ):
        raise CorruptStoreError(f"refusing store key {key!r}: not a plain relative key")
    return key


@dataclass
class RequestStats:
    """Counts of requests made through a store (for tests and benchmarks)."""

    gets: int = 0
    range_gets: int = 0
    heads: int = 0
    puts: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    keys: list[tuple[str, str]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, kind: str, key: str, nbytes: int = 0) -> None:
        if key == LEASE_KEY:  # the writer's lease is no object of the store (decision 0051)
            return
        with self._lock:
            if kind == "get":
                self.gets += 1
                self.bytes_read += nbytes
            elif kind == "range":
                self.range_gets += 1
                self.bytes_read += nbytes
            elif kind == "head":
                self.heads += 1
            elif kind == "put":
                self.puts += 1
                self.bytes_written += nbytes
            self.keys.append((kind, key))

    def reset(self) -> None:
        with self._lock:
            self.gets = self.range_gets = self.heads = self.puts = 0
            self.bytes_read = self.bytes_written = 0
            self.keys.clear()


class Store(Protocol):
    url: str
    stats: RequestStats

    def get(self, key: str) -> bytes | None: ...
    def get_range(self, key: str, start: int, end: int) -> bytes | None: ...
    def size(self, key: str) -> int | None: ...
    def put(self, key: str, data: bytes) -> None: ...
    def delete(self, key: str) -> None: ...
    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]: ...


class LocalStore:
    """A store in a local directory. ``put`` is atomic (temporary file, then rename)."""

    def __init__(self, root: str | os.PathLike[str]):
        self.root = Path(root).resolve()
        self.url = str(self.root)
        self.stats = RequestStats()

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["root"])  # type: ignore[misc]

    def _path(self, key: str) -> Path:
        return self.root.joinpath(*check_key(key).split("/"))

    def _read_path(self, key: str) -> Path:
        """The path of ``key`` for reading: never one that resolves outside the root (a symlink
        in the store pointing elsewhere is refused, decision 0013)."""
        path = self._path(key)
        real = os.path.realpath(path)
        if real != str(self.root) and not real.startswith(str(self.root) + os.sep):
            raise CorruptStoreError(
                f"{self.url}/{key}: resolves outside the store (a symlink to {real}); refused"
            )
        return path

    def _access_error(self, key: str, exc: OSError) -> StoreAccessError:
        return StoreAccessError(f"{self.url}/{key}: cannot read: {exc.strerror or exc}")

    def get(self, key: str) -> bytes | None:
        try:
            data = self._read_path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):  # absent: None (spec 9)
            return None
        except OSError as exc:  # permissions, name too long, I/O: typed, naming the object
            raise self._access_error(key, exc) from exc
        self.stats.record("get", key, len(data))
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes [start, end) of an object, fewer when it ends earlier; None when absent.

        The range comes from a shard index or shard_bytes, i.e. from the store: it is checked
        (0 <= start <= end) and clamped to the file, so an offset of 2^63 or a length of 2^62
        never reaches seek() or an allocation.
        """
        start, end = int(start), int(end)
        if start < 0 or end < start:
            raise CorruptStoreError(f"{self.url}/{key}: invalid byte range {start}-{end}")
        try:
            with open(self._read_path(key), "rb") as fh:
                size = os.fstat(fh.fileno()).st_size
                if start >= size:
                    data = b""
                else:
                    fh.seek(start)
                    data = fh.read(min(end, size) - start)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):  # absent: None (spec 9)
            return None
        except OSError as exc:  # permissions, name too long, I/O: typed, naming the object
            raise self._access_error(key, exc) from exc
        self.stats.record("range", key, len(data))
        return data

    def size(self, key: str) -> int | None:
        self.stats.record("head", key)
        try:
            return self._read_path(key).stat().st_size
        except (FileNotFoundError, NotADirectoryError):  # absent object: None (spec 9)
            return None
        except OSError as exc:  # permissions, name too long, I/O: typed, naming the object
            raise self._access_error(key, exc) from exc

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        try:
            with open(tmp, "wb") as fh:
                fh.write(data)
            fault_point("put", key)  # a kill here leaves the .tmp a sweep must remove
            os.replace(tmp, path)
        except BaseException:  # a full disk, Ctrl-C: no temporary file left in the store
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        self.stats.record("put", key, len(data))

    def delete(self, key: str) -> None:
        fault_point("delete", key)
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        base = self.root
        if not base.is_dir():
            return
        for dirpath, _dirnames, filenames in os.walk(base):
            for name in filenames:
                if is_work_file(name):  # a write in progress, not an object
                    continue
                full = Path(dirpath) / name
                key = full.relative_to(base).as_posix()
                if key.startswith(prefix):
                    yield key, full.stat().st_size


def _short(exc: BaseException) -> str:
    """The first paragraph of an obstore error: what failed and the host's status line."""
    text = str(exc).split("\n\nDebug source:", 1)[0].strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    first = lines[0] if lines else type(exc).__name__
    return first if len(first) <= 500 else first[:500] + "..."


#: S3 error codes worth saying in words before the host's own message.
_S3_HINTS = {
    "NoSuchBucket": "the bucket does not exist; ",
    "AccessDenied": "access denied (check the credentials and the bucket policy); ",
    "InvalidAccessKeyId": "the access key is not known to this host (AWS_ACCESS_KEY_ID); ",
    "SignatureDoesNotMatch": "the request signature does not match (AWS_SECRET_ACCESS_KEY); ",
}


#: Request-level retries of remote stores: bounded, so that an unreachable host fails in seconds
#: rather than after obstore's default of 10 retries over 3 minutes. Only transient failures
#: (5xx, connection errors, timeouts of safe requests) are retried by obstore.
DEFAULT_RETRY: dict[str, Any] = {"max_retries": 3, "retry_timeout_s": 30.0, "init_backoff_s": 0.1}


def _retry_config(retry: Mapping[str, Any] | None) -> dict[str, Any]:
    conf = {**DEFAULT_RETRY, **(retry or {})}
    return {
        "max_retries": int(conf["max_retries"]),
        "retry_timeout": timedelta(seconds=float(conf["retry_timeout_s"])),
        "backoff": {
            "init_backoff": timedelta(seconds=float(conf["init_backoff_s"])),
            "max_backoff": timedelta(seconds=5),
            "base": 2,
        },
    }


@dataclass(frozen=True)
class ObjectInfo:
    """One listed object: store-relative ``key``, ``size`` in bytes and the host's ``etag``."""

    key: str
    size: int
    etag: str | None = None


class ObjectStore:
    """A remote store over obstore: ``http(s)://`` (GET and bounded byte ranges, HEAD) or
    ``s3://bucket/prefix`` (any S3-compatible host).

    One obstore client per instance, so every request of a reader goes through one pool of
    keep-alive connections (measured: 4 TCP connections for 446 requests to nginx). Byte ranges
    are always bounded (``Range: bytes=a-b``): a bounded range needs no CORS preflight in a
    browser and no object length (spec 7.3, 9).

    For ``s3://`` the usual AWS environment variables apply (AWS_ACCESS_KEY_ID,
    AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION, AWS_ENDPOINT_URL; AWS_SKIP_SIGNATURE
    for a public bucket). Options override them: ``endpoint``, ``region``, ``anonymous``
    (unsigned requests), ``client_options`` (obstore ClientConfig), ``retry`` (``max_retries``,
    ``retry_timeout_s``, ``init_backoff_s``), and any other obstore S3Store keyword.

    Failures other than a 404 raise :class:`RemoteStoreError`; an HTTP host cannot list, so
    :meth:`list` raises :class:`UnsupportedError` there (the validator then HEADs each object
    it expects).
    """

    def __init__(self, url: str, **options: Any):
        #: ``require`` or ``warn``: a host without conditional writes (decision 0051, _cas)
        self.conditional_writes = options.get("conditional_writes")
        # lazy: only remote stores need obstore (the 'remote' extra); `import chronozarr` stays light
        obstore = require("obstore", "remote", f"reading {url.split(':', 1)[0]}:// stores")
        from obstore.store import HTTPStore, S3Store

        self._obstore = obstore
        self.url = url.rstrip("/")
        self.stats = RequestStats()
        self._init_options = dict(options)
        opts = dict(options)
        opts.pop("conditional_writes", None)
        parsed = urlparse(self.url)
        self.scheme = parsed.scheme
        retry = _retry_config(opts.pop("retry", None))
        client: dict[str, Any] = {"connect_timeout": "10s"}
        client.update(opts.pop("client_options", None) or {})
        if parsed.scheme in ("http", "https"):
            if parsed.scheme == "http":
                client["allow_http"] = True
            if opts:
                raise ChronozarrError(
                    f"unknown option(s) {sorted(opts)} for an {parsed.scheme} store {url!r}"
                )
            # no trailing slash: obstore joins base and key with one "/" of its own, and a
            # doubled slash is a different key to most hosts (nginx merges it, S3/CDNs do not)
            self._store: Any = HTTPStore.from_url(
                self.url,
                client_options=client,  # type: ignore[arg-type]  # a ClientConfig TypedDict
                retry_config=retry,  # type: ignore[arg-type]  # a RetryConfig TypedDict
            )
        elif parsed.scheme == "s3":
            if not parsed.netloc:
                raise ChronozarrError(f"no bucket in {url!r}: expected s3://bucket/prefix")
            endpoint = (
                opts.pop("endpoint", None)
                or os.environ.get("AWS_ENDPOINT_URL_S3")
                or os.environ.get("AWS_ENDPOINT_URL")
            )
            if endpoint and endpoint.startswith("http://"):
                client["allow_http"] = True
            kwargs: dict[str, Any] = {}
            if endpoint:
                kwargs["endpoint"] = endpoint
            region = (
                opts.pop("region", None)
                or os.environ.get("AWS_REGION")
                or os.environ.get("AWS_DEFAULT_REGION")
            )
            if region:
                kwargs["region"] = region
            if opts.pop("anonymous", False):
                kwargs["skip_signature"] = True
            kwargs.update(opts)
            prefix = parsed.path.strip("/")
            self.bucket = parsed.netloc
            self.prefix = prefix
            self._store = S3Store(
                parsed.netloc,
                prefix=prefix or None,
                client_options=client,  # type: ignore[arg-type]  # a ClientConfig TypedDict
                retry_config=retry,  # type: ignore[arg-type]  # a RetryConfig TypedDict
                **kwargs,
            )
        else:
            raise ChronozarrError(f"unsupported URL scheme {parsed.scheme!r} in {url!r}")

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "options": self._init_options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], **state["options"])  # type: ignore[misc]

    def _error(self, what: str, key: str, exc: BaseException) -> RemoteStoreError:
        text = str(exc)
        hint = next((h for code, h in _S3_HINTS.items() if f"<Code>{code}</Code>" in text), "")
        kind = type(exc).__name__
        if not hint and kind == "PermissionDeniedError":
            hint = _S3_HINTS["AccessDenied"]
        elif not hint and kind == "UnauthenticatedError":
            hint = "not authenticated (check the credentials); "
        if "169.254.169.254" in text:  # obstore fell back to the EC2 instance metadata service
            hint = (
                "no AWS credentials found (set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or"
                " open a public bucket with anonymous=True / AWS_SKIP_SIGNATURE=true); "
            )
        return RemoteStoreError(f"{what} {self.url}/{key} failed: {hint}{_short(exc)}")

    def get(self, key: str) -> bytes | None:
        try:
            data = bytes(self._obstore.get(self._store, check_key(key)).bytes())
        except FileNotFoundError:  # a 404 is an absent object, not an error
            return None
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("GET", key, exc) from exc
        self.stats.record("get", key, len(data))
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        """Bytes [start, end) of an object with one bounded range request; None on a 404."""
        if start < 0 or end < start:
            raise CorruptStoreError(f"{self.url}/{key}: invalid byte range {start}-{end}")
        if end == start:  # as LocalStore: nothing to read (HTTP cannot express an empty range)
            return b""
        try:
            data = bytes(self._obstore.get_range(self._store, check_key(key), start=start, end=end))
        except FileNotFoundError:  # a 404 is an absent object, not an error
            return None
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error(f"GET bytes={start}-{end - 1} of", key, exc) from exc
        self.stats.record("range", key, len(data))
        return data

    def size(self, key: str) -> int | None:
        self.stats.record("head", key)
        try:
            return int(self._obstore.head(self._store, check_key(key))["size"])
        except FileNotFoundError:  # a 404 is an absent object, not an error
            return None
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("HEAD", key, exc) from exc

    def attributes(self, key: str) -> dict[str, str] | None:
        """The object's attributes (Cache-Control, Content-Type, user metadata) with one HEAD;
        None when the object does not exist."""
        self.stats.record("head", key)
        try:
            result = self._obstore.get(self._store, check_key(key), options={"head": True})
        except FileNotFoundError:  # a 404 is an absent object, not an error
            return None
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("HEAD", key, exc) from exc
        return {str(k): str(v) for k, v in dict(result.attributes).items()}

    def put(self, key: str, data: bytes, attributes: dict[str, str] | None = None) -> None:
        fault_point("put", key)  # the kill-point test's hook on the object-storage path
        try:
            self._obstore.put(
                self._store, check_key(key), data, attributes=attributes, use_multipart=False
            )
        except FileNotFoundError as exc:  # a PUT 404: the bucket is missing
            raise RemoteStoreError(
                f"PUT {self.url}/{key} failed: the bucket does not exist ({_short(exc)})"
            ) from exc
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("PUT", key, exc) from exc
        self.stats.record("put", key, len(data))

    def put_mode(
        self, key: str, data: bytes, mode: Any, attributes: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """A conditional PUT (obstore ``mode``: ``"create"`` or ``{"e_tag", "version"}``);
        returns the new e-tag and version. The host's refusal is raised as obstore raised it
        (:mod:`chronozarr.io._cas` reads it)."""
        fault_point("put", key)
        result = self._obstore.put(
            self._store, check_key(key), data, attributes=attributes, mode=mode, use_multipart=False
        )
        self.stats.record("put", key, len(data))
        return dict(result)

    def put_file(
        self,
        key: str,
        path: str | os.PathLike[str],
        attributes: dict[str, str] | None = None,
        *,
        multipart_threshold: int = 64 << 20,
        part_size: int = 16 << 20,
    ) -> None:
        """Upload a local file. Up to ``multipart_threshold`` bytes in one PUT (so S3's ETag is
        the MD5 of the content), larger files as a multipart upload of ``part_size`` parts."""
        size = Path(path).stat().st_size
        if size <= multipart_threshold:
            self.put(key, Path(path).read_bytes(), attributes)
            return
        try:
            self._obstore.put(
                self._store,
                check_key(key),
                Path(path),
                attributes=attributes,
                use_multipart=True,
                chunk_size=part_size,
                max_concurrency=4,
            )
        except FileNotFoundError as exc:  # a PUT 404: the bucket is missing
            raise RemoteStoreError(
                f"PUT {self.url}/{key} failed: the bucket does not exist ({_short(exc)})"
            ) from exc
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("PUT (multipart)", key, exc) from exc
        self.stats.record("put", key, size)

    def delete(self, key: str) -> None:
        fault_point("delete", key)
        try:
            self._obstore.delete(self._store, check_key(key))
        except FileNotFoundError:  # deleting an absent object is a no-op
            pass
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("DELETE", key, exc) from exc

    def list_objects(self, prefix: str = "") -> Iterator[ObjectInfo]:
        """Every object under ``prefix`` with its size and ETag (S3 only; HTTP cannot list)."""
        if self.scheme != "s3":
            raise UnsupportedError(
                f"{self.url}: an {self.scheme} host cannot list objects; read keys from metadata"
            )
        try:
            for batch in self._obstore.list(self._store, prefix=prefix or None):
                for meta in batch:
                    if is_work_file(meta["path"].rsplit("/", 1)[-1]):  # the lease: no object
                        continue
                    yield ObjectInfo(meta["path"], int(meta["size"]), meta.get("e_tag"))
        except FileNotFoundError as exc:  # a LIST 404: the bucket is missing
            raise RemoteStoreError(
                f"LIST {self.url}/{prefix} failed: the bucket does not exist ({_short(exc)})"
            ) from exc
        except UnsupportedError:  # HTTP cannot list: the caller HEADs instead
            raise
        except Exception as exc:  # any other failure: typed, without the debug dump
            raise self._error("LIST", prefix, exc) from exc

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        for info in self.list_objects(prefix):
            yield info.key, info.size


def open_store_bytes(path_or_url: str | os.PathLike[str], **options: Any) -> Store:
    """A Store for a local path, ``file://`` URL, ``http(s)://`` or ``s3://`` URL."""
    loc = location(path_or_url)
    if loc.is_remote:
        return ObjectStore(loc.text, **options)
    if loc.path is None:
        raise ChronozarrError(f"unsupported URL scheme {loc.scheme!r} in {loc.text!r}")
    return LocalStore(loc.path)

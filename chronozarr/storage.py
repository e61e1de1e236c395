"""Byte access to a store: a local directory, or http(s):// and s3:// through obstore.

The reader needs four operations and nothing more: whole-object GET, bounded byte-range GET, the
length of an object (HEAD, only when shard_bytes does not list a shard, spec 7.3), and, for the
writer and the validator, put and list. Keys are store-relative and are checked so that nothing
named by a store's metadata can reach a path outside the store.
"""

from __future__ import annotations

import contextlib
import os
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from chronozarr.errors import ChronozarrError, CorruptStoreError

__all__ = ["LocalStore", "ObjectStore", "RequestStats", "Store", "check_key", "open_store_bytes"]


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

    def get(self, key: str) -> bytes | None:
        try:
            data = self._path(key).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        self.stats.record("get", key, len(data))
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        try:
            with open(self._path(key), "rb") as fh:
                fh.seek(start)
                data = fh.read(end - start)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        self.stats.record("range", key, len(data))
        return data

    def size(self, key: str) -> int | None:
        self.stats.record("head", key)
        try:
            return self._path(key).stat().st_size
        except (FileNotFoundError, NotADirectoryError):
            return None

    def put(self, key: str, data: bytes) -> None:
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        self.stats.record("put", key, len(data))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(key).unlink()

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        base = self.root
        if not base.is_dir():
            return
        for dirpath, _dirnames, filenames in os.walk(base):
            for name in filenames:
                if name.startswith(".") and name.endswith(".tmp"):
                    continue
                full = Path(dirpath) / name
                key = full.relative_to(base).as_posix()
                if key.startswith(prefix):
                    yield key, full.stat().st_size


class ObjectStore:
    """A remote store over obstore (HTTP(S) with range requests, or S3-compatible).

    Connections are pooled by obstore's client. For s3:// the usual AWS environment variables
    apply (AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, ...); ``options`` override them.
    """

    def __init__(self, url: str, **options: Any):
        import obstore  # lazy: only remote stores need it
        from obstore.store import HTTPStore, S3Store

        self._obstore = obstore
        self.url = url.rstrip("/")
        self.stats = RequestStats()
        self._options = dict(options)
        parsed = urlparse(self.url)
        if parsed.scheme in ("http", "https"):
            client = {"allow_http": True} if parsed.scheme == "http" else {}
            client.update(self._options.pop("client_options", {}))
            self._store = HTTPStore.from_url(self.url + "/", client_options=client)
        elif parsed.scheme == "s3":
            endpoint = self._options.pop("endpoint", None) or os.environ.get("AWS_ENDPOINT_URL")
            client = dict(self._options.pop("client_options", {}))
            if endpoint and endpoint.startswith("http://"):
                client["allow_http"] = True
            kwargs: dict[str, Any] = {}
            if endpoint:
                kwargs["endpoint"] = endpoint
            region = self._options.pop("region", None) or os.environ.get("AWS_REGION")
            if region:
                kwargs["region"] = region
            kwargs.update(self._options)
            bucket = parsed.netloc
            prefix = parsed.path.strip("/")
            self._store = S3Store(
                bucket, prefix=prefix or None, client_options=client or None, **kwargs
            )
        else:
            raise ChronozarrError(f"unsupported URL scheme {parsed.scheme!r} in {url!r}")

    def __getstate__(self) -> dict[str, Any]:
        return {"url": self.url, "options": self._options}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], **state["options"])  # type: ignore[misc]

    def get(self, key: str) -> bytes | None:
        try:
            data = bytes(self._obstore.get(self._store, check_key(key)).bytes())
        except FileNotFoundError:
            return None
        self.stats.record("get", key, len(data))
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        try:
            data = bytes(self._obstore.get_range(self._store, check_key(key), start=start, end=end))
        except FileNotFoundError:
            return None
        self.stats.record("range", key, len(data))
        return data

    def size(self, key: str) -> int | None:
        self.stats.record("head", key)
        try:
            return int(self._obstore.head(self._store, check_key(key))["size"])
        except FileNotFoundError:
            return None

    def put(self, key: str, data: bytes, attributes: dict[str, str] | None = None) -> None:
        self._obstore.put(self._store, check_key(key), data, attributes=attributes)
        self.stats.record("put", key, len(data))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._obstore.delete(self._store, check_key(key))

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        for batch in self._obstore.list(self._store, prefix=prefix or None):
            for meta in batch:
                yield meta["path"], int(meta["size"])


def open_store_bytes(path_or_url: str | os.PathLike[str], **options: Any) -> Store:
    """A Store for a local path, ``file://`` URL, ``http(s)://`` or ``s3://`` URL."""
    text = os.fspath(path_or_url)
    parsed = urlparse(text)
    if parsed.scheme in ("http", "https", "s3"):
        return ObjectStore(text, **options)
    if parsed.scheme == "file":
        return LocalStore(parsed.path)
    if parsed.scheme and len(parsed.scheme) > 1:
        raise ChronozarrError(f"unsupported URL scheme {parsed.scheme!r} in {text!r}")
    return LocalStore(text)

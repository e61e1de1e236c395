"""Write targets of ``encode`` (spec 9): a local folder, an object store, or any ``Store``.

``encode`` writes through the :class:`chronozarr.io.Store` protocol (``put``, ``get``,
``get_range``, ``list``, ``delete``): a local path or ``file://`` URL is a
:class:`~chronozarr.io.LocalStore`; ``s3://bucket/prefix`` (any S3-compatible host, through
obstore) an :class:`~chronozarr.io.ObjectStore`; an obstore store object (``MemoryStore``,
``LocalStore``, ``S3Store``...) is wrapped by :class:`ObstoreTarget`; any other object with the
protocol's methods is used as it is. A target that cluster workers write to must pickle (the two
built-in stores pickle as their URL and options; an obstore ``MemoryStore`` does not, as it
lives in one process).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from chronozarr.errors import ChronozarrError, EncodeError
from chronozarr.io._location import location
from chronozarr.io._objects import is_work_file
from chronozarr.io._storage import LocalStore, ObjectStore, RequestStats, Store, check_key

__all__ = ["ObstoreTarget", "open_target", "store_is_empty"]


class ObstoreTarget:
    """A :class:`Store` over an obstore store object (MemoryStore, LocalStore, S3Store, ...)."""

    def __init__(self, store: Any, url: str | None = None):
        import obstore  # the caller handed us an obstore store: obstore is installed

        self._obstore = obstore
        self._store = store
        self.url = url or repr(store)
        self.stats = RequestStats()

    def __getstate__(self) -> dict[str, Any]:
        return {"store": self._store, "url": self.url}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["store"], state["url"])  # type: ignore[misc]

    def get(self, key: str) -> bytes | None:
        try:
            data = bytes(self._obstore.get(self._store, check_key(key)).bytes())
        except FileNotFoundError:  # absent: None, as every Store
            return None
        self.stats.record("get", key, len(data))
        return data

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        if end <= start:
            return b""
        try:
            data = bytes(self._obstore.get_range(self._store, check_key(key), start=start, end=end))
        except FileNotFoundError:  # absent: None, as every Store
            return None
        self.stats.record("range", key, len(data))
        return data

    def size(self, key: str) -> int | None:
        self.stats.record("head", key)
        try:
            return int(self._obstore.head(self._store, check_key(key))["size"])
        except FileNotFoundError:  # absent: None, as every Store
            return None

    def put(self, key: str, data: bytes) -> None:
        self._obstore.put(self._store, check_key(key), data)
        self.stats.record("put", key, len(data))

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):  # deleting an absent object: a no-op
            self._obstore.delete(self._store, check_key(key))

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        for batch in self._obstore.list(self._store, prefix=prefix or None):
            for meta in batch:
                if not is_work_file(meta["path"].rsplit("/", 1)[-1]):  # the lease: no object
                    yield meta["path"], int(meta["size"])


_METHODS = ("get", "get_range", "put", "delete", "list")


def open_target(store: Any, options: dict[str, Any] | None = None) -> Store:
    """The :class:`Store` that ``encode`` writes ``store`` through (see the module docstring).

    ``options`` go to :class:`ObjectStore` for an ``s3://`` URL (endpoint, region,
    client_options...). http(s) hosts cannot be written: refused with a hint.
    """
    if all(callable(getattr(store, m, None)) for m in _METHODS) and hasattr(store, "url"):
        if not hasattr(store, "stats"):
            store.stats = RequestStats()
        return store  # type: ignore[no-any-return]  # a Store by duck typing
    if type(store).__module__.startswith("obstore"):
        return ObstoreTarget(store)
    try:
        loc = location(store)
    except TypeError as exc:  # not path-like (os.fspath refused it)
        raise EncodeError(
            "store", f"expected a path, an s3:// URL or a Store, got {store!r}"
        ) from exc
    if loc.path is not None:
        if options:
            raise EncodeError("store_options", "options are for object stores (s3://) only")
        return LocalStore(loc.path)
    if loc.kind == "s3":
        try:
            return ObjectStore(loc.text, **(options or {}))
        except ChronozarrError as exc:  # a missing bucket name, an unknown option
            raise EncodeError("store", str(exc)) from exc
    raise EncodeError(
        "store",
        f"{loc.text!r}: encode writes a local folder, an s3:// prefix or a Store object; an "
        f"{loc.scheme}:// host cannot be written (build locally, then `cz publish`)",
    )


def store_is_empty(target: Store) -> bool:
    """True when ``target`` holds no object (one LIST, stopped at the first key)."""
    if isinstance(target, LocalStore):
        root = target.root
        if not root.exists():
            return True
        if not root.is_dir():
            return False
    return all(is_work_file(key.rsplit("/", 1)[-1]) for key, _size in target.list(""))

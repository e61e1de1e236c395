"""Write targets of ``encode`` (spec 9): a local folder, an object store, or any ``Store``.

``encode`` writes through the :class:`chronozarr.storage.Store` protocol (``put``, ``get``,
``get_range``, ``list``, ``delete``): a local path or ``file://`` URL is a
:class:`~chronozarr.storage.LocalStore`; ``s3://bucket/prefix`` (any S3-compatible host, through
obstore) an :class:`~chronozarr.storage.ObjectStore`; an obstore store object (``MemoryStore``,
``LocalStore``, ``S3Store``...) is wrapped by :class:`ObstoreTarget`; any other object with the
protocol's methods is used as it is. A target that cluster workers write to must pickle (the two
built-in stores pickle as their URL and options; an obstore ``MemoryStore`` does not, as it
lives in one process).

Also here: the resumable work prefix of decision 0017 (``.cz-build/<key>/``), which holds one
summary object per finished task until the commit removes it.
"""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from typing import Any

from chronozarr.errors import ChronozarrError, EncodeError
from chronozarr.location import location
from chronozarr.storage import LocalStore, ObjectStore, RequestStats, Store, check_key

__all__ = [
    "WORK_PREFIX",
    "ObstoreTarget",
    "WorkLog",
    "clear_work",
    "open_target",
    "store_is_empty",
]

#: Where a resumable build keeps its progress inside the target (decision 0017).
WORK_PREFIX = ".cz-build"


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
    return next(iter(target.list("")), None) is None


class WorkLog:
    """The summaries of finished tasks under ``.cz-build/<key>/`` (decision 0017).

    ``done(name)`` reads a task's summary back (``None`` when the task has not finished);
    ``record(name, summary)`` writes it, after the task's chunk objects. JSON keeps every
    float exactly (``repr`` round-trips), so a resumed build sums the same volatility terms.
    """

    def __init__(self, target: Store, key: str):
        self.target = target
        self.key = key
        self.prefix = f"{WORK_PREFIX}/{key}"

    def started(self) -> bool:
        return self.target.get(f"{self.prefix}/started.json") is not None

    def start(self, description: dict[str, Any]) -> None:
        self.target.put(f"{self.prefix}/started.json", json.dumps(description).encode())

    def done(self, name: str) -> Any:
        blob = self.target.get(f"{self.prefix}/{name}.json")
        return None if blob is None else json.loads(blob)

    def record(self, name: str, summary: Any) -> None:
        self.target.put(f"{self.prefix}/{name}.json", json.dumps(summary).encode())

    def finished(self, level: str) -> list[str]:
        """Names of the tasks of ``level`` whose summary exists (one LIST, not one GET each)."""
        base = f"{self.prefix}/{level}/"
        return [
            f"{level}/{k[len(base) : -len('.json')]}"
            for k, _ in self.target.list(base)
            if k.endswith(".json")
        ]

    def other_keys(self) -> set[str]:
        """Work keys of other (different) builds that left a partial at this target."""
        keys = {k.split("/", 2)[1] for k, _ in self.target.list(f"{WORK_PREFIX}/") if "/" in k}
        return keys - {self.key}


def clear_work(target: Store, key: str) -> None:
    """Remove ``.cz-build/<key>/`` (after the root is written: the commit, decision 0017)."""
    if isinstance(target, LocalStore):
        shutil.rmtree(target.root / WORK_PREFIX / key, ignore_errors=True)
        work = target.root / WORK_PREFIX
        if work.is_dir() and not any(work.iterdir()):
            work.rmdir()
        return
    for k, _size in list(target.list(f"{WORK_PREFIX}/{key}/")):
        target.delete(k)

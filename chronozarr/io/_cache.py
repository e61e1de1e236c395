"""One least-recently-used cache for the reader, the writer and the toolkit.

Readers cache shard indexes and anchor chunks under a byte budget (spec 10 allows any cache;
the budget bounds memory), the writer keeps the last few planes or input batches of one cell
under an entry count, and the toolkit caches spilled composites by bytes. All of them are this
class: bounded by ``max_bytes`` (the sum of each entry's ``nbytes``), by ``max_items``, or both.
The most recently used entry is never evicted, so one entry larger than the budget is still
cached (and served) until the next one arrives. Thread-safe: one lock guards the bookkeeping;
``get_or_make`` builds a missing value outside the lock, so slow builds of different keys run in
parallel (two threads building the same key both build it; the first stored value wins).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

__all__ = ["LRU"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


def _nbytes(value: Any) -> int:
    """The default size of a value: ``value.nbytes`` (numpy arrays) or ``len`` (bytes)."""
    size = getattr(value, "nbytes", None)
    if isinstance(size, int):
        return size
    return len(value)


class LRU(Generic[K, V]):
    """A thread-safe LRU mapping bounded by total bytes and/or entry count."""

    def __init__(self, max_bytes: int | None = None, *, max_items: int | None = None) -> None:
        if max_bytes is None and max_items is None:
            raise ValueError("an LRU needs max_bytes, max_items or both")
        self.max_bytes = max_bytes
        self.max_items = max_items
        self._data: OrderedDict[K, V] = OrderedDict()
        self._sizes: dict[K, int] = {}
        self._total = 0
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    @property
    def nbytes(self) -> int:
        """The summed size of the cached entries."""
        return self._total

    def get(self, key: K) -> V | None:
        """The cached value (now most recently used), or ``None``."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key: K, value: V, nbytes: int | None = None) -> None:
        """Cache ``value`` as the most recently used entry, then evict the oldest beyond the
        bounds. ``nbytes`` defaults to ``value.nbytes`` or ``len(value)`` when a byte budget is
        set (and to 0 without one)."""
        if nbytes is None:
            nbytes = _nbytes(value) if self.max_bytes is not None else 0
        with self._lock:
            self._store(key, value, nbytes)

    def get_or_make(self, key: K, make: Callable[[], V], nbytes: int | None = None) -> V:
        """The cached value of ``key``, or ``make()`` cached (see the module docstring on races)."""
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
        value = make()
        size = nbytes
        if size is None:
            size = _nbytes(value) if self.max_bytes is not None else 0
        with self._lock:
            if key in self._data:  # built meanwhile by another thread: keep the first
                self._data.move_to_end(key)
                return self._data[key]
            self._store(key, value, size)
        return value

    def clear(self) -> None:
        with self._lock:
            self._data.clear()
            self._sizes.clear()
            self._total = 0

    def _store(self, key: K, value: V, nbytes: int) -> None:
        if key in self._data:
            self._total -= self._sizes[key]
        self._data[key] = value
        self._sizes[key] = nbytes
        self._total += nbytes
        self._data.move_to_end(key)
        while len(self._data) > 1 and self._over():
            old, _ = self._data.popitem(last=False)
            self._total -= self._sizes.pop(old)

    def _over(self) -> bool:
        return (self.max_bytes is not None and self._total > self.max_bytes) or (
            self.max_items is not None and len(self._data) > self.max_items
        )

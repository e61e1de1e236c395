"""Object headers of a store written straight to S3 by a cluster build (spec 9, 14; decision 0017).

``cz publish`` gives each uploaded object a Cache-Control by its class (short for what an
append rewrites in place, long and immutable for the rest), a Content-Type and its MD5 as user
metadata (:mod:`cz.publish.classify`, :mod:`cz.publish.targets`). A cluster build writes the
objects from the workers without a local copy to classify, so :class:`HeaderedStore` decides
the class from the key as it is written, with the same rule: metadata, the time coordinates,
volatility and provenance_items are in place; with shards, so is the trailing time shard of
data, mask and coverage (spec 14), and the time-series companion's chunks holding the last
timestep (docs/spec.md C25); every other chunk is immutable. The store is then served as
it is, with the headers a published store has.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any

from chronozarr.io import (
    ROOT_KEY,
    WORK_PREFIX,
    ObjectStore,
    RequestStats,
    Version,
    put_if,
    read_versioned,
)
from cz.publish.classify import LONG_CACHE_CONTROL, SHORT_CACHE_CONTROL
from cz.publish.targets import MD5_METADATA_KEY

_IN_PLACE = re.compile(
    rf"(.*/)?{re.escape(ROOT_KEY)}|(\d+/)?time/c/0|volatility/c/0/0|provenance_items/c/\d+"
)
_TIME_CHUNK = re.compile(r"\d+/[^/]+/c/(\d+)/.+")  # data, mask, coverage of a level
_HISTORY_CHUNK = re.compile(r"\d+/[^/]+/values/c/(\d+)/.+")  # the companion (spec C25)


def in_place(
    key: str, n_time: int, shard_time: int | None, history_time: int | None = None
) -> bool:
    """True when an append may rewrite ``key`` under the same name (spec 14): with a
    time-series companion of ``history_time`` timesteps a chunk, its chunks holding the last
    timestep too (docs/spec.md C25)."""
    if _IN_PLACE.fullmatch(key) or key.startswith(WORK_PREFIX + "/"):
        return True
    h = _HISTORY_CHUNK.fullmatch(key)
    if h is not None:
        return bool(history_time and int(h.group(1)) == (n_time - 1) // history_time)
    m = _TIME_CHUNK.fullmatch(key)
    return bool(shard_time and m and int(m.group(1)) == (n_time - 1) // shard_time)


class HeaderedStore:
    """An :class:`ObjectStore` whose puts carry the headers ``cz publish`` would set."""

    def __init__(
        self,
        url: str,
        n_time: int,
        shard_time: int | None,
        history_time: int | None = None,
        **options: Any,
    ):
        self.inner = ObjectStore(url, **options)
        self.n_time = n_time
        self.shard_time = shard_time
        self.history_time = history_time
        self.url = self.inner.url
        self._options = options

    @property
    def stats(self) -> RequestStats:
        return self.inner.stats

    def __getstate__(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "n_time": self.n_time,
            "shard_time": self.shard_time,
            "history_time": self.history_time,
            "options": self._options,
        }

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["url"], state["n_time"], state["shard_time"], state["history_time"],
            **state["options"],
        )  # fmt: skip

    def headers(self, key: str, data: bytes) -> dict[str, str]:
        short = in_place(key, self.n_time, self.shard_time, self.history_time)
        return {
            "Cache-Control": SHORT_CACHE_CONTROL if short else LONG_CACHE_CONTROL,
            "Content-Type": (
                "application/json" if key.rsplit("/", 1)[-1] == ROOT_KEY
                else "application/octet-stream"
            ),
            MD5_METADATA_KEY: hashlib.md5(data).hexdigest(),
        }  # fmt: skip

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data, self.headers(key, data))

    def put_if(self, key: str, data: bytes, expected: Version) -> Version:
        """A conditional put with this object's headers (the root commit, decision 0051)."""
        return put_if(self.inner, key, data, expected, attributes=self.headers(key, data))

    def read_versioned(self, key: str) -> tuple[bytes | None, Version]:
        return read_versioned(self.inner, key)

    def get(self, key: str) -> bytes | None:
        return self.inner.get(key)

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        return self.inner.get_range(key, start, end)

    def size(self, key: str) -> int | None:
        return self.inner.size(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        return self.inner.list(prefix)

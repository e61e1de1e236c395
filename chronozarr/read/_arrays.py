"""Raw chunk access to one array of a store (spec 7, 10 step 6): the chunk or the inner chunk of a
shard, its index read once with a bounded range and cached, missing objects decoded as fill.

Its own module so that the reader and the time-series companion's reads (``_history``) both use
it without importing each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError
from chronozarr.format import EMPTY, ArrayInfo, ChunkCodec, index_nbytes, parse_index
from chronozarr.io import LRU, Store

__all__ = ["ArrayReader"]


class ArrayReader:
    """Raw chunk access to one array: ``inner(t, r, c)`` returns the stored inner chunk.

    For sharded arrays the index of each shard is read once (bounded range from ``shard_bytes``
    when listed, else HEAD then range, spec 7.2/7.3) and cached. Missing shards, chunks and empty
    inner chunks decode as fill_value (spec 7.2). ``chunk_reads`` counts inner-chunk reads.
    """

    def __init__(
        self,
        store: Store,
        path: str,
        info: ArrayInfo,
        shard_bytes: Mapping[str, int] | None = None,
        index_cache: LRU[Any, Any] | None = None,
    ):
        self.store = store
        self.path = path
        self.info = info
        self.shard_bytes = dict(shard_bytes or {})
        self._index_cache = index_cache if index_cache is not None else LRU(64 << 20)
        try:
            self._codec = ChunkCodec(info.codecs, info.dtype, info.inner_chunk_shape)
        except (
            TypeError,
            ValueError,
            KeyError,
            AttributeError,
        ) as exc:  # a codec chain we cannot build: malformed metadata
            raise CorruptStoreError(f"{path}: malformed codec configuration ({exc!r})") from exc
        self.has_band = len(info.shape) == 4
        self.chunk_reads = 0
        try:
            self.fill = info.typed_fill()
        except (TypeError, ValueError) as exc:  # a fill_value the dtype cannot hold
            raise CorruptStoreError(f"{path}: fill_value {info.fill_value!r} ({exc})") from exc

    def key(self, t_index: int, r: int, c: int) -> str:
        """The store key of chunk (or shard) ``t_index`` of cell (r, c) (spec 2.1, 7)."""
        return self._key(t_index, r, c)

    def _key(self, t_index: int, r: int, c: int) -> str:
        sep = self.info.separator
        parts = (
            [str(t_index), "0", str(r), str(c)] if self.has_band else [str(t_index), str(r), str(c)]
        )
        return (
            f"{self.path}/c/" + sep.join(parts)
            if sep == "/"
            else f"{self.path}/c" + sep + sep.join(parts)
        )

    def empty_chunk(self) -> np.ndarray:
        return np.full(self.info.inner_chunk_shape, self.fill, dtype=self.info.dtype)

    def shard_index(self, ts: int, r: int, c: int) -> np.ndarray | None:
        """(n, 2) index of a time shard, or None when the shard object does not exist."""
        cache_key = (self.store.url, self.path, ts, r, c)
        cached = self._index_cache.get(cache_key)
        if cached is not None:
            return None if isinstance(cached, str) else cached
        key = self._key(ts, r, c)
        n = self.info.chunk_shape[0] // self.info.inner_chunk_shape[0]
        with_crc = any(cd.get("name") == "crc32c" for cd in self.info.index_codecs)
        nbytes = index_nbytes(n, with_crc)
        if self.info.index_location == "start":
            raw = self.store.get_range(key, 0, nbytes)
        else:
            length = self.shard_bytes.get(f"{ts}/{r}/{c}")
            if length is None:  # spec 7.3: HEAD fallback for a shard not listed
                length = self.store.size(key)
            raw = None if length is None else self.store.get_range(key, length - nbytes, length)
        if raw is None:
            self._index_cache.put(cache_key, "missing", 64)
            return None
        index = parse_index(raw, n, with_crc=with_crc, where=key)
        self._index_cache.put(cache_key, index, index.nbytes)
        return index

    def inner_bytes(self, t: int, r: int, c: int) -> bytes | None:
        """Encoded bytes of the inner chunk holding timestep t of cell (r, c), None if absent."""
        if not self.info.sharded:
            return self.store.get(self._key(t, r, c))
        st = self.info.chunk_shape[0]
        ts, pos = divmod(t, st)
        index = self.shard_index(ts, r, c)
        if index is None:
            return None
        offset, nbytes = (int(v) for v in index[pos])
        if offset == int(EMPTY) and nbytes == int(EMPTY):
            return None
        # spec 7.2: an entry is (offset, nbytes) of one encoded inner chunk; a compressed chunk
        # is never much larger than the decoded one, so an absurd entry is refused before any
        # request or allocation is sized by it (decision 0013)
        if nbytes > 2 * self._codec.nbytes + (64 << 10) or offset + nbytes >= 2**63:
            raise CorruptStoreError(
                f"{self._key(ts, r, c)}: shard index entry {pos} ({offset}, {nbytes}) is"
                f" impossible for a chunk of {self._codec.nbytes} bytes"
            )
        data = self.store.get_range(self._key(ts, r, c), offset, offset + nbytes)
        if data is None or len(data) != nbytes:
            raise CorruptStoreError(
                f"{self._key(ts, r, c)}: inner chunk {pos} at {offset}+{nbytes} is truncated"
            )
        return data

    def inner(self, t: int, r: int, c: int) -> np.ndarray:
        """The stored (full cs x cs) inner chunk at timestep t of cell (r, c)."""
        self.chunk_reads += 1
        data = self.inner_bytes(t, r, c)
        if data is None:
            return self.empty_chunk()
        try:
            return self._codec.decode(data)
        except Exception as exc:  # a codec error on bad bytes, or more bytes than the chunk holds:
            # CorruptStoreError included, so that the message names the array and the cell
            raise CorruptStoreError(
                f"{self.path}: cannot decode chunk t={t} cell {r},{c}: {exc}"
            ) from exc

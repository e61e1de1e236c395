"""Chunk bytes: the codec chains of spec 8 and the shard index of spec 7.2.

The compressors are numcodecs' (the same objects zarr-python 3 uses for ``zstd``, ``gzip`` and
``blosc``), so the bytes are what any Zarr v3 reader expects. Shards are assembled here rather
than through zarr-python because the writer streams inner chunks one at a time (memory bounded by
one compressed shard, never a decoded one) and append must keep old chunks at their old offsets
(spec 14). The index layout is the Zarr v3 sharding_indexed one: (offset, nbytes) uint64 pairs
in C order of the inner-chunk grid, then the crc32c of those bytes, little-endian.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import google_crc32c as _crc32c
import numcodecs
import numpy as np

from chronozarr.errors import CorruptStoreError
from chronozarr.format._bounded import decode_bounded

__all__ = [
    "EMPTY",
    "ChunkCodec",
    "build_shard",
    "compressor_for",
    "crc32c",
    "index_nbytes",
    "parse_index",
    "vlen_utf8_decode",
    "vlen_utf8_encode",
]

EMPTY = np.uint64(2**64 - 1)  # an absent inner chunk: both offset and nbytes are 2^64 - 1 (7.2)


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``, as the sharding index codec's crc32c (spec 7.2).

    google-crc32c is what numcodecs itself prefers (since 0.16.4 it warns when it finds only the
    older ``crc32c`` package); it takes bytes only, so a view is copied (indexes are small)."""
    return int(_crc32c.value(data if isinstance(data, bytes) else bytes(data)))


def compressor_for(conf: Mapping[str, Any]) -> Any:
    name = conf.get("name")
    c = conf.get("configuration") or {}
    if name == "zstd":
        return numcodecs.Zstd(level=int(c.get("level", 5)), checksum=bool(c.get("checksum", False)))
    if name == "gzip":
        return numcodecs.GZip(level=int(c.get("level", 5)))
    if name == "blosc":
        shuffle = {"noshuffle": numcodecs.Blosc.NOSHUFFLE, "shuffle": numcodecs.Blosc.SHUFFLE}[
            c.get("shuffle", "shuffle")
        ]
        return numcodecs.Blosc(
            cname=c.get("cname", "zstd"),
            clevel=int(c.get("clevel", 5)),
            shuffle=shuffle,
            blocksize=int(c.get("blocksize", 0)),
        )
    raise CorruptStoreError(f"codec {name!r} is not supported")


class ChunkCodec:
    """Encode and decode one chunk with a ``bytes`` + compressor chain (spec 8)."""

    def __init__(self, codecs: Sequence[Mapping[str, Any]], dtype: str, shape: Sequence[int]):
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.shape = tuple(int(s) for s in shape)
        self.nbytes = int(np.prod(self.shape)) * self.dtype.itemsize
        self._compressors = [compressor_for(c) for c in codecs[1:]]
        self._names = [str(c.get("name")) for c in codecs[1:]]

    def encode(self, chunk: np.ndarray) -> bytes:
        """Bytes of a full chunk (shape must equal the chunk shape)."""
        if chunk.shape != self.shape:
            raise ValueError(f"chunk shape {chunk.shape} != {self.shape}")
        buf: Any = np.ascontiguousarray(chunk, dtype=self.dtype)
        for comp in self._compressors:
            buf = comp.encode(buf)
        return bytes(buf)

    def decode(self, data: bytes | memoryview) -> np.ndarray:
        """The chunk of ``data``; a compressor never decodes past the chunk's size (spec 8)."""
        buf: Any = data
        for name, comp in zip(reversed(self._names), reversed(self._compressors), strict=True):
            buf = decode_bounded(name, comp, buf, self.nbytes)
        raw = memoryview(buf).cast("B") if not isinstance(buf, np.ndarray) else buf.view("B")
        if len(raw) != self.nbytes:
            raise CorruptStoreError(f"decoded chunk has {len(raw)} bytes, expected {self.nbytes}")
        return (
            np.frombuffer(raw, dtype=self.dtype)
            .reshape(self.shape)
            .astype(self.dtype.newbyteorder("="), copy=False)
        )


@lru_cache(maxsize=64)
def index_nbytes(n_chunks: int, with_crc: bool = True) -> int:
    """Byte length of a shard index: 16 per inner chunk plus 4 for the crc32c (spec 7.2)."""
    return 16 * n_chunks + (4 if with_crc else 0)


def build_shard(
    chunks: Sequence[bytes | None], *, index_location: str = "end", prefix: bytes = b""
) -> bytes:
    """Assemble a shard object from encoded inner chunks (None = empty).

    ``prefix`` is existing shard payload to keep verbatim at the start (append, spec 14): callers
    pass the old chunk bytes region and chunk entries that point into it via ``(offset, nbytes)``
    tuples instead of bytes. Offsets are computed for ``index_location`` "end" (payload first).
    """
    if index_location != "end":
        raise ValueError("the writer only writes end-located shard indexes (spec 7.2)")
    index = np.full((len(chunks), 2), EMPTY, dtype="<u8")
    parts: list[bytes] = [prefix]
    offset = len(prefix)
    for i, chunk in enumerate(chunks):
        if chunk is None:
            continue
        if isinstance(chunk, tuple):  # (offset, nbytes) of a chunk kept inside ``prefix``
            index[i] = chunk
            continue
        index[i] = (offset, len(chunk))
        parts.append(chunk)
        offset += len(chunk)
    raw = index.tobytes()
    parts.append(raw + int(crc32c(raw)).to_bytes(4, "little"))
    return b"".join(parts)


def parse_index(
    data: bytes | memoryview, n_chunks: int, *, with_crc: bool, where: str
) -> np.ndarray:
    """(n_chunks, 2) uint64 array of (offset, nbytes); checks the crc32c (spec 7.2)."""
    expected = index_nbytes(n_chunks, with_crc)
    if len(data) != expected:
        raise CorruptStoreError(f"{where}: shard index has {len(data)} bytes, expected {expected}")
    raw = bytes(data[: 16 * n_chunks])
    if with_crc:
        stored = int.from_bytes(bytes(data[16 * n_chunks :]), "little")
        if stored != crc32c(raw):
            raise CorruptStoreError(
                f"{where}: shard index checksum mismatch (stale shard_bytes or a corrupt object)"
            )
    return np.frombuffer(raw, dtype="<u8").reshape(n_chunks, 2)


_VLEN = numcodecs.VLenUTF8()


def vlen_utf8_encode(values: Sequence[str]) -> bytes:
    """The Zarr v3 ``vlen-utf8`` codec's bytes for a 1-d string array."""
    return bytes(_VLEN.encode(np.array(list(values), dtype=object)))


def vlen_utf8_decode(data: bytes) -> list[str]:
    return [str(v) for v in _VLEN.decode(data)]

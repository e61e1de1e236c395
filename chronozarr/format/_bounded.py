"""Decompression that never produces more than a chunk's expected size (spec 8).

A chunk's decoded size is fixed by its array metadata (inner chunk shape x itemsize), so a
reader knows it before decoding. Decoding first and comparing afterwards lets a 131 KB zstd
frame or a 1 MB gzip object allocate gigabytes; here each compressor is held to the expected
size while it decodes:

- zstd: the frame header's content size (RFC 8878 3.1.1.1.4), when present, must equal it;
  the frame is then decoded into a buffer of exactly that size, so a frame without a declared
  size (or concatenated frames) cannot grow past it either;
- gzip: zlib streaming with ``max_length``, member after member (RFC 1952 2.2), stopping one
  byte past the expected size;
- blosc: the header's ``nbytes`` (c-blosc 1.x header bytes 4-8) must equal it and ``cbytes``
  must match the object's length before anything is allocated.
"""

from __future__ import annotations

import struct
import zlib
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError

__all__ = ["decode_at_most", "decode_bounded", "zstd_content_size"]

_ZSTD_MAGIC = 0xFD2FB528
_FCS_BYTES = (0, 2, 4, 8)  # by Frame_Content_Size_flag; flag 0 with Single_Segment means 1


def zstd_content_size(data: bytes | memoryview) -> int | None:
    """The content size a zstd frame header declares, None when the frame omits it.

    Raises CorruptStoreError when ``data`` does not start with a zstd frame header.
    """
    buf = bytes(data[:18])
    if len(buf) < 5 or struct.unpack_from("<I", buf)[0] != _ZSTD_MAGIC:
        raise CorruptStoreError("not a zstd frame (bad magic number)")
    fhd = buf[4]
    fcs_flag, single, dict_flag = fhd >> 6, (fhd >> 5) & 1, fhd & 3
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_flag]
    size = _FCS_BYTES[fcs_flag] or (1 if single else 0)
    if size == 0:
        return None
    if len(buf) < pos + size:
        raise CorruptStoreError("truncated zstd frame header")
    value = int.from_bytes(buf[pos : pos + size], "little")
    return value + 256 if size == 2 else value


def _zstd(comp: Any, data: bytes | memoryview, expected: int) -> np.ndarray:
    declared = zstd_content_size(data)
    if declared is not None and declared != expected:
        raise CorruptStoreError(f"zstd frame declares {declared} bytes, expected {expected}")
    out = np.empty(expected, dtype="u1")
    try:
        comp.decode(data, out=out)
    except RuntimeError as exc:  # numcodecs: "Destination buffer is too small" and friends
        raise CorruptStoreError(f"zstd: {exc} (expected {expected} bytes)") from exc
    return out


def _gzip(data: bytes | memoryview, expected: int) -> bytes:
    parts: list[bytes] = []
    total = 0
    rest = bytes(data)
    while rest:
        d = zlib.decompressobj(31)  # 16 + 15: a gzip header and trailer around deflate
        try:
            chunk = d.decompress(rest, expected + 1 - total)
            while not d.eof and total + len(chunk) <= expected and d.unconsumed_tail:
                chunk += d.decompress(d.unconsumed_tail, expected + 1 - total - len(chunk))
        except zlib.error as exc:
            raise CorruptStoreError(f"gzip: {exc}") from exc
        total += len(chunk)
        parts.append(chunk)
        if total > expected:
            raise CorruptStoreError(f"gzip data decodes to more than {expected} bytes")
        if not d.eof:
            raise CorruptStoreError("gzip: truncated stream")
        rest = d.unused_data
    return b"".join(parts)


def _blosc(comp: Any, data: bytes | memoryview, expected: int) -> np.ndarray:
    buf = memoryview(data).cast("B")
    if len(buf) < 16:
        raise CorruptStoreError(f"blosc: {len(buf)} bytes is shorter than the 16-byte header")
    nbytes, _blocksize, cbytes = struct.unpack_from("<III", buf, 4)
    if nbytes != expected:
        raise CorruptStoreError(f"blosc header declares {nbytes} bytes, expected {expected}")
    if cbytes != len(buf):
        raise CorruptStoreError(f"blosc header declares {cbytes} compressed bytes, got {len(buf)}")
    out = np.empty(expected, dtype="u1")
    try:
        comp.decode(data, out=out)
    except (RuntimeError, ValueError) as exc:  # numcodecs' blosc errors
        raise CorruptStoreError(f"blosc: {exc}") from exc
    return out


def decode_bounded(codec_name: str, comp: Any, data: Any, expected: int) -> Any:
    """Decode ``data`` with compressor ``comp`` (named ``codec_name``) into at most
    ``expected`` bytes; raises CorruptStoreError instead of producing more."""
    if codec_name == "zstd":
        return _zstd(comp, data, expected)
    if codec_name == "gzip":
        return _gzip(data, expected)
    if codec_name == "blosc":
        return _blosc(comp, data, expected)
    return comp.decode(data)  # pragma: no cover - compressor_for refuses every other name


def decode_at_most(codec_name: str, comp: Any, data: Any, limit: int) -> bytes:
    """Decode ``data`` whose size is not known exactly (a vlen-utf8 band coordinate, a time
    coordinate that an unfinished append made longer than its metadata) into at most ``limit``
    bytes; CorruptStoreError instead of more. zstd and blosc must declare their size (our
    writer and numcodecs always do), gzip is held to ``limit`` while it streams."""
    if codec_name == "zstd":
        declared = zstd_content_size(data)
        if declared is None or declared > limit:
            raise CorruptStoreError(
                f"zstd frame declares {declared if declared is not None else 'no'} size; "
                f"at most {limit} bytes are accepted here"
            )
        return _zstd(comp, data, declared).tobytes()
    if codec_name == "gzip":
        return _gzip(data, limit)
    if codec_name == "blosc":
        buf = memoryview(data).cast("B")
        nbytes = struct.unpack_from("<I", buf, 4)[0] if len(buf) >= 16 else 0
        if nbytes > limit:
            raise CorruptStoreError(f"blosc header declares {nbytes} bytes, at most {limit}")
        return _blosc(comp, data, nbytes).tobytes()
    return bytes(comp.decode(data))  # pragma: no cover - compressor_for refuses every other name

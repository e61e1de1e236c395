"""Compression bombs for the fuzz harness: tiny objects that claim or produce huge outputs.

Each is crafted by hand from the format's own specification (RFC 8878 for zstd frames, RFC 1952
for gzip members, the c-blosc 1.x header), so that building one costs kilobytes, not the gigabytes
it decodes to.
"""

from __future__ import annotations

import struct
import zlib

__all__ = ["blosc_claims", "gzip_bomb", "zstd_bomb"]

_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_RLE_BLOCK = 128 * 1024  # the largest block a zstd frame may hold (RFC 8878 3.1.1.2.3)


def zstd_bomb(decoded_bytes: int, *, declare_size: bool | int = True) -> bytes:
    """A zstd frame of RLE blocks (4 bytes per 128 KiB of zeros) decoding to ``decoded_bytes``.

    ``declare_size``: True writes the true content size in the frame header, False leaves it
    out (a streaming frame, RFC 8878 3.1.1.1.1), an int declares that (possibly false) size.
    """
    n_blocks = max(1, -(-decoded_bytes // _RLE_BLOCK))
    if declare_size is False:
        header = bytes([0x00, 0x38])  # FCS flag 0, no single segment; window 2^17 (3.1.1.1.2)
    else:
        size = decoded_bytes if declare_size is True else int(declare_size)
        header = bytes([0xC0, 0x38]) + struct.pack("<Q", size)  # FCS field of 8 bytes
    blocks = bytearray()
    remaining = decoded_bytes
    for i in range(n_blocks):
        size = min(_RLE_BLOCK, remaining)
        remaining -= size
        last = 1 if i == n_blocks - 1 else 0
        value = last | (1 << 1) | (size << 3)  # block type 1 = RLE_Block
        blocks += value.to_bytes(3, "little") + b"\x00"
    return _ZSTD_MAGIC + header + bytes(blocks)


def gzip_bomb(decoded_bytes: int, member_bytes: int = 16 << 20) -> bytes:
    """Concatenated gzip members of zeros (RFC 1952 2.2: a gzip file is a series of members),
    decoding to ``decoded_bytes``; one member is compressed once and repeated."""
    member_bytes = min(member_bytes, decoded_bytes)
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = comp.compress(bytes(member_bytes)) + comp.flush()
    return member * max(1, decoded_bytes // member_bytes)


def blosc_claims(valid_blosc: bytes, nbytes: int) -> bytes:
    """A blosc 1.x buffer whose header claims ``nbytes`` decoded bytes (header bytes 4-8)."""
    return valid_blosc[:4] + struct.pack("<I", nbytes & 0xFFFFFFFF) + valid_blosc[8:]

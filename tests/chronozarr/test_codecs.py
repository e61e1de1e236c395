"""Shard assembly and index (spec 7.2) and chunk codecs (8) against zarr-python."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.errors import CorruptStoreError
from chronozarr.format import ChunkCodec, build_shard, index_nbytes, parse_index
from tests.chronozarr.helpers import (
    EMPTY,
    make_shard,
    shard_index,
)

FAST = settings(max_examples=40, deadline=None)


# --- shards (spec 7.2) -------------------------------------------------------------------------------


@FAST
@given(
    chunks=st.lists(
        st.one_of(st.none(), st.binary(min_size=1, max_size=40)), min_size=1, max_size=12
    )
)
def test_build_shard_and_parse_index(chunks: list[bytes | None]) -> None:
    blob = build_shard(chunks)
    assert blob == make_shard(chunks)  # the Zarr sharding_indexed layout, index at the end
    n = len(chunks)
    index = parse_index(blob[-(16 * n + 4) :], n, with_crc=True, where="k")
    assert np.array_equal(index, shard_index(blob, n))
    for (offset, nbytes), chunk in zip(index.tolist(), chunks, strict=True):
        if chunk is None:
            assert offset == nbytes == EMPTY
        else:
            assert blob[offset : offset + nbytes] == chunk
    assert index_nbytes(n) == 16 * n + 4


def test_parse_index_checks_crc_and_length() -> None:
    blob = build_shard([b"abc", None])
    index = bytearray(blob[-36:])
    index[3] ^= 1
    with pytest.raises(CorruptStoreError, match="checksum"):
        parse_index(bytes(index), 2, with_crc=True, where="0/data/c/0/0/0/0")
    with pytest.raises(CorruptStoreError, match="bytes"):
        parse_index(blob[-30:], 2, with_crc=True, where="x")
    raw = blob[-36:-4]
    assert parse_index(raw, 2, with_crc=False, where="x").tolist()[0] == [0, 3]


def test_build_shard_keeps_a_prefix() -> None:
    """Append keeps old chunks at their old offsets (spec 14)."""
    old = build_shard([b"one", b"two", None])
    old_index = shard_index(old, 3)
    payload = old[: -(16 * 3 + 4)]
    new = build_shard([tuple(old_index[0]), tuple(old_index[1]), b"three"], prefix=payload)
    index = shard_index(new, 3)
    assert index[:2].tolist() == old_index[:2].tolist()
    assert new[index[2][0] : index[2][0] + index[2][1]] == b"three"


@pytest.mark.parametrize(
    "conf",
    [
        {"name": "zstd", "configuration": {"level": 5, "checksum": False}},
        {"name": "gzip", "configuration": {"level": 5}},
        {
            "name": "blosc",
            "configuration": {
                "cname": "lz4",
                "clevel": 5,
                "shuffle": "noshuffle",
                "typesize": 2,
                "blocksize": 0,
            },
        },
        {
            "name": "blosc",
            "configuration": {
                "cname": "zstd",
                "clevel": 1,
                "shuffle": "shuffle",
                "typesize": 2,
                "blocksize": 0,
            },
        },
    ],
)
def test_chunk_codec_round_trip_and_zarr_bytes(conf: dict) -> None:
    """The chunk bytes are what zarr-python's own codec pipeline decodes."""
    import zarr
    from zarr.core.buffer import default_buffer_prototype

    chain = [{"name": "bytes", "configuration": {"endian": "little"}}, conf]
    chunk = np.arange(2 * 4 * 4, dtype=np.uint16).reshape(1, 2, 4, 4) * 997
    codec = ChunkCodec(chain, "uint16", chunk.shape)
    blob = codec.encode(chunk)
    assert np.array_equal(codec.decode(blob), chunk)
    store = zarr.storage.MemoryStore()
    arr = zarr.create_array(
        store,
        shape=chunk.shape,
        chunks=chunk.shape,
        dtype="uint16",
        serializer=chain[0],
        compressors=[conf],
        fill_value=0,
    )
    import asyncio

    asyncio.run(store.set("c/0/0/0/0", default_buffer_prototype().buffer.from_bytes(blob)))
    assert np.array_equal(arr[:], chunk)

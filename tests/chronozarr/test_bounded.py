"""A chunk never decodes beyond its expected size (decision 0013; spec 8).

Regression: on main before decision 0013 a 131 KB zstd frame drove ``validate --deep`` to
3.8 GB and a 1 MB gzip chunk to 2.1 GB, because the codec decoded fully and compared sizes
afterwards. Peak allocations are measured with tracemalloc (numpy and numcodecs buffers are
traced), so a decoder that allocates first fails here even though it raises afterwards.
"""

from __future__ import annotations

import tracemalloc

import numcodecs
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.errors import CorruptStoreError
from chronozarr.format import ChunkCodec, zstd_content_size
from tests.fuzz.bombs import blosc_claims, gzip_bomb, zstd_bomb

SHAPE = (1, 2, 32, 32)  # one inner chunk of the fuzz base stores: 4096 bytes of uint16
CHAINS = {
    "zstd": [{"name": "bytes"}, {"name": "zstd", "configuration": {"level": 5}}],
    "gzip": [{"name": "bytes"}, {"name": "gzip", "configuration": {"level": 5}}],
    "blosc": [
        {"name": "bytes"},
        {
            "name": "blosc",
            "configuration": {"cname": "zstd", "clevel": 5, "shuffle": "shuffle", "typesize": 2},
        },
    ],
}


def _peak_of(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def assert_refused_cheaply(codec: ChunkCodec, data: bytes) -> None:
    def decode() -> None:
        with pytest.raises(CorruptStoreError):
            codec.decode(data)

    peak = _peak_of(decode)
    assert peak < 8 << 20, f"decoding the bomb allocated {peak >> 20} MiB before refusing it"


@pytest.mark.parametrize(
    "declare", [True, False, 4096, 2**40], ids=["true-size", "no-size", "false-size", "2^40"]
)
def test_zstd_bomb_is_refused_before_allocation(declare: bool | int) -> None:
    codec = ChunkCodec(CHAINS["zstd"], "uint16", SHAPE)
    assert_refused_cheaply(codec, zstd_bomb(256 << 20, declare_size=declare))


def test_gzip_bomb_is_refused_before_allocation() -> None:
    codec = ChunkCodec(CHAINS["gzip"], "uint16", SHAPE)
    assert_refused_cheaply(codec, gzip_bomb(256 << 20))


@pytest.mark.parametrize("claim", [1 << 28, 2**31 - 1, 2**32 - 1, 8192])
def test_blosc_header_claims_are_checked_first(claim: int) -> None:
    codec = ChunkCodec(CHAINS["blosc"], "uint16", SHAPE)
    valid = codec.encode(np.zeros(SHAPE, "uint16"))
    assert_refused_cheaply(codec, blosc_claims(valid, claim))


def test_zstd_header_parser_reads_what_numcodecs_writes() -> None:
    for n in (1, 255, 256, 300, 65791, 65792, 4096, 1 << 20):
        frame = bytes(numcodecs.Zstd(level=3).encode(np.zeros(n, "u1")))
        assert zstd_content_size(frame) == n
    assert zstd_content_size(zstd_bomb(1 << 20, declare_size=False)) is None
    with pytest.raises(CorruptStoreError, match="magic"):
        zstd_content_size(b"garbage, not zstd")


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(CHAINS)),
    seed=st.integers(0, 2**32 - 1),
    cut=st.integers(1, 64),
    extra=st.binary(min_size=1, max_size=8),
)
def test_round_trip_and_damage(name: str, seed: int, cut: int, extra: bytes) -> None:
    """Exact round trip; a truncated object or trailing bytes never decode to a chunk."""
    codec = ChunkCodec(CHAINS[name], "uint16", SHAPE)
    chunk = np.random.default_rng(seed).integers(0, 2**16, SHAPE, dtype="uint16")
    data = codec.encode(chunk)
    assert np.array_equal(codec.decode(data), chunk)
    with pytest.raises(CorruptStoreError):
        codec.decode(data[: max(0, len(data) - cut)])
    if name != "zstd":  # zstd ignores bytes after a complete frame of the declared size
        with pytest.raises(CorruptStoreError):
            codec.decode(data + extra)


# --- the validator's coordinate decode (decision 0013: time/band arrays decoded uncapped) ---


def _small_store(path, codec: str = "zstd"):
    import chronozarr

    chronozarr.encode(
        np.arange(3 * 1 * 8 * 8, dtype=np.uint16).reshape(3, 1, 8, 8),
        path,
        times=["2024-01-01", "2024-02-01", "2024-03-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
        codec=codec,
    )
    return path


@pytest.mark.parametrize(
    ("key", "bomb"),
    [
        ("0/time/c/0", lambda: zstd_bomb(256 << 20)),
        ("0/time/c/0", lambda: zstd_bomb(256 << 20, declare_size=False)),
        ("0/band/c/0", lambda: zstd_bomb(256 << 20)),
        ("0/x/c/0", lambda: zstd_bomb(256 << 20)),
    ],
    ids=["time-declared", "time-undeclared", "band", "x"],
)
def test_validate_refuses_a_coordinate_bomb_cheaply(tmp_path, key: str, bomb) -> None:
    import chronozarr

    store = _small_store(tmp_path / "s.zarr")
    (store / key).write_bytes(bomb())
    reports = []
    peak = _peak_of(lambda: reports.append(chronozarr.validate(store)))
    assert peak < 64 << 20, f"validating the bomb allocated {peak >> 20} MiB"
    assert any(f.rule == "coord.decode" and f.key == key for f in reports[0].findings)


def test_validate_refuses_a_gzip_time_bomb_cheaply(tmp_path) -> None:
    import chronozarr

    store = _small_store(tmp_path / "s.zarr", codec="gzip")
    (store / "0/time/c/0").write_bytes(gzip_bomb(256 << 20))
    reports = []
    peak = _peak_of(lambda: reports.append(chronozarr.validate(store)))
    assert peak < 64 << 20, f"validating the bomb allocated {peak >> 20} MiB"
    assert any(f.rule == "coord.decode" for f in reports[0].findings)


def test_an_unfinished_appends_longer_time_chunk_still_reads(tmp_path) -> None:
    """The cap leaves room for spec 14's in-progress state: time/c/0 already longer."""
    import chronozarr
    from chronozarr.format import ChunkCodec as Codec

    store = _small_store(tmp_path / "s.zarr")
    doc = __import__("json").loads((store / "0/time/zarr.json").read_text())
    longer = np.array([1704067200000 + i * 2678400000 for i in range(5)], dtype="<i8")
    (store / "0/time/c/0").write_bytes(Codec(doc["codecs"], "int64", (5,)).encode(longer))
    report = chronozarr.validate(store)
    assert any(f.rule == "append.in_progress" for f in report.findings)
    assert not any(f.rule == "coord.decode" for f in report.findings)

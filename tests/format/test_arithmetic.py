"""The pure arithmetic of the format against independent references: anchor schedules (4.2),
modular residuals (4.2), pyramid reductions (2.4, 2.5, 6), shard assembly and index (7.2), time
rendering (2.2, 3.9), volatility (5) and grid geometry (2.1, 3.3, 6)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from chronozarr import codecs, grid, pyramid, temporal
from chronozarr.errors import CorruptStoreError
from chronozarr.metadata import Temporal, format_time, parse_time
from tests.format.helpers import (
    EMPTY,
    make_shard,
    ref_coverage_reduce,
    ref_level_shapes,
    ref_mask_reduce,
    ref_reduce,
    ref_schedule,
    ref_validity,
    shard_index,
)

FAST = settings(max_examples=40, deadline=None)

# --- anchors and references (spec 4.2) -------------------------------------------------------------


@FAST
@given(n_time=st.integers(1, 60), k=st.integers(1, 13))
def test_schedule_matches_reference(n_time: int, k: int) -> None:
    anchors, refs = temporal.schedule(n_time, k)
    want_anchors, want_refs = ref_schedule(n_time, k)
    assert anchors == want_anchors == temporal.anchor_indices(n_time, k)
    assert refs == want_refs
    for t, a in refs.items():
        assert temporal.is_valid_reference(t, a, anchors, k)


@FAST
@given(t=st.integers(0, 200), anchors=st.lists(st.integers(0, 200), min_size=1, unique=True))
def test_nearest_anchor_ties_toward_earlier(t: int, anchors: list[int]) -> None:
    got = temporal.nearest_anchor(t, anchors)
    best = min(abs(a - t) for a in anchors)
    assert abs(got - t) == best
    assert got == min(a for a in anchors if abs(a - t) == best)


def test_nearest_anchor_examples() -> None:
    assert temporal.nearest_anchor(1, [0, 2]) == 0  # tie: earlier
    assert temporal.nearest_anchor(3, [0, 4]) == 4
    assert temporal.nearest_anchor(5, [0, 4]) == 4
    assert temporal.schedule(5, 2)[1] == {1: 0, 3: 2}  # the spec 3.9 example
    assert temporal.schedule(7, 6)[1] == {1: 0, 2: 0, 3: 0, 4: 6, 5: 6}
    assert temporal.schedule(5, 6)[1] == {1: 0, 2: 0, 3: 0, 4: 0}  # no anchor 6 yet


@FAST
@given(n_old=st.integers(1, 30), n_new=st.integers(0, 30), k=st.integers(1, 8), data=st.data())
def test_schedule_keeps_existing_references(n_old: int, n_new: int, k: int, data) -> None:
    """An append keeps every published reference (spec 4.2.2, 14); new ones take the nearest."""
    _, old_refs = temporal.schedule(n_old, k)
    anchors, refs = temporal.schedule(n_old + n_new, k, existing=old_refs)
    for t, a in old_refs.items():
        assert refs[t] == a
    for t in range(n_old, n_old + n_new):
        if t not in anchors:
            assert refs[t] == temporal.nearest_anchor(t, anchors)
    # an old timestep that became nearer to a new anchor still decodes through its old anchor
    if n_old % k and n_new:
        t = n_old - 1
        if t in old_refs:
            assert refs[t] == old_refs[t]


def test_is_valid_reference() -> None:
    anchors = [0, 3, 6]
    assert temporal.is_valid_reference(2, 0, anchors, 3)  # not nearest, still valid
    assert not temporal.is_valid_reference(3, 3, anchors, 3)  # d = 0
    assert not temporal.is_valid_reference(4, 0, anchors, 3)  # d = anchor_interval... 4 > 3
    assert not temporal.is_valid_reference(2, 1, anchors, 3)  # not an anchor
    assert temporal.is_valid_reference(5, 6, anchors, 3)


def test_temporal_reference_uses_recorded_map() -> None:
    """Readers decode through the recorded map, never a recomputed one (spec 4.2.2)."""
    block = Temporal.from_json(
        {
            "encoding": "star-delta",
            "anchor_interval": 4,
            "anchor_indices": [0, 4],
            "delta_reference": {"1": 0, "2": 0, "3": 0, "5": 4},
        }
    )
    assert block.reference(3) == 0  # the nearest anchor would be 4
    assert block.reference(4) is None
    with pytest.raises(CorruptStoreError, match="6"):
        block.reference(6)
    assert Temporal.from_json({"encoding": "none"}).reference(3) is None
    v01 = Temporal.from_json({"anchor_interval": 2, "anchor_indices": [0], "delta_reference": {}})
    assert v01.encoding == "star-delta" and not v01.has_encoding_key
    assert "encoding" not in v01.to_json()


# --- modular residuals (spec 4.2) --------------------------------------------------------------------


def test_residual_inverse_all_uint8_pairs() -> None:
    a, s = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    d = temporal.residual(s, a)
    assert d.dtype == np.uint8
    assert np.array_equal(d, ((s.astype(np.int64) - a) % 256).astype(np.uint8))
    assert np.array_equal(temporal.apply_residual(a, d), s)


def test_residual_inverse_all_uint16_pairs() -> None:
    """All 2^32 (anchor, source) pairs, in slabs of 512 anchors (~10 s)."""
    s = np.arange(65536, dtype=np.uint16)
    s32 = s.astype(np.uint32)[None]
    rows = 512
    for start in range(0, 65536, rows):
        a = np.arange(start, start + rows, dtype=np.uint16)[:, None]
        src, anchor = np.broadcast_to(s, (rows, 65536)), np.broadcast_to(a, (rows, 65536))
        d = temporal.residual(src, anchor)
        assert d.dtype == np.uint16
        want = ((s32 + np.uint32(65536) - a.astype(np.uint32)) & np.uint32(0xFFFF)).astype(
            np.uint16
        )
        assert np.array_equal(d, want)
        assert np.array_equal(temporal.apply_residual(anchor, d), src)


def test_residual_matches_v01_int16_bytes_when_small() -> None:
    a = np.array([1000, 1000, 0, 65535], dtype=np.uint16)
    s = np.array([900, 1100, 32767, 32768], dtype=np.uint16)
    v01 = (s.astype(np.int32) - a.astype(np.int32)).astype(np.int16).view(np.uint16)
    assert np.array_equal(temporal.residual(s, a), v01)


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_residual_refuses_other_dtypes(dtype: str) -> None:
    with pytest.raises(TypeError):
        temporal.residual(np.zeros(2, dtype), np.zeros(2, dtype))


# --- pyramid (spec 2.3-2.5, 6) -----------------------------------------------------------------------


@st.composite
def planes(draw: st.DrawFn, dtype: str) -> np.ndarray:
    h = draw(st.integers(1, 9))
    w = draw(st.integers(1, 9))
    b = draw(st.integers(1, 3))
    if dtype == "float32":
        elements = st.floats(-1e6, 1e6, width=32, allow_nan=False)
    else:
        info = np.iinfo(dtype)
        elements = st.integers(int(info.min), int(info.max))
    return draw(hnp.arrays(dtype, (b, h, w), elements=elements))


@FAST
@given(data=st.data(), dtype=st.sampled_from(["uint8", "uint16", "int16", "float32"]))
def test_block_mean_matches_reference(data, dtype: str) -> None:
    values = data.draw(planes(dtype))
    b, h, w = values.shape
    use_mask = data.draw(st.booleans())
    mask = data.draw(hnp.arrays(np.uint8, (h, w), elements=st.integers(0, 1))) if use_mask else None
    if dtype == "float32":
        nodata = data.draw(st.sampled_from([None, 0.0, float(values.flat[0])]))
    else:
        nodata = data.draw(st.sampled_from([None, 0, int(values.flat[0])]))
    got = pyramid.block_mean(values, pyramid.validity(values, nodata, mask), nodata)
    want = ref_reduce(
        values[None],
        ref_validity(values[None], nodata, None if mask is None else mask[None]),
        nodata,
    )[0]
    assert got.dtype == values.dtype
    assert got.shape == (b, -(-h // 2), -(-w // 2))
    assert np.array_equal(got, want)


def test_validity_rules() -> None:
    values = np.array([[[0, 5]], [[5, 0]]], dtype=np.uint16)
    assert pyramid.validity(values, 0, None).tolist() == [[[False, True]], [[True, False]]]
    assert pyramid.validity(values, None, None).all()
    mask = np.array([[0, 1]], dtype=np.uint8)
    assert pyramid.validity(values, 0, mask).tolist() == [[[False, True]], [[False, True]]]


def test_block_mean_all_invalid_is_nodata_or_zero() -> None:
    values = np.full((1, 2, 2), 9, dtype=np.uint16)
    none_valid = np.zeros_like(values, dtype=bool)
    assert pyramid.block_mean(values, none_valid, 7).tolist() == [[[7]]]
    assert pyramid.block_mean(values, none_valid, None).tolist() == [[[0]]]
    f = np.full((1, 2, 2), 9, dtype=np.float32)
    assert pyramid.block_mean(f, none_valid, -9999.0).tolist() == [[[-9999.0]]]


def test_block_mean_exact_integer_sum() -> None:
    """65535 * 4 overflows uint16 and float32 rounding would not floor: exact in a wide type."""
    values = np.array([[[65535, 65534], [65535, 65535]]], dtype=np.uint16)
    ok = np.ones_like(values, dtype=bool)
    assert pyramid.block_mean(values, ok, None).tolist() == [[[65534]]]  # 262139 // 4
    odd = np.array([[[16777217, 0]]], dtype=np.float32)  # float64 accumulation
    assert pyramid.block_mean(odd, np.ones_like(odd, dtype=bool), None).dtype == np.float32


def test_edge_replication_weights_the_last_row() -> None:
    """An odd last row counts twice in its block (DESIGN: replicate before every reduction)."""
    values = np.array([[[0], [3], [9]]], dtype=np.uint8)  # 3 x 1
    ok = np.ones_like(values, dtype=bool)
    assert pyramid.block_mean(values, ok, None).tolist() == [[[1], [9]]]
    cov = np.array([[1], [2], [1]], dtype=np.uint8)
    assert pyramid.coverage_reduce(cov).tolist() == [[2], [1]]  # (1+1+2+2+2)//4, (1*4+2)//4


@FAST
@given(
    mask=hnp.arrays(
        np.uint8, hnp.array_shapes(min_dims=3, max_dims=3, max_side=9), elements=st.integers(0, 1)
    )
)
def test_mask_reduce_matches_reference(mask: np.ndarray) -> None:
    assert np.array_equal(pyramid.mask_reduce(mask), ref_mask_reduce(mask))


@FAST
@given(cov=hnp.arrays(np.uint8, hnp.array_shapes(min_dims=3, max_dims=3, max_side=9)))
def test_coverage_reduce_matches_reference(cov: np.ndarray) -> None:
    got = pyramid.coverage_reduce(cov)
    assert got.dtype == np.uint8
    assert np.array_equal(got, ref_coverage_reduce(cov))


def test_coverage_halves_round_up() -> None:
    cov = np.array([[[1, 1], [0, 0]], [[255, 255], [255, 254]]], dtype=np.uint8)
    assert pyramid.coverage_reduce(cov).tolist() == [[[1]], [[255]]]  # (2+2)//4, (1019+2)//4


# --- shards (spec 7.2) -------------------------------------------------------------------------------


@FAST
@given(
    chunks=st.lists(
        st.one_of(st.none(), st.binary(min_size=1, max_size=40)), min_size=1, max_size=12
    )
)
def test_build_shard_and_parse_index(chunks: list[bytes | None]) -> None:
    blob = codecs.build_shard(chunks)
    assert blob == make_shard(chunks)  # the Zarr sharding_indexed layout, index at the end
    n = len(chunks)
    index = codecs.parse_index(blob[-(16 * n + 4) :], n, with_crc=True, where="k")
    assert np.array_equal(index, shard_index(blob, n))
    for (offset, nbytes), chunk in zip(index.tolist(), chunks, strict=True):
        if chunk is None:
            assert offset == nbytes == EMPTY
        else:
            assert blob[offset : offset + nbytes] == chunk
    assert codecs.index_nbytes(n) == 16 * n + 4


def test_parse_index_checks_crc_and_length() -> None:
    blob = codecs.build_shard([b"abc", None])
    index = bytearray(blob[-36:])
    index[3] ^= 1
    with pytest.raises(CorruptStoreError, match="checksum"):
        codecs.parse_index(bytes(index), 2, with_crc=True, where="0/data/c/0/0/0/0")
    with pytest.raises(CorruptStoreError, match="bytes"):
        codecs.parse_index(blob[-30:], 2, with_crc=True, where="x")
    raw = blob[-36:-4]
    assert codecs.parse_index(raw, 2, with_crc=False, where="x").tolist()[0] == [0, 3]


def test_build_shard_keeps_a_prefix() -> None:
    """Append keeps old chunks at their old offsets (spec 14)."""
    old = codecs.build_shard([b"one", b"two", None])
    old_index = shard_index(old, 3)
    payload = old[: -(16 * 3 + 4)]
    new = codecs.build_shard([tuple(old_index[0]), tuple(old_index[1]), b"three"], prefix=payload)
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
    codec = codecs.ChunkCodec(chain, "uint16", chunk.shape)
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


# --- time rendering (spec 2.2, 3.9) ------------------------------------------------------------------

MS_1900 = -2208988800000
MS_2200 = 7258118400000


@FAST
@given(ms=st.integers(MS_1900, MS_2200))
def test_format_parse_time_round_trip(ms: int) -> None:
    text = format_time(ms)
    assert parse_time(text) == ms
    assert text.endswith("Z")
    if ms % 1000:
        assert text[19] == "." and len(text) == 24
    else:
        assert len(text) == 20  # no fractional seconds when zero
    assert format_time(parse_time(text)) == text
    assert dt.datetime.fromisoformat(
        text.replace("Z", "+00:00")
    ).timestamp() * 1000 == pytest.approx(ms)


def test_time_examples() -> None:
    assert format_time(1704067200000) == "2024-01-01T00:00:00Z"
    assert format_time(1704067200123) == "2024-01-01T00:00:00.123Z"
    assert format_time(-1) == "1969-12-31T23:59:59.999Z"
    assert parse_time("2024-01-01T00:00:00Z") == 1704067200000
    assert parse_time("2024-01-01") == 1704067200000
    assert parse_time("2024-01-01T02:00:00+02:00") == 1704067200000
    assert parse_time(np.datetime64("2024-01-01T00:00:00.123456789")) == 1704067200123
    assert parse_time(dt.datetime(2024, 1, 1)) == 1704067200000
    assert parse_time(dt.date(2024, 1, 1)) == 1704067200000
    with pytest.raises(TypeError):
        parse_time(3.5)


def test_format_time_pads_the_year() -> None:
    ms = parse_time(dt.datetime(999, 5, 1, tzinfo=dt.UTC))
    assert format_time(ms) == "0999-05-01T00:00:00Z"
    assert parse_time(format_time(ms)) == ms


# --- volatility (spec 5) ------------------------------------------------------------------------------


def test_volatility_value() -> None:
    assert temporal.volatility_value(0.0, 0) == np.float32(0.0)
    assert temporal.volatility_value(5000.0 * 4, 4) == np.float32(0.5)
    assert temporal.volatility_value(1e9, 1) == np.float32(1.0)  # clipped
    a = np.array([0, 65535], dtype=np.uint16)
    b = np.array([65535, 0], dtype=np.uint16)
    assert temporal.abs_diff_sum(a, b) == 2 * 65535.0  # exact, no modular wrap
    f = np.array([1e-8, 3.0], dtype=np.float32)
    assert temporal.abs_diff_sum(f, np.zeros(2, np.float32)) == pytest.approx(3.00000001)


# --- grid geometry (spec 2.1, 3.3, 6) -------------------------------------------------------------


@FAST
@given(h=st.integers(1, 5000), w=st.integers(1, 5000), cs=st.sampled_from([2, 4, 6, 256, 512]))
def test_level_shapes(h: int, w: int, cs: int) -> None:
    shapes = grid.level_shapes(h, w, cs)
    assert shapes == ref_level_shapes(h, w, cs)
    assert grid.grid_shape(*shapes[-1], cs) == (1, 1)
    assert all(grid.grid_shape(*s, cs) != (1, 1) for s in shapes[:-1])


def test_level_transform_and_centres() -> None:
    tf = [10.0, 0.0, 746090.0, 0.0, -10.0, 2540440.0]
    assert grid.level_transform(tf, 1) == [20.0, 0.0, 746090.0, 0.0, -20.0, 2540440.0]
    assert grid.level_resolution(10.0, 3) == 80.0
    ys, xs = grid.pixel_centres(tf, 2, 3)
    assert ys == [2540435.0, 2540425.0] and xs == [746095.0, 746105.0, 746115.0]
    assert grid.cell_slice(1, 1, 512, 700, 600) == (slice(512, 700), slice(512, 600))
    assert grid.chunk_key("0/data", 3, 1, 2, has_band=True) == "0/data/c/3/0/1/2"
    assert grid.chunk_key("0/mask", 3, 1, 2, has_band=False) == "0/mask/c/3/1/2"

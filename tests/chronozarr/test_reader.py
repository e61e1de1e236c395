"""The reader (spec 10): request counts, caches, shard index handling, fill decoding, v0.1 stores,
typed errors, level selection, validity and physical values."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from chronozarr.errors import (
    CorruptStoreError,
    NotAChronozarrStoreError,
    StoreNotFoundError,
    UnsupportedError,
)
from chronozarr.io import LocalStore
from tests.chronozarr.helpers import (
    RangeLog,
    drop_consolidated,
    edit_chronozarr,
    edit_doc,
    edit_root,
    make_shard,
    read_json,
    rewrite_index_location,
    serve_directory,
    shard_chunks,
    shard_index,
)
from tests.conftest import monthly, synthetic_series

N_TIME = 6


def _encode(path: Path, data: np.ndarray | None = None, **kw: Any) -> tuple[Path, np.ndarray]:
    if data is None:
        data = synthetic_series(n_time=N_TIME, n_band=2, height=13, width=11, seed=8)
    args: dict[str, Any] = dict(
        times=monthly(data.shape[0]),
        bands=[
            {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": -0.1},
            {"name": "B08", "common_name": "nir", "scale": 0.0002, "offset": 0.0},
        ][: data.shape[1]],
        crs="EPSG:32631",
        transform=[10, 0, 300000, 0, -10, 6000000],
        chunk_size=6,
    )
    args.update(kw)
    chronozarr.encode(data, path, **args)
    return path, data


@pytest.fixture(scope="module")
def delta_sharded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    """star-delta, interval 3, shard_time 2: t=4 (shard 2) references anchor 3 (shard 1)."""
    path = tmp_path_factory.mktemp("ds") / "s.zarr"
    return _encode(path, encoding="star-delta", anchor_interval=3, shard_time=2)


@pytest.fixture(scope="module")
def delta_plain(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    path = tmp_path_factory.mktemp("dp") / "s.zarr"
    return _encode(path, encoding="star-delta", anchor_interval=3)


def _copy(src: Path, tmp_path: Path, name: str = "copy.zarr") -> Path:
    dst = tmp_path / name
    shutil.copytree(src, dst)
    return dst


def _open_logged(path: Path) -> tuple[chronozarr.Reader, RangeLog]:
    store = RangeLog(LocalStore(path))
    return chronozarr.open_store(store), store


# --- request counts and caches (Invariant 2, spec 7.2, 7.3, 10.4, 10.6) ------------------------------


@pytest.mark.parametrize("fixture", ["delta_plain", "delta_sharded"])
def test_at_most_two_chunk_reads_per_cell_timestep(fixture: str, request) -> None:
    path, data = request.getfixturevalue(fixture)
    for t in range(N_TIME):
        reader = chronozarr.open_store(path)  # cold: nothing cached
        arr = reader.array(0)
        before = arr.chunk_reads
        cell = reader.read_cell(t, 1, 1)
        reads = arr.chunk_reads - before
        is_anchor = t in reader.attrs.temporal.anchor_indices
        assert reads == (1 if is_anchor else 2), (t, reads)
        assert np.array_equal(cell, data[t, :, 6:12, 6:11])


def test_unsharded_delta_is_two_gets_then_one(delta_plain) -> None:
    path, data = delta_plain
    reader = chronozarr.open_store(path)
    stats = reader.store.stats
    stats.reset()
    reader.read_cell(1, 0, 0)  # delta against anchor 0: anchor + delta
    assert [k for kind, k in stats.keys if kind == "get"] == [
        "0/data/c/0/0/0/0",
        "0/data/c/1/0/0/0",
    ]
    stats.reset()
    reader.read_cell(2, 0, 0)  # references anchor 3: a second anchor, then the delta
    assert stats.gets == 2
    stats.reset()
    reader.read_cell(4, 0, 0)  # anchor 3 is cached: one read (spec 10: once anchors are resident)
    assert stats.keys == [("get", "0/data/c/4/0/0/0")]
    stats.reset()
    assert np.array_equal(reader.read_cell(3, 0, 0), data[3, :, :6, :6])  # anchor from the cache
    assert stats.gets == 0 and stats.range_gets == 0


def test_none_store_reads_one_chunk(tmp_path: Path) -> None:
    path, data = _encode(tmp_path / "n.zarr", encoding="none")
    reader = chronozarr.open_store(path)
    stats = reader.store.stats
    for t in range(N_TIME):
        stats.reset()
        assert np.array_equal(reader.read_cell(t, 2, 1), data[t, :, 12:, 6:])
        assert stats.gets == 1 and stats.range_gets == 0


def test_open_reads_only_the_root_with_consolidated_metadata(delta_sharded) -> None:
    path, _ = delta_sharded
    reader, store = _open_logged(path)
    assert store.stats.keys == [("get", "zarr.json")]  # spec 3.1: one GET learns everything
    reader.read_cell(0, 0, 0)
    assert not [k for _, k in store.stats.keys if k.endswith("zarr.json") and k != "zarr.json"]


def test_shard_index_read_once_per_shard_with_bounded_ranges(delta_sharded) -> None:
    path, data = delta_sharded
    reader, store = _open_logged(path)
    sizes = reader.attrs.shard_bytes["0"]
    for t in range(N_TIME):
        for r in range(3):
            for c in range(2):
                cell = reader.read_cell(t, r, c)
                assert np.array_equal(cell, data[t, :, 6 * r : 6 * r + 6, 6 * c : 6 * c + 6])
    index_len = 16 * 2 + 4
    index_reads = [
        (k, s, e)
        for k, s, e in store.ranges
        if e - s == index_len and e == sizes["/".join(k.split("/")[3:4] + k.split("/")[5:])]
    ]
    shards = {k for k, _, _ in store.ranges}
    assert len(shards) == 3 * 3 * 2  # 3 time shards x 3 x 2 cells
    assert sorted(k for k, _, _ in index_reads) == sorted(shards)  # exactly one index per shard
    assert store.stats.heads == 0  # shard_bytes listed every shard: no HEAD (spec 7.3)
    for _, s, e in store.ranges:
        assert 0 <= s < e  # bounded ranges only (spec 9)
    # every shard key of level 0 maps to the listed lengths
    assert len(sizes) == 18


def test_cross_shard_delta_reads_two_shards(delta_sharded) -> None:
    """spec 7.4: t=4 lives in time shard 2, its anchor 3 in time shard 1."""
    path, data = delta_sharded
    reader, store = _open_logged(path)
    assert reader.attrs.temporal.delta_reference[4] == 3
    assert np.array_equal(reader.read_cell(4, 0, 0), data[4, :, :6, :6])
    assert {k for k, _, _ in store.ranges} == {"0/data/c/1/0/0/0", "0/data/c/2/0/0/0"}
    assert len(store.ranges) == 4  # two indexes, two chunks
    assert reader.array(0).chunk_reads == 2


def test_head_fallback_for_a_shard_not_listed(delta_sharded, tmp_path: Path) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    data = delta_sharded[1]
    edit_chronozarr(path, lambda cz: cz["shard_bytes"]["0"].pop("0/0/0"))
    reader, store = _open_logged(path)
    assert np.array_equal(reader.read_cell(0, 0, 0), data[0, :, :6, :6])
    assert store.stats.heads == 1
    assert [k for kind, k in store.stats.keys if kind == "head"] == ["0/data/c/0/0/0/0"]
    assert np.array_equal(reader.read_cell(0, 0, 1), data[0, :, :6, 6:])
    assert store.stats.heads == 1  # listed shards still need none


def test_shard_bytes_absent_falls_back_to_head(delta_sharded, tmp_path: Path) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    data = delta_sharded[1]
    edit_chronozarr(path, lambda cz: cz.pop("shard_bytes"))
    reader = chronozarr.open_store(path)
    for t in range(N_TIME):
        assert np.array_equal(reader.read(t), data[t])
    assert reader.store.stats.heads == 3 * 3 * 2


def test_stale_shard_bytes_fail_the_index_checksum(delta_sharded, tmp_path: Path) -> None:
    """spec 14 hazard: a wrong length reads the wrong bytes, and the crc32c catches it."""
    path = _copy(delta_sharded[0], tmp_path)
    edit_chronozarr(path, lambda cz: cz["shard_bytes"]["0"].__setitem__("0/0/0", 100))
    reader = chronozarr.open_store(path)
    with pytest.raises(CorruptStoreError, match="0/data/c/0/0/0/0"):
        reader.read_cell(0, 0, 0)


@pytest.mark.parametrize("with_crc", [True, False])
def test_index_location_start(delta_sharded, tmp_path: Path, with_crc: bool) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    data = delta_sharded[1]
    rewrite_index_location(path, "0/data", "start")
    rewrite_index_location(path, "1/data", "start")
    if not with_crc:  # an index without crc32c (Zarr allows ["bytes"] alone)
        for level in ("0", "1"):
            for f in (path / level / "data" / "c").rglob("*"):
                if f.is_file():
                    blob = f.read_bytes()
                    chunks = shard_chunks(blob, 2, "start")
                    index = make_shard(chunks, "start")[: 16 * 2]
                    payload = make_shard(chunks, "start")[16 * 2 + 4 :]
                    # offsets shift by -4 once the crc is gone
                    entries = np.frombuffer(index, "<u8").reshape(2, 2).copy()
                    entries[entries[:, 0] != 2**64 - 1, 0] -= 4
                    f.write_bytes(entries.tobytes() + payload)
            edit_doc(
                path,
                f"{level}/data",
                lambda d: d["codecs"][0]["configuration"].__setitem__(
                    "index_codecs", [{"name": "bytes", "configuration": {"endian": "little"}}]
                ),
            )
    reader, store = _open_logged(path)
    for t in range(N_TIME):
        assert np.array_equal(reader.read(t), data[t])
    assert store.stats.heads == 0  # a start index needs no length
    assert all(s == 0 for k, s, e in store.ranges if e - s == 16 * 2 + (4 if with_crc else 0))
    zarr_read = zarr.open_array(str(path / "0" / "data"), mode="r")[:]
    assert np.array_equal(zarr_read[0], data[0])  # zarr-python agrees on the rewritten shards


def test_one_array_handle_per_level(delta_sharded) -> None:
    """spec 7.2: readers reuse one array handle per level (the index cache lives there)."""
    reader = chronozarr.open_store(delta_sharded[0])
    assert reader.array(0) is reader.array(0)
    assert reader.array(1) is not reader.array(0)


def test_decodes_through_the_recorded_map(tmp_path: Path) -> None:
    """spec 4.2.2: a valid reference that is not the nearest anchor (as an append leaves it)
    MUST be used as recorded, never recomputed."""
    data = synthetic_series(n_time=5, n_band=2, height=6, width=6, seed=3)
    path, _ = _encode(
        tmp_path / "r.zarr", data, encoding="star-delta", anchor_interval=4, chunk_size=6
    )
    assert chronozarr.open_store(path).attrs.temporal.delta_reference == {1: 0, 2: 0, 3: 4}
    # t=3 now stores its residual against anchor 0 (distance 3 < 4: valid, not nearest)
    doc = read_json(path / "0" / "data" / "zarr.json")
    from chronozarr.format import ChunkCodec

    codec = ChunkCodec(doc["codecs"], "uint16", (1, 2, 6, 6))
    residual = (data[3].astype(np.int64) - data[0]) % 65536
    (path / "0" / "data" / "c" / "3" / "0" / "0" / "0").write_bytes(
        codec.encode(residual.astype(np.uint16)[None])
    )
    edit_chronozarr(path, lambda cz: cz["temporal"]["delta_reference"].__setitem__("3", 0))
    reader = chronozarr.open_store(path)
    assert np.array_equal(reader.read(3), data[3])
    assert chronozarr.validate(path).ok


def test_read_cell_is_writeable_under_none(tmp_path: Path) -> None:
    path, data = _encode(tmp_path / "w.zarr", encoding="none")
    reader = chronozarr.open_store(path)
    cell = reader.read_cell(0, 0, 0)
    cell[:] = 0  # in-place band math on a returned cell
    assert not cell.any()
    assert np.array_equal(reader.read_cell(0, 0, 0), data[0, :, :6, :6])  # no cache poisoned


# --- remote stores (spec 9, 10) ----------------------------------------------------------------


def test_http_store_reads_with_bounded_ranges(delta_sharded) -> None:
    path, data = delta_sharded
    server, url, log = serve_directory(path)
    try:
        reader = chronozarr.open_store(url)
        for t in range(N_TIME):
            assert np.array_equal(reader.read(t), data[t])
        assert reader.store.stats.heads == 0
        ranges = [r for _, _, r in log if r]
        assert ranges and all(not r.startswith("bytes=-") for r in ranges)  # no preflight
        assert not [m for m, _, _ in log if m == "HEAD"]
        report = chronozarr.validate(url, deep=True)  # no listing over HTTP: HEADs instead
        assert report.ok, report.findings
        with pytest.raises(StoreNotFoundError):
            chronozarr.open_store(url + "/elsewhere")
    finally:
        server.shutdown()
        server.server_close()


def test_file_url(delta_plain) -> None:
    path, data = delta_plain
    reader = chronozarr.open_store(path.resolve().as_uri())
    assert np.array_equal(reader.read(2), data[2])


# --- fill decoding (spec 7.2, 2.1) -----------------------------------------------------------------


def test_missing_shard_decodes_as_fill(tmp_path: Path) -> None:
    path, data = _encode(tmp_path / "m.zarr", encoding="none", shard_time=4, nodata=7)
    (path / "0" / "data" / "c" / "1" / "0" / "1" / "0").unlink()  # listed in shard_bytes
    (path / "0" / "data" / "c" / "0" / "0" / "0" / "1").unlink()
    edit_chronozarr(path, lambda cz: cz["shard_bytes"]["0"].pop("0/0/1"))  # and one not listed
    reader = chronozarr.open_store(path)
    assert np.all(reader.read_cell(4, 1, 0) == 7)
    assert np.all(reader.read_cell(5, 1, 0) == 7)
    assert np.all(reader.read_cell(0, 0, 1) == 7)
    assert np.array_equal(reader.read_cell(0, 0, 0), data[0, :, :6, :6])
    assert reader.read_cell(4, 1, 0).shape == (2, 6, 6)
    assert reader.read_cell(4, 2, 1).shape == (2, 1, 5)  # ragged corner: rows 12..12, cols 6..10


def test_missing_chunk_decodes_as_fill(tmp_path: Path) -> None:
    path, data = _encode(tmp_path / "m.zarr", encoding="none")
    (path / "0" / "data" / "c" / "2" / "0" / "1" / "1").unlink()
    reader = chronozarr.open_store(path)
    got = reader.read(2)
    want = data[2].copy()
    want[:, 6:12, 6:11] = 0  # default nodata of uint16 is the fill value
    assert np.array_equal(got, want)
    da = reader.to_xarray()
    assert np.array_equal(da[2].values, want)


def test_missing_plane_chunk_decodes_as_zero(tmp_path: Path) -> None:
    data = synthetic_series(n_time=2, n_band=1, height=7, width=7, seed=1)
    mask = np.ones((2, 7, 7), dtype=np.uint8)
    path, _ = _encode(tmp_path / "m.zarr", data, encoding="none", mask=mask, chunk_size=4)
    (path / "0" / "mask" / "c" / "1" / "0" / "0").unlink()
    reader = chronozarr.open_store(path)
    got = reader.read_mask(1)
    assert got[:4, :4].sum() == 0 and got[4:].all()
    assert not reader.valid(1)[:4, :4].any()


def test_empty_inner_chunk_decodes_as_fill(tmp_path: Path) -> None:
    path, data = _encode(tmp_path / "e.zarr", encoding="none", shard_time=3, nodata=9)
    shard = path / "0" / "data" / "c" / "0" / "0" / "1" / "1"
    chunks = shard_chunks(shard.read_bytes(), 3)
    chunks[1] = None
    shard.write_bytes(make_shard(chunks))
    edit_chronozarr(
        path, lambda cz: cz["shard_bytes"]["0"].__setitem__("0/1/1", shard.stat().st_size)
    )
    reader = chronozarr.open_store(path)
    assert np.all(reader.read_cell(1, 1, 1) == 9)
    assert np.array_equal(reader.read_cell(0, 1, 1), data[0, :, 6:12, 6:11])
    assert np.array_equal(reader.read_cell(2, 1, 1), data[2, :, 6:12, 6:11])


def test_partial_last_time_shard_index(tmp_path: Path) -> None:
    """shard_time > n_time: one shard with shard_time index entries, the rest empty (7.1, 7.2)."""
    path, data = _encode(tmp_path / "p.zarr", encoding="none", shard_time=10)
    blob = (path / "0" / "data" / "c" / "0" / "0" / "0" / "0").read_bytes()
    index = shard_index(blob, 10)
    assert index[N_TIME:].tolist() == [[2**64 - 1, 2**64 - 1]] * (10 - N_TIME)
    reader = chronozarr.open_store(path)
    assert reader.array(0).info.shard_time == 10
    for t in range(N_TIME):
        assert np.array_equal(reader.read(t), data[t])


# --- metadata sources (spec 2.1, 3.1, 3.5, 10.2) ---------------------------------------------------


def test_falls_back_to_per_array_zarr_json(delta_sharded, tmp_path: Path) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    drop_consolidated(path)
    reader = chronozarr.open_store(path)
    for t in range(N_TIME):
        assert np.array_equal(reader.read(t), delta_sharded[1][t])
    assert ("get", "0/data/zarr.json") in reader.store.stats.keys


def test_mirrors_are_the_primary_source(delta_plain, tmp_path: Path) -> None:
    """spec 3.5: readers MUST NOT require the time/band arrays."""
    path = _copy(delta_plain[0], tmp_path)
    for level in ("0", "1"):
        for name in ("time", "band"):
            shutil.rmtree(path / level / name)
    reader = chronozarr.open_store(path)
    assert reader.times.tolist() == [np.datetime64(t[:-1], "ms").tolist() for t in monthly(6)]
    assert reader.band_names == ("B04", "B08")
    assert np.array_equal(reader.read(5), delta_plain[1][5])


def test_cs_from_the_chunk_shape_not_multiscales(delta_plain) -> None:
    reader = chronozarr.open_store(delta_plain[0])
    assert reader.chunk_size(0) == 6 == reader.chunk_size(1)
    assert reader.levels[0].grid == (3, 2)


def _make_v01(src: Path, dst: Path, *, keep_consolidated: bool) -> Path:
    shutil.copytree(src, dst)

    def edit(doc: dict[str, Any]) -> None:
        cz = doc["attributes"]["chronozarr"]
        cz["spec_version"] = "0.1.0"
        cz["bands"] = [b["name"] for b in cz["bands"]]
        for key in ("band_names", "levels", "shard_bytes"):
            cz.pop(key, None)
        cz["temporal"].pop("encoding")
        for d in doc["attributes"]["multiscales"][0]["datasets"]:
            d["pixels_per_tile"] = 512  # wrong on purpose: readers MUST ignore it
        if not keep_consolidated:
            doc.pop("consolidated_metadata", None)

    edit_root(dst, edit)
    return dst


@pytest.mark.parametrize("keep_consolidated", [True, False])
def test_v01_store_opens_and_decodes(tmp_path: Path, keep_consolidated: bool) -> None:
    src, data = _encode(tmp_path / "src.zarr", encoding="star-delta", anchor_interval=2, shard=True)
    path = _make_v01(src, tmp_path / "v01.zarr", keep_consolidated=keep_consolidated)
    reader = chronozarr.open_store(path)
    assert reader.encoding == "star-delta"
    assert reader.band_names == ("B04", "B08")
    assert [b.effective_scale for b in reader.bands] == [1.0, 1.0]  # spec 3.6: reads as scale 1
    assert reader.chunk_size(0) == 6
    assert [lv.resolution for lv in reader.levels] == [10.0, 20.0, 40.0]
    assert reader.levels[1].transform == (20.0, 0.0, 300000.0, 0.0, -20.0, 6000000.0)
    assert reader.levels[0].grid == (3, 2)
    src_reader = chronozarr.open_store(src)
    for k in range(len(reader.levels)):
        for t in range(N_TIME):
            assert np.array_equal(reader.read(t, k), src_reader.read(t, k))
    assert np.array_equal(reader.read(3), data[3])
    # no shard_bytes in v0.1: one HEAD per shard (3 x 2 + 2 x 1 + 1 x 1 cells), then cached
    assert reader.store.stats.heads == 9


def test_v01_uint16_residuals_as_int16_bytes(tmp_path: Path) -> None:
    """A v0.1 residual was int16 viewed as uint16: same bytes as the modular residual (4.2)."""
    data = np.zeros((2, 1, 4, 4), dtype=np.uint16)
    data[0] = 1000
    data[1] = np.arange(16, dtype=np.uint16).reshape(4, 4) * 200  # below and above the anchor
    path, _ = _encode(
        tmp_path / "v.zarr", data, encoding="star-delta", anchor_interval=2, chunk_size=4
    )
    raw = zarr.open_array(str(path / "0" / "data"), mode="r")[1]
    v01 = (data[1].astype(np.int32) - data[0].astype(np.int32)).astype(np.int16).view(np.uint16)
    assert np.array_equal(raw, v01)
    assert np.array_equal(chronozarr.open_store(path).read(1), data[1])


# --- errors (spec 10.1, 10.2) ------------------------------------------------------------------------


def test_missing_store(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        chronozarr.open_store(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StoreNotFoundError):
        chronozarr.open_store(tmp_path / "empty")


def test_plain_zarr_group_is_not_a_chronozarr_store(tmp_path: Path) -> None:
    group = zarr.open_group(str(tmp_path / "plain.zarr"), mode="w")
    group.create_array("a", shape=(2,), dtype="uint8")
    with pytest.raises(NotAChronozarrStoreError):
        chronozarr.open_store(tmp_path / "plain.zarr")
    zarr.open_array(str(tmp_path / "arr.zarr"), mode="w", shape=(2,), dtype="uint8")
    with pytest.raises(NotAChronozarrStoreError):
        chronozarr.open_store(tmp_path / "arr.zarr")


def test_errors_are_chronozarr_errors() -> None:
    for exc in (StoreNotFoundError, NotAChronozarrStoreError, UnsupportedError, CorruptStoreError):
        assert issubclass(exc, chronozarr.ChronozarrError)


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path, _ = _encode(tmp_path / "small.zarr", encoding="star-delta", anchor_interval=2)
    return path


def test_unsupported_spec_version(small: Path) -> None:
    edit_chronozarr(small, lambda cz: cz.__setitem__("spec_version", "0.3.0"))
    with pytest.raises(UnsupportedError, match=r"spec_version.*0\.3\.0"):
        chronozarr.open_store(small)


@pytest.mark.parametrize("version", ["0.1.7", "0.2.9"])
def test_accepted_spec_versions(small: Path, version: str) -> None:
    edit_chronozarr(small, lambda cz: cz.__setitem__("spec_version", version))
    assert chronozarr.open_store(small).attrs.spec_version == version


def test_unsupported_encoding(small: Path) -> None:
    edit_chronozarr(small, lambda cz: cz["temporal"].__setitem__("encoding", "chain"))
    with pytest.raises(UnsupportedError, match="chain"):
        chronozarr.open_store(small)


@pytest.mark.parametrize("consolidated", [True, False])
def test_unsupported_data_type(small: Path, consolidated: bool) -> None:
    if not consolidated:
        drop_consolidated(small)
    edit_doc(small, "1/data", lambda d: d.__setitem__("data_type", "int32"))
    with pytest.raises(UnsupportedError, match="int32") as info:
        chronozarr.open_store(small)
    assert "1/data" in str(info.value)


@pytest.mark.parametrize(
    ("codec", "word"),
    [
        ({"name": "lzma", "configuration": {}}, "lzma"),
        ({"name": "blosc", "configuration": {"cname": "zlib", "shuffle": "shuffle"}}, "zlib"),
        (
            {"name": "blosc", "configuration": {"cname": "lz4", "shuffle": "bitshuffle"}},
            "bitshuffle",
        ),
    ],
)
@pytest.mark.parametrize("consolidated", [True, False])
def test_unsupported_codec(small: Path, codec: dict, word: str, consolidated: bool) -> None:
    if not consolidated:
        drop_consolidated(small)
    edit_doc(small, "0/data", lambda d: d["codecs"].__setitem__(1, codec))
    with pytest.raises(UnsupportedError, match=word):
        chronozarr.open_store(small)


def test_unsupported_plane_codec_named_when_read(tmp_path: Path) -> None:
    data = synthetic_series(n_time=2, n_band=1, height=5, width=5)
    path, _ = _encode(tmp_path / "p.zarr", data, mask=np.ones((2, 5, 5), np.uint8))
    edit_doc(path, "0/mask", lambda d: d["codecs"].__setitem__(1, {"name": "lzma"}))
    reader = chronozarr.open_store(path)
    with pytest.raises(UnsupportedError, match="lzma"):
        reader.read_mask(0)


def test_corrupt_root_json(small: Path) -> None:
    (small / "zarr.json").write_text('{"zarr_format": 3, "node_type": "gro')
    with pytest.raises(CorruptStoreError, match=r"zarr\.json"):
        chronozarr.open_store(small)


def test_corrupt_array_json(small: Path) -> None:
    drop_consolidated(small)
    (small / "0" / "data" / "zarr.json").write_text("{not json")
    with pytest.raises(CorruptStoreError, match="0/data"):
        chronozarr.open_store(small)


@pytest.mark.parametrize(
    "edit",
    [
        lambda cz: cz.__setitem__("times", "2024-01-01"),
        lambda cz: cz.__setitem__("bands", None),
        lambda cz: cz["temporal"].pop("anchor_indices"),
        lambda cz: cz["levels"][0].pop("shape"),
        lambda cz: cz.__setitem__("nodata", "zero"),
        lambda cz: cz["bands"][0].__setitem__("scale", "big"),
    ],
    ids=["times", "bands", "anchors", "levels", "nodata", "scale"],
)
def test_malformed_chronozarr_block(small: Path, edit: Any) -> None:
    edit_chronozarr(small, edit)
    with pytest.raises(CorruptStoreError):
        chronozarr.open_store(small)


def test_corrupt_shard_index_crc(delta_sharded, tmp_path: Path) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    shard = path / "0" / "data" / "c" / "0" / "0" / "0" / "0"
    blob = bytearray(shard.read_bytes())
    blob[-1] ^= 0xFF
    shard.write_bytes(bytes(blob))
    reader = chronozarr.open_store(path)
    with pytest.raises(CorruptStoreError, match="checksum"):
        reader.read_cell(0, 0, 0)
    assert np.array_equal(reader.read_cell(0, 0, 1), delta_sharded[1][0, :, :6, 6:])


def test_corrupt_chunk_bytes(delta_plain, tmp_path: Path) -> None:
    path = _copy(delta_plain[0], tmp_path)
    (path / "0" / "data" / "c" / "1" / "0" / "0" / "0").write_bytes(b"garbage, not zstd")
    reader = chronozarr.open_store(path)
    with pytest.raises(CorruptStoreError, match="0/data"):
        reader.read_cell(1, 0, 0)


def test_reader_refuses_keys_escaping_the_store(small: Path) -> None:
    edit_chronozarr(small, lambda cz: cz.__setitem__("variable", "../../etc"))
    with pytest.raises(CorruptStoreError):
        chronozarr.open_store(small).read(0)


def test_index_errors(small: Path) -> None:
    reader = chronozarr.open_store(small)
    with pytest.raises(IndexError):
        reader.read(N_TIME)
    with pytest.raises(IndexError):
        reader.read(0, level=len(reader.levels))
    with pytest.raises(IndexError):
        reader.read_cell(0, 3, 0)


# --- level selection, validity, physical values (spec 2.3, 3.6, 10.3, 10.7, 10.8) -----------------


def test_level_for(small: Path) -> None:
    reader = chronozarr.open_store(small)
    assert [lv.resolution for lv in reader.levels] == [10.0, 20.0, 40.0]
    assert reader.level_for(1.0) == 0
    assert reader.level_for(10.0) == 0
    assert reader.level_for(19.99) == 0
    assert reader.level_for(20.0) == 1
    assert reader.level_for(39.0) == 1
    assert reader.level_for(40.0) == 2
    assert reader.level_for(1e9) == 2


def test_valid_with_mask_ignores_nodata(tmp_path: Path) -> None:
    data = np.zeros((1, 2, 4, 4), dtype=np.uint16)  # every value equals nodata
    mask = np.array([[[1, 0, 1, 0]] * 4], dtype=np.uint8)
    path, _ = _encode(tmp_path / "v.zarr", data, mask=mask, chunk_size=4)
    reader = chronozarr.open_store(path)
    assert np.array_equal(reader.valid(0), mask[0] == 1)  # spec 2.3: MUST NOT compare nodata
    assert np.array_equal(reader.valid_bands(0), np.stack([mask[0] == 1] * 2))


def test_valid_without_mask_is_per_band(tmp_path: Path) -> None:
    data = np.full((1, 2, 2, 3), 5, dtype=np.uint16)
    data[0, 0, 0, 0] = 0  # band 0 missing, band 1 valid
    data[0, :, 1, 2] = 0  # both bands missing
    path, _ = _encode(tmp_path / "v.zarr", data, chunk_size=4)
    reader = chronozarr.open_store(path)
    per_band = reader.valid_bands(0)
    assert per_band[0].tolist() == [[False, True, True], [True, True, False]]
    assert per_band[1].tolist() == [[True, True, True], [True, True, False]]
    # (H, W): missing only where every band is nodata (DESIGN: per-band, as GDAL)
    assert reader.valid(0).tolist() == [[True, True, True], [True, True, False]]


def test_valid_without_nodata_is_always(tmp_path: Path) -> None:
    data = np.zeros((1, 1, 3, 3), dtype=np.int16)
    path, _ = _encode(tmp_path / "v.zarr", data, chunk_size=4)
    reader = chronozarr.open_store(path)
    assert reader.nodata is None
    assert reader.valid(0).all() and reader.valid(0).shape == (3, 3)


def test_valid_at_a_coarse_level(tmp_path: Path) -> None:
    data = np.full((1, 1, 4, 4), 3, dtype=np.uint8)
    data[0, 0, :2, :2] = 0  # a block of nodata -> nodata at level 1
    path, _ = _encode(tmp_path / "v.zarr", data, chunk_size=2)
    reader = chronozarr.open_store(path)
    assert reader.read(0, 1).tolist() == [[[0, 3], [3, 3]]]
    assert reader.valid(0, 1).tolist() == [[False, True], [True, True]]


def test_physical_values(tmp_path: Path) -> None:
    data = np.array([[[[0, 1000], [2000, 3000]], [[0, 10], [20, 30]]]], dtype=np.uint16)
    path, _ = _encode(tmp_path / "p.zarr", data, chunk_size=2)
    reader = chronozarr.open_store(path)
    values = reader.read(0)
    phys = reader.physical(values)
    assert np.allclose(phys[0], np.array([[0, 1000], [2000, 3000]]) * 0.0001 - 0.1)
    assert np.allclose(phys[1], np.array([[0, 10], [20, 30]]) * 0.0002)
    masked = reader.physical(values, reader.valid_bands(0))
    assert np.isnan(masked[0, 0, 0]) and np.isnan(masked[1, 0, 0])
    assert np.isclose(masked[0, 1, 1], 0.2)
    assert phys.dtype == np.float64


def test_band_objects_round_trip(small: Path) -> None:
    reader = chronozarr.open_store(small)
    assert [b.to_json() for b in reader.bands] == [
        {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": -0.1},
        {"name": "B08", "common_name": "nir", "scale": 0.0002, "offset": 0.0},
    ]
    root = read_json(small / "zarr.json")
    assert root["attributes"]["chronozarr"]["band_names"] == ["B04", "B08"]


def test_times_are_datetime64_ms(small: Path) -> None:
    reader = chronozarr.open_store(small)
    assert reader.times.dtype == np.dtype("datetime64[ms]")
    assert str(reader.times[0]) == "2024-01-01T00:00:00.000"


def test_to_xarray_is_lazy(delta_plain) -> None:
    path, data = delta_plain
    reader = chronozarr.open_store(path)
    reader.store.stats.reset()
    da = reader.to_xarray()
    assert reader.store.stats.gets == 0  # nothing read until computed
    assert da.attrs["crs"] == "EPSG:32631"
    sub = da.isel(time=4, x=slice(2, 9), y=slice(5, 7)).values
    assert np.array_equal(sub, data[4, :, 5:7, 2:9])
    assert json.dumps(da.attrs["transform"]) == "[10.0, 0.0, 300000.0, 0.0, -10.0, 6000000.0]"


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    parts = dotted.split(".")
    target: Any = doc
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        target[int(parts[-1])] = value
    else:
        target[parts[-1]] = value


MALFORMED_ROOT = [
    ("attributes", -1),
    ("attributes.chronozarr.band_names", -1),
    ("attributes.chronozarr.temporal.delta_reference", None),
    ("attributes.chronozarr.shard_bytes", "x"),
    ("attributes.chronozarr.shard_bytes.0", -1),
    ("attributes.chronozarr.shard_bytes.1.0/0/0", "x"),
    ("attributes.chronozarr.shard_bytes.1.0/0/0", -1),
    ("consolidated_metadata.metadata", None),
]
MALFORMED_ARRAY = [
    ("chunk_key_encoding", None),
    ("chunk_key_encoding.configuration", None),
    ("fill_value", "x"),
    ("codecs", "x"),
    ("codecs.0.configuration", None),
    ("codecs.0.configuration.chunk_shape", "x"),
    ("codecs.0.configuration.codecs", None),
    ("codecs.0.configuration.codecs.1.configuration.level", "x"),
    ("codecs.0.configuration.index_codecs", "x"),
    ("dimension_names", -1),
]


@pytest.mark.parametrize(
    ("where", "dotted", "value"),
    [("zarr.json", d, v) for d, v in MALFORMED_ROOT]
    + [("1/data", d, v) for d, v in MALFORMED_ARRAY],
)
def test_malformed_metadata_is_corrupt_store_error(
    delta_sharded, tmp_path: Path, where: str, dotted: str, value: Any
) -> None:
    """Malformed metadata is a typed error (or, where a reader may ignore it, no error):
    never a bare TypeError/AttributeError/ValueError/OSError (chronozarr.errors)."""
    path = _copy(delta_sharded[0], tmp_path)
    if where == "zarr.json":
        edit_root(path, lambda d: _set(d, dotted, value))
    else:
        edit_doc(path, where, lambda d: _set(d, dotted, value))
    try:
        reader = chronozarr.open_store(path)
        level1 = [reader.read(t, level=1) for t in (0, 2)]
    except chronozarr.ChronozarrError:
        return
    # read without error: then the values must be right (an ignorable key, e.g. a null
    # consolidated block: readers fall back to per-array zarr.json, spec 3.1)
    want = chronozarr.open_store(delta_sharded[0])
    assert all(np.array_equal(v, want.read(t, 1)) for v, t in zip(level1, (0, 2), strict=True))


@pytest.mark.parametrize("shape", [[], [5, 2, 7], [5, 2, 7, 6, 1]])
def test_levels_mirror_shape_must_be_4d(delta_sharded, tmp_path: Path, shape: list) -> None:
    path = _copy(delta_sharded[0], tmp_path)
    edit_chronozarr(path, lambda cz: cz["levels"][1].__setitem__("shape", shape))
    with pytest.raises(CorruptStoreError, match=r"levels\[1\]"):
        chronozarr.open_store(path).read(0, level=1)

"""``chronozarr.io._objects`` (spec 9, 14): the write phase and in-place class of every object of a
store, chunk-key geometry, typed errors naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr.io import ChunkGeometry, Phase, classify_objects, load_document, walk
from tests.chronozarr.small_stores import small_store


def test_classify_objects_phases_and_classes(tmp_path: Path) -> None:
    store = small_store(tmp_path / "s.zarr", shard=True)
    found, skipped = classify_objects(store)
    (store / "notes.txt").write_text("not a store object")
    assert classify_objects(store)[1] == ["notes.txt"]
    assert skipped == []
    keys = [o.key for o in found]
    assert keys[-1] == "zarr.json" and found[-1].phase == Phase.ROOT
    assert [o.phase for o in found] == sorted(o.phase for o in found)
    on_disk = {p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file()}
    assert set(keys) == on_disk - {"notes.txt"}
    for o in found:
        if o.key.endswith("zarr.json"):
            assert o.in_place and o.phase >= Phase.METADATA
        elif o.key.startswith("0/data/c/"):
            # T = 4, shard_time 2: time shard 1 holds the last timestep and may grow in place
            assert o.in_place == (o.key.split("/")[3] == "1"), o.key
        elif o.key.startswith("volatility/") or o.key.endswith("time/c/0"):
            assert o.phase == Phase.COORDINATES and o.in_place


@given(
    st.lists(st.integers(1, 5), min_size=1, max_size=4),
    st.sampled_from(["/", "."]),
    st.data(),
)
def test_chunk_coords_round_trip(chunks: list[int], sep: str, data: st.DataObject) -> None:
    shape = [c * 3 for c in chunks]
    doc = {
        "shape": shape,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": sep}},
    }
    geo = ChunkGeometry.from_doc("a/b", doc)
    coords = tuple(data.draw(st.integers(0, 2)) for _ in chunks)
    key = "a/b/c" + "".join(sep + str(c) for c in coords)
    assert geo.chunk_coords(key) == coords
    assert geo.chunk_coords("a/b/zarr.json") is None
    assert geo.chunk_coords(key + sep + "0") is None


def test_malformed_array_metadata_is_a_typed_error_naming_the_file() -> None:
    with pytest.raises(chronozarr.CorruptStoreError, match=r"x/zarr\.json: malformed"):
        ChunkGeometry.from_doc("x", {"shape": [1]})
    with pytest.raises(chronozarr.CorruptStoreError, match=r"s3://b/zarr\.json exists but"):
        load_document(b"{not json", "s3://b/zarr.json")


def test_walk_skips_the_resumable_work_prefix(tmp_path: Path) -> None:
    """An interrupted cluster append leaves ``.cz-build/<key>/`` in a local store: not an object
    of the store, so walk (publish's listing) leaves it out; a folder of that name deeper is kept."""
    store = small_store(tmp_path / "s.zarr")
    before = dict(walk(store))
    (store / ".cz-build" / "append-0123").mkdir(parents=True)
    (store / ".cz-build" / "append-0123" / "0-0-0.json").write_text("{}")
    (store / "0" / ".cz-build").mkdir()
    (store / "0" / ".cz-build" / "x").write_text("kept")
    after = dict(walk(store))
    assert not any(k.startswith(".cz-build/") for k in after)
    assert after == {**before, "0/.cz-build/x": 4}

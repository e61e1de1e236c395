"""The metadata functions the toolkit calls (issue 11): ``chronozarr.provenance`` (spec 3.8),
``chronozarr.objects`` (spec 9, 14 object classes) and ``chronozarr.growth`` (spec 14 "what an
append may change"). Checked against zarr-python reading what we write, and against stores
grown by :func:`chronozarr.append`."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import zarr
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr import growth, objects, provenance

T, H, W = 4, 20, 20


@dataclass(frozen=True)
class Skip:
    item: str
    asset: str
    month: str
    error: str


def _store(path: Path, *, n_time: int = T, shard: bool = False) -> Path:
    rng = np.random.default_rng(3)
    data = rng.integers(0, 3000, (n_time, 2, H, W), dtype=np.uint16)
    chronozarr.encode(
        data,
        path,
        times=[f"2024-{m + 1:02d}-01" for m in range(n_time)],
        bands=["red", "nir"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 5100000.0],
        encoding="star-delta",
        anchor_interval=2,
        chunk_size=8,
        shard=shard,
        shard_time=2 if shard else None,
    )
    return path


def _root(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_bytes())


def test_provenance_items_read_by_zarr_python(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.zarr", n_time=3)
    docs = [
        provenance.items_document(
            f"2024-0{t + 1}",
            items=[f"item-{t}"],
            solar_days=["2024-01-02"],
            corrections={},
            dropped=t,
            skipped=[Skip("x", "red", f"2024-0{t + 1}", "boom"), Skip("y", "nir", "2099-01", "no")],
        )
        for t in range(3)
    ]
    provenance.write_provenance_items(store, docs[:2], first=0, update_root=True)
    provenance.write_provenance_items(store, docs[2:], first=2, update_root=True)
    arr = zarr.open_array(store / provenance.PROVENANCE_ITEMS, mode="r")
    assert arr.shape == (3,)
    assert [json.loads(s) for s in arr[:]] == [json.loads(d) for d in docs]
    got = provenance.read_provenance_items(store)
    assert [g["dropped"] for g in got] == [0, 1, 2]
    assert got[0]["skipped"] == [{"item": "x", "asset": "red", "month": "2024-01", "error": "boom"}]
    cons = _root(store)["consolidated_metadata"]["metadata"][provenance.PROVENANCE_ITEMS]
    assert cons["shape"] == [3]
    assert chronozarr.validate(store).ok


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xy")), max_size=30))
def test_skipped_entries_keep_the_first_of_each_pair_up_to_the_limit(pairs: list) -> None:
    skipped = [Skip(i, a, "2024-01", f"e{n}") for n, (i, a) in enumerate(pairs)]
    got = provenance.skipped_entries(skipped, limit=4)
    firsts: dict = {}
    for n, pair in enumerate(pairs):
        firsts.setdefault(pair, f"e{n}")
    assert [(g["item"], g["asset"], g["error"]) for g in got] == [
        (*k, v) for k, v in list(firsts.items())[:4]
    ]


def test_record_skipped_items_and_fingerprint(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    rng = np.random.default_rng(1)
    chronozarr.encode(
        rng.integers(0, 9, (2, 1, 8, 8), dtype=np.uint16),
        store,
        times=["2024-01-01", "2024-02-01"],
        bands=["red"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0],
        provenance={"build": {"composite": "median", "gap_fill": "none"}, "skipped_items": []},
    )
    provenance.record_skipped_items(store, [Skip("a", "red", "2024-03", "gone")] * 3)
    prov = chronozarr.open_store(store).attrs.provenance
    assert prov["skipped_items"] == [
        {"item": "a", "asset": "red", "month": "2024-03", "error": "gone"}
    ]
    assert provenance.fingerprint_differences(prov, {"composite": "median", "x": 1}) == []
    assert provenance.fingerprint_differences(prov, {"gap_fill": "carry-forward"}) == [
        ("gap_fill", "carry-forward", "none")
    ]
    assert provenance.fingerprint_differences(None, {"gap_fill": "x"}) == []


def test_classify_objects_phases_and_classes(tmp_path: Path) -> None:
    store = _store(tmp_path / "s.zarr", shard=True)
    found, skipped = objects.classify_objects(store)
    (store / "notes.txt").write_text("not a store object")
    assert objects.classify_objects(store)[1] == ["notes.txt"]
    assert skipped == []
    keys = [o.key for o in found]
    assert keys[-1] == "zarr.json" and found[-1].phase == objects.Phase.ROOT
    assert [o.phase for o in found] == sorted(o.phase for o in found)
    on_disk = {p.relative_to(store).as_posix() for p in store.rglob("*") if p.is_file()}
    assert set(keys) == on_disk - {"notes.txt"}
    for o in found:
        if o.key.endswith("zarr.json"):
            assert o.in_place and o.phase >= objects.Phase.METADATA
        elif o.key.startswith("0/data/c/"):
            # T = 4, shard_time 2: time shard 1 holds the last timestep and may grow in place
            assert o.in_place == (o.key.split("/")[3] == "1"), o.key
        elif o.key.startswith("volatility/") or o.key.endswith("time/c/0"):
            assert o.phase == objects.Phase.COORDINATES and o.in_place


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
    geo = objects.ChunkGeometry.from_doc("a/b", doc)
    coords = tuple(data.draw(st.integers(0, 2)) for _ in chunks)
    key = "a/b/c" + "".join(sep + str(c) for c in coords)
    assert geo.chunk_coords(key) == coords
    assert geo.chunk_coords("a/b/zarr.json") is None
    assert geo.chunk_coords(key + sep + "0") is None


def test_malformed_array_metadata_is_a_typed_error_naming_the_file() -> None:
    with pytest.raises(chronozarr.CorruptStoreError, match=r"x/zarr\.json: malformed"):
        objects.ChunkGeometry.from_doc("x", {"shape": [1]})
    with pytest.raises(chronozarr.CorruptStoreError, match=r"s3://b/zarr\.json exists but"):
        objects.load_document(b"{not json", "s3://b/zarr.json")


@pytest.mark.parametrize("shard", [False, True])
def test_append_differences_empty_exactly_for_appends(tmp_path: Path, shard: bool) -> None:
    old = _store(tmp_path / "old.zarr", shard=shard)
    grown = tmp_path / "grown.zarr"
    shutil.copytree(old, grown)
    rng = np.random.default_rng(9)
    chronozarr.append(
        grown,
        rng.integers(0, 3000, (3, 2, H, W), dtype=np.uint16),
        times=["2024-05-01", "2024-06-01", "2024-07-01"],
    )
    assert growth.append_differences(_root(old), _root(old)) == []
    assert growth.append_differences(_root(old), _root(grown)) == []
    back = growth.append_differences(_root(grown), _root(old))
    assert any("take timesteps away" in d for d in back)
    other = _store(tmp_path / "other.zarr", shard=not shard)
    assert any("codecs" in d for d in growth.append_differences(_root(old), _root(other)))
    renamed = _root(grown)
    renamed["attributes"]["chronozarr"]["bands"][0]["name"] = "blue"
    assert any("chronozarr.bands" in d for d in growth.append_differences(_root(old), renamed))
    assert growth.append_differences({}, _root(old)) == [
        "the target's root zarr.json is not a chronozarr store"
    ]

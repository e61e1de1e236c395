"""Reading over http(s) through a host that does not merge slashes (a Python Range server), and
publishing to a local directory that a web server serves (docs/hosting.md)."""

from __future__ import annotations

import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.io import ObjectStore, RemoteStoreError
from cz import publish as pub
from tests.remote.conftest import T0, assert_reads_equal, files
from tests.remote.rangeserver import RangeServer


@pytest.fixture(scope="module")
def http(served_root: Path) -> Iterator[RangeServer]:
    with RangeServer(served_root) as server:
        yield server


# --- reading over HTTP ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_read_over_http(name: str, http: RangeServer, stores: dict[str, Path]) -> None:
    http.clear()
    remote = chronozarr.open_store(f"{http.url}/{name}/")  # a trailing slash is fine
    local = chronozarr.open_store(stores[name])
    for k in range(len(local.levels)):
        for t in range(local.n_time):
            np.testing.assert_array_equal(remote.read(t, k), local.read(t, k))
    data_log = http.log
    assert all(r.status in (200, 206) for r in data_log), [r for r in data_log if r.status >= 300]
    assert not [r for r in data_log if r.method == "HEAD"]  # shard_bytes, no HEAD
    assert_reads_equal(remote, local)
    log = http.log
    assert all("//" not in r.path and r.path.startswith(f"/{name}/") for r in log)
    assert all(re.fullmatch(r"bytes=\d+-\d+", r.range) for r in log if r.range)
    assert (name == "sharded") == any(r.range for r in log)
    assert len({r.connection for r in log}) < len(log) / 10  # keep-alive connections reused
    stats = remote.store.stats
    assert stats.gets + stats.range_gets + stats.heads == len(log)
    assert stats.bytes_read == sum(r.nbytes for r in log if r.method == "GET")


def test_http_errors_are_clear(http: RangeServer) -> None:
    with pytest.raises(chronozarr.StoreNotFoundError, match=r"zarr\.json not found"):
        chronozarr.open_store(f"{http.url}/nothing")
    with pytest.raises(RemoteStoreError, match=r"GET http://127\.0\.0\.1:1/x/zarr\.json failed"):
        chronozarr.open_store("http://127.0.0.1:1/x", retry={"max_retries": 0})
    store = ObjectStore(f"{http.url}/unsharded")
    assert store.get("0/data/c/99/0/0/0") is None  # a 404 is an absent object, not an error
    assert store.get_range("0/data/c/99/0/0/0", 0, 10) is None
    assert store.size("0/data/c/99/0/0/0") is None
    with pytest.raises(chronozarr.UnsupportedError, match="cannot list"):
        list(store.list())


def test_validate_over_http_heads_each_shard(http: RangeServer) -> None:
    http.clear()
    report = chronozarr.validate(f"{http.url}/sharded")
    assert report.ok, [f.to_json() for f in report.findings]
    heads = [r for r in http.log if r.method == "HEAD"]
    assert len(heads) == report.checked["shards"] > 0
    broken = chronozarr.validate(f"{http.url}/broken")
    assert not broken.ok
    assert [f.key for f in broken.errors if f.rule == "shard_bytes.exists"] == ["0/data/c/0/0/0/1"]
    assert chronozarr.validate(f"{http.url}/unsharded").ok


# --- publishing to a directory ----------------------------------------------------------------------


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    order: list[str] = []
    original = pub.DirectoryTarget.upload

    def upload(target: pub.DirectoryTarget, obj: pub.StoreObject, path: Path, md5: str) -> None:
        original(target, obj, path, md5)
        order.append(obj.key)  # after the file is in place

    monkeypatch.setattr(pub.DirectoryTarget, "upload", upload)
    original_commit = pub.DirectoryTarget.commit

    def commit(
        target: pub.DirectoryTarget, obj: pub.StoreObject, path: Path, md5: str, expected: Any
    ) -> None:
        # the root goes in by its compare-and-swap (decision 0051): the last write, recorded too
        original_commit(target, obj, path, md5, expected)
        order.append(obj.key)

    monkeypatch.setattr(pub.DirectoryTarget, "commit", commit)
    return order


def _phase(key: str) -> int:
    if key == "zarr.json":
        return 4
    if key.endswith("/zarr.json"):
        return 3
    if re.fullmatch(r"(\d+/)?time/c/0|volatility/c/0/0", key):  # root time too (C22)
        return 2
    return 1


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_publish_to_a_directory_in_order_then_only_changes(
    name: str, stores: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    order = _recording(monkeypatch)
    dest = tmp_path / "www" / name
    result = pub.publish(stores[name], dest, workers=4)
    assert result.plan.target.sets_headers is False
    assert sorted(order) == sorted(files(stores[name]))
    assert [_phase(k) for k in order] == sorted(_phase(k) for k in order)
    assert order[-1] == "zarr.json"
    assert files(dest) == files(stores[name])
    mode = (dest / "0" / "zarr.json").stat().st_mode
    assert mode & stat.S_IROTH, "a published file a web server's user cannot read"
    assert not [p for p in dest.rglob("*") if p.name.endswith(".tmp")]

    order.clear()
    grown = stores[f"{name}+4"]
    result = pub.publish(grown, dest, workers=4)
    old, new = files(stores[name]), files(grown)
    changed = {k for k, v in new.items() if old.get(k) != v}
    assert set(order) == changed and len(order) == len(changed)
    assert order[-1] == "zarr.json"
    assert files(dest) == new
    assert_reads_equal(chronozarr.open_store(dest), chronozarr.open_store(grown))
    assert chronozarr.open_store(dest).n_time > T0

    order.clear()
    assert pub.publish(grown, dest).uploaded == [] and order == []


def test_directory_target_refusals(stores: dict[str, Path], tmp_path: Path) -> None:
    dest = tmp_path / "site"
    pub.publish(stores["unsharded"], dest)
    with pytest.raises(pub.PublishRefusedError, match="new prefix"):
        pub.publish(stores["unsharded-other-data"], dest)
    with pytest.raises(pub.PublishRefusedError, match="overlaps"):
        pub.publish(stores["unsharded"], stores["unsharded"] / "public")
    with pytest.raises(pub.PublishRefusedError, match="read-only"):
        pub.open_target("https://example.org/stores/x")
    with pytest.raises(pub.PublishRefusedError, match="s3:// targets only"):
        pub.open_target(dest, endpoint="http://127.0.0.1:9")


def test_an_invalid_local_store_is_not_published(stores: dict[str, Path], tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken"
    shutil.copytree(stores["sharded"], broken)
    (broken / "0" / "data" / "c" / "0" / "0" / "0" / "1").unlink()
    with pytest.raises(pub.PublishRefusedError, match="does not validate"):
        pub.publish(broken, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_classification_of_a_sharded_store(stores: dict[str, Path]) -> None:
    objects, skipped = pub.classify_store(stores["sharded+4"])
    assert skipped == []
    by_key = {o.key: o for o in objects}
    n_time = T0 + 4
    last = (n_time - 1) // 4
    for key, obj in by_key.items():
        m = re.fullmatch(r"\d+/(data|mask|coverage)/c/(\d+)/.+", key)
        if m:
            assert obj.in_place == (int(m.group(2)) == last), key
            assert obj.phase == pub.Phase.CHUNKS
    assert by_key["0/band/c/0"].in_place is False
    assert by_key["volatility/c/0/0"].phase == pub.Phase.COORDINATES
    assert by_key["0/time/c/0"].in_place
    assert by_key["zarr.json"].phase == pub.Phase.ROOT


def test_reencode_differences_is_empty_exactly_for_appends(stores: dict[str, Path]) -> None:
    import copy
    import json

    def root(name: str) -> dict:
        return json.loads((stores[name] / "zarr.json").read_text())

    for name in ("unsharded", "sharded"):
        assert pub.reencode_differences(root(name), root(name)) == []
        assert pub.reencode_differences(root(name), root(f"{name}+4")) == []
        assert any(
            "take timesteps away" in d
            for d in pub.reencode_differences(root(f"{name}+4"), root(name))
        )
    grown = root("unsharded+4")
    moved = copy.deepcopy(grown)
    refs = moved["attributes"]["chronozarr"]["temporal"]["delta_reference"]
    first = sorted(refs, key=int)[0]
    refs[first] = refs[first] + 2  # another anchor for an existing timestep
    assert any("delta_reference" in d for d in pub.reencode_differences(grown, moved))
    renamed = copy.deepcopy(grown)
    renamed["attributes"]["chronozarr"]["bands"][0]["name"] = "B05"
    assert any("bands" in d for d in pub.reencode_differences(grown, renamed))
    other = root("unsharded-interval3")
    assert any("anchor_interval" in d for d in pub.reencode_differences(root("unsharded"), other))
    # sharded -> unsharded: codecs and chunking of every array differ
    assert any("codecs" in d for d in pub.reencode_differences(root("sharded"), root("unsharded")))

"""Write targets and the resumable work prefix (chronozarr/stores.py, decision 0017), and a
resumed ``encode`` (local threads) writing the bytes of an uninterrupted one."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import EncodeError
from chronozarr.io import (
    WORK_PREFIX,
    LocalStore,
    ObjectStore,
    ObstoreTarget,
    open_target,
    store_is_empty,
)
from chronozarr.write import WorkLog, clear_work
from tests.chronozarr.test_bytes_pinned import digests
from tests.conftest import monthly, synthetic_series


def test_open_target_kinds(tmp_path: Path) -> None:
    assert isinstance(open_target(tmp_path / "a.zarr"), LocalStore)
    assert open_target((tmp_path / "b.zarr").as_uri()).url == str(tmp_path / "b.zarr")
    s3 = open_target("s3://bucket/prefix", {"endpoint": "http://127.0.0.1:9", "region": "x"})
    assert isinstance(s3, ObjectStore) and s3.url == "s3://bucket/prefix"
    assert pickle.loads(pickle.dumps(s3)).url == s3.url  # a worker gets the same target
    local = LocalStore(tmp_path / "c")
    assert open_target(local) is local  # any Store is used as it is
    with pytest.raises(EncodeError, match="cannot be written") as info:
        open_target("http://example.com/x.zarr")
    assert info.value.argument == "store"
    with pytest.raises(EncodeError, match="gs://"):
        open_target("gs://bucket/x")
    with pytest.raises(EncodeError, match="object stores"):
        open_target(tmp_path / "d", {"endpoint": "x"})


def test_an_obstore_memory_store_is_a_target() -> None:
    obstore = pytest.importorskip("obstore")
    target = open_target(obstore.store.MemoryStore())
    assert isinstance(target, ObstoreTarget)
    assert store_is_empty(target)
    target.put("a/b", b"123")
    assert target.get("a/b") == b"123" and target.get("nope") is None
    assert target.get_range("a/b", 1, 3) == b"23"
    assert target.size("a/b") == 3
    assert dict(target.list("a/")) == {"a/b": 3}
    assert not store_is_empty(target)
    target.delete("a/b")
    target.delete("a/b")  # absent: a no-op
    assert store_is_empty(target)


def test_work_log_records_lists_and_clears(tmp_path: Path) -> None:
    target = LocalStore(tmp_path / "t.zarr")
    work = WorkLog(target, "k1")
    assert not work.started()
    work.start({"shape": [1]})
    summary = {"row": 0, "col": 1, "vol_sum": 0.1 + 0.2, "shard_sizes": {}}
    work.record("0/0.1.0-4", summary)
    work.record("1/0.0.0-4", summary)
    assert work.started()
    assert work.done("0/0.1.0-4") == summary  # the float comes back exactly
    assert work.done("0/9.9.0-4") is None
    assert work.finished("0") == ["0/0.1.0-4"]
    WorkLog(target, "other").start({})
    assert work.other_keys() == {"other"}
    clear_work(target, "k1")
    assert not (tmp_path / "t.zarr" / WORK_PREFIX / "k1").exists()
    clear_work(target, "other")
    assert not (tmp_path / "t.zarr" / WORK_PREFIX).exists()  # the empty prefix goes too


KW: dict[str, Any] = dict(
    times=monthly(8), bands=["a", "b"], crs="EPSG:32631",
    transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0], chunk_size=8, encoding="auto",
    anchor_interval=3,
)  # fmt: skip


class Stop(Exception):
    pass


def test_an_interrupted_encode_resumes_to_the_same_bytes(tmp_path: Path) -> None:
    data = synthetic_series(8, 2, 20, 18, "uint16", seed=3)
    mask = (np.arange(8 * 20 * 18).reshape(8, 20, 18) % 7 > 0).astype(np.uint8)
    chronozarr.encode(data, tmp_path / "whole.zarr", mask=mask, workers=1, **KW)
    seen = [0]

    def stop_after_three(_result: Any) -> None:
        seen[0] += 1
        if seen[0] == 3:
            raise Stop

    out = tmp_path / "resumed.zarr"
    with pytest.raises(Stop):
        chronozarr.encode(
            data, out, mask=mask, workers=1, resume_key="r1", on_task=stop_after_three, **KW
        )
    assert not (out / "zarr.json").exists()
    done = sorted(p.name for p in (out / WORK_PREFIX / "r1" / "0").iterdir())
    assert len(done) == 3 and (out / WORK_PREFIX / "r1" / "choice.json").exists()
    # another build's key at the same target is refused, before anything is written
    with pytest.raises(EncodeError, match="partial of another build"):
        chronozarr.encode(data, out, mask=mask, workers=1, resume_key="r2", **KW)
    # without a key the partial is a non-empty folder: refused
    with pytest.raises(EncodeError, match="not empty"):
        chronozarr.encode(data, out, mask=mask, workers=1, **KW)
    ran: list[Any] = []
    summary = chronozarr.encode(
        data, out, mask=mask, workers=1, resume_key="r1", on_task=ran.append, **KW
    )
    assert summary.resumed
    assert len(ran) == 9 - 3  # 3 x 3 level-0 cells, three were done
    assert digests(out) == digests(tmp_path / "whole.zarr")  # the prefix is gone too
    assert chronozarr.validate(out, deep=True).ok


def test_validate_ignores_a_leftover_work_prefix(tmp_path: Path) -> None:
    data = synthetic_series(8, 2, 20, 18, "uint16", seed=3)
    chronozarr.encode(data, tmp_path / "s.zarr", workers=1, **KW)
    WorkLog(LocalStore(tmp_path / "s.zarr"), "stale").record("0/0.0.0-8", {"row": 0})
    report = chronozarr.validate(tmp_path / "s.zarr", deep=True)
    assert report.ok, [f.to_json() for f in report.findings]

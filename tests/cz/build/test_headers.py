"""The key-based cache class of a cluster build's S3 objects (cz.build.headers) agrees with
the format library's classification of a finished store (chronozarr.io._objects, spec 14), which
``cz publish`` uses: for every object of sharded and unsharded stores."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.io import classify_objects
from cz.build.headers import HeaderedStore, in_place
from tests.conftest import monthly, synthetic_series


@pytest.mark.parametrize(
    ("shard_time", "history_time"), [(None, None), (3, None), (7, None), (None, 4), (3, 12)]
)
def test_in_place_by_key_matches_the_store_classification(
    tmp_path: Path, shard_time: int | None, history_time: int | None
) -> None:
    n_time = 7
    data = synthetic_series(n_time, 2, 20, 18, "uint16", seed=2)
    mask = np.ones((n_time, 20, 18), np.uint8)
    out = tmp_path / "s.zarr"
    chronozarr.encode(
        data, out, times=monthly(n_time), bands=["a", "b"], crs=32631,
        transform=[10, 0, 0, 0, -10, 0], chunk_size=8, mask=mask, coverage=mask,
        shard_time=shard_time, workers=1, history=history_time is not None,
        history_time=history_time or 12,
    )  # fmt: skip
    objects, skipped = classify_objects(out)
    assert not skipped
    for obj in objects:
        assert in_place(obj.key, n_time, shard_time, history_time) == obj.in_place, obj.key
    if history_time == 4:  # the companion's trailing chunks are in place, the others not
        assert any(o.in_place and "/history/values/c/1/" in o.key for o in objects)
        assert any(not o.in_place and "/history/values/c/0/" in o.key for o in objects)
    if shard_time:  # the trailing shards are in place, the others not: both cases were seen
        assert any(o.in_place and "/data/c/" in o.key for o in objects)
    assert any(not o.in_place for o in objects)
    assert in_place("provenance_items/c/3", n_time, shard_time)
    assert in_place(".cz-build/abc/0/0.0.0-7.json", n_time, shard_time)


def test_headers_of_a_put() -> None:
    store = HeaderedStore("s3://bucket/p", 12, None, endpoint="http://127.0.0.1:9", region="x")
    assert store.headers("0/data/c/3/0/1/2", b"x") == {
        "Cache-Control": "public, max-age=31536000, immutable",
        "Content-Type": "application/octet-stream",
        "chronozarr-md5": "9dd4e461268c8034f5c8564e155c67a6",
    }
    assert store.headers("zarr.json", b"{}")["Content-Type"] == "application/json"
    assert store.headers("zarr.json", b"{}")["Cache-Control"] == "public, max-age=60"
    import pickle

    again = pickle.loads(pickle.dumps(store))  # what a worker gets
    assert (again.url, again.n_time, again.shard_time) == ("s3://bucket/p", 12, None)

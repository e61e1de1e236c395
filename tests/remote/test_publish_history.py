"""``cz publish`` of a store with the time-series companion (docs/spec.md C25) to an
S3-compatible server (moto on 127.0.0.1): the companion's chunks go up with the other chunks,
before any metadata (spec 9); the chunks of the open time block get the short cache lifetime and
the closed blocks' the long one (spec 14); after an append across a time block the re-publish is
not refused and sends exactly the changed and new objects, the closed block's chunks not among
them."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr
from cz import publish as pub
from tests.conftest import monthly, synthetic_series
from tests.remote.conftest import Moto, files
from tests.remote.test_publish_s3 import LONG, SHORT, _check_order

KW: dict[str, Any] = dict(
    bands=["a", "b"], crs="EPSG:32631", transform=[10.0, 0, 500000.0, 0, -10.0, 5100000.0],
    chunk_size=8, encoding="star-delta", anchor_interval=3, history=True, history_time=4,
)  # fmt: skip


def test_publish_and_republish_after_an_append_carry_the_companion(
    tmp_path: Path, s3: Any, s3env: Moto, bucket: str
) -> None:
    data = synthetic_series(7, 2, 12, 10, seed=9)
    mask = (data[:, 0] % 5 != 0).astype(np.uint8)
    old, new = tmp_path / "old.zarr", tmp_path / "new.zarr"
    chronozarr.encode(data[:5], old, times=monthly(5), mask=mask[:5], coverage=mask[:5], **KW)
    shutil.copytree(old, new)
    chronozarr.append(new, data[5:], times=monthly(7)[5:], mask=mask[5:], coverage=mask[5:])
    url = f"s3://{bucket}/h"
    pub.publish(old, url, workers=4)
    first = s3env.log.puts(bucket)
    _check_order(first, f"/{bucket}/h/")
    companion = sorted(k for k in files(old) if k.startswith("0/history/values/c/"))
    assert {k.split("/")[4] for k in companion} == {"0", "1"}  # two time blocks
    for key in companion:  # block 1 holds the last timestep: an append rewrites it
        head = s3.head_object(Bucket=bucket, Key=f"h/{key}")
        assert head["CacheControl"] == (SHORT if key.split("/")[4] == "1" else LONG), key
    result = pub.publish(new, url, workers=4)
    a, b = files(old), files(new)
    changed = {k for k, v in b.items() if a.get(k) != v}
    assert set(result.uploaded) == changed
    assert {k for k in changed if k.startswith("0/history/values/c/")} == {
        k for k in companion if k.split("/")[4] == "1"
    }
    _check_order(s3env.log.puts(bucket)[len(first) :], f"/{bucket}/h/")
    remote = chronozarr.open_store(url)
    assert remote.pixel_series(11, 9).source == "history"
    assert (remote.pixel_series(11, 9).stored == data[:, :, 11, 9]).all()

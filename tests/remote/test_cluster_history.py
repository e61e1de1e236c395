"""The time-series companion written on a real dask cluster (a scheduler and two worker
processes on 127.0.0.1, started by the test session; docs/spec.md C25): ``encode`` and
``append`` with ``scheduler=`` to a folder the workers share write the same companion objects,
byte for byte, as the local writer, and its values equal the input (read through zarr-python)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from tests.conftest import monthly, synthetic_series
from tests.dask_procs import DaskProcs

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client(dask_procs: DaskProcs) -> Iterator[Any]:
    with distributed.Client(dask_procs.address, timeout="20s", set_as_default=False) as c:
        yield c


def _digests(store: Path) -> dict[str, str]:
    return {
        str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(store.rglob("*"))
        if p.is_file() and "history" in p.parts
    }


def test_cluster_encode_and_append_write_the_local_companion(tmp_path: Path, client: Any) -> None:
    data = synthetic_series(11, 2, 24, 20, "uint16", seed=8)
    rng = np.random.default_rng(8)
    mask = (rng.random((11, 24, 20)) > 0.3).astype(np.uint8)
    cov = rng.integers(0, 5, size=(11, 24, 20)).astype(np.uint8)
    kw: dict[str, Any] = dict(
        bands=["a", "b"], crs="EPSG:32631", transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0],
        chunk_size=8, encoding="star-delta", anchor_interval=3, history=True, history_time=4,
    )  # fmt: skip
    local, remote = tmp_path / "local.zarr", tmp_path / "cluster.zarr"
    first = dict(times=monthly(6), mask=mask[:6], coverage=cov[:6])
    chronozarr.encode(data[:6], local, workers=2, **first, **kw)
    chronozarr.encode(data[:6], remote, scheduler=client, **first, **kw)
    assert _digests(remote) == _digests(local)
    # two appends: into the open time block 1, then across the boundary of block 2
    for part in (slice(6, 7), slice(7, 11)):
        add = dict(times=monthly(11)[part], mask=mask[part], coverage=cov[part])
        chronozarr.append(local, data[part], workers=2, **add)
        chronozarr.append(remote, data[part], scheduler=client, **add)
    assert _digests(remote) == _digests(local)
    values = zarr.open_group(remote, mode="r")["0/history/values"][:]
    assert (values[:, :2] == data).all() and (values[:, 2] == mask).all()
    assert (values[:, 3] == cov).all()
    assert chronozarr.validate(remote, deep=True).ok

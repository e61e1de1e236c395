"""The time-series companion written on a real dask cluster (a scheduler and two worker
processes on 127.0.0.1, started by the test session; docs/spec.md C25): ``encode`` and
``append`` with ``scheduler=`` to a folder the workers share write the same companion objects,
byte for byte, as the local writer, and its values equal the input (read through zarr-python);
``cz build --scheduler`` of a recipe with ``store.history`` to S3 (moto) writes the local build's
objects with the headers of their cache classes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from chronozarr.io import classify_objects
from cz.build import BuildOptions, build
from cz.publish.classify import cache_control
from cz.recipe import load_recipe
from tests.chronozarr.test_bytes_pinned import digests
from tests.conftest import monthly, synthetic_series
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items
from tests.dask_procs import DaskProcs
from tests.remote.conftest import files, new_bucket
from tests.remote.test_cluster_encode import download

distributed = pytest.importorskip("distributed")
pytestmark = LOADER_WARNINGS  # the toolkit build's loaders (its test reads scenes)


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


def test_cz_build_with_history_on_the_cluster_to_s3_equals_the_local_build(
    dask_procs: DaskProcs, s3: Any, s3env: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipe's ``store.history: true`` built by ``cz build --scheduler`` straight to S3: the
    same objects as the local build, companion included, each with the Cache-Control ``cz
    publish`` gives its class (the companion's open time block: short)."""
    folder = tmp_path / "scenes"
    folder.mkdir()
    write_items(folder, scenario()[0])
    path = recipe(folder, start="2024-01", end="2024-04", max_age=2, encoding="star-delta")
    path.write_text(path.read_text() + "  history: true\n")
    rec = load_recipe(path)
    local = tmp_path / "local.zarr"
    build(rec, out=str(local), options=BuildOptions(workers=2))
    assert any("/history/values/c/" in k for k in digests(local))
    bucket = new_bucket(s3)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    options = BuildOptions(scheduler=dask_procs.address, work_dir=str(work))
    build(rec, out=f"s3://{bucket}/c.zarr", options=options)
    got = download(s3, bucket, "c.zarr", tmp_path / "got")
    assert digests(got) == digests(local)
    classes = {o.key: cache_control(o) for o in classify_objects(local)[0]}
    for key, data in files(local).items():
        head = s3.head_object(Bucket=bucket, Key=f"c.zarr/{key}")
        assert head.get("CacheControl") == classes[key], key
        assert head["Metadata"].get("chronozarr-md5") == hashlib.md5(data).hexdigest(), key
    assert chronozarr.validate(got, deep=True).ok

"""A build on a dask.distributed LocalCluster (2 worker processes) writes the very same store
as a local build: equal decoded values and byte-identical objects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build
from cz.recipe import load_recipe
from tests.cz.scenes import LOADER_WARNINGS, listing, read_all, recipe, scenario, write_items

distributed = pytest.importorskip("distributed")

pytestmark = [
    *LOADER_WARNINGS,
    # distributed's nanny/worker teardown on a LocalCluster in-process; not our code
    pytest.mark.filterwarnings("ignore::ResourceWarning"),
]


def test_cluster_build_equals_local_build(tmp_path: Path) -> None:
    scenes, _corrections, _dropped = scenario()
    write_items(tmp_path, scenes)
    rec = load_recipe(
        recipe(tmp_path, start="2024-01", end="2024-04", max_age=2, encoding="star-delta")
    )
    local = tmp_path / "local.zarr"
    build(rec, out=str(local), options=BuildOptions(workers=2))
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address="127.0.0.1:0",  # not 8787: another scheduler on the machine may hold it
        host="127.0.0.1",
        silence_logs=40,
    ) as cluster:
        remote = tmp_path / "cluster.zarr"
        result = build(
            rec, out=str(remote), options=BuildOptions(scheduler=cluster.scheduler_address)
        )
    assert result.store == str(remote)
    for a, b in zip(read_all(local), read_all(remote), strict=True):
        assert np.array_equal(a, b)
    files = listing(local)
    assert files == listing(remote)
    for key in files:
        assert (local / key).read_bytes() == (remote / key).read_bytes(), key
    assert chronozarr.validate(remote, deep=True).ok


def test_unreachable_scheduler_is_a_clear_error(tmp_path: Path) -> None:
    from cz.build import BuildError
    from tests.cz.helpers import free_port

    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes[:1])
    rec = load_recipe(recipe(tmp_path, start="2024-01", end="2024-01"))
    address = f"tcp://127.0.0.1:{free_port()}"
    with pytest.raises(BuildError, match=f"cannot connect to the dask scheduler at {address}"):
        options = BuildOptions(scheduler=address, connect_timeout=1.0)
        build(rec, out=str(tmp_path / "x.zarr"), options=options)
    assert not (tmp_path / "x.zarr").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []

"""``chronozarr.growth`` (spec 14): what an append may change, against stores grown by
:func:`chronozarr.append`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr import growth

T, H, W = 4, 20, 20


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

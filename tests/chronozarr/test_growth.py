"""``chronozarr.format._growth`` (spec 14): what an append may change, against stores grown by
:func:`chronozarr.append`."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.format import append_differences
from tests.chronozarr.small_stores import H, W, root_document, small_store


@pytest.mark.parametrize("shard", [False, True])
def test_append_differences_empty_exactly_for_appends(tmp_path: Path, shard: bool) -> None:
    old = small_store(tmp_path / "old.zarr", shard=shard)
    grown = tmp_path / "grown.zarr"
    shutil.copytree(old, grown)
    rng = np.random.default_rng(9)
    chronozarr.append(
        grown,
        rng.integers(0, 3000, (3, 2, H, W), dtype=np.uint16),
        times=["2024-05-01", "2024-06-01", "2024-07-01"],
    )
    assert append_differences(root_document(old), root_document(old)) == []
    assert append_differences(root_document(old), root_document(grown)) == []
    back = append_differences(root_document(grown), root_document(old))
    assert any("take timesteps away" in d for d in back)
    other = small_store(tmp_path / "other.zarr", shard=not shard)
    assert any("codecs" in d for d in append_differences(root_document(old), root_document(other)))
    renamed = root_document(grown)
    renamed["attributes"]["chronozarr"]["bands"][0]["name"] = "blue"
    assert any("chronozarr.bands" in d for d in append_differences(root_document(old), renamed))
    assert append_differences({}, root_document(old)) == [
        "the target's root zarr.json is not a chronozarr store"
    ]

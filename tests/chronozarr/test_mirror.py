"""The levels mirror is checked against the array before anything is sized by it (decision 0013).

Regressions of main: a ``chronozarr.levels`` shape of 2^63 - 1 or a grid of 10^12 (spec 3.7)
passed open_store, then ``read`` asked numpy for an impossible array (ValueError) or looped over
10^12 cells; absurd shard index entries reached the store as requests.
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import crc32c
import numpy as np
import pytest

import chronozarr
from chronozarr.errors import CorruptStoreError


def _edit_level(store: Path, level: int, field: str, axis: int, value) -> None:
    root = json.loads((store / "zarr.json").read_text())
    root["attributes"]["chronozarr"]["levels"][level][field][axis] = value
    (store / "zarr.json").write_text(json.dumps(root))


@pytest.mark.parametrize(
    ("level", "field", "axis", "value"),
    [
        (0, "shape", 2, 2**63 - 1),
        (0, "shape", 3, 10**12),
        (1, "shape", 2, 41),
        (0, "shape", 0, 5),
        (0, "shape", 1, 3),
        (0, "grid", 1, 10**12),
        (0, "grid", 0, 1),
        (1, "grid", 1, 0),
    ],
)
def test_a_mirror_that_disagrees_with_the_array_is_refused_at_open(
    store_copy, level: int, field: str, axis: int, value: int
) -> None:
    store = store_copy("none-zstd")
    _edit_level(store, level, field, axis, value)
    tracemalloc.start()
    try:
        with pytest.raises(CorruptStoreError, match=r"chronozarr\.levels|chronozarr\.times"):
            chronozarr.open_store(store)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


@pytest.mark.parametrize("entry", [(2**63, 16), (0, 2**63), (0, 10**9), (2**64 - 2, 4)])
def test_an_absurd_shard_index_entry_is_refused_before_reading(store_copy, entry) -> None:
    store = store_copy("delta-sharded-gzip")
    shard = store / "0" / "data" / "c" / "0" / "0" / "0" / "0"
    blob = shard.read_bytes()
    n = 4  # shard_time 4 with one timestep per inner chunk
    index = np.frombuffer(blob[-(16 * n + 4) : -4], dtype="<u8").reshape(n, 2).copy()
    index[0] = entry  # timestep 0, an anchor: no other chunk is read first
    raw = index.tobytes()
    shard.write_bytes(blob[: -(16 * n + 4)] + raw + crc32c.crc32c(raw).to_bytes(4, "little"))
    reader = chronozarr.open_store(store)
    reader.store.stats.reset()
    with pytest.raises(CorruptStoreError, match="shard index entry 0"):
        reader.read_cell(0, 0, 0)
    assert reader.store.stats.range_gets <= 1  # the index only, never the absurd range


@pytest.mark.parametrize(
    ("base", "nodata"),
    [("none-zstd", 10**4000), ("none-zstd", -1), ("none-zstd", 1.5), ("none-blosc-f32", 10**400)],
)
def test_a_nodata_outside_the_dtype_is_refused_at_open(store_copy, base: str, nodata) -> None:
    """Regression (fuzz, seed 7): a 4,000-digit nodata raised OverflowError from valid()."""
    store = store_copy(base)
    root = json.loads((store / "zarr.json").read_text())
    root["attributes"]["chronozarr"]["nodata"] = nodata
    (store / "zarr.json").write_text(json.dumps(root))
    with pytest.raises(CorruptStoreError, match=r"chronozarr\.nodata"):
        chronozarr.open_store(store)

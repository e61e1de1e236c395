"""The small star-delta store that the growth, objects and provenance tests grow and inspect.

Built with :func:`chronozarr.encode` (these tests check what sits around the writer, not the
writer itself), so it lives apart from ``helpers.py``, whose references never call the library.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr

T, H, W = 4, 20, 20


def small_store(path: Path, *, n_time: int = T, shard: bool = False) -> Path:
    """A 2-band uint16 store of ``n_time`` months, anchors every 2, 8-pixel cells (optionally sharded)."""
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


def root_document(path: Path) -> dict[str, Any]:
    """The store's root zarr.json as written (a test reads it raw on purpose)."""
    doc: dict[str, Any] = json.loads((path / "zarr.json").read_bytes())
    return doc

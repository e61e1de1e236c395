"""Small stores with known values for the look tests (built with ``chronozarr.encode``).

``look_store``: uint16 (time 6, band 4, y 40, x 52), chunk 16 (3 x 4 cells, three levels), bands
blue/green/red/nir by common_name with scale 0.0001 and offset -0.1 (units "reflectance"),
nodata 0, a mask that hides a 5 x 7 rectangle at t = 2 and coverage 0 (gap-filled) at t = 3
over the left half. Star-delta, so the series test also sees anchors and deltas.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.conftest import monthly, synthetic_series

N_TIME, N_BAND, H, W, CS = 6, 4, 40, 52, 16
TRANSFORM = [10.0, 0.0, 600000.0, 0.0, -10.0, 5100000.0]
BANDS = [
    {"name": "B02", "common_name": "blue", "scale": 0.0001, "offset": -0.1, "units": "reflectance"},
    {
        "name": "B03",
        "common_name": "green",
        "scale": 0.0001,
        "offset": -0.1,
        "units": "reflectance",
    },
    {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": -0.1, "units": "reflectance"},
    {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": -0.1, "units": "reflectance"},
]
HOLE = (slice(10, 15), slice(20, 27))  # masked at t = 2


@dataclass
class LookStore:
    path: Path
    data: np.ndarray  # (time, band, y, x) uint16 as stored
    mask: np.ndarray  # (time, y, x) uint8
    coverage: np.ndarray  # (time, y, x) uint8
    times: list[str]


def make_store(
    path: Path, *, shard: bool = False, encoding: str = "star-delta", history: bool = False
) -> LookStore:
    data = synthetic_series(N_TIME, N_BAND, H, W, "uint16", seed=3)
    data[data == 0] = 1  # 0 is nodata: only where we put it
    data[4, 1, 0:3, 0:3] = 0  # nodata in one band (green) at t = 4, top-left corner
    mask = np.ones((N_TIME, H, W), dtype=np.uint8)
    mask[2][HOLE] = 0
    data[2, :, HOLE[0], HOLE[1]] = 0  # the toolkit writes nodata under mask 0 (architecture.md)
    coverage = np.full((N_TIME, H, W), 3, dtype=np.uint8)
    coverage[3, :, : W // 2] = 0
    times = monthly(N_TIME)
    chronozarr.encode(
        data,
        path,
        times=times,
        bands=BANDS,
        crs="EPSG:32631",
        transform=TRANSFORM,
        nodata=0,
        mask=mask,
        coverage=coverage,
        encoding=encoding,
        anchor_interval=3,
        chunk_size=CS,
        shard=shard,
        history=history,
        history_time=4,
    )
    return LookStore(path, data, mask, coverage, times)


@pytest.fixture(scope="session")
def look_store(tmp_path_factory: pytest.TempPathFactory) -> LookStore:
    return make_store(tmp_path_factory.mktemp("look") / "look.zarr")


@pytest.fixture(scope="session")
def sharded_store(tmp_path_factory: pytest.TempPathFactory) -> LookStore:
    return make_store(tmp_path_factory.mktemp("look-sharded") / "sharded.zarr", shard=True)

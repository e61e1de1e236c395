"""Helpers of the build/append tests: tiny synthetic catalogs with known answers, store reads.

:func:`random_scene` makes a cloudy scene from a seed; :func:`scenario` is the four-month
catalog of the build tests (tiles, a duplicate, DN corrections). A :class:`Scene` is one Sentinel-2-like item written as small GeoTIFFs (red, nir and SCL, all at
10 m so a test can say exactly which source pixel lands on which store pixel) in EPSG:32631.
:func:`write_items` writes them as an ItemCollection file next to the scenes; :func:`recipe`
writes a recipe over them whose grid coincides with the scenes' pixels (:func:`grid_offset`).
"""

from __future__ import annotations

import json
import textwrap
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from cz.demo_catalog import s2_item, write_raster
from tests.conftest import SHARED_FIXTURES

#: Third-party warnings raised on odc-stac loads, filtered by exact message or class in the
#: modules that load pixels: odc-geo 0.5.3 multiplies ``Affine`` objects with ``*`` (affine 3.1:
#: PendingDeprecationWarning, attributed to the caller) and calls ``shapely.ops.transform``
#: (shapely 2.2: DeprecationWarning, attributed to odc.geo). And rasterio's
#: NotGeoreferencedWarning: ``rasterio.warp.reproject`` creates its in-memory destination inside
#: ``warnings.catch_warnings()`` with that warning ignored, and ``catch_warnings`` swaps the
#: process-wide filter list, which is not thread-safe: with reads on two threads, one thread's
#: exit restores the filters while the other is still inside, and the (harmless) warning escapes
#: into pytest's "error" filter. Unavoidable with threaded reads.
LOADER_WARNINGS = [
    pytest.mark.filterwarnings("ignore::rasterio.errors.NotGeoreferencedWarning"),
    pytest.mark.filterwarnings(
        r"ignore:Use `@` matmul instead of `\*` mul operator:PendingDeprecationWarning"
    ),
    pytest.mark.filterwarnings(
        r"ignore:The 'shapely.ops.transform\(\)' function is deprecated:DeprecationWarning:odc\.geo"
    ),
]

REAL_S2 = SHARED_FIXTURES / "raster" / "rio-tiler-pds" / "S2A_29RKH_20200219_0_L2A"

CRS = "EPSG:32631"
X0 = 500000.0  # west edge of tile A
Y1 = 5100000.0  # north edge of every tile
SIZE = 32  # tile size in pixels (10 m)


@dataclass
class Scene:
    """One item: its pixels (red, nir as (2, h, w) uint16; scl (h, w) uint8) and its metadata."""

    id: str
    when: str
    values: np.ndarray
    scl: np.ndarray
    tile: str = "31TFJ"
    x0: float = X0
    baseline: str = "05.09"
    platform: str = "sentinel-2b"
    orbit: int = 8
    generation: str | None = None
    props: dict[str, Any] = field(default_factory=dict)
    raster_offset: float | None = None  # override raster:bands offset of red/nir
    files: str | None = None  # reuse the files of another scene id
    cloud: np.ndarray | None = None  # (h, w) uint8 cloud probability: an asset ``cloud``


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def write_items(folder: Path, scenes: list[Scene]) -> Path:
    """Write every scene's GeoTIFFs and an ItemCollection ``items.json``; returns its path."""
    features = []
    for sc in scenes:
        files = sc.files or sc.id
        base = folder / "scenes" / files
        if sc.files is None:
            write_raster(base / "B04.tif", sc.values[0], x0=sc.x0, y1=Y1, resolution=10.0)
            write_raster(base / "B08.tif", sc.values[1], x0=sc.x0, y1=Y1, resolution=10.0)
            write_raster(base / "SCL.tif", sc.scl, x0=sc.x0, y1=Y1, resolution=10.0)
        hrefs = {
            "red": f"scenes/{files}/B04.tif",
            "nir": f"scenes/{files}/B08.tif",
            "scl": f"scenes/{files}/SCL.tif",
        }
        item = s2_item(
            sc.id,
            when(sc.when),
            tile=sc.tile,
            x0=sc.x0,
            y1=Y1,
            size_px=sc.values.shape[-1],
            assets=hrefs,
            baseline=sc.baseline,
            cloud_cover=5.0,
            platform=sc.platform,
            orbit=sc.orbit,
            scl_resolution=10.0,
            generation=when(sc.generation) if sc.generation else None,
        )
        if sc.cloud is not None:  # Earth Search sentinel-2-c1-l2a's CLD_20m: uint8, nodata 0
            write_raster(base / "CLD.tif", sc.cloud, x0=sc.x0, y1=Y1, resolution=10.0)
            item["assets"]["cloud"] = {
                **item["assets"]["scl"],
                "href": f"scenes/{files}/CLD.tif",
                "title": "Cloud Probabilities",
                "roles": ["data", "cloud"],
            }
        item["properties"].update(sc.props)
        if sc.raster_offset is not None:
            for key in ("red", "nir"):
                item["assets"][key]["raster:bands"][0]["offset"] = sc.raster_offset
        features.append(item)
    path = folder / "items.json"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    return path


def lonlat_bbox(x0: float, y0: float, x1: float, y1: float, crs: str = CRS) -> list[float]:
    """The lon/lat box just inside the projected rectangle (so the grid stays inside it)."""
    from pyproj import Transformer

    tr = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    pts = [tr.transform(x, y) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    lons = sorted(p[0] for p in pts)
    lats = sorted(p[1] for p in pts)
    return [lons[1] + 1e-6, lats[1] + 1e-6, lons[2] - 1e-6, lats[2] - 1e-6]


#: The AOI of the synthetic recipes: 3 pixels inside tile A's edges (and inside tile B too).
AOI = lonlat_bbox(X0 + 30, Y1 - SIZE * 10 + 30, X0 + SIZE * 10 - 30, Y1 - 30)

RECIPE = """
name: synthetic
catalog:
  path: items.json
  collection: sentinel-2-l2a
aoi:
  bbox: {aoi}
grid:
  crs: 32631
  resolution: 10
time:
  start: {start}
  end: {end}
bands:
  - name: red
    asset: red
    common_name: red
  - name: nir
    asset: nir
    common_name: nir
mask:
  asset: scl
  keep: [4, 5, 6, 7, 11]
gap_fill:
{gap_fill}
store:
  dtype: {dtype}
  chunk_size: {chunk}
  encoding: {encoding}
"""


def recipe(
    folder: Path,
    *,
    start: str = "2024-01",
    end: str = "2024-03",
    max_age: int | None = None,
    dtype: str = "uint16",
    chunk: int = 16,
    encoding: str = "none",
    extra: str = "",
    name: str = "recipe.yaml",
) -> Path:
    """Write a recipe over ``folder/items.json``; ``max_age`` turns carry-forward on."""
    gap = "  method: none" if max_age is None else f"  method: carry-forward\n  max_age: {max_age}"
    text = RECIPE.format(
        aoi=json.dumps(AOI),
        start=start,
        end=end,
        gap_fill=gap,
        dtype=dtype,
        chunk=chunk,
        encoding=encoding,
    )
    path = folder / name
    path.write_text(textwrap.dedent(text).lstrip("\n") + extra)
    return path


def grid_offset(store: Path) -> tuple[int, int, int, int]:
    """(row, col) of store pixel (0, 0) in tile A's pixels, and the store's (height, width)."""
    import chronozarr

    reader = chronozarr.open_store(store)
    _a, _b, c, _d, _e, f = reader.levels[0].transform
    h, w = reader.levels[0].shape[-2:]
    return round((Y1 - f) / 10.0), round((c - X0) / 10.0), h, w


def read_all(store: Path) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(data (t, b, y, x), mask (t, y, x), coverage (t, y, x)) of level 0."""
    import chronozarr

    reader = chronozarr.open_store(store)
    data = np.stack([reader.read(t) for t in range(reader.n_time)])
    mask = np.stack([reader.read_mask(t) for t in range(reader.n_time)])
    cov = np.stack([reader.read_coverage(t) for t in range(reader.n_time)])
    return data, mask, cov


def constant_scene(
    scene_id: str,
    at: str,
    red: int,
    nir: int,
    *,
    scl: int = 4,
    size: int = SIZE,
    **kwargs: Any,
) -> Scene:
    """A scene with the same numbers everywhere (change pixels of ``values``/``scl`` after)."""
    values = np.empty((2, size, size), dtype=np.uint16)
    values[0] = red
    values[1] = nir
    return Scene(scene_id, at, values, np.full((size, size), scl, dtype=np.uint8), **kwargs)


def listing(folder: Path) -> dict[str, int]:
    """Every file below ``folder`` with its size (to show that nothing changed)."""
    return {
        str(p.relative_to(folder)): p.stat().st_size
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def random_scene(scene_id: str, at: str, seed: int, *, cloud: float = 0.2, **kwargs) -> Scene:
    rng = np.random.default_rng(seed)
    values = np.empty((2, SIZE, SIZE), dtype=np.uint16)
    values[0] = rng.integers(500, 3000, size=(SIZE, SIZE))
    values[1] = rng.integers(1500, 5000, size=(SIZE, SIZE))
    scl = rng.choice(np.array([4, 5, 6, 7, 11], np.uint8), size=(SIZE, SIZE))
    r = rng.random((SIZE, SIZE))
    scl[r < cloud] = 9  # cloud
    scl[(r >= cloud) & (r < cloud + 0.05)] = 3  # shadow
    hole = rng.random((SIZE, SIZE)) < 0.03  # no data in the numbers only: SCL says 4
    values[:, hole] = 0
    return Scene(scene_id, at, values, scl, **kwargs)


#: (scene, correction the plan must apply): 03.01 -> +1000, 05.09 -> 0, ES flag -> +1000.
def scenario() -> tuple[list[Scene], dict[str, int], set[str]]:
    tile_b = X0 + 16 * 10.0  # tile B starts 16 pixels east: columns 16.. overlap tile A
    scenes = [
        random_scene("S2B_31TFJ_20240105_0_L2A", "2024-01-05T10:30:00Z", 1, baseline="03.01"),
        random_scene(
            "S2B_31TGJ_20240105_0_L2A", "2024-01-05T10:30:00Z", 2, tile="31TGJ", x0=tile_b
        ),
        random_scene("S2B_31TFJ_20240115_0_L2A", "2024-01-15T10:30:00Z", 3),
        # the same scene again, processed with an older baseline: must be dropped
        random_scene(
            "S2B_31TFJ_20240115_1_L2A",
            "2024-01-15T10:30:00Z",
            4,
            baseline="04.00",
            generation="2023-01-01T00:00:00Z",
        ),
        # Earth Search removed the offset (flag), raster:bands still say -0.1: +1000 once
        random_scene(
            "S2A_31TFJ_20240125_0_L2A",
            "2024-01-25T10:30:00Z",
            5,
            platform="sentinel-2a",
            props={"earthsearch:boa_offset_applied": True},
            raster_offset=-0.1,
        ),
        # February: nothing. March: one mostly cloudy overpass. April: nothing.
        random_scene("S2B_31TFJ_20240310_0_L2A", "2024-03-10T10:30:00Z", 6, cloud=0.8),
    ]
    corrections = {
        "S2B_31TFJ_20240105_0_L2A": 1000,
        "S2B_31TGJ_20240105_0_L2A": 0,
        "S2B_31TFJ_20240115_0_L2A": 0,
        "S2A_31TFJ_20240125_0_L2A": 1000,
        "S2B_31TFJ_20240310_0_L2A": 0,
    }
    dropped = {"S2B_31TFJ_20240115_1_L2A"}
    return scenes, corrections, dropped

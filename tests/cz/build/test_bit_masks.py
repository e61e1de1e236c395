"""``cz build`` with a bit-flag mask (``mask.bits``) on Landsat-like items, against numpy.

The items are synthetic Landsat Collection 2 Level-2 scenes (uint16 surface reflectance, scale
2.75e-05 and offset -0.2, a uint16 ``qa_pixel`` whose ``classification:bitfields`` follow the
USGS layout: bit 0 fill, 1 dilated cloud, 3 cloud, 4 cloud shadow, bits 8-9 cloud confidence).
The reference reads the QA numbers with numpy's bitwise operators, opens and dilates the cloud
flags with scipy.ndimage and takes the median of what is left.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build
from cz.demo_catalog import write_raster
from cz.recipe import load_recipe
from tests.cz.scenes import AOI, LOADER_WARNINGS, SIZE, X0, Y1, grid_offset, read_all

pytestmark = LOADER_WARNINGS
ndimage = pytest.importorskip("scipy.ndimage", reason="scipy (the test extra) is not installed")

#: the qa_pixel fields these items declare (a subset of the USGS layout)
BITFIELDS = [
    {"name": "fill", "offset": 0, "length": 1, "classes": [{"name": "fill", "value": 1}]},
    {
        "name": "dilated_cloud",
        "offset": 1,
        "length": 1,
        "classes": [{"name": "dilated", "value": 1}],
    },
    {"name": "cloud", "offset": 3, "length": 1, "classes": [{"name": "cloud", "value": 1}]},
    {"name": "cloud_shadow", "offset": 4, "length": 1, "classes": [{"name": "shadow", "value": 1}]},
    {
        "name": "cloud_confidence",
        "offset": 8,
        "length": 2,
        "classes": [
            {"name": "not_set", "value": 0},
            {"name": "low", "value": 1},
            {"name": "medium", "value": 2},
            {"name": "high", "value": 3},
        ],
    },
]
CLEAR = 21824  # USGS: clear land, low cloud confidence (bit 6 clear, bits 8, 10, 14 set)

RECIPE = """
catalog:
  path: items.json
  collection: landsat-c2-l2
aoi:
  bbox: {aoi}
grid:
  crs: 32631
  resolution: 10
time:
  start: 2024-01
  end: 2024-01
bands:
  - name: red
    asset: red
    scale: 0.0000275
    offset: -0.2
  - name: nir08
    asset: nir08
    scale: 0.0000275
    offset: -0.2
mask:
  asset: qa_pixel
  bits:
    fill: fill
    dilated_cloud: dilated
    cloud: cloud
    cloud_shadow: shadow
    cloud_confidence: [medium, high]
  clean: [cloud, dilated_cloud, cloud_shadow]
  open: 1
  dilate: 2
store:
  chunk_size: 16
  encoding: none
"""


def _item(item_id: str, when: str, folder: str) -> dict[str, Any]:
    from pyproj import Transformer

    tr = Transformer.from_crs("EPSG:32631", "EPSG:4326", always_xy=True)
    x1, y0 = X0 + SIZE * 10, Y1 - SIZE * 10
    ring = [tr.transform(x, y) for x, y in ((X0, y0), (x1, y0), (x1, Y1), (X0, Y1), (X0, y0))]
    lons, lats = [p[0] for p in ring], [p[1] for p in ring]

    def asset(name: str, band: dict[str, Any]) -> dict[str, Any]:
        return {
            "href": f"{folder}/{name}.tif",
            "type": "image/tiff; application=geotiff; profile=cloud-optimized",
            "proj:shape": [SIZE, SIZE],
            "proj:transform": [10, 0, X0, 0, -10, Y1],
            "raster:bands": [band],
        }

    reflectance = {"nodata": 0, "data_type": "uint16", "scale": 2.75e-05, "offset": -0.2}
    qa = asset("qa_pixel", {"nodata": 1, "data_type": "uint16", "unit": "bit index"})
    qa["classification:bitfields"] = BITFIELDS
    return {
        "type": "Feature",
        "stac_version": "1.0.0",
        "stac_extensions": [
            "https://stac-extensions.github.io/projection/v1.1.0/schema.json",
            "https://stac-extensions.github.io/raster/v1.1.0/schema.json",
            "https://stac-extensions.github.io/classification/v1.0.0/schema.json",
        ],
        "id": item_id,
        "collection": "landsat-c2-l2",
        "bbox": [min(lons), min(lats), max(lons), max(lats)],
        "geometry": {"type": "Polygon", "coordinates": [ring]},
        "properties": {"datetime": when, "platform": "landsat-8", "proj:epsg": 32631},
        "assets": {
            "red": asset("red", reflectance),
            "nir08": asset("nir08", reflectance),
            "qa_pixel": qa,
        },
        "links": [],
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bits")
    rng = np.random.default_rng(2)
    n = 3
    values = rng.integers(7300, 20000, size=(n, 2, SIZE, SIZE)).astype(np.uint16)
    qa = np.full((n, SIZE, SIZE), CLEAR, dtype=np.uint16)
    r = rng.random((n, SIZE, SIZE))
    qa[r < 0.04] = CLEAR | (1 << 3)  # cloud specks
    qa[(r >= 0.04) & (r < 0.06)] = CLEAR | (1 << 4)  # shadow specks
    qa[(r >= 0.06) & (r < 0.08)] = 1  # fill specks
    qa[(r >= 0.08) & (r < 0.10)] = (CLEAR & ~(3 << 8)) | (2 << 8)  # medium confidence
    qa[0, 10:17, 8:16] = CLEAR | (1 << 3) | (1 << 1)  # a real cloud, dilated flag too
    values[:, 0][qa == 1] = 0  # fill: no numbers
    values[:, 1][qa == 1] = 0
    features = []
    for t in range(n):
        item_id = f"LC08_L2SP_196028_202401{5 + 8 * t:02d}_02_T1"
        sub = root / "scenes" / item_id
        write_raster(sub / "red.tif", values[t, 0], x0=X0, y1=Y1, resolution=10.0)
        write_raster(sub / "nir08.tif", values[t, 1], x0=X0, y1=Y1, resolution=10.0)
        write_raster(sub / "qa_pixel.tif", qa[t], x0=X0, y1=Y1, resolution=10.0, nodata=1)
        at = f"2024-01-{5 + 8 * t:02d}T10:30:00Z"
        features.append(_item(item_id, at, f"scenes/{item_id}"))
    (root / "items.json").write_text(
        json.dumps({"type": "FeatureCollection", "features": features})
    )
    np.save(root / "values.npy", values)
    np.save(root / "qa.npy", qa)
    (root / "recipe.yaml").write_text(RECIPE.format(aoi=json.dumps(AOI)))
    return root


def _disk(r: int) -> np.ndarray:
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    return yy * yy + xx * xx <= r * r


def test_bit_flags_mask_and_clean_as_numpy_reads_them(folder: Path) -> None:
    store = folder / "bits.zarr"
    build(load_recipe(folder / "recipe.yaml"), out=str(store), options=BuildOptions(workers=2))
    assert chronozarr.validate(store, deep=True).ok
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    values = np.load(folder / "values.npy").astype(np.int64)
    qa = np.load(folder / "qa.npy").astype(np.int64)
    bit = lambda k: (qa >> k) & 1  # noqa: E731
    confidence = (qa >> 8) & 3
    hard = (bit(0) == 1) | np.isin(confidence, (2, 3))
    cloud = ((bit(1) == 1) | (bit(3) == 1) | (bit(4) == 1)) & ~hard
    has_data = (values != 0).all(axis=1)
    valid = np.zeros(qa.shape, dtype=bool)
    for t in range(qa.shape[0]):
        pad = 5
        opened = ndimage.binary_opening(np.pad(cloud[t] & has_data[t], pad), structure=_disk(1))
        grown = ndimage.binary_dilation(opened, structure=_disk(2))[pad:-pad, pad:-pad]
        valid[t] = has_data[t] & ~hard[t] & ~grown
    want_cov = valid.sum(axis=0)
    want = np.zeros((2, SIZE, SIZE), dtype=np.int64)
    for y, x in zip(*np.nonzero(want_cov), strict=True):
        want[:, y, x] = np.rint(np.median(values[valid[:, y, x], :, y, x], axis=0))
    np.testing.assert_array_equal(cov[0], want_cov[row0 : row0 + h, col0 : col0 + w])
    np.testing.assert_array_equal(data[0], want[:, row0 : row0 + h, col0 : col0 + w])
    assert (cov[0] < 3).sum() > 50  # the flags did reject pixels
    # Landsat numbers are stored exactly, with the collection's own scale and offset (no
    # Sentinel-2 harmonisation: harmonize is left unset in the recipe)
    bands = [b.to_json() for b in chronozarr.open_store(store).attrs.bands]
    assert [(b["scale"], b["offset"]) for b in bands] == [(2.75e-05, -0.2)] * 2
    prov = chronozarr.open_store(store).attrs.provenance
    assert prov["fingerprint"]["fields"]["mask.bits.cloud_confidence"] == ["medium", "high"]
    assert prov["mask_cleaning"]["cleaned"] == ["cloud", "cloud_shadow", "dilated_cloud"]
    assert prov["mask_bits"]["cloud_confidence"] == ["medium", "high"]


def test_the_dry_run_states_the_resolved_flags(folder: Path) -> None:
    from typer.testing import CliRunner

    from cz import output
    from cz.app import app

    output.out.width = 250
    got = CliRunner().invoke(app, ["build", str(folder / "recipe.yaml"), "--dry-run"])
    assert got.exit_code == 0, got.output
    text = " ".join(got.output.split())
    assert "rejects cloud (bit 3) in 1" in text
    assert "rejects cloud_confidence (bit 8-9) in 2,3" in text
    assert "cloud cleaned (classes cloud, cloud_shadow, dilated_cloud)" in text

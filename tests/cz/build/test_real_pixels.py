"""Real Sentinel-2 pixels end to end: COGs over HTTP (with ranges) listed by a local STAC API.

The real L2A COGs of ``shared/fixtures/raster/rio-tiler-pds`` (100 m bands, 200 m SCL with
clouds) are served by a Range-capable server on 127.0.0.1; ``rustac serve`` lists four items
built from the real item JSON (three days in February 2020, one in March), each pointing at a
different combination of the real files (and one SCL shifted, so the days are masked
differently). The store is compared, pixel by pixel, with a computation from the same files read
with rasterio and indexed by the store's own coordinate arrays.
"""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build, read_provenance_items
from cz.recipe import load_recipe
from tests.cz.helpers import need, rustac_api_factory
from tests.cz.scenes import LOADER_WARNINGS, REAL_S2, lonlat_bbox
from tests.cz.servers import RangeServer

pytestmark = LOADER_WARNINGS

KEEP = (4, 5, 6, 7, 11)
#: (item id, datetime, red file, nir file, scl file)
ITEMS = [
    ("S2A_29RKH_20200204_0_L2A", "2020-02-04T11:34:25.405000Z", "B04", "B08", "SCL"),
    ("S2A_29RKH_20200214_0_L2A", "2020-02-14T11:34:25.405000Z", "B03", "B11", "SCL_shifted"),
    ("S2A_29RKH_20200219_0_L2A", "2020-02-19T11:34:25.405000Z", "B02", "B08", "SCL"),
    ("S2A_29RKH_20200305_0_L2A", "2020-03-05T11:34:25.405000Z", "B04", "B08", "SCL_shifted"),
]
#: A 3.2 km square with clouds (SCL 8, 9, 10) and clear land (5, 7) in the real SCL.
RECT = (265600.0, 2793600.0, 268800.0, 2796800.0)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    need(REAL_S2)
    import rasterio

    root = tmp_path_factory.mktemp("real")
    cogs = root / "cogs"
    cogs.mkdir()
    for name in ("B02", "B03", "B04", "B08", "B11", "SCL"):
        shutil.copy(REAL_S2 / f"{name}.tif", cogs / f"{name}.tif")
    with rasterio.open(REAL_S2 / "SCL.tif") as src:  # the real classes, moved 12 rows, 20 cols
        profile = src.profile
        shifted = np.roll(src.read(1), (12, -20), axis=(0, 1))
    with rasterio.open(cogs / "SCL_shifted.tif", "w", **profile) as dst:
        dst.write(shifted, 1)
    base = json.loads((REAL_S2 / "S2A_29RKH_20200219_0_L2A.json").read_text())
    apis = rustac_api_factory()
    start = next(apis)
    with RangeServer(cogs) as server:
        features = []
        for item_id, when, red, nir, scl in ITEMS:
            item = copy.deepcopy(base)
            item["id"] = item_id
            item["properties"]["datetime"] = when
            item["links"] = []
            assets = {}
            for key, name in (("red", red), ("nir", nir), ("scl", scl)):
                with rasterio.open(cogs / f"{name}.tif") as src:  # the files' real grids
                    t = src.transform
                    shape = [src.height, src.width]
                asset = copy.deepcopy(base["assets"][key if name[:3] != "B11" else "swir16"])
                asset["href"] = f"{server.url}/{name}.tif"
                asset["proj:shape"] = shape
                asset["proj:transform"] = [t.a, t.b, t.c, t.d, t.e, t.f]
                assets[key] = asset
            item["assets"] = assets
            features.append(item)
        items_file = root / "items.json"
        items_file.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
        collection = {
            "type": "Collection",
            "id": "sentinel-2-l2a",
            "stac_version": "1.0.0",
            "description": "real COGs served locally",
            "license": "proprietary",
            "extent": {
                "spatial": {"bbox": [[-12.0, 24.0, -10.0, 26.0]]},
                "temporal": {"interval": [["2020-01-01T00:00:00Z", None]]},
            },
            "links": [],
        }
        collection_file = root / "collection.json"
        collection_file.write_text(json.dumps(collection))
        url = start(collection_file, items_file)
        yield {"root": root, "cogs": cogs, "api": url, "server": server}
    apis.close()


def write_recipe(root: Path, api: str, name: str = "recipe.yaml", extra: str = "") -> Path:
    bbox = lonlat_bbox(*RECT, crs="EPSG:32629")
    text = f"""
name: real-pixels
catalog:
  url: {api}
  collection: sentinel-2-l2a
  max_retries: 2
  backoff_factor: 0.01
  timeout: 10
aoi:
  bbox: {json.dumps(bbox)}
grid:
  crs: 32629
  resolution: 50
time:
  start: 2020-02
  end: 2020-03
bands:
  - name: red
    asset: red
  - name: nir
    asset: nir
store:
  chunk_size: 32
  encoding: none
{extra}"""
    path = root / name
    path.write_text(text.lstrip("\n"))
    return path


def sample(path: Path, xs: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """The file's pixel under each (x, y) point: plain indexing of the whole file."""
    import rasterio

    with rasterio.open(path) as src:
        data = src.read(1)
        t = src.transform
    cols = np.floor((xs - t.c) / t.a).astype(int)
    rows = np.floor((ys - t.f) / t.e).astype(int)
    return data[rows[:, None], cols[None, :]]


def expected(cogs: Path, xs: np.ndarray, ys: np.ndarray, month: str) -> tuple[np.ndarray, ...]:
    """(composite (2, h, w), coverage) by the rules, from the files, with numpy's median."""
    obs_values, obs_valid = [], []
    for _id, when, red, nir, scl in ITEMS:
        if when[:7] != month:
            continue
        r, n, s = (sample(cogs / f"{name}.tif", xs, ys) for name in (red, nir, scl))
        obs_values.append(np.stack([r, n]).astype(np.int64) + 1000)  # baseline 02.14: +1000
        obs_valid.append(np.isin(s, KEEP) & (r != 0) & (n != 0))
    values = np.stack(obs_values)
    valid = np.stack(obs_valid)
    h, w = valid.shape[1:]
    out = np.zeros((2, h, w), dtype=np.int64)
    for y in range(h):
        for x in range(w):
            chosen = values[valid[:, y, x], :, y, x]
            if len(chosen):
                out[:, y, x] = np.round(np.median(chosen, axis=0))
    return out, valid.sum(axis=0)


@pytest.fixture(scope="module")
def store(served: dict[str, Any]) -> Path:
    rec = load_recipe(write_recipe(served["root"], served["api"]))
    out = served["root"] / "real.zarr"
    build(rec, out=str(out), options=BuildOptions(workers=2))
    return out


def test_every_pixel_equals_numpy_from_the_same_files(served: dict[str, Any], store: Path) -> None:
    import zarr

    reader = chronozarr.open_store(store)
    assert reader.attrs.crs == "EPSG:32629"
    assert reader.levels[0].shape[-2:] == (64, 64)  # 3.2 km at 50 m, 2 x 2 cells of 32
    group = zarr.open_group(str(store), mode="r")
    xs = np.asarray(group["0/x"][:])  # the store's own pixel centres
    ys = np.asarray(group["0/y"][:])
    for t, month in enumerate(["2020-02", "2020-03"]):
        want, count = expected(served["cogs"], xs, ys, month)
        data = reader.read(t)
        cov = reader.read_coverage(t)
        mask = reader.read_mask(t)
        assert np.array_equal(cov, count), month
        assert np.array_equal(mask, (count > 0).astype(np.uint8)), month
        assert np.array_equal(data, np.where(count > 0, want, 0)), month
    # the region has masked pixels (clouds) and pixels seen on every day: the mask matters
    feb = reader.read_coverage(0)
    assert (feb == 3).any() and (feb < 3).any() and (feb == 0).any()


def test_masked_observations_never_contribute(served: dict[str, Any], store: Path) -> None:
    """Where the real SCL (4 and 19 Feb) says cloud and the shifted one (14 Feb) says clear,
    the composite is the 14 Feb number alone: the two bright cloudy observations never count."""
    import zarr

    group = zarr.open_group(str(store), mode="r")
    xs, ys = np.asarray(group["0/x"][:]), np.asarray(group["0/y"][:])
    cogs = served["cogs"]
    cloudy = np.isin(sample(cogs / "SCL.tif", xs, ys), (8, 9, 10))
    clear_14 = np.isin(sample(cogs / "SCL_shifted.tif", xs, ys), KEEP)
    where = cloudy & clear_14
    assert where.sum() > 50
    reader = chronozarr.open_store(store)
    red = reader.read(0)[0]
    red_14 = sample(cogs / "B03.tif", xs, ys).astype(np.int64) + 1000
    red_cloud = sample(cogs / "B04.tif", xs, ys).astype(np.int64) + 1000
    assert (reader.read_coverage(0)[where] == 1).all()
    assert np.array_equal(red[where], red_14[where])
    assert (red_cloud[where] != red_14[where]).mean() > 0.9  # the clouds would have shown


def test_values_land_at_their_coordinates(served: dict[str, Any], store: Path) -> None:
    """A few pixels by map coordinate, read with rasterio's own sampling (no index arithmetic)."""
    import rasterio

    reader = chronozarr.open_store(store)
    a, _, c, _, e, f = reader.levels[0].transform
    march = reader.read(1)
    cov = reader.read_coverage(1)
    rows, cols = np.nonzero(cov == 1)  # March: one item, so the value is that item's number
    picks = [(rows[i], cols[i]) for i in np.linspace(0, len(rows) - 1, 6).astype(int)]
    points = [(c + a * (col + 0.5), f + e * (row + 0.5)) for row, col in picks]
    with (
        rasterio.open(served["cogs"] / "B04.tif") as red,
        rasterio.open(served["cogs"] / "B08.tif") as nir,
    ):
        reds = [v[0] for v in red.sample(points)]
        nirs = [v[0] for v in nir.sample(points)]
    for (row, col), r, n in zip(picks, reds, nirs, strict=True):
        assert march[0, row, col] == int(r) + 1000
        assert march[1, row, col] == int(n) + 1000


def test_store_is_valid_and_records_its_items(served: dict[str, Any], store: Path) -> None:
    report = chronozarr.validate(store, deep=True)
    assert report.ok, [f.message for f in report.findings]
    docs = read_provenance_items(store)
    assert [d["items"] for d in docs] == [[i[0] for i in ITEMS[:3]], [ITEMS[3][0]]]
    assert docs[0]["corrections"] == {i[0]: 1000 for i in ITEMS[:3]}
    # COGs were read with byte ranges, never whole
    assert served["server"].ranged["/B04.tif"] > 0


def _ref_dilate(mask: np.ndarray, r: int) -> np.ndarray:
    """Brute-force dilation by the disk dy² + dx² <= r² (outside the array: nothing)."""
    h, w = mask.shape[-2:]
    padded = np.zeros((*mask.shape[:-2], h + 2 * r, w + 2 * r), dtype=bool)
    padded[..., r : r + h, r : r + w] = mask
    out = np.zeros_like(mask)
    for dy in range(-r, r + 1):
        for dx in range(-r, r + 1):
            if dy * dy + dx * dx <= r * r:
                out |= padded[..., r + dy : r + dy + h, r + dx : r + dx + w]
    return out


def _ref_open(mask: np.ndarray, r: int) -> np.ndarray:
    """Opening: erosion (outside counts as set) then dilation, both brute force."""
    return _ref_dilate(~_ref_dilate(~mask, r), r)


def test_opening_and_dilation_of_real_clouds_equal_numpy(served: dict[str, Any]) -> None:
    """``open: 1, dilate: 2`` on the real SCL: every pixel equals a brute-force reference from
    the files, sampled with a border of 2 open + dilate pixels around the grid (what each block
    reads), and the cleaning drops real observations at cloud edges."""
    import zarr

    extra = "mask:\n  keep: [4, 5, 6, 7, 11]\n  open: 1\n  dilate: 2\n"
    rec = load_recipe(write_recipe(served["root"], served["api"], name="clean.yaml", extra=extra))
    out = served["root"] / "clean.zarr"
    build(rec, out=str(out), options=BuildOptions(workers=2))
    group = zarr.open_group(str(out), mode="r")
    xs, ys = np.asarray(group["0/x"][:]), np.asarray(group["0/y"][:])
    halo = 2 * 1 + 2
    step = xs[1] - xs[0]
    ext_x = np.concatenate(
        [xs[0] - step * np.arange(halo, 0, -1), xs, xs[-1] + step * np.arange(1, halo + 1)]
    )
    ext_y = np.concatenate(
        [ys[0] + step * np.arange(halo, 0, -1), ys, ys[-1] - step * np.arange(1, halo + 1)]
    )
    reader = chronozarr.open_store(out)
    cogs = served["cogs"]
    dropped_somewhere = False
    for t, month in enumerate(["2020-02", "2020-03"]):
        values, valid = [], []
        for _id, when, red, nir, scl in ITEMS:
            if when[:7] != month:
                continue
            r, n, s = (sample(cogs / f"{name}.tif", ext_x, ext_y) for name in (red, nir, scl))
            has = (r != 0) & (n != 0)
            rejected = _ref_dilate(_ref_open(~np.isin(s, KEEP) & has, 1), 2)
            inner = (slice(halo, -halo), slice(halo, -halo))
            values.append(np.stack([r[inner], n[inner]]).astype(np.int64) + 1000)
            valid.append((has & ~rejected)[inner])
            dropped_somewhere |= bool((np.isin(s, KEEP) & has & rejected)[inner].any())
        values_a, valid_a = np.stack(values), np.stack(valid)
        h, w = valid_a.shape[1:]
        want = np.zeros((2, h, w), dtype=np.int64)
        for y in range(h):
            for x in range(w):
                chosen = values_a[valid_a[:, y, x], :, y, x]
                if len(chosen):
                    want[:, y, x] = np.round(np.median(chosen, axis=0))
        count = valid_a.sum(axis=0)
        assert np.array_equal(reader.read_coverage(t), count), month
        assert np.array_equal(reader.read(t), np.where(count > 0, want, 0)), month
    assert dropped_somewhere  # the cleaning rejected clear-classified pixels next to clouds

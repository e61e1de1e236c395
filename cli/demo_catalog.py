"""The offline demo catalog: realistic synthetic Sentinel-2 L2A scenes as a local STAC catalog.

``python -m cz.demo_catalog [FOLDER]`` (default ``out/demo-catalog``) writes, in a few seconds:

- two overlapping MGRS tiles (``31TFJ`` and ``31TGJ``, 2.56 km each at 10 m, overlapping by
  640 m) in EPSG:32631, imaged together on every overpass (one solar day, two items);
- 13 months (2023-01 .. 2024-01), three overpasses a month;
- a landscape with a seasonal vegetation cycle: fields with three crop calendars, a forest, a
  river and a village; reflectance bands ``blue``, ``green``, ``red``, ``nir`` (B02, B03, B04,
  B08 at 10 m, uint16) and the scene classification ``scl`` (20 m, uint8);
- clouds (SCL 8, 9, cirrus 10) and their shadows (SCL 3), with bright and dark pixels under them
  that only the SCL mask removes; a no-data wedge at the swath edge of one tile (SCL 0, DN 0);
- a processing-baseline change: from 2023-07 the items say ``s2:processing_baseline`` 05.09 and
  their numbers carry +1000 (``raster:bands`` offset -0.1), before it 03.01 without offset;
- March 2023 under clouds from end to end (the recipe drops it: ``eo:cloud_cover`` > 80), so
  carry-forward gap-fill fills it from February; in November 2023 a cloud bank covers the
  western third of both tiles on every overpass, so those pixels are filled from October;
- one reprocessed duplicate (an older baseline of a May scene) that the plan drops.

Everything is deterministic (seeded): the same files every time. The ground is generated once
per overpass over both tiles, so the overlap shows the same pixels in both items of a day; a
build that counted overlapping tiles twice would show coverage 2 per overpass there.

:func:`write_raster` and :func:`s2_item` are reused by the tests for small catalogs with known
answers.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "BANDS",
    "CRS",
    "DemoLayout",
    "generate",
    "main",
    "s2_item",
    "write_catalog",
    "write_raster",
]

CRS = "EPSG:32631"
EPSG = 32631
#: (asset key, file name, common name, centre wavelength) of the reflectance bands.
BANDS = (
    ("blue", "B02", "blue", 0.49),
    ("green", "B03", "green", 0.56),
    ("red", "B04", "red", 0.665),
    ("nir", "B08", "nir", 0.842),
)
OFFSET_BASELINE_MONTH = "2023-07"  # from here on: baseline 05.09, numbers + 1000
CLOUDY_MONTH = "2023-03"
CLOUD_BANK_MONTH = "2023-11"  # the western third stays under cloud all month


@dataclass(frozen=True)
class DemoLayout:
    """Geometry of the demo: tile size and overlap in 10 m pixels, months, overpasses."""

    tile_px: int = 256
    overlap_px: int = 64
    x0: float = 500000.0
    y1: float = 5100000.0
    start: str = "2023-01"
    months: int = 13
    days: tuple[int, ...] = (5, 15, 25)
    seed: int = 20230101

    @property
    def union_px(self) -> tuple[int, int]:
        """(rows, cols) of both tiles together."""
        return self.tile_px, 2 * self.tile_px - self.overlap_px

    def tile_x0(self, index: int) -> float:
        return self.x0 + index * (self.tile_px - self.overlap_px) * 10.0


TILES = ("31TFJ", "31TGJ")


# --------------------------------------------------------------------------------------------
# reusable writers


def write_raster(
    path: Path,
    array: np.ndarray,
    *,
    x0: float,
    y1: float,
    resolution: float,
    crs: str = CRS,
    nodata: float | None = 0,
) -> None:
    """Write a single-band tiled, deflate-compressed GeoTIFF (a small COG without overviews)."""
    import rasterio
    from affine import Affine

    path.parent.mkdir(parents=True, exist_ok=True)
    h, w = array.shape
    block = 256 if min(h, w) >= 256 else 16 * max(1, min(h, w) // 16)
    profile: dict[str, Any] = {
        "driver": "GTiff",
        "width": w,
        "height": h,
        "count": 1,
        "dtype": array.dtype.name,
        "crs": crs,
        # Affine directly: rasterio's from_origin multiplies Affines, which affine 3.1 deprecates
        "transform": Affine(resolution, 0.0, x0, 0.0, -resolution, y1),
        "nodata": nodata,
        "compress": "deflate",
        "predictor": 2 if array.dtype.kind in "ui" else 1,
    }
    if block >= 16 and h >= 16 and w >= 16:
        profile.update(tiled=True, blockxsize=block, blockysize=block)
    with rasterio.open(path, "w", **profile) as dst:
        dst.write(array, 1)


def _footprint(x0: float, y1: float, width_m: float, height_m: float, crs: str) -> dict[str, Any]:
    from pyproj import Transformer

    tr = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    corners = [(x0, y1), (x0 + width_m, y1), (x0 + width_m, y1 - height_m), (x0, y1 - height_m)]
    ring = [list(tr.transform(x, y)) for x, y in corners]
    ring = [[round(v, 7) for v in p] for p in ring]
    ring.append(ring[0])
    return {"type": "Polygon", "coordinates": [ring]}


def _asset_entry(
    key: str, href: str, x0: float, y1: float, width_m: float, res: float, offset: float
) -> dict[str, Any]:
    """One asset of a demo item: a COG with its projection, raster and eo fields."""
    names = {k: (common, wl) for k, _f, common, wl in BANDS}
    is_scl = key == "scl"
    n = round(width_m / res)
    band: dict[str, Any] = {
        "data_type": "uint8" if is_scl else "uint16",
        "nodata": 0,
        "spatial_resolution": res,
    }
    if not is_scl:
        band.update(scale=0.0001, offset=offset)
    entry: dict[str, Any] = {
        "href": href,
        "type": "image/tiff; application=geotiff; profile=cloud-optimized",
        "roles": ["data"],
        "proj:shape": [n, n],
        "proj:transform": [res, 0, x0, 0, -res, y1],
        "raster:bands": [band],
    }
    if key in names:
        common, wl = names[key]
        entry["eo:bands"] = [{"name": key, "common_name": common, "center_wavelength": wl}]
        entry["title"] = f"{common} ({key})"
    else:
        entry["title"] = "Scene classification map (SCL)"
    return entry


def s2_item(
    item_id: str,
    when: datetime,
    *,
    tile: str,
    x0: float,
    y1: float,
    size_px: int,
    assets: dict[str, str],
    baseline: str,
    cloud_cover: float,
    nodata_pct: float = 0.0,
    platform: str = "sentinel-2b",
    orbit: int = 8,
    crs: str = CRS,
    resolution: float = 10.0,
    scl_resolution: float = 20.0,
    generation: datetime | None = None,
    collection: str = "sentinel-2-l2a",
) -> dict[str, Any]:
    """A Sentinel-2 L2A STAC item (Earth Search style keys) for files written here.

    ``assets`` maps asset keys (``blue``, ``green``, ``red``, ``nir``, ``scl``) to hrefs. From
    baseline 04.00 on, ``raster:bands`` carry offset -0.1 (the +1000 of the numbers).
    """
    epsg = int(crs.split(":")[1])
    offset = -0.1 if tuple(int(p) for p in baseline.split(".")) >= (4, 0) else 0.0
    width_m = size_px * resolution
    geometry = _footprint(x0, y1, width_m, width_m, crs)
    lons = [p[0] for p in geometry["coordinates"][0]]
    lats = [p[1] for p in geometry["coordinates"][0]]
    out_assets = {
        key: _asset_entry(
            key, href, x0, y1, width_m, scl_resolution if key == "scl" else resolution, offset
        )
        for key, href in assets.items()
    }
    gen = generation or when + timedelta(hours=2)
    return {
        "type": "Feature",
        "stac_version": "1.0.0",
        "stac_extensions": [
            "https://stac-extensions.github.io/projection/v1.1.0/schema.json",
            "https://stac-extensions.github.io/raster/v1.1.0/schema.json",
            "https://stac-extensions.github.io/eo/v1.1.0/schema.json",
        ],
        "id": item_id,
        "collection": collection,
        "bbox": [min(lons), min(lats), max(lons), max(lats)],
        "geometry": geometry,
        "properties": {
            "datetime": when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z",
            "platform": platform,
            "constellation": "sentinel-2",
            "eo:cloud_cover": round(float(cloud_cover), 3),
            "proj:epsg": epsg,
            "proj:code": crs,
            "s2:mgrs_tile": tile,
            "sat:relative_orbit": orbit,
            "s2:processing_baseline": baseline,
            "s2:nodata_pixel_percentage": round(float(nodata_pct), 3),
            "s2:generation_time": gen.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
        },
        "links": [],
        "assets": out_assets,
    }


def write_catalog(
    folder: Path, items: Sequence[dict[str, Any]], *, title: str, collection: str
) -> Path:
    """A static STAC catalog: ``catalog.json`` linking ``items/<id>.json`` (relative hrefs)."""
    folder.mkdir(parents=True, exist_ok=True)
    links: list[dict[str, Any]] = [
        {"rel": "root", "href": "./catalog.json", "type": "application/json"},
    ]
    for item in items:
        path = folder / "items" / f"{item['id']}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        doc = dict(item)
        doc["links"] = [
            {"rel": "root", "href": "../catalog.json", "type": "application/json"},
            {"rel": "parent", "href": "../catalog.json", "type": "application/json"},
        ]
        doc["collection"] = collection
        path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        links.append(
            {"rel": "item", "href": f"./items/{item['id']}.json", "type": "application/geo+json"}
        )
    catalog = {
        "type": "Catalog",
        "stac_version": "1.0.0",
        "id": f"{collection}-demo",
        "description": title,
        "links": links,
    }
    out = folder / "catalog.json"
    out.write_text(json.dumps(catalog, indent=1) + "\n", encoding="utf-8")
    return out


# --------------------------------------------------------------------------------------------
# the landscape


def _landscape(layout: DemoLayout) -> dict[str, np.ndarray]:
    """Static ground of the union of both tiles: land cover classes and field calendars."""
    rows, cols = layout.union_px
    yy, xx = np.mgrid[0:rows, 0:cols].astype(np.float32)
    rng = np.random.default_rng(layout.seed)
    river = np.abs(yy - (0.55 * rows + 0.12 * rows * np.sin(xx / (0.09 * cols)))) < 5
    forest = (
        (xx - 0.2 * cols) ** 2 / (0.12 * cols) ** 2 + (yy - 0.25 * rows) ** 2 / (0.18 * rows) ** 2
    ) < 1
    village = ((xx - 0.72 * cols) ** 2 + (yy - 0.78 * rows) ** 2) < (0.07 * rows) ** 2
    parcel = (xx // 37).astype(np.int64) * 7919 + (yy // 29).astype(np.int64) * 104729
    calendar = (parcel % 3).astype(np.int8)  # three crop calendars
    soil_tone = (rng.normal(0, 60, size=int(parcel.max()) + 1)).astype(np.float32)[parcel]
    cover = np.full((rows, cols), 1, dtype=np.int8)  # 1 fields, 2 forest, 3 water, 4 village
    cover[forest] = 2
    cover[village] = 4
    cover[river] = 3
    return {"cover": cover, "calendar": calendar, "soil_tone": soil_tone}


def _greenness(month_index: float, calendar: np.ndarray, cover: np.ndarray) -> np.ndarray:
    """Vegetation vigour in [0, 1]: crops peak in May, July or September; forest all summer."""
    month = month_index % 12
    peak = np.choose(calendar.astype(np.int64), [4.5, 6.5, 8.5])
    crops = np.exp(-0.5 * ((month - peak) / 1.3) ** 2)
    forest = 0.55 + 0.4 * np.sin(2 * np.pi * (month - 3) / 12).clip(0, None)
    return np.where(cover == 2, forest, np.where(cover == 1, crops, 0.0)).astype(np.float32)


_SOIL = np.array([900.0, 1200.0, 1500.0, 2600.0], dtype=np.float32)
_VEG = np.array([-450.0, -100.0, -850.0, 2900.0], dtype=np.float32)
_WATER = np.array([650.0, 700.0, 450.0, 250.0], dtype=np.float32)
_VILLAGE = np.array([1300.0, 1450.0, 1600.0, 2100.0], dtype=np.float32)
_CLOUD = np.array([6200.0, 6300.0, 6500.0, 6900.0], dtype=np.float32)


def _scene(
    layout: DemoLayout,
    ground: dict[str, np.ndarray],
    month_index: int,
    day: int,
    cloudy: bool,
    bank: bool = False,
) -> tuple[np.ndarray, np.ndarray, float]:
    """Reflectance (4, rows, cols) float and SCL (rows, cols) of one overpass over both tiles."""
    rows, cols = layout.union_px
    rng = np.random.default_rng((layout.seed, month_index, day))
    cover, calendar = ground["cover"], ground["calendar"]
    green = _greenness(month_index + (day - 15) / 30.0, calendar, cover)
    refl = _SOIL[:, None, None] + ground["soil_tone"][None] + _VEG[:, None, None] * green[None]
    refl = np.where((cover == 3)[None], _WATER[:, None, None], refl)
    refl = np.where((cover == 4)[None], _VILLAGE[:, None, None], refl)
    refl = refl + rng.normal(0, 35, size=refl.shape).astype(np.float32)
    scl = np.where(green > 0.35, 4, 5).astype(np.uint8)
    scl[cover == 3] = 6
    scl[rng.random((rows, cols)) < 0.002] = 7  # unclassified specks
    yy, xx = np.mgrid[0:rows, 0:cols].astype(np.float32)
    cloud = np.zeros((rows, cols), dtype=np.float32)
    n_blobs = 40 if cloudy else int(rng.integers(0, 4))
    for _ in range(n_blobs):
        cy, cx = rng.uniform(-0.1 * rows, 1.1 * rows), rng.uniform(-0.1 * cols, 1.1 * cols)
        radius = rng.uniform(0.08, 0.25) * rows * (2.5 if cloudy else 1.0)
        cloud = np.maximum(cloud, 1 - ((yy - cy) ** 2 + (xx - cx) ** 2) / radius**2)
    if cloudy:
        cloud = np.maximum(cloud, 0.35)
    if bank:
        cloud = np.maximum(cloud, np.where(xx < 0.3 * cols, 0.6, 0.0).astype(np.float32))
    thick = cloud > 0.45
    medium = (cloud > 0.15) & ~thick
    thin = (cloud > 0.02) & ~thick & ~medium
    shadow = np.zeros_like(thick)
    dy, dx = int(0.06 * rows), int(0.04 * cols)
    shadow[dy:, dx:] = (thick | medium)[: -dy or None, : cols - dx]
    shadow &= ~(thick | medium | thin)
    refl = np.where(shadow[None], refl * 0.35, refl)
    haze = np.clip(cloud, 0, 1)[None]
    refl = np.where(
        (thick | medium | thin)[None], refl * (1 - haze) + _CLOUD[:, None, None] * haze, refl
    )
    scl[shadow] = 3
    scl[thin] = 10
    scl[medium] = 8
    scl[thick] = 9
    cloud_pct = 100.0 * float((thick | medium | thin).mean())
    return refl, scl, cloud_pct


def generate(folder: str | Path = "out/demo-catalog", layout: DemoLayout | None = None) -> Path:
    """Write the demo catalog into ``folder`` (replaced if it exists); returns catalog.json."""
    import shutil

    from cz.months import next_month, parse_month

    layout = layout or DemoLayout()
    folder = Path(folder)
    if folder.exists():
        shutil.rmtree(folder)
    ground = _landscape(layout)
    items: list[dict[str, Any]] = []
    label = layout.start
    for mi in range(layout.months):
        year, month = parse_month(label)
        new_baseline = label >= OFFSET_BASELINE_MONTH
        for di, day in enumerate(layout.days):
            when = datetime(year, month, day, 10, 47, 21, 24000, tzinfo=UTC)
            refl, scl, _cloud = _scene(
                layout,
                ground,
                mi,
                day,
                cloudy=label == CLOUDY_MONTH,
                bank=label == CLOUD_BANK_MONTH,
            )
            dn = np.clip(np.rint(refl), 1, 20000).astype(np.uint16)
            if new_baseline:
                dn = np.clip(dn.astype(np.int32) + 1000, 1, 65535).astype(np.uint16)
            for ti, tile in enumerate(TILES):
                items += _tile_items(folder, layout, label, when, di, ti, tile, dn, scl)
        label = next_month(label)
    return write_catalog(
        folder,
        items,
        title="chronozarr offline demo: synthetic Sentinel-2 L2A, two overlapping MGRS tiles",
        collection="sentinel-2-l2a",
    )


def _tile_items(
    folder: Path,
    layout: DemoLayout,
    label: str,
    when: datetime,
    di: int,
    ti: int,
    tile: str,
    dn: np.ndarray,
    scl: np.ndarray,
) -> list[dict[str, Any]]:
    """The rasters and item(s) of one tile of one overpass (and the May duplicate)."""
    tp = layout.tile_px
    baseline = "05.09" if label >= OFFSET_BASELINE_MONTH else "03.01"
    c0 = ti * (tp - layout.overlap_px)
    tile_dn = dn[:, :, c0 : c0 + tp].copy()
    tile_scl = scl[:, c0 : c0 + tp].copy()
    nodata_pct = 0.0
    if ti == 1 and di == 0:  # swath edge: a no-data wedge in the north-east
        yy, xx = np.mgrid[0:tp, 0:tp]
        wedge = xx - yy > int(0.55 * tp)
        tile_dn[:, wedge] = 0
        tile_scl[wedge] = 0
        nodata_pct = 100.0 * float(wedge.mean())
    scl20 = tile_scl[::2, ::2]  # 20 m SCL, nearest
    clouded = np.isin(scl20, (3, 8, 9, 10)).mean() * 100.0
    item_id = f"S2B_{tile}_{when:%Y%m%d}_0_L2A"
    base = folder / "scenes" / item_id
    x0 = layout.tile_x0(ti)
    hrefs: dict[str, str] = {}
    for b, (key, fname, _c, _w) in enumerate(BANDS):
        write_raster(base / f"{fname}.tif", tile_dn[b], x0=x0, y1=layout.y1, resolution=10.0)
        hrefs[key] = f"../scenes/{item_id}/{fname}.tif"
    write_raster(base / "SCL.tif", scl20, x0=x0, y1=layout.y1, resolution=20.0)
    hrefs["scl"] = f"../scenes/{item_id}/SCL.tif"

    def item(iid: str, **kwargs: Any) -> dict[str, Any]:
        return s2_item(
            iid, when, tile=tile, x0=x0, y1=layout.y1, size_px=tp, assets=hrefs, **kwargs
        )

    out = [item(item_id, baseline=baseline, cloud_cover=clouded, nodata_pct=nodata_pct)]
    if label == "2023-05" and di == 1 and ti == 0:
        # an older processing of the same scene, listed too: the plan drops it
        out.append(
            item(
                f"S2B_{tile}_{when:%Y%m%d}_1_L2A",
                baseline="03.00",
                cloud_cover=clouded,
                generation=when + timedelta(days=400),
            )
        )
    return out


def aoi_bbox(layout: DemoLayout | None = None, margin_px: int = 24) -> list[float]:
    """A lon/lat bbox inside both tiles' union, ``margin_px`` from its edges (for recipes)."""
    from pyproj import Transformer

    layout = layout or DemoLayout()
    rows, cols = layout.union_px
    tr = Transformer.from_crs(CRS, "EPSG:4326", always_xy=True)
    x0 = layout.x0 + margin_px * 10.0
    x1 = layout.x0 + (cols - margin_px) * 10.0
    y1 = layout.y1 - margin_px * 10.0
    y0 = layout.y1 - (rows - margin_px) * 10.0
    lons, lats = zip(
        *(tr.transform(x, y) for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))), strict=True
    )
    # inside: the largest lon/lat box within the projected rectangle
    return [
        round(math.ceil(sorted(lons)[1] * 1e5) / 1e5, 5),
        round(math.ceil(sorted(lats)[1] * 1e5) / 1e5, 5),
        round(math.floor(sorted(lons)[2] * 1e5) / 1e5, 5),
        round(math.floor(sorted(lats)[2] * 1e5) / 1e5, 5),
    ]


def main(argv: list[str] | None = None) -> int:
    """``python -m cz.demo_catalog [FOLDER]``: write the demo catalog and say where."""
    import time

    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0] if args else "out/demo-catalog")
    start = time.perf_counter()
    catalog = generate(folder)
    n = len(list((folder / "items").glob("*.json")))
    took = time.perf_counter() - start
    print(f"wrote {catalog} ({n} items) in {took:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

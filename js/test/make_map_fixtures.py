"""Stores and reference coordinates for the map tests (js/test/map.test.js).

    python make_map_fixtures.py OUT_DIR

Writes OUT_DIR/map/<name>.zarr with the Python writer and OUT_DIR/map/manifest.json with, for
each store, the lon/lat of known pixel-lattice corners computed with pyproj (PROJ, what GDAL
uses), so the browser test can check that the map layer draws each corner within 1 px of where
GDAL would put it. Stores: UTM 31N (EPSG code through the bundled table), ETRS89-LAEA (another
projected CRS from the table), New Zealand TM given only as WKT2 (a CRS not in the table), a
bright star-delta store for the seam test, and a plain Zarr group that is not a chronozarr store.
``python make_map_fixtures.py --epsg OUT.json`` writes pyproj's reference points for every code
of the bundled EPSG table instead (js/test/map-unit.test.js).
Nothing here is committed: the tests run it into a temporary folder.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from pathlib import Path

import numpy as np
import pyproj
import zarr

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import chronozarr  # noqa: E402

BANDS = [
    {"name": "B02", "common_name": "blue", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B03", "common_name": "green", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
]


def bright(rng: np.random.Generator, nt: int, h: int, w: int) -> np.ndarray:
    """Values 4000-9000 (physical 0.4-0.9): never near the basemap's dark background."""
    yy, xx = np.mgrid[0:h, 0:w]
    out = np.empty((nt, len(BANDS), h, w), dtype=np.uint16)
    for t in range(nt):
        for b in range(len(BANDS)):
            field = 6500 + 2000 * np.sin(xx / 37.0 + t * 0.5 + b) * np.cos(yy / 29.0 - b)
            out[t, b] = np.clip(field + rng.integers(-300, 300, size=(h, w)), 4000, 9000)
    return out


def corners(crs: pyproj.CRS, transform: list[float], h: int, w: int, cs: int) -> list[dict]:
    """lon/lat (pyproj, always_xy) of the outer corners and of one interior cell corner."""
    a, b, c, d, e, f = transform
    to_ll = pyproj.Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    out = []
    for name, row, col in [
        ("north-west", 0, 0),
        ("north-east", 0, w),
        ("south-west", h, 0),
        ("south-east", h, w),
        ("cell corner", cs, cs),
    ]:
        x, y = a * col + b * row + c, d * col + e * row + f
        lon, lat = to_ll.transform(x, y)
        out.append({"name": name, "row": row, "col": col, "x": x, "y": y, "lon": lon, "lat": lat})
    return out


def write(out: Path, name: str, crs_value, crs: pyproj.CRS, transform, nt=4, h=300, w=340, cs=128):
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    path = out / f"{name}.zarr"
    chronozarr.encode(
        bright(rng, nt, h, w),
        str(path),
        times=[f"2023-{m + 1:02d}-15" for m in range(nt)],
        bands=BANDS,
        crs=crs_value,
        transform=transform,
        nodata=0,
        encoding="star-delta",
        anchor_interval=2,
        chunk_size=cs,
    )
    return {
        "name": name,
        "path": f"map/{name}.zarr",
        "crs": crs.to_string(),
        "shape": [nt, len(BANDS), h, w],
        "cs": cs,
        "transform": transform,
        "corners": corners(crs, transform, h, w, cs),
    }


def epsg_check(out_file: Path) -> None:
    """For every code of js/chronozarr/map/epsg.js: pyproj's projected x, y of three points in
    the code's area of use (centre and two inner corners) and their lon/lat, for map-unit.test.js."""
    table = (ROOT / "js" / "chronozarr" / "map" / "epsg.js").read_text(encoding="utf-8")
    codes = [int(c) for c in re.findall(r"^  (\d+): ", table, flags=re.MULTILINE)]
    rows = []
    for code in codes:
        crs = pyproj.CRS.from_epsg(code)
        a = crs.area_of_use
        west, east = a.west, a.east if a.east > a.west else a.east + 360
        fwd = pyproj.Transformer.from_crs(4326, crs, always_xy=True)
        inv = pyproj.Transformer.from_crs(crs, 4326, always_xy=True)
        pts = []
        for fx, fy in [(0.5, 0.5), (0.25, 0.3), (0.75, 0.7)]:
            lon = (west + (east - west) * fx + 180) % 360 - 180
            lat = max(-84.0, min(84.0, a.south + (a.north - a.south) * fy))
            x, y = fwd.transform(lon, lat)
            lon2, lat2 = inv.transform(x, y)
            pts.append({"x": x, "y": y, "lon": lon2, "lat": lat2})
        rows.append({"code": code, "points": pts})
    projjson = json.loads(pyproj.CRS.from_epsg(32631).to_json())
    out_file.write_text(json.dumps({"rows": rows, "projjson_32631": projjson}))


def main(out_dir: Path) -> None:
    out = out_dir / "map"
    out.mkdir(parents=True, exist_ok=True)
    nz = pyproj.CRS.from_epsg(2193)  # NZGD2000 / NZTM: not in the bundled table, given as WKT2
    # without its top-level EPSG id: a WKT that names its own code is stored as "EPSG:<n>"
    # (docs/spec.md C16), and this store must exercise the WKT2-only path
    nz_doc = nz.to_json_dict()
    nz_doc.pop("id", None)
    nz_wkt2 = pyproj.CRS.from_json_dict(nz_doc).to_wkt("WKT2_2019")
    stores = [
        write(
            out,
            "utm",
            "EPSG:32631",
            pyproj.CRS.from_epsg(32631),
            [10.0, 0.0, 600000.0, 0.0, -10.0, 5000000.0],
        ),
        write(
            out,
            "laea",
            "EPSG:3035",
            pyproj.CRS.from_epsg(3035),
            [20.0, 0.0, 4321000.0, 0.0, -20.0, 3210000.0],
        ),
        write(
            out, "wkt2", nz_wkt2, nz, [10.0, 0.0, 1750000.0, 0.0, -10.0, 5920000.0]
        ),
    ]
    plain = zarr.open_group(str(out / "plain.zarr"), mode="w", zarr_format=3)
    plain.attrs["title"] = "a Zarr group without a chronozarr block"
    plain.create_array("x", shape=(4,), dtype="float64")
    manifest = {"stores": {s["name"]: s for s in stores}, "plain": "map/plain.zarr"}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(f"{len(stores)} map stores in {out}")


if __name__ == "__main__":
    if sys.argv[1] == "--epsg":
        epsg_check(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))

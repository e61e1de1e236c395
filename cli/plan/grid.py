"""The store's grid (spec 2.1, 6): the AOI projected and snapped, its levels and cells."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from shapely.geometry import shape

from chronozarr.format import grid_shape, level_resolution, level_shapes, level_transform
from cz.recipe import Recipe


def utm_epsg(lon: float, lat: float) -> int:
    """EPSG code of the standard 6-degree UTM zone at (lon, lat): 326zz north, 327zz south.

    The Norway and Svalbard exceptions of MGRS are not applied.
    """
    zone = math.floor((lon + 180.0) / 6.0) % 60 + 1
    return (32600 if lat >= 0 else 32700) + zone


def aligned_bounds(
    bounds: Sequence[float], resolution: float
) -> tuple[tuple[int, int, int, int], tuple[float, float, float, float]]:
    """Snap ``(minx, miny, maxx, maxy)`` outward to whole multiples of ``resolution``.

    Returns the integer pixel indices ``(kx0, ky0, kx1, ky1)`` (edges at ``k * resolution``) and
    the snapped bounds. The result always spans at least one pixel per axis. A relative
    tolerance of 1e-9 pixel keeps an edge that already sits on the grid from moving by a pixel
    through floating-point noise.
    """
    minx, miny, maxx, maxy = (float(v) for v in bounds)
    eps = 1e-9
    kx0 = math.floor(minx / resolution + eps)
    ky0 = math.floor(miny / resolution + eps)
    kx1 = math.ceil(maxx / resolution - eps)
    ky1 = math.ceil(maxy / resolution - eps)
    kx1 = max(kx1, kx0 + 1)
    ky1 = max(ky1, ky0 + 1)
    snapped = (kx0 * resolution, ky0 * resolution, kx1 * resolution, ky1 * resolution)
    return (kx0, ky0, kx1, ky1), snapped


class LevelPlan(BaseModel):
    """One pyramid level as the store will describe it (spec 3.7)."""

    path: str
    resolution: float
    transform: list[float]
    shape: list[int]
    grid: list[int]


class GridPlan(BaseModel):
    """The store's level-0 grid and its pyramid."""

    crs: str
    crs_reason: str
    resolution: float
    transform: list[float]
    shape: list[int]
    bounds: list[float]
    chunk_size: int
    levels: list[LevelPlan]
    cells: int
    cells_all_levels: int

    def geobox(self) -> Any:
        """The level-0 grid as an ``odc.geo.geobox.GeoBox`` (what odc-stac loads onto)."""
        from affine import Affine
        from odc.geo.geobox import GeoBox

        a, b, c, d, e, f = self.transform
        return GeoBox((self.shape[0], self.shape[1]), Affine(a, b, c, d, e, f), self.crs)


def project_lonlat(geojson: dict[str, Any], crs: str, densify: float = 0.001) -> Any:
    """A lon/lat GeoJSON geometry in ``crs`` (shapely), edges densified to ``densify`` degrees.

    Densifying first makes the projected bounds follow the curved image of straight lon/lat
    edges (about 100 m spacing by default).
    """
    import shapely
    from pyproj import Transformer

    transformer = Transformer.from_crs("EPSG:4326", crs, always_xy=True)
    geom = shapely.segmentize(shape(geojson), densify)

    def forward(coords: Any) -> Any:
        import numpy as np

        x, y = transformer.transform(coords[:, 0], coords[:, 1])
        return np.column_stack([x, y])

    return shapely.transform(geom, forward)


def grid_for(recipe: Recipe) -> GridPlan:
    """The grid of a recipe: AOI projected (edges densified), bounds snapped to the resolution."""
    aoi = shape(recipe.aoi.geojson())
    if recipe.grid.crs == "utm":
        lon, lat = aoi.centroid.x, aoi.centroid.y
        epsg = utm_epsg(lon, lat)
        crs = f"EPSG:{epsg}"
        hemisphere = "N" if epsg < 32700 else "S"
        reason = f"utm: zone {epsg % 100}{hemisphere} of the AOI centroid ({lon:.4f}, {lat:.4f})"
    else:
        crs = recipe.grid.crs
        reason = "grid.crs"
    res = float(recipe.grid.resolution)
    projected = project_lonlat(recipe.aoi.geojson(), crs)
    (kx0, ky0, kx1, ky1), (x0, y0, x1, y1) = aligned_bounds(projected.bounds, res)
    height, width = ky1 - ky0, kx1 - kx0
    transform = [res, 0.0, x0, 0.0, -res, y1]
    cs = recipe.store.chunk_size
    levels = []
    for k, (h, w) in enumerate(level_shapes(height, width, cs)):
        levels.append(
            LevelPlan(
                path=str(k),
                resolution=level_resolution(res, k),
                transform=level_transform(transform, k),
                shape=[h, w],
                grid=list(grid_shape(h, w, cs)),
            )
        )
    return GridPlan(
        crs=crs,
        crs_reason=reason,
        resolution=res,
        transform=transform,
        shape=[height, width],
        bounds=[x0, y0, x1, y1],
        chunk_size=cs,
        levels=levels,
        cells=levels[0].grid[0] * levels[0].grid[1],
        cells_all_levels=sum(lv.grid[0] * lv.grid[1] for lv in levels),
    )

"""The grid of a conversion: every file on one grid, or one target grid to resample onto.

Without ``--grid``/``--crs``/``--resolution`` every file must share the first file's CRS,
transform and shape (the store is written pixel for pixel, nothing resampled); the first file
that differs is named with what differs. With them, the target grid is a reference raster's
(``--grid FILE``) or the union of the files' footprints in ``--crs`` at ``--resolution``, its
edges on multiples of the resolution (odc-geo's GeoBox), and every file is read through a GDAL
warped VRT (rasterio) with ``--resampling`` (default nearest: values are kept, not blended).

The store needs a north-up grid with square pixels (the format library's rule); a source grid
that is rotated, south-up or has rectangular pixels is refused with a hint to resample.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cz.convert.errors import ConvertError
from cz.convert.probe import FileInfo, epsg_of

__all__ = ["RESAMPLING", "Grid", "crs_text", "one_grid", "resampled_grid", "same_crs"]

RESAMPLING = ("nearest", "bilinear", "cubic", "average", "mode", "min", "max", "med")


@dataclass(frozen=True)
class Grid:
    """A north-up grid: the CRS as the store records it, the affine transform, the shape."""

    crs: str
    transform: tuple[float, float, float, float, float, float]
    height: int
    width: int

    @property
    def resolution(self) -> float:
        return self.transform[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.height, self.width)

    def to_json(self) -> dict[str, Any]:
        return {
            "crs": self.crs,
            "transform": list(self.transform),
            "shape": [self.height, self.width],
            "resolution": self.resolution,
        }


def _crs(text: str | None) -> Any:
    from rasterio.crs import CRS

    return CRS.from_user_input(text) if text else None


def crs_text(wkt: str | None, where: str) -> str:
    """The store's crs: ``EPSG:n`` when the CRS is an EPSG one, else its WKT2 text."""
    if not wkt:
        raise ConvertError(where, "has no CRS; set one in the file, or resample with --crs")
    crs = _crs(wkt)
    epsg = epsg_of(crs.to_wkt(), 100)
    if epsg:
        return f"EPSG:{epsg}"
    return str(crs.to_wkt(version="WKT2_2019"))


def same_crs(a: str | None, b: str | None) -> bool:
    """CRS equivalence (rasterio/PROJ), not text equality: an EPSG code equals its WKT."""
    if not a or not b:
        return a == b
    return bool(_crs(a) == _crs(b))


def _close(a: Sequence[float], b: Sequence[float], res: float) -> bool:
    tol = 1e-6 * abs(res)
    return all(math.isclose(x, y, rel_tol=0, abs_tol=tol) for x, y in zip(a, b, strict=True))


def _storable(transform: Sequence[float], where: str) -> None:
    a, b, _c, d, e, _f = transform
    hint = "; resample onto a north-up square grid with --resolution (and --crs)"
    if b != 0 or d != 0:
        raise ConvertError(where, f"has a rotated grid (transform {list(transform)}){hint}")
    if a <= 0 or e >= 0:
        raise ConvertError(where, f"is not north-up (transform {list(transform)}){hint}")
    if not math.isclose(a, -e, rel_tol=1e-9):
        raise ConvertError(where, f"has rectangular pixels ({a} x {-e}){hint}")


def one_grid(infos: Sequence[FileInfo], where: Sequence[str]) -> Grid:
    """The grid every file shares; a ConvertError naming the first file that differs."""
    first = infos[0]
    for info, label in zip(infos[1:], where[1:], strict=True):
        diffs = []
        if not same_crs(info.crs_wkt, first.crs_wkt):
            diffs.append(f"CRS {_crs_name(info)} vs {_crs_name(first)}")
        if not _close(info.transform, first.transform, first.transform[0]):
            diffs.append(f"transform {list(info.transform)} vs {list(first.transform)}")
        if info.shape != first.shape:
            diffs.append(f"shape {info.shape} vs {first.shape}")
        if diffs:
            raise ConvertError(
                label,
                f"is not on the grid of {where[0]}: {'; '.join(diffs)}. Resample every file "
                "onto one grid with --grid FILE or --crs/--resolution",
            )
    _storable(first.transform, where[0])
    return Grid(crs_text(first.crs_wkt, where[0]), first.transform, first.height, first.width)


def _crs_name(info: FileInfo) -> str:
    if info.epsg:
        return f"EPSG:{info.epsg}"
    if not info.crs_wkt:
        return "(none)"
    return repr(info.crs_wkt.split('"')[1] if '"' in info.crs_wkt else info.crs_wkt[:40])


def resampled_grid(
    infos: Sequence[FileInfo],
    where: Sequence[str],
    *,
    grid_file: FileInfo | None,
    crs: str | None,
    resolution: float | None,
) -> Grid:
    """The target grid of a resampling conversion (``--grid`` or ``--crs``/``--resolution``)."""
    if grid_file is not None:
        if crs is not None or resolution is not None:
            raise ConvertError("--grid", "give either --grid or --crs/--resolution, not both")
        _storable(grid_file.transform, grid_file.path)
        return Grid(
            crs_text(grid_file.crs_wkt, grid_file.path),
            grid_file.transform,
            grid_file.height,
            grid_file.width,
        )
    from odc.geo.geobox import GeoBox
    from rasterio.crs import CRS
    from rasterio.warp import transform_bounds

    for info, label in zip(infos, where, strict=True):
        if not info.crs_wkt:
            raise ConvertError(label, "has no CRS: it cannot be resampled")
    if crs is not None:
        try:
            target = CRS.from_user_input(crs)
        except Exception as exc:
            raise ConvertError("--crs", f"not a CRS PROJ knows: {crs!r} ({exc})") from exc
    else:
        for info, label in zip(infos[1:], where[1:], strict=True):
            if not same_crs(info.crs_wkt, infos[0].crs_wkt):
                raise ConvertError(label, f"has another CRS than {where[0]}; give --crs")
        target = CRS.from_user_input(infos[0].crs_wkt)
    if resolution is None:
        if not all(same_crs(i.crs_wkt, target.to_wkt()) for i in infos):
            raise ConvertError("--resolution", "resampling to another CRS needs --resolution")
        resolution = min(abs(i.transform[0]) for i in infos)
    if not resolution > 0 or not math.isfinite(resolution):
        raise ConvertError("--resolution", f"expected a positive number, got {resolution}")
    seen: set[tuple[Any, ...]] = set()
    left = bottom = math.inf
    right = top = -math.inf
    for info in infos:
        key = (info.crs_wkt, info.transform, info.shape)
        if key in seen:
            continue
        seen.add(key)
        b = transform_bounds(CRS.from_wkt(info.crs_wkt), target, *info.bounds, densify_pts=21)
        left, bottom = min(left, b[0]), min(bottom, b[1])
        right, top = max(right, b[2]), max(top, b[3])
    with warnings.catch_warnings():  # planning runs on the main thread, before any reads
        # odc-geo 0.5.3 multiplies Affine objects with `*` (affine 3.1 warns: use `@`)
        warnings.filterwarnings(
            "ignore", "Use `@` matmul instead of `\\*`", PendingDeprecationWarning
        )
        box = GeoBox.from_bbox(
            (left, bottom, right, top), crs=target.to_wkt(), resolution=resolution
        )
    aff = box.affine
    transform = (aff.a, aff.b, aff.c, aff.d, aff.e, aff.f)
    _storable(transform, "--resolution")
    height, width = box.shape
    return Grid(crs_text(target.to_wkt(), "--crs"), transform, int(height), int(width))

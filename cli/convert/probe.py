"""Open each raster once, before anything is written, and record what a conversion checks.

:func:`probe_files` reads the header of every file (grid, band count, dtypes, nodata, scale and
offset, band descriptions and units) on a few threads; an unreadable file is a
:class:`~cz.convert.errors.ConvertError` naming it. No pixel is read here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from cz.convert.errors import ConvertError
from cz.convert.sources import RasterFile, gdal_path

__all__ = ["GDAL_OPTIONS", "FileInfo", "epsg_of", "probe_file", "probe_files"]

#: GDAL options of every open and read: no directory listing per open (one request less for a
#: remote file, GDAL's COG advice), a bounded block cache (GDAL's default is 5 % of RAM, and a
#: conversion reads each window once: a larger cache only grows with the number of files).
GDAL_OPTIONS: dict[str, Any] = {
    "GDAL_CACHEMAX": 128,  # MB
    "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",
    "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif,.tiff,.TIF,.TIFF",
    "GDAL_HTTP_MAX_RETRY": 2,
    "GDAL_HTTP_RETRY_DELAY": 0.5,
}


@dataclass(frozen=True)
class FileInfo:
    """The header of one raster: what the grid, dtype, nodata and band checks compare."""

    path: str
    crs_wkt: str | None
    epsg: int | None
    transform: tuple[float, float, float, float, float, float]
    width: int
    height: int
    count: int
    dtypes: tuple[str, ...]
    nodata: float | None
    scales: tuple[float, ...]
    offsets: tuple[float, ...]
    descriptions: tuple[str | None, ...]
    units: tuple[str | None, ...]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.height, self.width)

    @property
    def nodata_is_nan(self) -> bool:
        return self.nodata is not None and math.isnan(self.nodata)

    @property
    def bounds(self) -> tuple[float, float, float, float]:
        """(left, bottom, right, top) of a north-up grid."""
        a, _b, c, _d, e, f = self.transform
        xs = (c, c + a * self.width)
        ys = (f, f + e * self.height)
        return (min(xs), min(ys), max(xs), max(ys))


@functools.lru_cache(maxsize=64)
def epsg_of(wkt: str, confidence: int = 70) -> int | None:
    """The EPSG code of a CRS (PROJ's identification: 0.1 s for a CRS it does not know, so it
    is cached: a thousand files in one custom CRS are identified once)."""
    from rasterio.crs import CRS

    code = CRS.from_wkt(wkt).to_epsg(confidence_threshold=confidence)
    return int(code) if code else None


def probe_file(path: str, where: str | None = None) -> FileInfo:
    """The header of ``path``; a ConvertError naming ``where`` (default the path) if unreadable."""
    import rasterio
    from rasterio.errors import RasterioError

    label = where or path
    try:
        with rasterio.Env(**GDAL_OPTIONS), rasterio.open(gdal_path(path)) as ds:
            wkt = ds.crs.to_wkt() if ds.crs else None
            return FileInfo(
                path=path,
                crs_wkt=wkt,
                epsg=epsg_of(wkt) if wkt else None,
                transform=tuple(float(v) for v in tuple(ds.transform)[:6]),  # type: ignore[arg-type]
                width=int(ds.width),
                height=int(ds.height),
                count=int(ds.count),
                dtypes=tuple(str(d) for d in ds.dtypes),
                nodata=None if ds.nodata is None else float(ds.nodata),
                scales=tuple(float(s) for s in ds.scales),
                offsets=tuple(float(o) for o in ds.offsets),
                descriptions=tuple(d or None for d in ds.descriptions),
                units=tuple(u or None for u in ds.units),
            )
    except (RasterioError, OSError) as exc:
        raise ConvertError(label, f"cannot read as a raster ({_short(exc)})") from exc


def _short(exc: BaseException) -> str:
    """GDAL's message without the repeated path (it is already in the error's location)."""
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]


def probe_files(files: Sequence[RasterFile], workers: int = 4) -> list[FileInfo]:
    """The headers of ``files`` in order (distinct paths opened once, on ``workers`` threads)."""
    paths = list(dict.fromkeys(f.path for f in files))
    where = {f.path: f.where for f in reversed(files)}
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(paths)))) as pool:
        infos = dict(zip(paths, pool.map(lambda p: probe_file(p, where[p]), paths), strict=True))
    return [infos[f.path] for f in files]

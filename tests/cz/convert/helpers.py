"""Helpers of the cz convert/export tests: GeoTIFFs written with rasterio, CLI runs, checks.

The rasters are made here with rasterio (not with the code under test), so a round trip
compares the store with files an independent library wrote.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from cz.app import app

#: Not EPSG codes: a Lambert azimuthal equal-area centred on North America, and MODIS sinusoidal.
LAEA = "+proj=laea +lat_0=45 +lon_0=-100 +x_0=0 +y_0=0 +ellps=GRS80 +units=m +no_defs"
SINUSOIDAL = "+proj=sinu +lon_0=0 +x_0=0 +y_0=0 +R=6371007.181 +units=m +no_defs"
UTM = "EPSG:32631"


def transform(x0: float = 600000.0, y1: float = 5100000.0, res: float = 10.0) -> Any:
    from rasterio.transform import Affine

    return Affine(res, 0.0, x0, 0.0, -res, y1)  # (not from_origin: affine 3.1 warns on its `*`)


def write_tif(
    path: Path,
    data: np.ndarray,
    *,
    crs: str = UTM,
    affine: Any = None,
    nodata: float | None = None,
    descriptions: Sequence[str] | None = None,
    scales: Sequence[float] | None = None,
    offsets: Sequence[float] | None = None,
    units: Sequence[str] | None = None,
) -> Path:
    """A GeoTIFF of ``data`` (band, y, x) (or (y, x)) written by rasterio."""
    import rasterio

    if data.ndim == 2:
        data = data[None]
    count, height, width = data.shape
    path.parent.mkdir(parents=True, exist_ok=True)
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        width=width,
        height=height,
        count=count,
        dtype=data.dtype.name,
        crs=crs,
        transform=affine if affine is not None else transform(),
        nodata=nodata,
    ) as ds:
        ds.write(data)
        for i, d in enumerate(descriptions or [], start=1):
            ds.set_band_description(i, d)
        if scales is not None:
            ds.scales = tuple(scales)
        if offsets is not None:
            ds.offsets = tuple(offsets)
        for i, u in enumerate(units or [], start=1):
            ds.set_band_unit(i, u)
    return path


def read_tif(path: Path | str) -> np.ndarray:
    import rasterio

    with rasterio.open(path) as ds:
        return ds.read()


def series(
    n_time: int, n_band: int, height: int, width: int, dtype: str, seed: int = 0
) -> np.ndarray:
    """Random (time, band, y, x) values spanning most of ``dtype``'s range."""
    rng = np.random.default_rng(seed)
    shape = (n_time, n_band, height, width)
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return rng.normal(0, 1000, size=shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -30000), min(info.max, 60000)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)


def write_series(
    folder: Path,
    values: np.ndarray,
    dates: Sequence[str],
    *,
    prefix: str = "scene_",
    **kwargs: Any,
) -> list[Path]:
    """One file per date, named ``{prefix}{date}.tif``."""
    return [
        write_tif(folder / f"{prefix}{d}.tif", values[i], **kwargs) for i, d in enumerate(dates)
    ]


def cz(*args: str) -> Any:
    """Run the CLI in-process; an unexpected exception fails the test (never a traceback)."""
    return CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)


def assert_nothing_written(store: Path) -> None:
    """Neither the store nor a staging folder beside it exists after a refusal."""
    assert not store.exists(), f"{store} was written"
    leftovers = [p.name for p in store.parent.iterdir() if ".converting-" in p.name]
    assert not leftovers, f"staging folders left behind: {leftovers}"

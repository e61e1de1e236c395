"""chronozarr: raster time series as Zarr v3 stores a browser scrubs like video (spec v0.2).

Public API::

    chronozarr.encode(data, store, *, times, bands, crs, transform, ...)   # write a store
    chronozarr.encode(..., layout=chronozarr.StoreLayout(chunk_size=256, codec=chronozarr.ZstdCodec(9)))
    chronozarr.append(store, data, *, times, mask=None, coverage=None)      # grow it (spec 14)
    reader = chronozarr.open_store(path_or_url)                              # read it (spec 10)
    reader.series(x, y)          # one pixel's history (the time-series companion when present)
    report = chronozarr.validate(path_or_url, deep=False)                    # check it

Importing this package loads numpy, zarr's codecs and nothing of the toolkit (no rasterio,
pystac-client, odc-stac, typer or rich).
"""

from chronozarr.errors import (
    AppendError,
    ChronozarrError,
    ConcurrentWriteError,
    CorruptStoreError,
    EncodeError,
    MissingExtraError,
    NotAChronozarrStoreError,
    RemoteStoreError,
    StoreNotFoundError,
    UnsupportedError,
)
from chronozarr.format import (
    SPEC_VERSION,
    Band,
    BloscCodec,
    GzipCodec,
    StoreLayout,
    ZstdCodec,
)
from chronozarr.read import PixelSeries, Reader, open_store
from chronozarr.validate import Finding, Report, validate
from chronozarr.write import append, encode

__version__ = "0.2.0"

__all__ = [
    "SPEC_VERSION",
    "AppendError",
    "Band",
    "BloscCodec",
    "ChronozarrError",
    "ConcurrentWriteError",
    "CorruptStoreError",
    "EncodeError",
    "Finding",
    "GzipCodec",
    "MissingExtraError",
    "NotAChronozarrStoreError",
    "PixelSeries",
    "Reader",
    "RemoteStoreError",
    "Report",
    "StoreLayout",
    "StoreNotFoundError",
    "UnsupportedError",
    "ZstdCodec",
    "__version__",
    "append",
    "encode",
    "open_store",
    "validate",
]

"""Reading a store (spec 10): ``open_store`` and the ``Reader``, one chunk read per
cell-timestep (two for a star-delta delta), shard indexes read with bounded ranges.

The xarray backend is the public module :mod:`chronozarr.read.xarray_backend` (the
``xarray.backends`` entry point); it imports xarray, so it is never imported from here.
"""

from __future__ import annotations

from chronozarr.read._arrays import ArrayReader
from chronozarr.read._history import PixelSeries, Window, history_array
from chronozarr.read._reader import Reader, open_store

__all__ = [
    "ArrayReader",
    "PixelSeries",
    "Reader",
    "Window",
    "history_array",
    "open_store",
]

"""The one metadata model of a chronozarr store (spec 2, 3, 4.1, 7, 8).

Everything that reads or writes JSON of a store goes through this package: the root ``chronozarr``
block with its mirrors, the ndpyramid ``multiscales`` list, level group attributes, and the
zarr.json documents of every array. Writer, append, reader and validator share it, so there is
exactly one parser and one serializer of each document.

Parsing is strict where the reader needs a value (a missing or malformed key raises
``CorruptStoreError`` naming the key) and tolerant of extra keys (forward compatibility).
"""

from __future__ import annotations

from chronozarr.metadata.arrays import (
    ArrayInfo,
    codec_chain,
    coord_array_doc,
    data_array_doc,
    plane_array_doc,
    residuals_attribute,
    volatility_array_doc,
)
from chronozarr.metadata.attrs import Band, LevelInfo, RootAttrs, Temporal
from chronozarr.metadata.common import (
    BLOSC_CNAMES,
    BLOSC_SHUFFLES,
    CODEC_NAMES,
    DELTA_DTYPES,
    DTYPES,
    SPEC_VERSION,
    TIME_UNITS,
    default_nodata,
    dumps,
)
from chronozarr.metadata.documents import (
    consolidated_entry,
    group_doc,
    level_group_attrs,
    multiscales,
    root_doc,
)
from chronozarr.metadata.times import format_time, parse_time, parse_times

__all__ = [
    "BLOSC_CNAMES",
    "BLOSC_SHUFFLES",
    "CODEC_NAMES",
    "DELTA_DTYPES",
    "DTYPES",
    "SPEC_VERSION",
    "TIME_UNITS",
    "ArrayInfo",
    "Band",
    "LevelInfo",
    "RootAttrs",
    "Temporal",
    "codec_chain",
    "consolidated_entry",
    "coord_array_doc",
    "data_array_doc",
    "default_nodata",
    "dumps",
    "format_time",
    "group_doc",
    "level_group_attrs",
    "multiscales",
    "parse_time",
    "parse_times",
    "plane_array_doc",
    "residuals_attribute",
    "root_doc",
    "volatility_array_doc",
]

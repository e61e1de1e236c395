"""The format itself (spec 2-8): the one metadata model and the pure arithmetic, no I/O.

- the metadata model: the root ``chronozarr`` block (``RootAttrs``, ``Band``, ``Temporal``,
  ``LevelInfo``), array and group documents, consolidated metadata, ``multiscales``, timestamps,
  the format's constants and the one serializer of a zarr.json (``dumps``); every reader and
  writer of a store's JSON goes through it, so there is exactly one parser and one serializer of
  each document. Parsing is strict where a value is needed (a missing or malformed key raises
  ``CorruptStoreError`` naming it) and tolerant of extra keys (forward compatibility);
- the arithmetic: grid geometry and chunk keys (2.1, 3.3, 3.7), the pyramid reductions (2.3-2.5,
  6), anchors, residuals and volatility (4, 5), chunk codecs and shards (7, 8) with decoding held
  to a chunk's expected size, CRS handling (3.2, 3.3);
- the checks of hostile metadata (decision 0013): node names, JSON limits, the levels mirror;
  and what an append may change (``append_differences``, 14).

Everything here is a plain function or a frozen value over bytes and documents: the writer, the
reader, the validator and the toolkit share it. The modules are private; this is the surface.
"""

from __future__ import annotations

from chronozarr.format._arrays import (
    ArrayInfo,
    codec_chain,
    coord_array_doc,
    data_array_doc,
    plane_array_doc,
    residuals_attribute,
    volatility_array_doc,
)
from chronozarr.format._attrs import Band, LevelInfo, RootAttrs, Temporal
from chronozarr.format._bounded import decode_at_most, decode_bounded, zstd_content_size
from chronozarr.format._codecs import (
    EMPTY,
    ChunkCodec,
    build_shard,
    compressor_for,
    crc32c,
    index_nbytes,
    parse_index,
    vlen_utf8_decode,
    vlen_utf8_encode,
)
from chronozarr.format._common import (
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
from chronozarr.format._compressors import (
    BloscCodec,
    Codec,
    GzipCodec,
    ZstdCodec,
    codec_from,
)
from chronozarr.format._crs import CRSInfo, crs_attributes, crs_to_cf, normalize_crs, parse_crs
from chronozarr.format._documents import (
    consolidated,
    consolidated_entry,
    group_doc,
    level_group_attrs,
    multiscales,
    root_doc,
)
from chronozarr.format._geozarr import (
    CONVENTIONS,
    MULTISCALES_FORMS,
    level_spatial,
    multiscales_layout,
    multiscales_list,
    root_geo_attributes,
)
from chronozarr.format._grid import (
    cell_slice,
    chunk_key,
    grid_shape,
    level_resolution,
    level_shapes,
    level_transform,
    pixel_centres,
)
from chronozarr.format._growth import append_differences
from chronozarr.format._history import (
    HISTORY_ARRAY,
    HISTORY_BLOCK,
    HISTORY_FIELD,
    HISTORY_PATH,
    HISTORY_TIME,
    HistoryBlock,
    HistoryGeometry,
    history_array_doc,
    history_fields,
    pack_history,
)
from chronozarr.format._jsondoc import MAX_DOCUMENT_BYTES, MAX_NESTING, load_json
from chronozarr.format._mirror import MAX_CHUNK_BYTES, check_level_mirror, check_nodata
from chronozarr.format._names import check_name, check_names, name_problem, store_names
from chronozarr.format._pyramid import (
    assemble_region,
    block_mean,
    coverage_reduce,
    mask_reduce,
    pad_even,
    valid_block_mean,
    validity,
)
from chronozarr.format._root_coordinates import (
    ROOT_COORDINATES,
    add_root_coordinates,
    root_time_paths,
)
from chronozarr.format._store_layout import ENCODINGS, StoreLayout
from chronozarr.format._temporal import (
    abs_diff_sum,
    anchor_indices,
    apply_residual,
    cell_volatility,
    is_valid_reference,
    nearest_anchor,
    residual,
    schedule,
    volatility_value,
)
from chronozarr.format._times import format_time, parse_time, parse_times

__all__ = [
    "BLOSC_CNAMES",
    "BLOSC_SHUFFLES",
    "CODEC_NAMES",
    "CONVENTIONS",
    "DELTA_DTYPES",
    "DTYPES",
    "EMPTY",
    "ENCODINGS",
    "HISTORY_ARRAY",
    "HISTORY_BLOCK",
    "HISTORY_FIELD",
    "HISTORY_PATH",
    "HISTORY_TIME",
    "MAX_CHUNK_BYTES",
    "MAX_DOCUMENT_BYTES",
    "MAX_NESTING",
    "MULTISCALES_FORMS",
    "ROOT_COORDINATES",
    "SPEC_VERSION",
    "TIME_UNITS",
    "ArrayInfo",
    "Band",
    "BloscCodec",
    "CRSInfo",
    "ChunkCodec",
    "Codec",
    "GzipCodec",
    "HistoryBlock",
    "HistoryGeometry",
    "LevelInfo",
    "RootAttrs",
    "StoreLayout",
    "Temporal",
    "ZstdCodec",
    "abs_diff_sum",
    "add_root_coordinates",
    "anchor_indices",
    "append_differences",
    "apply_residual",
    "assemble_region",
    "block_mean",
    "build_shard",
    "cell_slice",
    "cell_volatility",
    "check_level_mirror",
    "check_name",
    "check_names",
    "check_nodata",
    "chunk_key",
    "codec_chain",
    "codec_from",
    "compressor_for",
    "consolidated",
    "consolidated_entry",
    "coord_array_doc",
    "coverage_reduce",
    "crc32c",
    "crs_attributes",
    "crs_to_cf",
    "data_array_doc",
    "decode_at_most",
    "decode_bounded",
    "default_nodata",
    "dumps",
    "format_time",
    "grid_shape",
    "group_doc",
    "history_array_doc",
    "history_fields",
    "index_nbytes",
    "is_valid_reference",
    "level_group_attrs",
    "level_resolution",
    "level_shapes",
    "level_spatial",
    "level_transform",
    "load_json",
    "mask_reduce",
    "multiscales",
    "multiscales_layout",
    "multiscales_list",
    "name_problem",
    "nearest_anchor",
    "normalize_crs",
    "pack_history",
    "pad_even",
    "parse_crs",
    "parse_index",
    "parse_time",
    "parse_times",
    "pixel_centres",
    "plane_array_doc",
    "residual",
    "residuals_attribute",
    "root_doc",
    "root_geo_attributes",
    "root_time_paths",
    "schedule",
    "store_names",
    "valid_block_mean",
    "validity",
    "vlen_utf8_decode",
    "vlen_utf8_encode",
    "volatility_array_doc",
    "volatility_value",
    "zstd_content_size",
]

"""The metadata commit of a write (spec 2.2, 5, 9): coordinate arrays and volatility, then every
zarr.json below the root, the root zarr.json last, with consolidated metadata. ``encode`` and
``append`` both finish through :func:`write_metadata`, so a crash before its last put leaves
no root (or the old one), never a root that describes missing data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chronozarr.format import (
    ChunkCodec,
    Codec,
    LevelInfo,
    RootAttrs,
    add_root_coordinates,
    compressor_for,
    consolidated_entry,
    coord_array_doc,
    dumps,
    group_doc,
    level_group_attrs,
    pixel_centres,
    root_doc,
    vlen_utf8_encode,
    volatility_array_doc,
)
from chronozarr.io import ABSENT, Store, commit_root

__all__ = ["coordinate_objects", "write_metadata"]


def coordinate_objects(
    levels: Sequence[LevelInfo], times_ms: Sequence[int], band_names: Sequence[str], codec: Codec
) -> tuple[dict[str, bytes], dict[str, dict[str, Any]]]:
    """Chunk bytes and zarr.json documents of time/band/y/x at every level (spec 2.2), and of
    time/band at the root (root_coordinates)."""
    comp = codec.compressor("float64")
    comp_time = codec.compressor("int64")
    comp_band = codec.compressor("uint8")
    zcodec = [{"name": "bytes", "configuration": {"endian": "little"}}, comp]
    tcodec = [{"name": "bytes", "configuration": {"endian": "little"}}, comp_time]
    objects: dict[str, bytes] = {}
    docs: dict[str, dict[str, Any]] = {}
    time_codec = ChunkCodec(tcodec, "int64", (len(times_ms),))
    time_bytes = time_codec.encode(np.asarray(times_ms, dtype=np.int64))
    band_raw = bytes(compressor_for(comp_band).encode(vlen_utf8_encode(band_names)))
    for lv in levels:
        h, w = lv.shape[-2:]
        ys, xs = pixel_centres(lv.transform, h, w)
        objects[f"{lv.path}/time/c/0"] = time_bytes
        objects[f"{lv.path}/band/c/0"] = band_raw
        objects[f"{lv.path}/y/c/0"] = ChunkCodec(zcodec, "float64", (h,)).encode(np.asarray(ys))
        objects[f"{lv.path}/x/c/0"] = ChunkCodec(zcodec, "float64", (w,)).encode(np.asarray(xs))
        docs[f"{lv.path}/time"] = coord_array_doc("time", len(times_ms), "int64", comp_time)
        docs[f"{lv.path}/band"] = coord_array_doc("band", len(band_names), "string", comp_band)
        docs[f"{lv.path}/y"] = coord_array_doc("y", h, "float64", comp)
        docs[f"{lv.path}/x"] = coord_array_doc("x", w, "float64", comp)
    add_root_coordinates(objects, docs, levels[0].path)
    return objects, docs


def write_metadata(
    target: Store,
    attrs: RootAttrs,
    array_docs: Mapping[str, dict[str, Any]],
    times_ms: Sequence[int],
    volatility: np.ndarray,
    multiscales_attr: Any,
    codec: Codec,
    *,
    level_attrs: Mapping[str, Mapping[str, Any]] | None = None,
    other_root_attrs: Mapping[str, Any] | None = None,
    extra_arrays: Mapping[str, tuple[dict[str, Any], Mapping[str, bytes]]] | None = None,
) -> None:
    """Write coordinates and volatility, then every zarr.json below the root, the root last (9).

    ``extra_arrays`` maps an array path to its document and chunk objects (``provenance_items``
    of a cluster build): chunks with the coordinates, the document with the others."""
    assert attrs.levels is not None
    coord_objs, coord_docs = coordinate_objects(
        attrs.levels, times_ms, [b.name for b in attrs.bands], codec
    )
    for _path, (_doc, chunks) in (extra_arrays or {}).items():
        for key, blob in chunks.items():
            target.put(key, blob)
    for key, blob in coord_objs.items():
        target.put(key, blob)
    # the coordinates and the volatility use the store's compressor (spec 8 MAY), with blosc's
    # typesize set for each array's dtype (1 for the strings of ``band``)
    vol_doc = volatility_array_doc(volatility.shape, codec.compressor("float32"))
    vol_codec = ChunkCodec(vol_doc["codecs"], "float32", volatility.shape)
    target.put("volatility/c/0/0", vol_codec.encode(volatility.astype(np.float32)))
    # zarr.json below the root
    consolidated: dict[str, Any] = {}
    all_docs: dict[str, dict[str, Any]] = {}
    for lv in attrs.levels:
        group_attrs = (level_attrs or {}).get(lv.path) or level_group_attrs(
            attrs.crs, lv.transform, lv.resolution
        )
        all_docs[lv.path] = group_doc(group_attrs)
    all_docs.update(array_docs)
    all_docs.update(coord_docs)
    all_docs["volatility"] = vol_doc
    for path, (doc, _chunks) in (extra_arrays or {}).items():
        all_docs[path] = doc
    for key in sorted(all_docs, key=lambda k: (k.count("/"), k), reverse=True):
        target.put(f"{key}/zarr.json", dumps(all_docs[key]))
    for key in sorted(all_docs):
        consolidated[key] = consolidated_entry(all_docs[key])
    # the commit point: created only if no other writer created a root meanwhile (decision 0051)
    commit_root(
        target,
        dumps(root_doc(attrs, multiscales_attr, consolidated, other_root_attrs)),
        ABSENT,
    )

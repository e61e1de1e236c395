"""The root-level ``provenance_items`` array (spec 3.8): one JSON document per month (the items
composited and skipped), and the edits of a local store's provenance an append makes.

This module is the only code that reads or writes that array and the provenance in a root
zarr.json: the toolkit (``cz build``, ``cz append``) calls these functions.

Write order (spec 9, 14) of :func:`write_provenance_items`: the new chunks (new keys), then
``provenance_items/zarr.json`` with the grown shape, then the root's consolidated entry. An
append calls it *before* :func:`chronozarr.append` rewrites the root with the new times, so the
array may run ahead of the time axis (entries past it are ignored), never behind it.
"""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from chronozarr.errors import ChronozarrError
from chronozarr.format import (
    ArrayInfo,
    codec_chain,
    compressor_for,
    consolidated_entry,
    dumps,
    vlen_utf8_decode,
    vlen_utf8_encode,
)
from chronozarr.io import fault_point
from chronozarr.provenance._block import (
    PROVENANCE_ITEMS,
    Skipped,
    skipped_entries,
    with_periods,
    with_skipped_items,
)
from chronozarr.read import open_store

__all__ = [
    "grown_items_objects",
    "items_array_objects",
    "items_document",
    "read_provenance_items",
    "record_periods",
    "record_skipped_items",
    "write_provenance_items",
]

_ITEMS_DESCRIPTION = (
    "per month, a JSON document: the STAC items composited, the items "
    "skipped, DN corrections (cz build / cz append)"
)


def record_skipped_items(store: str | os.PathLike[str], skipped: Sequence[Skipped]) -> None:
    """Add ``skipped`` to the root's ``provenance.skipped_items`` (kept to :data:`SKIPPED_LIMIT`).

    An append calls this before :func:`chronozarr.append` rewrites the root, which keeps the
    provenance it finds (an append on a cluster passes :func:`with_skipped_items` as
    ``chronozarr.append``'s ``provenance`` instead, written with the root)."""
    root_path = Path(store) / "zarr.json"
    root = json.loads(root_path.read_bytes())
    block = root["attributes"]["chronozarr"]
    block["provenance"] = with_skipped_items(block.get("provenance"), skipped)
    _atomic_write(root_path, dumps(root))


def record_periods(
    store: str | os.PathLike[str], bounds: Sequence[Sequence[str]], first: int
) -> None:
    """Write :func:`with_periods` into the root's provenance (a local append calls it before
    :func:`chronozarr.append`, which keeps the provenance it finds, so ``periods`` may run ahead
    of the time axis, never behind it; entries past it are ignored)."""
    root_path = Path(store) / "zarr.json"
    root = json.loads(root_path.read_bytes())
    block = root["attributes"]["chronozarr"]
    if not isinstance((block.get("provenance") or {}).get("periods"), list):
        return
    block["provenance"] = with_periods(block.get("provenance"), bounds, first)
    _atomic_write(root_path, dumps(root))


def items_document(
    month: str,
    *,
    items: Sequence[str],
    solar_days: Sequence[str],
    corrections: Mapping[str, Any],
    dropped: int,
    skipped: Iterable[Skipped],
) -> str:
    """The JSON of one month in ``provenance_items``: the items kept and skipped."""
    doc = {
        "month": month,
        "items": list(items),
        "solar_days": list(solar_days),
        "corrections": dict(corrections),
        "dropped": dropped,
        "skipped": skipped_entries([s for s in skipped if s.month == month], 10_000),
    }
    return json.dumps(doc, separators=(",", ":"), sort_keys=False)


def _items_array_doc(n_time: int, compressor: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [n_time],
        "data_type": "string",
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [1]}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": "",
        "codecs": [{"name": "vlen-utf8", "configuration": {}}, dict(compressor)],
        "dimension_names": ["time"],
        "attributes": {"_ARRAY_DIMENSIONS": ["time"], "description": _ITEMS_DESCRIPTION},
    }


def items_array_objects(
    documents: Sequence[str], data_compressor: Mapping[str, Any] | None
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The chunk objects and the zarr.json document of a new ``provenance_items`` array of
    ``documents`` (one per timestep), for a writer that commits them with the rest of the
    metadata (a cluster build, decision 0017): the same bytes :func:`write_provenance_items` writes.
    ``data_compressor`` is the data array's compressor (blosc gets ``typesize`` 1)."""
    comp_doc = dict(data_compressor) if data_compressor else codec_chain("zstd", None, "uint8")[1]
    if comp_doc.get("name") == "blosc":
        comp_doc["configuration"] = {**comp_doc["configuration"], "typesize": 1}
    comp = compressor_for(comp_doc)
    objects = {
        f"{PROVENANCE_ITEMS}/c/{i}": bytes(comp.encode(vlen_utf8_encode([text])))
        for i, text in enumerate(documents)
    }
    return objects, _items_array_doc(len(documents), comp_doc)


def grown_items_objects(
    documents: Sequence[str],
    first: int,
    data_compressor: Mapping[str, Any] | None,
    old_shape: int = 0,
) -> tuple[dict[str, bytes], dict[str, Any]]:
    """The chunk objects of months ``first ..`` of ``provenance_items`` and the array's grown
    zarr.json document, for an append that writes them with its own metadata (a cluster append,
    decision 0022, to any store): the same bytes :func:`write_provenance_items` writes locally."""
    objects, doc = items_array_objects(documents, data_compressor)
    moved = {f"{PROVENANCE_ITEMS}/c/{first + i}": objects[f"{PROVENANCE_ITEMS}/c/{i}"]
             for i in range(len(documents))}  # fmt: skip
    doc["shape"] = [max(first + len(documents), old_shape)]
    return moved, doc


def write_provenance_items(
    store: str | os.PathLike[str], documents: Sequence[str], *, first: int, update_root: bool
) -> None:
    """Write months ``first .. first + len(documents) - 1`` of ``provenance_items`` (order: see
    the module docstring). ``update_root`` also grows the root's consolidated entry."""
    base_store = Path(store)
    root_path = base_store / "zarr.json"
    root = json.loads(root_path.read_bytes())
    attrs = (root.get("attributes") or {}).get("chronozarr") or {}
    level0 = (
        f"{(attrs.get('levels') or [{'path': '0'}])[0]['path']}/{attrs.get('variable', 'data')}"
    )
    compressor = _store_compressor(base_store, level0) or codec_chain("zstd", None, "uint8")[1]
    comp = compressor_for(compressor)
    n_total = first + len(documents)
    base = base_store / PROVENANCE_ITEMS
    for i, text in enumerate(documents):
        blob = bytes(comp.encode(vlen_utf8_encode([text])))
        chunk = base / "c" / str(first + i)
        chunk.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(chunk, blob)
    doc = _items_array_doc(n_total, compressor)
    old_doc_path = base / "zarr.json"
    if old_doc_path.exists():
        old = json.loads(old_doc_path.read_bytes())
        doc["shape"] = [max(n_total, int(old.get("shape", [0])[0]))]
    _atomic_write(old_doc_path, dumps(doc))
    if update_root:
        cons = root.get("consolidated_metadata")
        if isinstance(cons, dict) and isinstance(cons.get("metadata"), dict):
            cons["metadata"][PROVENANCE_ITEMS] = consolidated_entry(doc)
            cons["metadata"] = dict(sorted(cons["metadata"].items()))
            _atomic_write(root_path, dumps(root))


def read_provenance_items(store: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The per-month provenance documents of a local store, as far as its time axis goes."""
    reader = open_store(store)
    base = Path(store) / PROVENANCE_ITEMS
    doc = json.loads((base / "zarr.json").read_bytes())
    comp = compressor_for(doc["codecs"][1])
    out = []
    for t in range(reader.n_time):
        raw = bytes(comp.decode((base / "c" / str(t)).read_bytes()))
        out.append(json.loads(vlen_utf8_decode(raw)[0]))
    return out


def _store_compressor(store: Path, array: str) -> dict[str, Any] | None:
    """The compressor of the store's data array (inside sharding), for provenance_items; blosc
    with ``typesize`` 1 (strings are bytes). None when the array cannot be read."""
    try:
        info = ArrayInfo.from_json(json.loads((store / array / "zarr.json").read_bytes()), array)
    except (OSError, ValueError, ChronozarrError):  # no data array: the default compressor
        return None
    comp = dict(info.codecs[-1]) if len(info.codecs) > 1 else None
    if comp is not None and comp.get("name") == "blosc":
        comp["configuration"] = {**comp["configuration"], "typesize": 1}
    return comp


def _atomic_write(path: Path, data: bytes) -> None:
    """Temporary file, then rename: a reader sees the old object or the new one (spec 9)."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        tmp.write_bytes(data)
        fault_point("put", path.name)  # a kill here leaves the .tmp a sweep must remove
        tmp.replace(path)
    except BaseException:  # a full disk, Ctrl-C: no temporary file left in the store
        tmp.unlink(missing_ok=True)
        raise

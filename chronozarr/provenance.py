"""Provenance (spec 3.8): the root's ``chronozarr.provenance`` and the ``provenance_items`` array.

The root block stays small whatever the number of source items: the sources, the composite,
the gap-fill, the recipe choices an append must repeat (its *fingerprint*, under
``fingerprint``; stores written before it hold a shorter one under ``build``) and a bounded list
of skipped items. The item ids behind each month live in the root-level array
``provenance_items`` (Zarr v3 ``string``, dims ``["time"]``, one chunk per month holding one JSON
document), so the root zarr.json a browser loads first stays small.

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
from typing import Any, Protocol

from chronozarr import codecs as zcodecs
from chronozarr.errors import ChronozarrError
from chronozarr.faults import fault_point
from chronozarr.metadata import ArrayInfo, codec_chain, consolidated_entry, dumps

__all__ = [
    "FINGERPRINT_VERSION",
    "ITEMS_FORMAT",
    "OPTIONAL_FINGERPRINT",
    "PROVENANCE_ITEMS",
    "SKIPPED_LIMIT",
    "FingerprintCheck",
    "Skipped",
    "compare_fingerprint",
    "composite_fields",
    "fingerprint_differences",
    "fingerprint_entry",
    "flatten_fingerprint",
    "grown_items_objects",
    "items_array_objects",
    "items_document",
    "items_reference",
    "mask_fields",
    "period_fields",
    "read_provenance_items",
    "record_periods",
    "record_skipped_items",
    "skipped_entries",
    "with_periods",
    "with_skipped_items",
    "write_provenance_items",
]

#: The root-level array holding one JSON document per month (the items behind it).
PROVENANCE_ITEMS = "provenance_items"
#: What one document of that array holds (recorded in ``provenance.items.format``).
ITEMS_FORMAT = "one JSON document per month: items, solar_days, corrections, skipped"
#: The layout of ``provenance.fingerprint``: ``{"version": 1, "fields": {dotted key: value}}``.
FINGERPRINT_VERSION = 1
#: At most this many skipped (item, asset) pairs in the root (the rest per month in the array).
SKIPPED_LIMIT = 50

_ITEMS_DESCRIPTION = (
    "per month, a JSON document: the STAC items composited, the items "
    "skipped, DN corrections (cz build / cz append)"
)


class Skipped(Protocol):
    """An (item, asset) left out of a composite because it could not be read."""

    @property
    def item(self) -> str: ...
    @property
    def asset(self) -> str: ...
    @property
    def month(self) -> str: ...
    @property
    def error(self) -> str: ...


# --- the root block ---------------------------------------------------------------------------


def items_reference() -> dict[str, str]:
    """``provenance.items``: where the per-month item documents are and what they hold."""
    return {"array": PROVENANCE_ITEMS, "format": ITEMS_FORMAT}


def composite_fields(
    method: str, parameters: Mapping[str, Any] | None = None, *, period: str = "monthly"
) -> dict[str, Any]:
    """The composite entries of the provenance block: ``composite`` (``"monthly <method>"``, the
    spec 3.8 example's form; ``"dekadal median"``, ``"16-day median"`` for other periods) and,
    when the method has parameters (a percentile's ``q``, the index of ``best``, the geometric
    median's library and tolerance), ``composite_parameters``.

    The median has none, so its block is what it was before other methods existed."""
    if not method or not isinstance(method, str):
        raise ChronozarrError(
            f"provenance: composite method must be a non-empty string, not {method!r}"
        )
    out: dict[str, Any] = {"composite": f"{period} {method}"}
    if parameters:
        out["composite_parameters"] = dict(parameters)
    return out


def mask_fields(
    *,
    open_radius: int = 0,
    dilate_radius: int = 0,
    cloud_probability_max: float | None = None,
    cleaned: Sequence[int | str] = (),
) -> dict[str, Any]:
    """``mask_cleaning`` of the provenance block: the observation-mask rules beyond the class
    keep-set (opening and dilation radii in pixels and the mask classes or flags they apply to,
    the cloud-probability ceiling in percent), only those in use; empty when none is (the block
    stays as it was)."""
    rules: dict[str, Any] = {}
    if open_radius:
        rules["open_pixels"] = int(open_radius)
    if dilate_radius:
        rules["dilate_pixels"] = int(dilate_radius)
    if cloud_probability_max is not None:
        rules["cloud_probability_max"] = cloud_probability_max
    if rules and (open_radius or dilate_radius):
        rules["cleaned"] = list(cleaned)
        rules["order"] = (
            "opening, then dilation, of each solar day's cloud (the cleaned classes and a cloud "
            "probability above the maximum); Euclidean disk"
        )
    return {"mask_cleaning": rules} if rules else {}


def period_fields(
    period: Mapping[str, Any] | None, bounds: Sequence[Sequence[str]]
) -> dict[str, Any]:
    """``period`` and ``periods`` of the provenance block (a spec 3.8 addition, docs/spec.md):
    the kind of period each timestep stands for (``{"kind": "dekad"}``, ``{"kind": "days",
    "days": 5}``, ...) and, per timestep in order, its ``[start, end)`` as ISO times (the start
    is the timestep's time). Empty for calendar months, whose bounds follow from the times: a
    monthly store's block is what it was before periods existed."""
    if not period or period.get("kind", "month") == "month":
        return {}
    return {"period": dict(period), "periods": [[str(a), str(b)] for a, b in bounds]}


def with_periods(
    provenance: Mapping[str, Any] | None, bounds: Sequence[Sequence[str]], first: int
) -> dict[str, Any]:
    """The provenance block with ``periods[first:]`` set to ``bounds`` (an append's new
    timesteps; idempotent, so a re-run of an interrupted append writes the same block). A block
    without ``periods`` (a monthly store) is returned as it is."""
    prov = dict(provenance or {})
    known = prov.get("periods")
    if isinstance(known, list):
        prov["periods"] = list(known[:first]) + [[str(a), str(b)] for a, b in bounds]
    return prov


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


def skipped_entries(skipped: Iterable[Skipped], limit: int = SKIPPED_LIMIT) -> list[dict[str, str]]:
    """One entry per skipped (item, asset), first occurrence kept, at most ``limit``."""
    seen: dict[tuple[str, str], Skipped] = {}
    for s in skipped:
        seen.setdefault((s.item, s.asset), s)
    return [
        {"item": s.item, "asset": s.asset, "month": s.month, "error": s.error}
        for s in list(seen.values())[:limit]
    ]


#: Fingerprint keys recorded only when they differ from their default (so stores built with the
#: defaults keep their bytes); a fingerprint or a store without one of them holds the default.
OPTIONAL_FINGERPRINT: dict[str, Any] = {"composite_parameters": {}, "mask_cleaning": {}}


def fingerprint_differences(
    provenance: Mapping[str, Any] | None, fingerprint: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    """(key, given, recorded) for every key of ``fingerprint`` that the store's legacy
    ``provenance.build`` holds with another value; empty when the store recorded none. The keys
    of :data:`OPTIONAL_FINGERPRINT` are compared also when one side lacks them (absent means
    their default: a store built with a mask dilation refuses a recipe without one).

    Stores written before :data:`FINGERPRINT_VERSION` 1 recorded only this short fingerprint;
    :func:`compare_fingerprint` falls back on it."""
    recorded = provenance.get("build") if isinstance(provenance, Mapping) else None
    if not isinstance(recorded, Mapping):
        return []
    out = []
    keys = list(fingerprint) + [k for k in OPTIONAL_FINGERPRINT if k not in fingerprint]
    for key in keys:
        value = fingerprint.get(key, OPTIONAL_FINGERPRINT.get(key))
        if key in recorded:
            was = recorded[key]
        elif key in OPTIONAL_FINGERPRINT:  # recorded only when used: absent is the default
            was = OPTIONAL_FINGERPRINT[key]
        else:  # a store from before this key existed: nothing to compare
            continue
        if was != value:
            out.append((key, value, was))
    return out


# --- the recipe fingerprint (what a month means; spec 3.8, 14) --------------------------------


def flatten_fingerprint(sections: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested recipe sections as ``{dotted key: JSON value}``, one entry per field.

    Mappings recurse (``filters.max_cloud_cover``); a list of mappings that all have a ``name``
    is keyed by it (``bands[red].scale``), so reordering is a difference of ``bands`` only;
    other values, lists included (``mask.keep``), are leaves. ``None`` is kept: an explicit
    "not set" differs from a field the store never recorded. Keys are sorted."""
    out: dict[str, Any] = {}
    for key, value in sections.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten_fingerprint(value, path))
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(v, Mapping) and isinstance(v.get("name"), str) for v in value)
        ):
            out[path] = [v["name"] for v in value]
            for v in value:
                rest = {k: x for k, x in v.items() if k != "name"}
                out.update(flatten_fingerprint(rest, f"{path}[{v['name']}]"))
        else:
            out[path] = _json_value(value)
    return dict(sorted(out.items()))


def _json_value(value: Any) -> Any:
    """The value as it reads back from JSON (tuples become lists, empty mappings ``{}``)."""
    return json.loads(json.dumps(value))


def fingerprint_entry(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``provenance.fingerprint``: the flattened fields (:func:`flatten_fingerprint`)."""
    return {"version": FINGERPRINT_VERSION, "fields": dict(sorted(fields.items()))}


class FingerprintCheck:
    """The outcome of :func:`compare_fingerprint`.

    ``differences``: ``(key, given, recorded)``, ``recorded`` being :data:`NOT_RECORDED` for a
    field the store has no entry for (it was built before the field existed) whose given value
    is not the field's default. ``unchecked``: the given keys that could not be compared at all
    (a store without a recorded fingerprint); ``legacy``: the store had only the old one.
    """

    NOT_RECORDED = "<not recorded>"

    def __init__(
        self,
        differences: list[tuple[str, Any, Any]],
        unchecked: list[str],
        legacy: bool,
    ) -> None:
        self.differences = differences
        self.unchecked = unchecked
        self.legacy = legacy

    @property
    def ok(self) -> bool:
        return not self.differences


def compare_fingerprint(
    provenance: Mapping[str, Any] | None,
    fields: Mapping[str, Any],
    *,
    defaults: Mapping[str, Any] | None = None,
    legacy: Mapping[str, Any] | None = None,
) -> FingerprintCheck:
    """Compare a recipe's flattened fingerprint ``fields`` with the one the store recorded.

    A key the store recorded and the recipe lacks counts as ``None`` in the recipe. A key the
    recipe has and the store did not record (a field added since the store was built) is a
    difference only when its value is not the field's default (``defaults``): the store was built
    when the default behaviour was the only one. A store without ``provenance.fingerprint`` is
    compared on its legacy ``build`` entries (``legacy``: the same recipe in that older form),
    every key of ``fields`` then being ``unchecked``.
    """
    prov = provenance if isinstance(provenance, Mapping) else {}
    entry = prov.get("fingerprint")
    recorded = entry.get("fields") if isinstance(entry, Mapping) else None
    if not isinstance(recorded, Mapping):
        return FingerprintCheck(
            fingerprint_differences(prov, legacy or {}), sorted(fields), legacy=True
        )
    defaults = defaults or {}
    diffs: list[tuple[str, Any, Any]] = []
    for key in sorted(set(fields) | set(recorded)):
        given = _json_value(fields.get(key))
        if key not in recorded:
            if given != _json_value(defaults.get(key)):
                diffs.append((key, given, FingerprintCheck.NOT_RECORDED))
            continue
        if given != recorded[key]:
            diffs.append((key, given, recorded[key]))
    return FingerprintCheck(diffs, [], legacy=False)


def with_skipped_items(
    provenance: Mapping[str, Any] | None, skipped: Sequence[Skipped]
) -> dict[str, Any]:
    """The provenance block with ``skipped`` added to its ``skipped_items`` (kept to
    :data:`SKIPPED_LIMIT`)."""
    prov = dict(provenance or {})
    known = list(prov.get("skipped_items") or [])
    prov["skipped_items"] = (known + skipped_entries(skipped))[:SKIPPED_LIMIT]
    return prov


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


# --- the provenance_items array ---------------------------------------------------------------


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
    comp = zcodecs.compressor_for(comp_doc)
    objects = {
        f"{PROVENANCE_ITEMS}/c/{i}": bytes(comp.encode(zcodecs.vlen_utf8_encode([text])))
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
    comp = zcodecs.compressor_for(compressor)
    n_total = first + len(documents)
    base = base_store / PROVENANCE_ITEMS
    for i, text in enumerate(documents):
        blob = bytes(comp.encode(zcodecs.vlen_utf8_encode([text])))
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
    from chronozarr.reader import open_store

    reader = open_store(store)
    base = Path(store) / PROVENANCE_ITEMS
    doc = json.loads((base / "zarr.json").read_bytes())
    comp = zcodecs.compressor_for(doc["codecs"][1])
    out = []
    for t in range(reader.n_time):
        raw = bytes(comp.decode((base / "c" / str(t)).read_bytes()))
        out.append(json.loads(zcodecs.vlen_utf8_decode(raw)[0]))
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

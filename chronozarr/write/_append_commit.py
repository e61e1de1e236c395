"""What an ``append`` writes after its chunks (spec 5, 14; decision 0020): the provenance items,
the volatility (under the append journal), ``time/c/0`` of every level, the array zarr.json
files, the root zarr.json last.

The volatility is computed from the pre-append one, which the append journal keeps until the
root is written: a re-run after a kill at any point applies the new deltas once. The root is the
commit point; the journal and the work prefix are removed after it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.format import (
    HISTORY_ARRAY,
    ChunkCodec,
    consolidated_entry,
    dumps,
    format_time,
    root_time_paths,
    volatility_value,
)
from chronozarr.io import Version, commit_root
from chronozarr.provenance import PROVENANCE_ITEMS, grown_items_objects
from chronozarr.read import Reader
from chronozarr.write._append_checks import refuse
from chronozarr.write._append_plan import AppendState, VolatilityBasis, array_names, doc_with_shape
from chronozarr.write._cells import CellResult
from chronozarr.write._journal import begin_journal, end_journal
from chronozarr.write._worklog import WorkLog, clear_work

__all__ = ["AppendCommit"]

log = logging.getLogger("chronozarr.append")


def _write_items(
    state: AppendState,
    items: Sequence[str] | Callable[[list[Any]], Sequence[str]] | None,
    extras: Any,
) -> dict[str, Any] | None:
    """The new months' ``provenance_items`` chunks (new keys, before any metadata: spec 9);
    returns the array's grown document, or None when no documents were given."""
    if items is None:
        return None
    documents = list(items(extras) if callable(items) else items)
    n_add = state.n_new - state.n_old
    if len(documents) != n_add:
        raise refuse("provenance_items", f"expected {n_add} documents, got {len(documents)}")
    old = state.reader.document(PROVENANCE_ITEMS)
    old_shape = int(old["shape"][0]) if isinstance(old, Mapping) and old.get("shape") else 0
    info0 = state.reader.array(0).info
    compressor = dict(info0.codecs[-1]) if len(info0.codecs) > 1 else None
    objects, doc = grown_items_objects(documents, state.n_old, compressor, old_shape)
    for key, blob in objects.items():
        state.target.put(key, blob)
    return doc


def _write_coordinates(
    state: AppendState,
    results0: list[CellResult],
    basis: VolatilityBasis,
    fail_after: str | None = None,
) -> dict[str, dict[str, Any]]:
    """volatility/c/0/0, then time/c/0 of every level (spec 14 write order). The volatility is
    computed from the pre-append one, which the append journal keeps until the root is written
    (:mod:`chronozarr.write._journal`): a re-run after a kill at any point applies the new deltas
    once. Returns the array documents to write next."""
    reader, attrs, target, n_new = state.reader, state.attrs, state.target, state.n_new
    vol_key = f"{attrs.volatility_path}/c/0/0"
    if basis.begin:
        begin_journal(target, state.n_old, target.get(vol_key))
    if basis.stored is not None and attrs.volatility_path and basis.state != "final":
        vol = _update_volatility(reader, basis.stored, results0, basis.old_terms)
        vdoc = reader.document(attrs.volatility_path)
        assert vdoc is not None  # reader.volatility() read it above
        vcodec = ChunkCodec(vdoc["codecs"], "float32", vol.shape)
        target.put(vol_key, vcodec.encode(vol))
    if fail_after == "volatility":
        raise RuntimeError("injected failure after the volatility, before time/c/0")
    new_docs: dict[str, dict[str, Any]] = {}
    # every level's time, then the root's when the store has one (root_coordinates)
    time_paths = [f"{lv.path}/time" for lv in reader.levels] + root_time_paths(reader.document)
    for time_path in time_paths:
        tdoc = json.loads(json.dumps(reader.document(time_path)))
        tdoc["shape"] = [n_new]
        tdoc["chunk_grid"]["configuration"]["chunk_shape"] = [n_new]
        codec = ChunkCodec(tdoc["codecs"], "int64", (n_new,))
        times = np.asarray(state.all_times_ms, dtype=np.int64)
        target.put(f"{time_path}/c/0", codec.encode(times))
        new_docs[time_path] = tdoc
    for lv in reader.levels:
        for name in array_names(attrs):
            new_docs[f"{lv.path}/{name}"] = doc_with_shape(reader, lv.path, name, n_new)
    history = attrs.history  # the companion's values grow with the axis (docs/spec.md C25)
    if history is not None:
        name = f"{history.path}/{HISTORY_ARRAY}"
        for level_path in history.levels:
            new_docs[f"{level_path}/{name}"] = doc_with_shape(reader, level_path, name, n_new)
    return new_docs


def _new_root(
    state: AppendState,
    root: Mapping[str, Any],
    new_docs: Mapping[str, dict[str, Any]],
    provenance: Mapping[str, Any] | None = None,
    *,
    sort: bool = False,
) -> dict[str, Any]:
    """The root document after the append: times, temporal, levels and shard_bytes grown, the
    consolidated copies of the rewritten documents replaced (spec 14); ``provenance``, when
    given, replaces the root's (spec 3.8). ``sort``: the consolidated entries in key order
    (as :func:`chronozarr.provenance.write_provenance_items` leaves them)."""
    attrs, n_new = state.attrs, state.n_new
    new_attrs = attrs.evolve(
        times=tuple(format_time(t) for t in state.all_times_ms),
        temporal=state.new_temporal,
        levels=None
        if attrs.levels is None
        else tuple(
            type(lv)(lv.path, lv.resolution, lv.transform, (n_new, *lv.shape[1:]), lv.grid)
            for lv in attrs.levels
        ),
        shard_bytes=state.shard_bytes if attrs.shard_bytes is not None else None,
        provenance=dict(provenance) if provenance is not None else attrs.provenance,
    )
    new_root = dict(root)
    attributes = dict(root.get("attributes") or {})
    attributes["chronozarr"] = new_attrs.to_json()
    new_root["attributes"] = attributes
    cons = root.get("consolidated_metadata")
    if isinstance(cons, Mapping) and isinstance(cons.get("metadata"), Mapping):
        meta = dict(cons["metadata"])
        for key, doc in new_docs.items():
            meta[key] = consolidated_entry(doc)
        if sort:
            meta = dict(sorted(meta.items()))
        new_root["consolidated_metadata"] = {**cons, "metadata": meta}
    return new_root


def _update_volatility(
    reader: Reader, stored: np.ndarray, results: list[CellResult], old_terms: Sequence[int]
) -> np.ndarray:
    """The new deltas join each cell's mean (spec 14): old sum recovered from the stored mean.

    A cell whose stored value is clipped at 1.0 has lost its sum (as has every cell of a store
    whose volatility is not its root's): its level-0 task recomputed the sum from the store
    (``extra["old_sum"]``). The result equals the spec 5 definition over the recorded references
    up to float32 rounding.
    """
    vol = stored.astype(np.float32).copy()
    n_band = len(reader.bands)
    lv = reader.levels[0]
    h, w = lv.shape[-2:]
    cs = reader.chunk_size(0)
    for res in results:
        r, c = res.row, res.col
        pixels = n_band * min(cs, h - r * cs) * min(cs, w - c * cs)
        old_count = len(old_terms) * pixels
        recounted = (res.extra or {}).get("old_sum")
        if old_count and recounted is not None:
            old_sum = float(recounted)
        else:
            old_sum = float(stored[r, c]) * 10000.0 * old_count
        vol[r, c] = volatility_value(old_sum + res.vol_sum, old_count + res.vol_count)
    return vol


@dataclass
class AppendCommit:
    """The writes of an append after its chunks, given the stages' results (see the module
    docstring). ``fail_after`` (``chunks``, ``volatility``, ``coords``, ``arrays``) injects a
    failure at that point, for the tests of an interrupted append."""

    state: AppendState
    root: Mapping[str, Any]
    basis: VolatilityBasis
    work: WorkLog | None
    provenance: Any = None
    provenance_items: Any = None
    fail_after: str | None = None
    #: the root's version when the append read it: the commit replaces only that (decision 0051)
    root_version: Version | None = None

    def __call__(self, results: list[list[CellResult]]) -> None:
        state, target, fail_after = self.state, self.state.target, self.fail_after
        if state.layout.shard_time is not None:
            for lv, ran in zip(state.reader.levels, results, strict=True):
                state.shard_bytes.setdefault(lv.path, {}).update(
                    {key: size for res in ran for key, size in res.shard_sizes.items()}
                )
        if fail_after == "chunks":
            raise RuntimeError("injected failure after the chunks")
        extras = [(res.extra or {}).get("source") for res in results[0]]
        extras = [e for e in extras if e is not None]
        prov = self.provenance(extras) if callable(self.provenance) else self.provenance
        if prov is not None and not isinstance(prov, Mapping):
            raise refuse("provenance", "expected an object (mapping)")
        items_doc = _write_items(state, self.provenance_items, extras)
        new_docs = _write_coordinates(state, results[0], self.basis, fail_after)
        if fail_after == "coords":
            raise RuntimeError("injected failure after time and volatility")
        if items_doc is not None:
            new_docs[PROVENANCE_ITEMS] = items_doc
        for key, doc in new_docs.items():  # array zarr.json below the root
            target.put(f"{key}/zarr.json", dumps(doc))
        if fail_after == "arrays":
            raise RuntimeError("injected failure after the array zarr.json")
        new_root = _new_root(state, self.root, new_docs, prov, sort=items_doc is not None)
        # the root, last: the commit point, only over the root this append grew (decision 0051)
        if self.root_version is None:
            target.put("zarr.json", dumps(new_root))
        else:
            commit_root(target, dumps(new_root), self.root_version)
        end_journal(target)
        if self.work is not None:
            clear_work(target, self.work.key)  # after the root: the commit (decision 0017)
        log.info(
            "appended %d timesteps to %s (now %d)",
            state.n_new - state.n_old, target.url, state.n_new,
        )  # fmt: skip

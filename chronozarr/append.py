"""``append``: grow a published store at the end of its time axis (spec 14).

Everything is checked before the first byte is written; a refusal leaves the store untouched.
Then, in the order of spec 14: the chunks (unsharded: new objects only) or time shards (sharded:
the shard receiving the first new timestep is rewritten whole, keeping its old bytes, old index
included, at their old offsets), then ``time/c/0`` of every level and ``volatility/c/0/0``, then
the array zarr.json files, the root zarr.json last.

Keeping the old shard's bytes verbatim (its old index too) means a reader holding the previous
root, whose shard_bytes still gives the old length, reads the old index at the old place and
decodes every timestep it knows: an interrupted append leaves a store that decodes at its old
state, and re-running the same append rebuilds exactly the same objects.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from chronozarr import append_journal
from chronozarr import codecs as _codecs
from chronozarr.append_checks import UNSET, check_append, refuse, xarray_coords
from chronozarr.cells import (
    CellResult,
    Layout,
    Planes,
    Readback,
    default_workers,
    parallel,
    write_cell_series,
)
from chronozarr.errors import AppendError, CorruptStoreError
from chronozarr.grid import cell_slice
from chronozarr.inputs import CellInput, unwrap_array
from chronozarr.jsondoc import load_json
from chronozarr.metadata import (
    ArrayInfo,
    RootAttrs,
    Temporal,
    consolidated_entry,
    dumps,
    format_time,
    parse_time,
)
from chronozarr.reader import Reader
from chronozarr.root_coordinates import root_time_paths
from chronozarr.storage import LocalStore
from chronozarr.temporal import abs_diff_sum, schedule, volatility_value

__all__ = ["append"]

log = logging.getLogger("chronozarr.append")

NOMINAL_INTERVAL = 6  # spec 5: a none store's nominal schedule (the writer default)


def append(
    store: str | os.PathLike[str],
    data: Any,
    *,
    times: Sequence[Any],
    mask: Any = None,
    coverage: Any = None,
    bands: Sequence[Any] | None = None,
    crs: Any = None,
    transform: Sequence[float] | None = None,
    nodata: Any = UNSET,
    provenance: Mapping[str, Any] | None = None,
    workers: int | None = None,
    _fail_after: str | None = None,
) -> None:
    """Append timesteps ``data`` (time, band, y, x) to the local store at ``store`` (spec 14).

    ``times`` must be strictly increasing and after the store's last time. ``mask`` and
    ``coverage`` (time, y, x) are required exactly when the store has them. ``bands``, ``crs``,
    ``transform`` and ``nodata``, when given (the toolkit passes its recipe's), must equal the
    store's; an xarray input's band/y/x coordinates are checked too. Any mismatch raises
    ``AppendError`` naming the condition and the values seen, before anything is written.
    ``provenance``, when given, replaces the root's ``chronozarr.provenance`` (spec 3.8) in the
    same final root write (the toolkit records the sources of the new timesteps).
    """
    if provenance is not None and not isinstance(provenance, Mapping):
        raise refuse("provenance", "expected an object (mapping)")
    target = LocalStore(store)
    raw_root = target.get("zarr.json")
    if raw_root is None:
        raise refuse("store", f"no chronozarr store at {target.url} (zarr.json not found)")
    root = load_json(raw_root, f"{target.url}/zarr.json")
    reader = Reader(target, root)
    coords = xarray_coords(data)
    data = unwrap_array(data, "data")
    check_append(reader, data, times, mask, coverage, bands, crs, transform, nodata, coords)
    plan = _plan(reader, target, int(data.shape[0]), times)
    inputs = _Inputs(
        CellInput(data, plan.layout.dtype),
        _cell_input(unwrap_array(mask, "mask")),
        _cell_input(unwrap_array(coverage, "coverage")),
    )
    workers = workers or default_workers()
    vol_state = _volatility_state(reader, plan.all_times_ms)
    results0 = _write_chunks(plan, inputs, workers, _fail_after)
    if _fail_after == "chunks":
        raise RuntimeError("injected failure after the chunks")
    new_docs = _write_coordinates(plan, results0, vol_state, _fail_after)
    if _fail_after == "coords":
        raise RuntimeError("injected failure after time and volatility")
    # array zarr.json below the root
    for key, doc in new_docs.items():
        target.put(f"{key}/zarr.json", dumps(doc))
    if _fail_after == "arrays":
        raise RuntimeError("injected failure after the array zarr.json")
    target.put("zarr.json", dumps(_new_root(plan, root, new_docs, provenance)))  # the root, last
    append_journal.finish(target)
    log.info(
        "appended %d timesteps to %s (now %d)", plan.n_new - plan.n_old, target.url, plan.n_new
    )


@dataclass
class _Inputs:
    """The appended data and its mask/coverage, read one cell at a time."""

    data: CellInput
    mask: CellInput | None
    coverage: CellInput | None


def _cell_input(plane: Any) -> CellInput | None:
    return None if plane is None else CellInput(plane, np.dtype("uint8"))


@dataclass
class _Plan:
    """What an append writes: the store as read, the grown axis, the schedules old and new."""

    reader: Reader
    target: LocalStore
    attrs: RootAttrs
    layout: Layout
    n_old: int
    n_new: int
    all_times_ms: list[int]
    new_temporal: Temporal
    vol_refs: Mapping[int, int]
    old_vol_anchors: set[int]
    old_vol_refs: Mapping[int, int]
    moved: list[int]
    shard_bytes: dict[str, dict[str, int]] = field(default_factory=dict)


def _schedules(
    temporal: Temporal, n_old: int, n_new: int
) -> tuple[Temporal, set[int], Mapping[int, int], set[int], Mapping[int, int]]:
    """The grown temporal block (4.2: old references kept) and the volatility schedules after
    and before the append (5): (temporal, anchors, refs, old anchors, old refs)."""
    if temporal.encoding == "star-delta":
        interval = int(temporal.anchor_interval or 1)
        anchors, refs = schedule(n_new, interval, existing=temporal.delta_reference)
        new_temporal = type(temporal)(
            encoding="star-delta",
            anchor_interval=interval,
            anchor_indices=tuple(anchors),
            delta_reference={t: r for t, r in refs.items() if t not in set(anchors)},
            selection=temporal.selection,
            has_encoding_key=temporal.has_encoding_key,
        )
        return (
            new_temporal,
            set(anchors),
            new_temporal.delta_reference,
            set(temporal.anchor_indices),
            temporal.delta_reference,
        )
    # spec 5: the nominal nearest-anchor schedule, not recorded; recomputed over the new axis
    # so the volatility equals a fresh encode's (the references it moves are corrected).
    old_a, old_r = schedule(n_old, NOMINAL_INTERVAL)
    new_a, new_r = schedule(n_new, NOMINAL_INTERVAL)
    return temporal, set(new_a), new_r, set(old_a), old_r


def _plan(reader: Reader, target: LocalStore, n_add: int, times: Sequence[Any]) -> _Plan:
    attrs = reader.attrs
    n_old = reader.n_time
    n_new = n_old + n_add
    all_times_ms = [parse_time(t) for t in attrs.times] + [parse_time(t) for t in times]
    info0 = reader.array(0).info
    if info0.sharded and info0.index_location != "end":
        raise refuse("layout", "appending to a shard with a start-located index is not supported")
    new_temporal, vol_anchors, vol_refs, old_vol_anchors, old_vol_refs = _schedules(
        attrs.temporal, n_old, n_new
    )
    moved = [t for t in range(n_old) if t in old_vol_refs and old_vol_refs[t] != vol_refs.get(t)]
    data_codecs = [dict(c) for c in info0.codecs]
    plane_path = attrs.mask_variable or attrs.coverage_variable
    plane_codecs = (
        [dict(c) for c in reader.array(0, plane_path).info.codecs] if plane_path else data_codecs
    )
    layout = Layout(
        store=target,
        variable=attrs.variable,
        n_time=n_new,
        n_band=len(attrs.bands),
        cs=info0.cs,
        dtype=np.dtype(info0.dtype),
        nodata=attrs.nodata,
        encoding=attrs.temporal.encoding,
        anchors=frozenset(new_temporal.anchor_indices),
        refs=dict(new_temporal.delta_reference),
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=info0.shard_time,
        data_codecs=data_codecs,
        plane_codecs=plane_codecs if plane_path else [dict(c) for c in data_codecs],
        has_mask=attrs.mask_variable is not None,
        has_coverage=attrs.coverage_variable is not None,
    )
    if (layout.has_mask and attrs.mask_variable != "mask") or (
        layout.has_coverage and attrs.coverage_variable != "coverage"
    ):
        raise refuse("layout", "mask/coverage variables must be named 'mask' and 'coverage'")
    shard_bytes = {k: dict(v) for k, v in (attrs.shard_bytes or {}).items()}
    return _Plan(
        reader, target, attrs, layout, n_old, n_new, all_times_ms, new_temporal, vol_refs,
        old_vol_anchors, old_vol_refs, moved, shard_bytes,
    )  # fmt: skip


def _shard_prefix_for(
    plan: _Plan, level_path: str
) -> Callable[..., tuple[bytes, list[Any]] | None]:
    """Old payload (old index included) and entries of the shard receiving new timesteps."""
    st = plan.layout.shard_time

    def get(array_path: str, ts: int, row: int, col: int) -> tuple[bytes, list[Any]] | None:
        assert st is not None
        if ts * st >= plan.n_old:
            return None  # a new shard
        return _old_shard(plan.reader, level_path, array_path, ts, row, col, plan.n_old, st)

    return get


def _append_level0(plan: _Plan, inputs: _Inputs, cell: tuple[int, int]) -> CellResult:
    """Level 0 of one cell: new timesteps from the input, old ones read back as references."""
    reader, layout, n_old = plan.reader, plan.layout, plan.n_old
    r, c = cell
    h, w = reader.levels[0].shape[-2:]
    ys, xs = cell_slice(r, c, layout.cs, h, w)
    get = inputs.data.cell(ys, xs)
    getm = inputs.mask.cell(ys, xs) if inputs.mask else None
    getc = inputs.coverage.cell(ys, xs) if inputs.coverage else None
    hh, ww = ys.stop - ys.start, xs.stop - xs.start

    def planes_at(t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        if t < n_old:  # an existing timestep: a new delta's anchor or reference
            return reader.read_cell(t, r, c, 0), None, None
        i = t - n_old
        m = None if getm is None else np.asarray(getm(i)).astype(np.uint8, copy=False)
        if m is not None and m.size and int(m.max()) > 1:
            raise AppendError("mask", f"values must be 0 or 1 (spec 2.4), found {int(m.max())}")
        cv = None if getc is None else np.asarray(getc(i)).astype(np.uint8, copy=False)
        return np.asarray(get(i), dtype=layout.dtype)[:, :hh, :ww], m, cv

    planes = Planes(planes_at)
    new_range = range(n_old, plan.n_new)
    res = _write(layout, "0", r, c, planes, new_range, True, _shard_prefix_for(plan, "0"))
    for t in plan.moved:  # none stores: nominal references that the new anchors moved
        src = planes.get(t)[0]
        res.vol_sum += abs_diff_sum(src, planes.get(plan.vol_refs[t])[0])
        res.vol_sum -= abs_diff_sum(src, planes.get(plan.old_vol_refs[t])[0])
    return res


def _append_upper(
    plan: _Plan, k: int, docs: Mapping[str, Any], cell: tuple[int, int]
) -> CellResult:
    """Level k of one cell: new timesteps reduced from level k-1 as now stored (6)."""
    reader, levels = plan.reader, plan.reader.levels
    rb = Readback(plan.layout, levels[k - 1], docs)
    r, c = cell

    def planes_at(t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        if t < plan.n_old:
            return reader.read_cell(t, r, c, k), None, None
        return rb.reduced(t, r, c)

    path = levels[k].path
    new_range = range(plan.n_old, plan.n_new)
    return _write(
        plan.layout, path, r, c, Planes(planes_at), new_range, False, _shard_prefix_for(plan, path)
    )


def _write_chunks(
    plan: _Plan, inputs: _Inputs, workers: int, fail_after: str | None
) -> list[CellResult]:
    """Every level's new chunks (or rewritten trailing shards), level by level; the level-0
    results (their volatility terms)."""
    reader, attrs = plan.reader, plan.attrs
    results0: list[CellResult] = []
    for k, lv in enumerate(reader.levels):
        rows, cols = lv.grid
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        if k == 0:
            results = parallel(lambda cell: _append_level0(plan, inputs, cell), cells, workers)
            results0 = results
        else:
            back = reader.levels[k - 1]
            docs = {
                f"{back.path}/{name}": _doc_with_shape(reader, back.path, name, plan.n_new)
                for name in _array_names(attrs)
            }
            results = parallel(partial(_append_upper, plan, k, docs), cells, workers)
        if plan.layout.shard_time is not None:
            plan.shard_bytes.setdefault(lv.path, {}).update(
                {key: size for res in results for key, size in res.shard_sizes.items()}
            )
        if fail_after == f"level{k}":
            raise RuntimeError(f"injected failure after level {k} chunks")
    return results0


def _write_coordinates(
    plan: _Plan, results0: list[CellResult], vol_state: str, fail_after: str | None = None
) -> dict[str, dict[str, Any]]:
    """volatility/c/0/0, then time/c/0 of every level (spec 14 write order). The volatility is
    computed from the pre-append one, which the append journal keeps until the root is written
    (:mod:`chronozarr.append_journal`): a re-run after a kill at any point applies the new deltas
    once. Returns the array documents to write next."""
    reader, attrs, target, n_new = plan.reader, plan.attrs, plan.target, plan.n_new
    vol_stored = reader.volatility()
    if vol_stored is not None and attrs.volatility_path:
        vol_key = f"{attrs.volatility_path}/c/0/0"
        found, old_chunk = append_journal.journaled_volatility(target, plan.n_old)
        if found:  # an interrupted run of an append onto this root: its volatility before
            vol_stored = _decoded_volatility(reader, old_chunk, vol_stored)
            vol_state = "old"
        elif vol_state == "old":  # record it before it is rewritten
            append_journal.begin(target, plan.n_old, target.get(vol_key))
    if vol_stored is not None and attrs.volatility_path and vol_state != "final":
        vol = _update_volatility(
            reader,
            vol_stored,
            results0,
            plan.n_old,
            plan.old_vol_anchors,
            plan.old_vol_refs,
            exact=vol_state == "unknown",
        )
        vdoc = reader._doc(attrs.volatility_path)
        assert vdoc is not None  # reader.volatility() read it above
        vcodec = _codecs.ChunkCodec(vdoc["codecs"], "float32", vol.shape)
        target.put(f"{attrs.volatility_path}/c/0/0", vcodec.encode(vol))
    if fail_after == "volatility":
        raise RuntimeError("injected failure after the volatility, before time/c/0")
    new_docs: dict[str, dict[str, Any]] = {}
    # every level's time, then the root's when the store has one (root_coordinates)
    time_paths = [f"{lv.path}/time" for lv in reader.levels] + root_time_paths(reader._doc)
    for time_path in time_paths:
        tdoc = json.loads(json.dumps(reader._doc(time_path)))
        tdoc["shape"] = [n_new]
        tdoc["chunk_grid"]["configuration"]["chunk_shape"] = [n_new]
        codec = _codecs.ChunkCodec(tdoc["codecs"], "int64", (n_new,))
        times = np.asarray(plan.all_times_ms, dtype=np.int64)
        target.put(f"{time_path}/c/0", codec.encode(times))
        new_docs[time_path] = tdoc
    for lv in reader.levels:
        for name in _array_names(attrs):
            new_docs[f"{lv.path}/{name}"] = _doc_with_shape(reader, lv.path, name, n_new)
    return new_docs


def _new_root(
    plan: _Plan,
    root: Mapping[str, Any],
    new_docs: Mapping[str, dict[str, Any]],
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The root document after the append: times, temporal, levels and shard_bytes grown, the
    consolidated copies of the rewritten documents replaced (spec 14); ``provenance``, when
    given, replaces the root's (spec 3.8)."""
    attrs, n_new = plan.attrs, plan.n_new
    new_attrs = attrs.evolve(
        times=tuple(format_time(t) for t in plan.all_times_ms),
        temporal=plan.new_temporal,
        levels=None
        if attrs.levels is None
        else tuple(
            type(lv)(lv.path, lv.resolution, lv.transform, (n_new, *lv.shape[1:]), lv.grid)
            for lv in attrs.levels
        ),
        shard_bytes=plan.shard_bytes if attrs.shard_bytes is not None else None,
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
        new_root["consolidated_metadata"] = {**cons, "metadata": meta}
    return new_root


def _array_names(attrs: RootAttrs) -> list[str]:
    names = [attrs.variable]
    if attrs.mask_variable:
        names.append(attrs.mask_variable)
    if attrs.coverage_variable:
        names.append(attrs.coverage_variable)
    return names


def _doc_with_shape(reader: Reader, level_path: str, name: str, n_new: int) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(reader._doc(f"{level_path}/{name}")))
    doc["shape"] = [n_new, *doc["shape"][1:]]  # spatial:* attributes describe y/x: unchanged
    return doc


def _write(
    layout: Layout,
    level_path: str,
    r: int,
    c: int,
    planes: Planes,
    times: range,
    vol: bool,
    prefix_getter: Any,
) -> CellResult:
    shard_prefix = prefix_getter if layout.shard_time is not None else None
    return write_cell_series(
        layout, level_path, r, c, planes, times, volatility=vol, shard_prefix=shard_prefix
    )


def _old_shard(
    reader: Reader,
    level_path: str,
    array_path: str,
    ts: int,
    row: int,
    col: int,
    n_old: int,
    st: int,
) -> tuple[bytes, list[Any]] | None:
    """The existing shard's bytes up to its end as the old root knows it, and its entries."""
    name = array_path.rsplit("/", 1)[1]
    level = next(k for k, lv in enumerate(reader.levels) if lv.path == level_path)
    arr = reader.array(level, name)
    key = arr._key(ts, row, col)
    listed = arr.shard_bytes.get(f"{ts}/{row}/{col}") if name == reader.attrs.variable else None
    with_crc = any(cd.get("name") == "crc32c" for cd in arr.info.index_codecs)
    n = arr.info.chunk_shape[0]
    nbytes = _codecs.index_nbytes(n, with_crc)
    if listed is None:
        # mask/coverage (not in shard_bytes) or an unlisted shard: find the old end. If an
        # interrupted attempt already rewrote the object, its index lists new positions; the old
        # index then sits right after the last old chunk (our writer and zarr-python write the
        # payload, then the index), which its crc32c confirms.
        size = reader.store.size(key)
        if size is None:
            return None
        whole = reader.store.get(key) or b""
        index = _codecs.parse_index(whole[size - nbytes :], n, with_crc=with_crc, where=key)
        old_pos = range(min(st, n_old - ts * st))
        empty = int(_codecs.EMPTY)
        if all(int(index[p][0]) == empty for p in range(len(old_pos), st)):
            listed = size
        else:
            ends = [
                int(index[p][0]) + int(index[p][1]) for p in old_pos if int(index[p][0]) != empty
            ]
            listed = (max(ends) if ends else 0) + nbytes
            _codecs.parse_index(whole[listed - nbytes : listed], n, with_crc=with_crc, where=key)
    blob = reader.store.get_range(key, 0, listed)
    if blob is None or len(blob) != listed:
        raise CorruptStoreError(f"{key}: shard is shorter than the {listed} bytes the store lists")
    index = _codecs.parse_index(blob[listed - nbytes :], n, with_crc=with_crc, where=key)
    entries: list[Any] = [None] * st
    for pos in range(min(st, n_old - ts * st)):
        offset, size = (int(v) for v in index[pos])
        if not (offset == int(_codecs.EMPTY) and size == int(_codecs.EMPTY)):
            entries[pos] = (offset, size)
    return blob, entries


def _update_volatility(
    reader: Reader,
    stored: np.ndarray,
    results: list[CellResult],
    n_old: int,
    old_anchors: set[int],
    old_refs: Mapping[int, int],
    *,
    exact: bool = False,
) -> np.ndarray:
    """The new deltas join each cell's mean (spec 14): old sum recovered from the stored mean.

    A cell whose stored value is clipped at 1.0 has lost its sum, so it is recomputed from the
    store. The result equals the spec 5 definition over the recorded references up to float32
    rounding.
    """
    vol = stored.astype(np.float32).copy()
    n_band = len(reader.bands)
    lv = reader.levels[0]
    h, w = lv.shape[-2:]
    cs = reader.chunk_size(0)
    old_terms = [t for t in range(n_old) if t not in old_anchors and t in old_refs]
    for res in results:
        r, c = res.row, res.col
        pixels = n_band * min(cs, h - r * cs) * min(cs, w - c * cs)
        old_count = len(old_terms) * pixels
        if old_count and (exact or float(stored[r, c]) >= 1.0):
            old_sum = sum(
                abs_diff_sum(reader.read_cell(t, r, c, 0), reader.read_cell(old_refs[t], r, c, 0))
                for t in old_terms
            )
        else:
            old_sum = float(stored[r, c]) * 10000.0 * old_count
        vol[r, c] = volatility_value(old_sum + res.vol_sum, old_count + res.vol_count)
    return vol


def _decoded_volatility(reader: Reader, chunk: bytes | None, like: np.ndarray) -> np.ndarray:
    """The volatility array of the journal's chunk (fill when the chunk was absent)."""
    path = reader.attrs.volatility_path
    assert path is not None
    info = ArrayInfo.from_json(reader._doc(path), path, allowed_dtypes=("float32",))
    if chunk is None:
        return np.full(like.shape, info.typed_fill(), dtype=np.float32)
    codec = _codecs.ChunkCodec(info.codecs, info.dtype, info.chunk_shape)
    return codec.decode(chunk)[: info.shape[0], : info.shape[1]]


def _volatility_state(reader: Reader, all_times_ms: Sequence[int]) -> str:
    """ "old" (the stored volatility is the previous root's), "final" (an interrupted run of this
    same append already wrote it), or "unknown" (another append was interrupted: recompute)."""
    path = f"{reader.levels[0].path}/time"
    doc = reader._doc(path)
    raw = reader.store.get(f"{path}/c/0")
    if doc is None or raw is None:
        return "unknown"
    data = raw
    for c in reversed(doc["codecs"][1:]):
        data = bytes(_codecs.compressor_for(c).decode(data))
    values = np.frombuffer(data, dtype="<i8")
    if len(values) == reader.n_time:
        return "old"
    if len(values) == len(all_times_ms) and values.tolist() == list(all_times_ms):
        return "final"
    return "unknown"

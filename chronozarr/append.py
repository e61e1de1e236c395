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
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from chronozarr import codecs as _codecs
from chronozarr.errors import AppendError, ChronozarrError, CorruptStoreError
from chronozarr.metadata import (
    RootAttrs,
    consolidated_entry,
    dumps,
    format_time,
    parse_time,
    parse_times,
)
from chronozarr.reader import ArrayReader, Reader
from chronozarr.root_coordinates import root_time_paths
from chronozarr.storage import LocalStore
from chronozarr.temporal import abs_diff_sum, schedule, volatility_value
from chronozarr.writer import (
    CellResult,
    Layout,
    Readback,
    _Input,
    _parallel,
    _Planes,
    _unwrap,
    default_workers,
    write_cell_series,
)

__all__ = ["append"]

log = logging.getLogger("chronozarr.append")

NOMINAL_INTERVAL = 6  # spec 5: a none store's nominal schedule (the writer default)
_UNSET = object()


def _refuse(condition: str, message: str) -> AppendError:
    return AppendError(condition, message)


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
    nodata: Any = _UNSET,
    workers: int | None = None,
    _fail_after: str | None = None,
) -> None:
    """Append timesteps ``data`` (time, band, y, x) to the local store at ``store`` (spec 14).

    ``times`` must be strictly increasing and after the store's last time. ``mask`` and
    ``coverage`` (time, y, x) are required exactly when the store has them. ``bands``, ``crs``,
    ``transform`` and ``nodata``, when given (the toolkit passes its recipe's), must equal the
    store's; an xarray input's band/y/x coordinates are checked too. Any mismatch raises
    ``AppendError`` naming the condition and the values seen, before anything is written.
    """
    target = LocalStore(store)
    raw_root = target.get("zarr.json")
    if raw_root is None:
        raise _refuse("store", f"no chronozarr store at {target.url} (zarr.json not found)")
    root = json.loads(raw_root)
    reader = Reader(target, root)
    attrs = reader.attrs
    coords = _xarray_coords(data)
    data = _unwrap(data, "data")
    _check(reader, data, times, mask, coverage, bands, crs, transform, nodata, coords)
    mask = _unwrap(mask, "mask")
    coverage = _unwrap(coverage, "coverage")
    n_old = reader.n_time
    n_add = int(data.shape[0])
    n_new = n_old + n_add
    new_times_ms = [parse_time(t) for t in times]
    all_times_ms = [parse_time(t) for t in attrs.times] + new_times_ms

    info0 = reader.array(0).info
    if info0.sharded and info0.index_location != "end":
        raise _refuse("layout", "appending to a shard with a start-located index is not supported")
    st = info0.shard_time
    temporal = attrs.temporal
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
        vol_anchors, vol_refs = set(anchors), new_temporal.delta_reference
        old_vol_anchors, old_vol_refs = set(temporal.anchor_indices), temporal.delta_reference
    else:
        new_temporal = temporal
        # spec 5: the nominal nearest-anchor schedule, not recorded; recomputed over the new axis
        # so the volatility equals a fresh encode's (the references it moves are corrected).
        old_a, old_r = schedule(n_old, NOMINAL_INTERVAL)
        new_a, new_r = schedule(n_new, NOMINAL_INTERVAL)
        vol_anchors, vol_refs = set(new_a), new_r
        old_vol_anchors, old_vol_refs = set(old_a), old_r
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
        encoding=temporal.encoding,
        anchors=frozenset(new_temporal.anchor_indices),
        refs=dict(new_temporal.delta_reference),
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=st,
        data_codecs=data_codecs,
        plane_codecs=plane_codecs if plane_path else [dict(c) for c in data_codecs],
        has_mask=attrs.mask_variable is not None,
        has_coverage=attrs.coverage_variable is not None,
    )
    if (layout.has_mask and attrs.mask_variable != "mask") or (
        layout.has_coverage and attrs.coverage_variable != "coverage"
    ):
        raise _refuse("layout", "mask/coverage variables must be named 'mask' and 'coverage'")
    workers = workers or default_workers()
    inp = _Input(data, layout.dtype)
    mask_in = None if mask is None else _Input(mask, np.dtype("uint8"))
    cov_in = None if coverage is None else _Input(coverage, np.dtype("uint8"))
    new_range = range(n_old, n_new)
    cs = layout.cs
    shard_bytes: dict[str, dict[str, int]] = {
        k: dict(v) for k, v in (attrs.shard_bytes or {}).items()
    }

    def shard_prefix_for(level_path: str):
        """Old payload (old index included) and entries of the shard receiving new timesteps."""

        def get(array_path: str, ts: int, row: int, col: int) -> tuple[bytes, list[Any]] | None:
            assert st is not None
            if ts * st >= n_old:
                return None  # a new shard
            return _old_shard(reader, level_path, array_path, ts, row, col, n_old, st)

        return get

    vol_stored = reader.volatility()
    vol_state = _volatility_state(reader, all_times_ms)
    levels = reader.levels
    results_by_level: list[list[CellResult]] = []
    for k, lv in enumerate(levels):
        rows, cols = lv.grid
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        h, w = lv.shape[-2:]
        old_data = reader.array(k)
        if k == 0:

            def level0(
                cell: tuple[int, int], h: int = h, w: int = w, old_data: ArrayReader = old_data
            ) -> CellResult:
                r, c = cell
                ys, xs = slice(r * cs, min((r + 1) * cs, h)), slice(c * cs, min((c + 1) * cs, w))
                get = inp.cell(ys, xs)
                getm = mask_in.cell(ys, xs) if mask_in else None
                getc = cov_in.cell(ys, xs) if cov_in else None
                hh, ww = ys.stop - ys.start, xs.stop - xs.start

                def planes_at(t: int):
                    if t < n_old:  # an existing timestep: a new delta's anchor or reference
                        return reader.read_cell(t, r, c, 0), None, None
                    i = t - n_old
                    m = None if getm is None else np.asarray(getm(i)).astype(np.uint8, copy=False)
                    if m is not None and m.size and int(m.max()) > 1:
                        raise AppendError(
                            "mask", f"values must be 0 or 1 (spec 2.4), found {int(m.max())}"
                        )
                    cv = None if getc is None else np.asarray(getc(i)).astype(np.uint8, copy=False)
                    return np.asarray(get(i), dtype=layout.dtype)[:, :hh, :ww], m, cv

                planes = _Planes(planes_at)
                res = _write(layout, "0", r, c, planes, new_range, True, shard_prefix_for("0"))
                for t in moved:  # none stores: nominal references that the new anchors moved
                    src = planes.get(t)[0]
                    res.vol_sum += abs_diff_sum(src, planes.get(vol_refs[t])[0])
                    res.vol_sum -= abs_diff_sum(src, planes.get(old_vol_refs[t])[0])
                return res

            results = _parallel(level0, cells, workers)
        else:
            back = levels[k - 1]
            docs = {
                f"{back.path}/{name}": _doc_with_shape(reader, back.path, name, n_new)
                for name in _array_names(attrs)
            }

            def upper(
                cell: tuple[int, int], k: int = k, back: Any = back, docs: Mapping[str, Any] = docs
            ) -> CellResult:
                rb = Readback(layout, back, docs)
                r, c = cell

                def planes_at(t: int):
                    if t < n_old:
                        return reader.read_cell(t, r, c, k), None, None
                    return rb.reduced(t, r, c)

                return _write(
                    layout,
                    levels[k].path,
                    r,
                    c,
                    _Planes(planes_at),
                    new_range,
                    False,
                    shard_prefix_for(levels[k].path),
                )

            results = _parallel(upper, cells, workers)
        results_by_level.append(results)
        if st is not None:
            shard_bytes.setdefault(lv.path, {}).update(
                {key: size for res in results for key, size in res.shard_sizes.items()}
            )
        if _fail_after == f"level{k}":
            raise RuntimeError(f"injected failure after level {k} chunks")
    if _fail_after == "chunks":
        raise RuntimeError("injected failure after the chunks")

    # volatility/c/0/0, then time/c/0 of every level (spec 14 write order); volatility first so
    # that a level-0 time/c/0 already holding these times proves the volatility final (re-run)
    if vol_stored is not None and attrs.volatility_path and vol_state != "final":
        vol = _update_volatility(
            reader,
            vol_stored,
            results_by_level[0],
            n_old,
            old_vol_anchors,
            old_vol_refs,
            exact=vol_state == "unknown",
        )
        vdoc = reader._doc(attrs.volatility_path)
        vcodec = _codecs.ChunkCodec(vdoc["codecs"], "float32", vol.shape)
        target.put(f"{attrs.volatility_path}/c/0/0", vcodec.encode(vol))
    new_docs: dict[str, dict[str, Any]] = {}
    # every level's time, then the root's when the store has one (root_coordinates)
    for time_path in [f"{lv.path}/time" for lv in levels] + root_time_paths(reader._doc):
        tdoc = json.loads(json.dumps(reader._doc(time_path)))
        tdoc["shape"] = [n_new]
        tdoc["chunk_grid"]["configuration"]["chunk_shape"] = [n_new]
        codec = _codecs.ChunkCodec(tdoc["codecs"], "int64", (n_new,))
        target.put(f"{time_path}/c/0", codec.encode(np.asarray(all_times_ms, dtype=np.int64)))
        new_docs[time_path] = tdoc
    for lv in levels:
        for name in _array_names(attrs):
            new_docs[f"{lv.path}/{name}"] = _doc_with_shape(reader, lv.path, name, n_new)
    if _fail_after == "coords":
        raise RuntimeError("injected failure after time and volatility")
    # array zarr.json below the root
    for key, doc in new_docs.items():
        target.put(f"{key}/zarr.json", dumps(doc))
    if _fail_after == "arrays":
        raise RuntimeError("injected failure after the array zarr.json")
    # the root, last
    new_attrs = attrs.evolve(
        times=tuple(format_time(t) for t in all_times_ms),
        temporal=new_temporal,
        levels=None
        if attrs.levels is None
        else tuple(
            type(lv)(lv.path, lv.resolution, lv.transform, (n_new, *lv.shape[1:]), lv.grid)
            for lv in attrs.levels
        ),
        shard_bytes=shard_bytes if attrs.shard_bytes is not None else None,
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
    target.put("zarr.json", dumps(new_root))
    log.info("appended %d timesteps to %s (now %d)", n_add, target.url, n_new)


def _array_names(attrs: RootAttrs) -> list[str]:
    names = [attrs.variable]
    if attrs.mask_variable:
        names.append(attrs.mask_variable)
    if attrs.coverage_variable:
        names.append(attrs.coverage_variable)
    return names


def _doc_with_shape(reader: Reader, level_path: str, name: str, n_new: int) -> dict[str, Any]:
    doc = json.loads(json.dumps(reader._doc(f"{level_path}/{name}")))
    doc["shape"] = [n_new, *doc["shape"][1:]]  # spatial:* attributes describe y/x: unchanged
    return doc


def _write(
    layout: Layout,
    level_path: str,
    r: int,
    c: int,
    planes: _Planes,
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


def _xarray_coords(data: Any) -> dict[str, Any] | None:
    if hasattr(data, "dims") and hasattr(data, "coords"):
        return {
            k: np.asarray(data.coords[k].values) for k in ("band", "y", "x") if k in data.coords
        }
    return None


def _check(
    reader: Reader,
    data: Any,
    times: Sequence[Any],
    mask: Any,
    coverage: Any,
    bands: Sequence[Any] | None,
    crs: Any,
    transform: Sequence[float] | None,
    nodata: Any,
    coords: Mapping[str, Any] | None,
) -> None:
    """Every refusal of spec 14, before a byte is written."""
    attrs = reader.attrs
    lv0 = reader.levels[0]
    _, n_band, h, w = lv0.shape
    if data is None or getattr(data, "ndim", None) != 4:
        raise _refuse(
            "data", f"expected a (time, band, y, x) array, got shape {getattr(data, 'shape', None)}"
        )
    shape = tuple(int(s) for s in data.shape)
    if shape[0] < 1:
        raise _refuse("data", "nothing to append: the time axis is empty")
    if shape[1:] != (n_band, h, w):
        raise _refuse(
            "grid", f"data is (band, y, x) = {shape[1:]}, the store's level 0 is {(n_band, h, w)}"
        )
    store_dtype = reader.dtype
    if np.dtype(data.dtype) != store_dtype:
        raise _refuse(
            "dtype", f"data is {np.dtype(data.dtype).name}, the store holds {store_dtype.name}"
        )
    try:
        new_ms = parse_times(times, shape[0])
    except ValueError as exc:
        raise _refuse("times", str(exc)) from exc
    last = parse_time(attrs.times[-1]) if attrs.times else None
    if last is not None and new_ms[0] <= last:
        raise _refuse(
            "times",
            f"new times must be after the store's last time {attrs.times[-1]}, got {format_time(new_ms[0])}",
        )
    for name, plane, has in (
        ("mask", mask, attrs.mask_variable),
        ("coverage", coverage, attrs.coverage_variable),
    ):
        plane = _unwrap(plane, name)
        if has and plane is None:
            raise _refuse(
                name, f"the store has {name}: a {name} plane is required for every new timestep"
            )
        if not has and plane is not None:
            raise _refuse(
                name, f"the store has no {name}: a store without {name} cannot gain one (spec 14)"
            )
        if plane is not None:
            if tuple(plane.shape) != (shape[0], h, w):
                raise _refuse(
                    name,
                    f"expected shape {(shape[0], h, w)} (time, y, x), got {tuple(plane.shape)}",
                )
            if np.dtype(plane.dtype) not in (np.dtype("uint8"), np.dtype(bool)):
                raise _refuse(name, f"expected uint8, got {np.dtype(plane.dtype).name}")
            if (
                name == "mask"
                and isinstance(plane, np.ndarray)
                and plane.size
                and int(plane.max()) > 1
            ):
                raise _refuse("mask", "values must be 0 (invalid) or 1 (valid) (spec 2.4)")
    store_names = [b.name for b in attrs.bands]
    if bands is not None:
        names = [
            b
            if isinstance(b, str)
            else (b.get("name") if isinstance(b, Mapping) else getattr(b, "name", None))
            for b in bands
        ]
        if names != store_names:
            raise _refuse("bands", f"bands {names} differ from the store's {store_names}")
    if coords and "band" in coords and [str(b) for b in coords["band"]] != store_names:
        raise _refuse(
            "bands",
            f"data band coordinate {[str(b) for b in coords['band']]} differs from the store's {store_names}",
        )
    if crs is not None:
        from chronozarr.writer import _normalize_crs

        try:
            got = _normalize_crs(crs)
        except ChronozarrError as exc:
            raise _refuse("crs", str(exc)) from exc
        if got != attrs.crs:
            raise _refuse("crs", f"crs {got!r} differs from the store's {attrs.crs!r}")
    if transform is not None:
        got_t = [float(v) for v in list(transform)[:6]]
        if not all(
            math.isclose(a, b, rel_tol=0, abs_tol=1e-9 * max(1.0, abs(b)))
            for a, b in zip(got_t, lv0.transform, strict=False)
        ):
            raise _refuse(
                "grid", f"transform {got_t} differs from the store's {list(lv0.transform)}"
            )
    if coords:
        from chronozarr.grid import pixel_centres

        ys, xs = pixel_centres(lv0.transform, h, w)
        for axis, want in (("y", ys), ("x", xs)):
            if axis in coords and not np.allclose(
                coords[axis], want, rtol=0, atol=abs(lv0.transform[0]) * 1e-6
            ):
                raise _refuse(
                    "grid", f"data {axis} coordinates differ from the store's pixel centres"
                )
    if nodata is not _UNSET and nodata != attrs.nodata:
        raise _refuse("nodata", f"nodata {nodata!r} differs from the store's {attrs.nodata!r}")

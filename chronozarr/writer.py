"""The streaming writer: ``encode`` (spec 2-9) and the per-cell machinery ``append`` reuses.

Memory is bounded by a few cells whatever the region: level 0 is written cell by cell from the
input (a numpy, dask or xarray array read one cell-timestep batch at a time), each level k from
level k-1 as stored (read back, reconstructed, block-averaged), so nothing larger than a 2 x 2
block of cells is held. Write order (spec 9): every chunk/shard object, then the coordinate
arrays and volatility, then every zarr.json below the root, the root zarr.json last: a crash
leaves no root, never a root that describes missing data.
"""

from __future__ import annotations

import logging
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr import codecs as _codecs
from chronozarr.cache import LRU
from chronozarr.errors import EncodeError
from chronozarr.grid import grid_shape, level_resolution, level_shapes, level_transform
from chronozarr.location import location
from chronozarr.metadata import (
    DELTA_DTYPES,
    DTYPES,
    SPEC_VERSION,
    ArrayInfo,
    Band,
    LevelInfo,
    RootAttrs,
    Temporal,
    codec_chain,
    consolidated_entry,
    coord_array_doc,
    data_array_doc,
    default_nodata,
    dumps,
    format_time,
    group_doc,
    level_group_attrs,
    multiscales,
    parse_times,
    plane_array_doc,
    root_doc,
    volatility_array_doc,
)
from chronozarr.pyramid import block_mean, coverage_reduce, mask_reduce, validity
from chronozarr.reader import ArrayReader
from chronozarr.root_coordinates import add_root_coordinates
from chronozarr.storage import LocalStore, Store
from chronozarr.temporal import (
    abs_diff_sum,
    apply_residual,
    residual,
    schedule,
    volatility_value,
)

__all__ = ["encode"]

log = logging.getLogger("chronozarr.writer")

_DEFAULT = object()
_RESERVED = {"mask", "coverage", "time", "band", "y", "x", "volatility"}
AUTO_THRESHOLD = 0.85  # spec 4.3
BATCH_BYTES = 32 << 20  # input read batch per task


# --- input normalization -----------------------------------------------------------------------


class _Input:
    """Reads planes of one cell from a numpy/dask/xarray array, in time batches.

    A lazy input is computed one batch of timesteps at a time (bounded by BATCH_BYTES, aligned to
    the task's first timestep), keeping at most two batches: memory stays a few cells.
    """

    def __init__(self, data: Any, dtype: np.dtype):
        self.data = data
        self.lazy = not isinstance(data, np.ndarray)
        self.dtype = dtype

    def cell(
        self, ys: slice, xs: slice, times: Sequence[int] | None = None
    ) -> Callable[[int], np.ndarray]:
        """``get(t)``: (band, h, w) for a (time, band, y, x) input, (h, w) for (time, y, x)."""
        space = (slice(None), ys, xs) if self.data.ndim == 4 else (ys, xs)
        if not self.lazy:
            return lambda t: self.data[(t, *space)]
        h, w = ys.stop - ys.start, xs.stop - xs.start
        per_t = max(
            1, h * w * self.dtype.itemsize * (self.data.shape[1] if self.data.ndim == 4 else 1)
        )
        batch = max(1, BATCH_BYTES // per_t)
        start = 0
        if times is not None and len(times):
            start = min(times)
            batch = min(batch, max(times) - start + 1)
        cache: LRU[int, np.ndarray] = LRU(max_items=2)

        def load(t0: int) -> np.ndarray:
            block = self.data[(slice(t0, t0 + batch), *space)]
            return np.asarray(block.compute() if hasattr(block, "compute") else block)

        def get(t: int) -> np.ndarray:
            # batches are aligned to the task's first timestep; an anchor before it (or past its
            # end) gets a batch of its own, clamped at 0 so a slice start is never negative
            t0 = max(0, start + ((t - start) // batch) * batch)
            return cache.get_or_make(t0, lambda: load(t0))[t - t0]

        return get


def _unwrap(data: Any, name: str) -> Any:
    if hasattr(data, "dims") and hasattr(data, "data") and hasattr(data, "coords"):  # xarray
        data = data.data
    if isinstance(data, np.ndarray) or hasattr(data, "compute"):
        return data
    if data is None:
        return None
    try:
        return np.asarray(data)
    except Exception as exc:
        raise EncodeError(name, f"expected a numpy, dask or xarray array ({exc})") from exc


def _normalize_bands(bands: Sequence[Any], n_band: int) -> tuple[Band, ...]:
    if isinstance(bands, str) or not isinstance(bands, Sequence):
        raise EncodeError("bands", "expected a list of band names or band objects")
    if len(bands) != n_band:
        raise EncodeError("bands", f"{len(bands)} bands given but data has {n_band} on axis 1")
    out = []
    for i, b in enumerate(bands):
        if isinstance(b, Band):
            band = b
        elif isinstance(b, str):
            band = Band(name=b, scale=1.0, offset=0.0)  # spec 3.6: write scale/offset explicitly
        elif isinstance(b, Mapping):
            unknown = set(b) - {"name", "common_name", "scale", "offset", "units"}
            if unknown:
                raise EncodeError(f"bands[{i}]", f"unknown key(s) {sorted(unknown)}")
            if not isinstance(b.get("name"), str) or not b["name"]:
                raise EncodeError(f"bands[{i}]", "a band object needs a non-empty 'name'")
            for k in ("scale", "offset"):
                v = b.get(k, 0.0)
                if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                    raise EncodeError(f"bands[{i}].{k}", f"expected a finite number, got {v!r}")
            band = Band(
                name=b["name"],
                common_name=b.get("common_name"),
                scale=float(b.get("scale", 1.0)),
                offset=float(b.get("offset", 0.0)),
                units=b.get("units"),
            )
        else:
            raise EncodeError(f"bands[{i}]", f"expected a name or an object, got {b!r}")
        out.append(band)
    names = [b.name for b in out]
    if len(set(names)) != len(names):
        raise EncodeError("bands", f"band names must be unique, got {names}")
    return tuple(out)


def _local_target(store: Any) -> str:
    """The local folder a store is written to: a path or a ``file://`` URL. Other URLs are
    refused (write locally, then ``cz publish``: spec 9's upload order is the publisher's job)."""
    try:
        loc = location(store)
    except TypeError as exc:  # not path-like (os.fspath refused it)
        raise EncodeError("store", f"expected a local path, got {store!r}") from exc
    if loc.path is None:
        raise EncodeError(
            "store",
            f"{loc.text!r}: encode writes a local folder; write it locally, then publish it with "
            f"`cz publish STORE {loc.scheme}://...`",
        )
    return loc.path


def _normalize_crs(crs: Any) -> str:
    if isinstance(crs, int) and not isinstance(crs, bool):
        return f"EPSG:{crs}"
    if hasattr(crs, "to_epsg") and crs.to_epsg():  # pyproj / rasterio CRS
        return f"EPSG:{crs.to_epsg()}"
    if isinstance(crs, str) and crs.strip():
        m = re.match(r"^epsg:(\d+)$", crs.strip(), re.IGNORECASE)
        return f"EPSG:{m.group(1)}" if m else crs.strip()
    raise EncodeError("crs", f"expected an EPSG code such as 'EPSG:32631', got {crs!r}")


def _normalize_transform(transform: Any) -> tuple[tuple[float, ...], float]:
    try:
        values = tuple(float(v) for v in list(transform)[:6])
    except (TypeError, ValueError) as exc:
        raise EncodeError("transform", f"expected six numbers [a, b, c, d, e, f] ({exc})") from exc
    if len(values) != 6 or not all(math.isfinite(v) for v in values):
        raise EncodeError(
            "transform", f"expected six finite numbers [a, b, c, d, e, f], got {transform!r}"
        )
    a, b, _c, d, e, _f = values
    if b != 0 or d != 0:
        raise EncodeError("transform", "rotated grids are not supported (b and d must be 0)")
    if a <= 0 or e >= 0:
        raise EncodeError("transform", "expected a north-up grid: a > 0 and e < 0 (row 0 is north)")
    if not math.isclose(a, -e, rel_tol=1e-12):
        raise EncodeError("transform", f"pixels must be square (a == -e), got a={a}, e={e}")
    return values, a


def _normalize_nodata(nodata: Any, dtype: np.dtype) -> float | int | None:
    if nodata is _DEFAULT:
        return default_nodata(dtype.name)
    if nodata is None:
        return None
    if isinstance(nodata, bool) or not isinstance(nodata, int | float | np.number):
        raise EncodeError("nodata", f"expected a number or None, got {nodata!r}")
    if isinstance(nodata, float | np.floating) and not math.isfinite(float(nodata)):
        raise EncodeError("nodata", "NaN and infinities are not a valid nodata (spec 2.3)")
    if dtype.kind in "ui":
        if float(nodata) != int(nodata):
            raise EncodeError("nodata", f"{nodata!r} is not an integer, data is {dtype.name}")
        info = np.iinfo(dtype)
        if not info.min <= int(nodata) <= info.max:
            raise EncodeError("nodata", f"{nodata!r} does not fit {dtype.name}")
        return int(nodata)
    if float(np.float32(nodata)) != float(nodata):
        raise EncodeError("nodata", f"{nodata!r} is not exactly representable as float32")
    return float(nodata)


# --- layout and per-cell writing -----------------------------------------------------------------


@dataclass
class Layout:
    """Everything the per-cell writer needs about a store (shared by encode and append)."""

    store: Store
    variable: str
    n_time: int
    n_band: int
    cs: int
    dtype: np.dtype
    nodata: float | int | None
    encoding: str
    anchors: frozenset[int]
    refs: Mapping[int, int]
    vol_anchors: frozenset[int]
    vol_refs: Mapping[int, int]
    shard_time: int | None
    data_codecs: list[dict[str, Any]]
    plane_codecs: list[dict[str, Any]]
    has_mask: bool
    has_coverage: bool

    def __post_init__(self) -> None:
        self.data_codec = _codecs.ChunkCodec(
            self.data_codecs, self.dtype.name, (1, self.n_band, self.cs, self.cs)
        )
        self.plane_codec = _codecs.ChunkCodec(self.plane_codecs, "uint8", (1, self.cs, self.cs))
        self.fill = np.array(0 if self.nodata is None else self.nodata).astype(self.dtype)

    def ref(self, t: int) -> int | None:
        if self.encoding == "none" or t in self.anchors:
            return None
        return self.refs[t]

    def pad(self, plane: np.ndarray, fill: Any) -> np.ndarray:
        """Full (1, ..., cs, cs) chunk from a trimmed plane: padding is fill (anchors, none,
        mask/coverage) or 0 (residuals) (spec 2.1)."""
        if plane.ndim == 2:
            out = np.zeros((1, self.cs, self.cs), dtype=np.uint8)
            out[0, : plane.shape[0], : plane.shape[1]] = plane
            return out
        out = np.full((1, self.n_band, self.cs, self.cs), fill, dtype=self.dtype)
        out[0, :, : plane.shape[1], : plane.shape[2]] = plane
        return out


@dataclass
class CellResult:
    """What writing one cell's series returns: data shard sizes and the volatility terms."""

    row: int
    col: int
    shard_sizes: dict[str, int]
    vol_sum: float = 0.0
    vol_count: int = 0


class _Planes:
    """Source planes of one cell at one level with a small LRU (anchors are asked for out of order)."""

    def __init__(
        self, fn: Callable[[int], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]
    ):
        self.fn = fn
        self.cache: LRU[int, Any] = LRU(max_items=6)

    def get(self, t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        return self.cache.get_or_make(t, lambda: self.fn(t))


def write_cell_series(
    layout: Layout,
    level_path: str,
    row: int,
    col: int,
    planes: _Planes,
    times: Sequence[int],
    *,
    volatility: bool,
    shard_prefix: Callable[[str, int, int, int], tuple[bytes, list[Any]] | None] | None = None,
    encoded: Mapping[int, bytes] | None = None,
) -> CellResult:
    """Write data (and mask/coverage) chunks of one cell for the given timesteps, in order.

    Unsharded: one object per timestep. Sharded: one object per time shard, assembled from its
    inner chunks; ``shard_prefix(array_path, ts, row, col)`` supplies the payload and index entries of an
    existing shard (append keeps old chunks at their old offsets, spec 14). ``encoded`` holds data
    chunk bytes already produced (the auto sample) to be reused as they are.
    """
    result = CellResult(row, col, {})
    arrays = [(f"{level_path}/{layout.variable}", True)]
    if layout.has_mask:
        arrays.append((f"{level_path}/mask", False))
    if layout.has_coverage:
        arrays.append((f"{level_path}/coverage", False))
    pending: dict[str, dict[int, bytes]] = {p: {} for p, _ in arrays}
    st = layout.shard_time
    times = list(times)

    def flush(ts: int) -> None:
        for path, has_band in arrays:
            chunks: list[Any] = [None] * st  # type: ignore[operator]
            prefix = b""
            if shard_prefix is not None:
                existing = shard_prefix(path, ts, row, col)
                if existing is not None:
                    prefix, entries = existing
                    chunks = list(entries)
            for t, blob in pending[path].items():
                chunks[t - ts * st] = blob  # type: ignore[operator]
            shard = _codecs.build_shard(chunks, prefix=prefix)
            key = _key(path, ts, row, col, has_band)
            layout.store.put(key, shard)
            if has_band:
                result.shard_sizes[f"{ts}/{row}/{col}"] = len(shard)
            pending[path].clear()

    for i, t in enumerate(times):
        source, mask, cov = planes.get(t)
        ref = layout.ref(t)
        if encoded is not None and t in encoded:
            blob = encoded[t]
        elif ref is None:
            blob = layout.data_codec.encode(layout.pad(source, layout.fill))
        else:
            delta = residual(source, planes.get(ref)[0])
            blob = layout.data_codec.encode(layout.pad(delta, 0))
        blobs = [blob]
        if layout.has_mask:
            blobs.append(layout.plane_codec.encode(layout.pad(mask, 0)))
        if layout.has_coverage:
            blobs.append(layout.plane_codec.encode(layout.pad(cov, 0)))
        if volatility and t not in layout.vol_anchors:
            result.vol_sum += abs_diff_sum(source, planes.get(layout.vol_refs[t])[0])
            result.vol_count += source.size
        for (path, has_band), b in zip(arrays, blobs, strict=True):
            if st is None:
                layout.store.put(_key(path, t, row, col, has_band), b)
            else:
                pending[path][t] = b
        if st is not None:
            last_in_shard = i + 1 == len(times) or times[i + 1] // st != t // st
            if last_in_shard:
                flush(t // st)
    return result


def _key(path: str, t_index: int, row: int, col: int, has_band: bool) -> str:
    return f"{path}/c/{t_index}/0/{row}/{col}" if has_band else f"{path}/c/{t_index}/{row}/{col}"


class Readback:
    """Reconstructed level k-1 values, mask and coverage of any region, from the store."""

    def __init__(self, layout: Layout, level: LevelInfo, docs: Mapping[str, Mapping[str, Any]]):
        self.layout = layout
        self.level = level
        path = level.path
        self.data = ArrayReader(
            layout.store,
            f"{path}/{layout.variable}",
            ArrayInfo.from_json(docs[f"{path}/{layout.variable}"], path),
        )
        self.mask = (
            ArrayReader(
                layout.store,
                f"{path}/mask",
                ArrayInfo.from_json(docs[f"{path}/mask"], path, allowed_dtypes=("uint8",)),
            )
            if layout.has_mask
            else None
        )
        self.coverage = (
            ArrayReader(
                layout.store,
                f"{path}/coverage",
                ArrayInfo.from_json(docs[f"{path}/coverage"], path, allowed_dtypes=("uint8",)),
            )
            if layout.has_coverage
            else None
        )
        self._anchors: LRU[tuple[int, int, int], np.ndarray] = LRU(max_items=16)

    def _anchor(self, a: int, r: int, c: int) -> np.ndarray:
        return self._anchors.get_or_make((a, r, c), lambda: self.data.inner(a, r, c)[0])

    def cell(self, t: int, r: int, c: int) -> np.ndarray:
        ref = self.layout.ref(t)
        if ref is None:
            if t in self.layout.anchors:
                return self._anchor(t, r, c)
            return self.data.inner(t, r, c)[0]
        return apply_residual(self._anchor(ref, r, c), self.data.inner(t, r, c)[0])

    def region(
        self, t: int, row: int, col: int
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Level k-1 pixels under level-k cell (row, col) at timestep t, trimmed to the shape."""
        cs = self.layout.cs
        h, w = self.level.shape[-2:]
        rows, cols = self.level.grid
        y0, x0 = 2 * row * cs, 2 * col * cs
        y1, x1 = min(y0 + 2 * cs, h), min(x0 + 2 * cs, w)
        values = np.empty((self.layout.n_band, y1 - y0, x1 - x0), dtype=self.layout.dtype)
        mask = np.empty((y1 - y0, x1 - x0), dtype=np.uint8) if self.mask else None
        cov = np.empty((y1 - y0, x1 - x0), dtype=np.uint8) if self.coverage else None
        for r in range(2 * row, min(2 * row + 2, rows)):
            for c in range(2 * col, min(2 * col + 2, cols)):
                ya, xa = r * cs - y0, c * cs - x0
                hh, ww = min(cs, h - r * cs), min(cs, w - c * cs)
                values[:, ya : ya + hh, xa : xa + ww] = self.cell(t, r, c)[:, :hh, :ww]
                if mask is not None:
                    mask[ya : ya + hh, xa : xa + ww] = self.mask.inner(t, r, c)[0, :hh, :ww]
                if cov is not None:
                    cov[ya : ya + hh, xa : xa + ww] = self.coverage.inner(t, r, c)[0, :hh, :ww]
        return values, mask, cov

    def reduced(
        self, t: int, row: int, col: int
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Level-k planes of cell (row, col) at t: block mean, mask max, coverage mean (spec 6)."""
        values, mask, cov = self.region(t, row, col)
        valid = validity(values, self.layout.nodata, mask)
        out = block_mean(values, valid, self.layout.nodata)
        return (
            out,
            None if mask is None else mask_reduce(mask),
            None if cov is None else coverage_reduce(cov),
        )


def _parallel(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    if workers <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


# --- auto selection (spec 4.3) -------------------------------------------------------------------


def _sample_cells(rows: int, cols: int) -> list[tuple[int, int]]:
    """min(3, n) level-0 cells spread over the grid (first, middle, last in row-major order)."""
    n = rows * cols
    k = min(3, n)
    idx = sorted({round(i * (n - 1) / (k - 1)) for i in range(k)}) if k > 1 else [0]
    return [divmod(i, cols) for i in idx]


def sample_window(n_time: int, anchor_interval: int) -> range:
    """The timesteps the auto sample encodes both ways (spec 4.3 samples cells; we also bound
    the time axis): two anchor intervals (at least 12 timesteps) starting at the anchor nearest
    the middle of the series, or the whole axis when it is shorter. A decade of months then costs
    the same sample as two years, and the sampled chunks of the chosen encoding are reused."""
    width = min(n_time, max(12, 2 * anchor_interval))
    start = ((n_time - width) // 2 // anchor_interval) * anchor_interval
    return range(start, start + width)


def _choose_encoding(
    layout_sd: Layout, inp: _Input, height: int, width: int, workers: int, anchor_interval: int
) -> tuple[
    float, int, dict[tuple[int, int], dict[int, bytes]], dict[tuple[int, int], dict[int, bytes]]
]:
    """Encode the sampled cells both ways (spec 4.3); returns the ratio, the sample count and the
    chunk bytes of both encodings (the chosen one is reused by the writer, not encoded twice)."""
    cs = layout_sd.cs
    rows, cols = grid_shape(height, width, cs)
    cells = _sample_cells(rows, cols)
    tasks = split_tasks(cells, sample_window(layout_sd.n_time, anchor_interval), None, workers)

    def one(
        task: tuple[tuple[int, int], range],
    ) -> tuple[int, int, dict[int, bytes], dict[int, bytes]]:
        (r, c), times = task
        ys = slice(r * cs, min((r + 1) * cs, height))
        xs = slice(c * cs, min((c + 1) * cs, width))
        get = inp.cell(ys, xs, times)
        plain: dict[int, bytes] = {}
        delta: dict[int, bytes] = {}
        anchor_cache: dict[int, np.ndarray] = {}
        for t in times:
            src = np.asarray(get(t), dtype=layout_sd.dtype)
            plain[t] = layout_sd.data_codec.encode(layout_sd.pad(src, layout_sd.fill))
            ref = layout_sd.ref(t)
            if ref is None:
                delta[t] = plain[t]
            else:
                if ref not in anchor_cache:
                    anchor_cache.clear()
                    anchor_cache[ref] = np.asarray(get(ref), dtype=layout_sd.dtype)
                delta[t] = layout_sd.data_codec.encode(
                    layout_sd.pad(residual(src, anchor_cache[ref]), 0)
                )
        return r, c, plain, delta

    results = _parallel(one, tasks, workers)
    plain_total = sum(len(b) for _, _, p, _ in results for b in p.values())
    delta_total = sum(len(b) for _, _, _, d in results for b in d.values())
    ratio = delta_total / plain_total if plain_total else 1.0
    plains: dict[tuple[int, int], dict[int, bytes]] = {}
    deltas: dict[tuple[int, int], dict[int, bytes]] = {}
    for r, c, p, d in results:
        plains.setdefault((r, c), {}).update(p)
        deltas.setdefault((r, c), {}).update(d)
    return ratio, len(cells), plains, deltas


def split_tasks(
    cells: Sequence[tuple[int, int]], times: range, shard_time: int | None, workers: int
) -> list[tuple[tuple[int, int], range]]:
    """(cell, timesteps) work items: whole time shards when sharded (a shard is assembled by one
    task), else enough time groups that every worker is busy even when a level has one cell."""
    if not len(times):
        return []
    if shard_time is not None:
        groups: list[range] = []
        t = times.start
        while t < times.stop:
            end = min((t // shard_time + 1) * shard_time, times.stop)
            groups.append(range(t, end))
            t = end
    else:
        n_groups = max(1, min(len(times), math.ceil(2 * workers / max(1, len(cells)))))
        size = math.ceil(len(times) / n_groups)
        groups = [range(t, min(t + size, times.stop)) for t in range(times.start, times.stop, size)]
    return [(cell, g) for cell in cells for g in groups]


def merge_results(results: Sequence[CellResult]) -> list[CellResult]:
    """One CellResult per cell from the results of its time-group tasks."""
    merged: dict[tuple[int, int], CellResult] = {}
    for res in results:
        m = merged.setdefault((res.row, res.col), CellResult(res.row, res.col, {}))
        m.shard_sizes.update(res.shard_sizes)
        m.vol_sum += res.vol_sum
        m.vol_count += res.vol_count
    return list(merged.values())


# --- encode ------------------------------------------------------------------------------------


def encode(
    data: Any,
    store: str | os.PathLike[str],
    *,
    times: Sequence[Any],
    bands: Sequence[Any],
    crs: Any,
    transform: Sequence[float],
    nodata: Any = _DEFAULT,
    mask: Any = None,
    coverage: Any = None,
    encoding: str = "auto",
    anchor_interval: int = 6,
    chunk_size: int = 512,
    shard: bool = False,
    shard_time: int | None = None,
    codec: str = "zstd",
    codec_options: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    variable: str = "data",
    workers: int | None = None,
) -> None:
    """Write ``data`` (time, band, y, x) as a chronozarr v0.2 store at ``store`` (a local path).

    See docs/spec.md for every argument's meaning. Raises ``EncodeError`` naming the argument on
    bad input, before anything is written. ``shard_time`` implies ``shard``. ``workers`` is the
    number of cells encoded at once (default: up to 4, bounded by the CPU count).
    """
    data = _unwrap(data, "data")
    if data is None or getattr(data, "ndim", None) != 4:
        raise EncodeError(
            "data", f"expected a (time, band, y, x) array, got shape {getattr(data, 'shape', None)}"
        )
    dtype = np.dtype(data.dtype)
    if dtype.name not in DTYPES:
        raise EncodeError(
            "data", f"dtype {dtype.name} is not supported (expected one of {list(DTYPES)})"
        )
    n_time, n_band, height, width = (int(s) for s in data.shape)
    if min(n_time, n_band, height, width) < 1:
        raise EncodeError("data", f"every axis needs at least one element, got shape {data.shape}")

    try:
        times_ms = parse_times(times, n_time)
    except ValueError as exc:
        raise EncodeError("times", str(exc)) from exc
    band_objs = _normalize_bands(bands, n_band)
    crs_text = _normalize_crs(crs)
    transform_t, resolution = _normalize_transform(transform)
    nodata_v = _normalize_nodata(nodata, dtype)

    if (
        isinstance(chunk_size, bool)
        or not isinstance(chunk_size, int | np.integer)
        or chunk_size < 2
        or chunk_size % 2
    ):
        raise EncodeError(
            "chunk_size", f"must be an even integer >= 2 (spec 2.1), got {chunk_size!r}"
        )
    cs = int(chunk_size)
    if encoding not in ("auto", "none", "star-delta"):
        raise EncodeError("encoding", f"expected 'auto', 'none' or 'star-delta', got {encoding!r}")
    if encoding == "star-delta" and dtype.name not in DELTA_DTYPES:
        raise EncodeError(
            "encoding",
            f"star-delta is only valid for uint8 and uint16 data (spec 4.1), data is {dtype.name}",
        )
    if (
        isinstance(anchor_interval, bool)
        or not isinstance(anchor_interval, int | np.integer)
        or anchor_interval < 1
    ):
        raise EncodeError("anchor_interval", f"must be an integer >= 1, got {anchor_interval!r}")
    sharded = bool(shard) or shard_time is not None
    if shard_time is not None and (
        isinstance(shard_time, bool)
        or not isinstance(shard_time, int | np.integer)
        or shard_time < 1
    ):
        raise EncodeError("shard_time", f"must be an integer >= 1 (spec 7.1), got {shard_time!r}")
    st = (int(shard_time) if shard_time is not None else n_time) if sharded else None
    try:
        data_codecs = codec_chain(codec, codec_options, dtype.name)
        plane_codecs = codec_chain(codec, codec_options, "uint8")
    except ValueError as exc:
        arg = "codec_options" if str(exc).startswith("codec_options") else "codec"
        raise EncodeError(arg, str(exc).split(": ", 1)[-1]) from exc
    if (
        not isinstance(variable, str)
        or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", variable)
        or variable in _RESERVED
    ):
        raise EncodeError(
            "variable",
            f"expected a plain array name other than {sorted(_RESERVED)}, got {variable!r}",
        )
    mask = _unwrap(mask, "mask")
    coverage = _unwrap(coverage, "coverage")
    for name, plane in (("mask", mask), ("coverage", coverage)):
        if plane is None:
            continue
        if tuple(plane.shape) != (n_time, height, width):
            raise EncodeError(
                name,
                f"expected shape {(n_time, height, width)} (time, y, x), got {tuple(plane.shape)}",
            )
        if np.dtype(plane.dtype) not in (np.dtype("uint8"), np.dtype(bool)):
            raise EncodeError(name, f"expected uint8, got {np.dtype(plane.dtype).name}")
    if isinstance(mask, np.ndarray) and mask.dtype != bool and mask.size and int(mask.max()) > 1:
        raise EncodeError("mask", "values must be 0 (invalid) or 1 (valid) (spec 2.4)")
    if provenance is not None and not isinstance(provenance, Mapping):
        raise EncodeError("provenance", "expected an object (mapping)")

    target = LocalStore(_local_target(store))
    if target.root.exists() and (not target.root.is_dir() or any(target.root.iterdir())):
        what = "holds a Zarr store" if target.get("zarr.json") is not None else "is not empty"
        raise EncodeError(
            "store",
            f"{target.url} {what}; a store is written into a new or empty folder (a re-encode goes under a new prefix, spec 9)",
        )
    if target.get("zarr.json") is not None:
        raise EncodeError(
            "store",
            f"{target.url} already holds a Zarr store; a re-encode goes under a new prefix (spec 9)",
        )
    workers = workers or default_workers()

    shapes = level_shapes(height, width, cs)
    vol_anchors, vol_refs = schedule(n_time, int(anchor_interval))
    layout = Layout(
        store=target,
        variable=variable,
        n_time=n_time,
        n_band=n_band,
        cs=cs,
        dtype=dtype,
        nodata=nodata_v,
        encoding="star-delta",
        anchors=frozenset(vol_anchors),
        refs=vol_refs,
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=st,
        data_codecs=data_codecs,
        plane_codecs=plane_codecs,
        has_mask=mask is not None,
        has_coverage=coverage is not None,
    )
    inp = _Input(data, dtype)
    mask_in = None if mask is None else _Input(mask, np.dtype("uint8"))
    cov_in = None if coverage is None else _Input(coverage, np.dtype("uint8"))

    selection = None
    samples: dict[tuple[int, int], dict[int, bytes]] = {}
    chosen = encoding
    if encoding == "auto":
        if dtype.name in DELTA_DTYPES:
            ratio, n_sampled, plains, deltas = _choose_encoding(
                layout, inp, height, width, workers, int(anchor_interval)
            )
            ratio = round(ratio, 4)  # the recorded ratio is the one the 0.85 rule is applied to
            chosen = "star-delta" if ratio <= AUTO_THRESHOLD else "none"
            samples = deltas if chosen == "star-delta" else plains
            selection = {"mode": "auto", "sampled_cells": n_sampled, "ratio": ratio}
            log.info("auto: star-delta/plain = %.4f over %d cells -> %s", ratio, n_sampled, chosen)
        else:
            chosen = "none"  # spec 4.3: auto applies to uint8/uint16 only, no selection written
    if chosen == "none":
        layout.encoding = "none"
        layout.anchors = frozenset()
        layout.refs = {}
        temporal = Temporal(encoding="none", selection=selection)
    else:
        temporal = Temporal(
            encoding="star-delta",
            anchor_interval=int(anchor_interval),
            anchor_indices=tuple(vol_anchors),
            delta_reference=dict(vol_refs),
            selection=selection,
        )

    levels: list[LevelInfo] = []
    docs: dict[str, dict[str, Any]] = {}
    shard_bytes: dict[str, dict[str, int]] = {}
    volatility = np.zeros(grid_shape(height, width, cs), dtype=np.float32)
    for k, (h, w) in enumerate(shapes):
        path = str(k)
        tf = level_transform(transform_t, k)
        info = LevelInfo(
            path,
            level_resolution(resolution, k),
            tuple(tf),
            (n_time, n_band, h, w),
            grid_shape(h, w, cs),
        )
        levels.append(info)
        docs[f"{path}/{variable}"] = data_array_doc(
            shape=info.shape,
            dtype=dtype.name,
            cs=cs,
            codecs=data_codecs,
            nodata=nodata_v,
            shard_time=st,
            crs=crs_text,
            transform=tf,
        )
        for name, present in (("mask", mask is not None), ("coverage", coverage is not None)):
            if present:
                docs[f"{path}/{name}"] = plane_array_doc(
                    shape=(n_time, h, w), cs=cs, codecs=plane_codecs, shard_time=st
                )
        rows, cols = info.grid
        cells = [(r, c) for r in range(rows) for c in range(cols)]
        tasks = split_tasks(cells, range(n_time), st, workers)
        if k == 0:

            def level0(task: tuple[tuple[int, int], range], h: int = h, w: int = w) -> CellResult:
                (r, c), times_k = task
                ys, xs = slice(r * cs, min((r + 1) * cs, h)), slice(c * cs, min((c + 1) * cs, w))
                get = inp.cell(ys, xs, times_k)
                getm = mask_in.cell(ys, xs, times_k) if mask_in else None
                getc = cov_in.cell(ys, xs, times_k) if cov_in else None

                def planes_at(t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
                    m = None if getm is None else np.asarray(getm(t)).astype(np.uint8, copy=False)
                    if m is not None and m.size and int(m.max()) > 1:
                        raise EncodeError(
                            "mask",
                            f"values must be 0 or 1 (spec 2.4), found {int(m.max())} at timestep {t}",
                        )
                    cv = None if getc is None else np.asarray(getc(t)).astype(np.uint8, copy=False)
                    return np.asarray(get(t), dtype=dtype), m, cv

                return write_cell_series(
                    layout,
                    "0",
                    r,
                    c,
                    _Planes(planes_at),
                    times_k,
                    volatility=True,
                    encoded=samples.get((r, c)),
                )

            results = merge_results(_parallel(level0, tasks, workers))
            samples.clear()
            for res in results:
                volatility[res.row, res.col] = volatility_value(res.vol_sum, res.vol_count)
        else:
            back = levels[k - 1]

            def upper(
                task: tuple[tuple[int, int], range], path: str = path, back: LevelInfo = back
            ) -> CellResult:
                rb = Readback(layout, back, docs)
                (r, c), times_k = task
                return write_cell_series(
                    layout,
                    path,
                    r,
                    c,
                    _Planes(lambda t: rb.reduced(t, r, c)),
                    times_k,
                    volatility=False,
                )

            results = merge_results(_parallel(upper, tasks, workers))
        if st is not None:
            shard_bytes[path] = {
                key: size for res in results for key, size in res.shard_sizes.items()
            }

    attrs = RootAttrs(
        spec_version=SPEC_VERSION,
        variable=variable,
        times=tuple(format_time(t) for t in times_ms),
        bands=band_objs,
        band_names=tuple(b.name for b in band_objs),
        nodata=nodata_v,
        crs=crs_text,
        temporal=temporal,
        volatility_path="volatility",
        mask_variable="mask" if mask is not None else None,
        coverage_variable="coverage" if coverage is not None else None,
        provenance=dict(provenance) if provenance is not None else None,
        levels=tuple(levels),
        shard_bytes=shard_bytes if st is not None else None,
    )
    write_metadata(
        target,
        attrs,
        docs,
        times_ms,
        volatility,
        multiscales([lv.path for lv in levels], crs_text),
        codec,
        codec_options,
    )


def coordinate_objects(
    levels: Sequence[LevelInfo],
    times_ms: Sequence[int],
    band_names: Sequence[str],
    codec: str,
    codec_options: Mapping[str, Any] | None,
) -> tuple[dict[str, bytes], dict[str, dict[str, Any]]]:
    """Chunk bytes and zarr.json documents of time/band/y/x at every level (spec 2.2), and of
    time/band at the root (root_coordinates)."""
    from chronozarr.grid import pixel_centres

    comp = coord_compressor(codec, codec_options, "float64")
    comp_time = coord_compressor(codec, codec_options, "int64")
    comp_band = coord_compressor(codec, codec_options, "uint8")
    zcodec = [{"name": "bytes", "configuration": {"endian": "little"}}, comp]
    tcodec = [{"name": "bytes", "configuration": {"endian": "little"}}, comp_time]
    objects: dict[str, bytes] = {}
    docs: dict[str, dict[str, Any]] = {}
    time_codec = _codecs.ChunkCodec(tcodec, "int64", (len(times_ms),))
    time_bytes = time_codec.encode(np.asarray(times_ms, dtype=np.int64))
    band_raw = bytes(_codecs.compressor_for(comp_band).encode(_codecs.vlen_utf8_encode(band_names)))
    for lv in levels:
        h, w = lv.shape[-2:]
        ys, xs = pixel_centres(lv.transform, h, w)
        objects[f"{lv.path}/time/c/0"] = time_bytes
        objects[f"{lv.path}/band/c/0"] = band_raw
        objects[f"{lv.path}/y/c/0"] = _codecs.ChunkCodec(zcodec, "float64", (h,)).encode(
            np.asarray(ys)
        )
        objects[f"{lv.path}/x/c/0"] = _codecs.ChunkCodec(zcodec, "float64", (w,)).encode(
            np.asarray(xs)
        )
        docs[f"{lv.path}/time"] = coord_array_doc("time", len(times_ms), "int64", comp_time)
        docs[f"{lv.path}/band"] = coord_array_doc("band", len(band_names), "string", comp_band)
        docs[f"{lv.path}/y"] = coord_array_doc("y", h, "float64", comp)
        docs[f"{lv.path}/x"] = coord_array_doc("x", w, "float64", comp)
    add_root_coordinates(objects, docs, levels[0].path)
    return objects, docs


def coord_compressor(
    codec: str, codec_options: Mapping[str, Any] | None, dtype: str = "float64"
) -> dict[str, Any]:
    """The compressor of a coordinate or volatility array: the store's codec (spec 8 MAY), with
    blosc's typesize set for that array's dtype (1 for the strings of ``band``)."""
    return codec_chain(codec, codec_options, dtype)[1]


def write_metadata(
    target: Store,
    attrs: RootAttrs,
    array_docs: Mapping[str, dict[str, Any]],
    times_ms: Sequence[int],
    volatility: np.ndarray,
    multiscales_attr: Any,
    codec: str,
    codec_options: Mapping[str, Any] | None,
    *,
    level_attrs: Mapping[str, Mapping[str, Any]] | None = None,
    other_root_attrs: Mapping[str, Any] | None = None,
) -> None:
    """Write coordinates and volatility, then every zarr.json below the root, the root last (9)."""
    assert attrs.levels is not None
    coord_objs, coord_docs = coordinate_objects(
        attrs.levels, times_ms, [b.name for b in attrs.bands], codec, codec_options
    )
    for key, blob in coord_objs.items():
        target.put(key, blob)
    vol_doc = volatility_array_doc(
        volatility.shape, coord_compressor(codec, codec_options, "float32")
    )
    vol_codec = _codecs.ChunkCodec(vol_doc["codecs"], "float32", volatility.shape)
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
    for key in sorted(all_docs, key=lambda k: (k.count("/"), k), reverse=True):
        target.put(f"{key}/zarr.json", dumps(all_docs[key]))
    for key in sorted(all_docs):
        consolidated[key] = consolidated_entry(all_docs[key])
    target.put(
        "zarr.json", dumps(root_doc(attrs, multiscales_attr, consolidated, other_root_attrs))
    )

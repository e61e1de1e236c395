"""A pixel's (or a small window's) history (docs/spec.md C25; decision 0048).

With the time-series companion at the level, a window's history is read from the companion's
chunks that cover it: one object per time block and ``B x B`` block, every band with the mask and
the coverage. Without it (or at a level that does not carry it), the chunk path of spec 10.4:
per timestep one chunk (two for a delta), plus the mask and coverage chunks; those reads go out
in parallel, bounded by ``max_requests`` threads, anchors first so that every delta finds its
anchor decoded (spec 10: "prefetch anchors before deltas").

The functions take a :class:`~chronozarr.read.Reader`; the reader's methods (``pixel_series``,
``series``, ``read_history``) are the public surface.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from chronozarr.errors import CorruptStoreError
from chronozarr.format import (
    HISTORY_ARRAY,
    ArrayInfo,
    Band,
    HistoryGeometry,
    history_fields,
    validity,
)
from chronozarr.read._arrays import ArrayReader

if TYPE_CHECKING:  # the reader imports this module
    from chronozarr.read._reader import Reader

__all__ = [
    "DEFAULT_REQUESTS",
    "PixelSeries",
    "Window",
    "fewer_objects",
    "history_array",
    "in_parallel",
    "read_window",
]

#: requests in flight at once for a history read (the browser reader's 6, a little more in
#: Python, where a request costs a thread, not a connection slot)
DEFAULT_REQUESTS = 8

T = TypeVar("T")
R = TypeVar("R")


@dataclass
class Window:
    """A history window of one level: (time, band, h, w) stored values, (time, h, w) mask and
    coverage (None when the store has none), and how it was read (``"history"`` or
    ``"chunks"``)."""

    values: np.ndarray
    mask: np.ndarray | None
    coverage: np.ndarray | None
    source: str


@dataclass
class PixelSeries:
    """One pixel's history: ``stored`` (time, band) in the stored dtype, ``mask`` and
    ``coverage`` (time,) or None, the pixel (``level``, ``row``, ``col``, centre ``x``, ``y``)
    and ``source``: ``"history"`` (the companion) or ``"chunks"`` (spec 10.4)."""

    level: int
    row: int
    col: int
    x: float
    y: float
    times: np.ndarray  # datetime64[ms]
    bands: tuple[Band, ...]
    stored: np.ndarray
    mask: np.ndarray | None
    coverage: np.ndarray | None
    nodata: float | int | None
    source: str

    def valid(self) -> np.ndarray:
        """(time, band) validity (spec 2.3): the mask when present, else value != nodata."""
        planes = self.stored.T[:, :, None]
        mask = None if self.mask is None else self.mask[:, None]
        return np.asarray(validity(planes, self.nodata, mask)[:, :, 0].T)

    def physical(self) -> np.ndarray:
        """(time, band) stored * scale + offset (spec 3.6) as float64, NaN where invalid."""
        scale = np.array([b.effective_scale for b in self.bands])
        offset = np.array([b.effective_offset for b in self.bands])
        out: np.ndarray = self.stored.astype(np.float64) * scale + offset
        return np.where(self.valid(), out, np.nan)


def in_parallel(fn: Callable[[T], R], items: Iterable[T], workers: int) -> list[R]:
    """``fn`` over ``items`` on at most ``workers`` threads, results in order."""
    todo = list(items)
    if workers <= 1 or len(todo) <= 1:
        return [fn(i) for i in todo]
    with ThreadPoolExecutor(max_workers=min(workers, len(todo))) as pool:
        return list(pool.map(fn, todo))


def history_array(reader: Reader, level: int) -> ArrayReader | None:
    """The companion's ``values`` array of a level, or None when the level carries none (C25).
    Its metadata is checked against the level: dims, shape, dtype, unsharded chunks."""
    block = reader.attrs.history
    lv = reader.levels[level]
    if block is None or lv.path not in block.levels:
        return None
    path = f"{lv.path}/{block.path}/{HISTORY_ARRAY}"
    with reader._lock:
        cached = reader._history_arrays.get(level)
    if cached is not None:
        return cached
    doc = reader._doc(path)
    if doc is None:
        raise CorruptStoreError(f"{reader.store.url}/{path}/zarr.json is missing")
    info = ArrayInfo.from_json(doc, path)
    fields = history_fields(reader.band_names, reader.has_mask, reader.has_coverage)
    expected = (reader.n_time, len(fields), lv.shape[2], lv.shape[3])
    if (
        info.shape != expected
        or info.dtype != reader.dtype.name
        or info.sharded
        or info.chunk_shape[1] != len(fields)
        or info.chunk_shape[2] != info.chunk_shape[3]
    ):
        raise CorruptStoreError(
            f"{reader.store.url}/{path}: the companion must be an unsharded {reader.dtype.name}"
            f" array of shape {list(expected)} with chunks (T, {len(fields)}, B, B) (C25);"
            f" found {info.dtype} {list(info.shape)} chunks {list(info.chunk_shape)}"
        )
    arr = ArrayReader(reader.store, path, info)
    with reader._lock:
        return reader._history_arrays.setdefault(level, arr)


def _geometry(reader: Reader, level: int, arr: ArrayReader) -> HistoryGeometry:
    lv = reader.levels[level]
    return HistoryGeometry(
        arr.info.chunk_shape[0], arr.info.chunk_shape[2], reader.n_time, lv.shape[2], lv.shape[3]
    )


def _from_history(
    reader: Reader,
    level: int,
    arr: ArrayReader,
    ts: range,
    ys: range,
    xs: range,
    workers: int,
) -> Window:
    """The window from the companion: every (time block, block) chunk covering it, read in
    parallel, split into values, mask and coverage by the field rule (C25)."""
    geo = _geometry(reader, level, arr)
    n_band = len(reader.bands)
    tb_range = geo.time_blocks(ts.start, ts.stop)
    blocks = geo.blocks(ys.start, ys.stop, xs.start, xs.stop)
    jobs = [(tb, by, bx) for tb in tb_range for (by, bx) in blocks]
    cache = reader._history_cache  # decoded chunks: the next variable or pixel of a block is free

    def load(job: tuple[int, int, int]) -> np.ndarray:
        made: np.ndarray = cache.get_or_make((level, *job), lambda: arr.inner(*job))
        return made

    chunks = in_parallel(load, jobs, workers)
    n_field = arr.info.chunk_shape[1]
    full = np.empty((len(ts), n_field, len(ys), len(xs)), dtype=arr.info.dtype)
    tbs, b = geo.time_block, geo.block
    for (tb, by, bx), chunk in zip(jobs, chunks, strict=True):
        t_a, t_b = max(ts.start, tb * tbs), min(ts.stop, (tb + 1) * tbs)
        y_a, y_b = max(ys.start, by * b), min(ys.stop, (by + 1) * b)
        x_a, x_b = max(xs.start, bx * b), min(xs.stop, (bx + 1) * b)
        full[t_a - ts.start : t_b - ts.start, :, y_a - ys.start : y_b - ys.start,
             x_a - xs.start : x_b - xs.start] = chunk[
            t_a - tb * tbs : t_b - tb * tbs, :, y_a - by * b : y_b - by * b,
            x_a - bx * b : x_b - bx * b,
        ]  # fmt: skip
    k = n_band
    mask = coverage = None
    if reader.has_mask:
        mask, k = full[:, k].astype(np.uint8), k + 1
    if reader.has_coverage:
        coverage = full[:, k].astype(np.uint8)
    return Window(np.ascontiguousarray(full[:, :n_band]), mask, coverage, "history")


def _from_chunks(
    reader: Reader, level: int, ts: range, ys: range, xs: range, workers: int
) -> Window:
    """The window from the level's chunks (spec 10.4), every timestep in parallel (bounded),
    anchors first: each delta then finds its anchor decoded in the reader's cache."""
    cs = reader.chunk_size(level)
    n_band = len(reader.bands)
    cells = [
        (r, c)
        for r in range(ys.start // cs, (ys.stop - 1) // cs + 1)
        for c in range(xs.start // cs, (xs.stop - 1) // cs + 1)
    ]
    values = np.empty((len(ts), n_band, len(ys), len(xs)), dtype=reader.dtype)
    planes: dict[str, np.ndarray] = {}
    names: Mapping[str, str | None] = {
        "mask": reader.attrs.mask_variable,
        "coverage": reader.attrs.coverage_variable,
    }
    for kind, name in names.items():
        if name is not None:
            planes[kind] = np.empty((len(ts), len(ys), len(xs)), dtype=np.uint8)

    def one(t: int) -> None:
        i = t - ts.start
        for r, c in cells:
            ya, yb = max(ys.start, r * cs), min(ys.stop, (r + 1) * cs)
            xa, xb = max(xs.start, c * cs), min(xs.stop, (c + 1) * cs)
            out = (slice(ya - ys.start, yb - ys.start), slice(xa - xs.start, xb - xs.start))
            part = (slice(ya - r * cs, yb - r * cs), slice(xa - c * cs, xb - c * cs))
            values[(i, slice(None), *out)] = reader.read_chunk(t, r, c, level)[(slice(None), *part)]
            for kind, name in names.items():
                if name is not None:
                    planes[kind][(i, *out)] = reader.array(level, name).inner(t, r, c)[0][part]

    anchors = set(reader.attrs.temporal.anchor_indices)
    first = [t for t in ts if t in anchors]
    in_parallel(one, first, workers)
    in_parallel(one, [t for t in ts if t not in anchors], workers)
    return Window(values, planes.get("mask"), planes.get("coverage"), "chunks")


def read_window(
    reader: Reader,
    level: int,
    ts: range,
    ys: range,
    xs: range,
    *,
    use_history: bool | None = None,
    max_requests: int = DEFAULT_REQUESTS,
) -> Window:
    """Stored values (and mask, coverage) of ``ts`` x ``ys`` x ``xs`` at a level.

    ``use_history``: None (default) reads the companion when the level carries one and it needs
    fewer objects than the chunks (a point or a small window over several timesteps); True
    insists on it where present; False reads the chunks (spec 10.4)."""
    lv = reader.levels[level]
    _n, _nb, h, w = lv.shape
    if not (
        0 <= ts.start <= ts.stop <= reader.n_time
        and 0 <= ys.start <= ys.stop <= h
        and 0 <= xs.start <= xs.stop <= w
    ):
        raise IndexError(f"window {ts}, {ys}, {xs} is outside level {level} ({h} x {w})")
    if not (len(ts) and len(ys) and len(xs)):
        n_band = len(reader.bands)
        empty = np.empty((len(ts), n_band, len(ys), len(xs)), dtype=reader.dtype)
        plane = np.empty((len(ts), len(ys), len(xs)), dtype=np.uint8)
        return Window(
            empty, plane if reader.has_mask else None, plane if reader.has_coverage else None,
            "chunks",
        )  # fmt: skip
    arr = None if use_history is False else history_array(reader, level)
    if arr is not None and (use_history or fewer_objects(reader, level, arr, ts, ys, xs)):
        return _from_history(reader, level, arr, ts, ys, xs, max_requests)
    return _from_chunks(reader, level, ts, ys, xs, max_requests)


def fewer_objects(
    reader: Reader, level: int, arr: ArrayReader, ts: range, ys: range, xs: range
) -> bool:
    """Whether the companion covers the window with fewer objects than the chunk path reads
    (one data chunk, a mask and a coverage chunk per cell and timestep) and decodes at most
    twice the elements (a time block's padding past the window; a single timestep of a wide
    window, a time block of elements for one, stays on the chunks)."""
    geo = _geometry(reader, level, arr)
    tbs = geo.time_blocks(ts.start, ts.stop)
    blocks = geo.blocks(ys.start, ys.stop, xs.start, xs.stop)
    cs = reader.chunk_size(level)
    cells = (math.ceil(ys.stop / cs) - ys.start // cs) * (math.ceil(xs.stop / cs) - xs.start // cs)
    planes = reader.has_mask + reader.has_coverage
    n_field = arr.info.chunk_shape[1]
    objects = len(tbs) * len(blocks) < len(ts) * cells * (1 + planes)
    elements = len(tbs) * geo.time_block * len(blocks) * geo.block**2 * n_field
    return objects and elements <= 2 * len(ts) * cells * cs * cs * n_field

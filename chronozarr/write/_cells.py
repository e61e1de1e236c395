"""Per-cell writing shared by ``encode`` and ``append`` (spec 2.1, 4.2, 5, 6, 7).

``write_cell_series`` writes one cell's chunks (and mask/coverage) for a run of timesteps:
anchors and ``none`` timesteps as values, deltas as modular residuals (4.2), one object per
timestep or one per time shard (7). ``Readback`` reconstructs level k-1 from the store so that
level k is its 2 x 2 block mean (6). ``split_tasks`` cuts the work so that a shard is assembled
by one task.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.format import (
    ArrayInfo,
    ChunkCodec,
    LevelInfo,
    abs_diff_sum,
    apply_residual,
    assemble_region,
    build_shard,
    chunk_key,
    coverage_reduce,
    mask_reduce,
    residual,
    valid_block_mean,
)
from chronozarr.io import LRU, Store
from chronozarr.read import ArrayReader
from chronozarr.write._history import HistoryBuffer, HistoryLayout, history_groups

__all__ = [
    "CellResult",
    "CellWriter",
    "Layout",
    "Planes",
    "Readback",
    "default_workers",
    "last_in_shard",
    "merge_results",
    "parallel",
    "reduce_region",
    "split_tasks",
    "time_groups",
    "write_cell_series",
]


#: a cell's values, mask and coverage at one timestep (either plane None when absent)
PlaneTriple = tuple[np.ndarray, np.ndarray | None, np.ndarray | None]


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
    history: HistoryLayout | None = None  # the time-series companion (docs/spec.md C25)

    def __post_init__(self) -> None:
        self.data_codec = ChunkCodec(
            self.data_codecs, self.dtype.name, (1, self.n_band, self.cs, self.cs)
        )
        self.plane_codec = ChunkCodec(self.plane_codecs, "uint8", (1, self.cs, self.cs))
        self.fill = np.array(0 if self.nodata is None else self.nodata).astype(self.dtype)

    def ref(self, t: int) -> int | None:
        if self.encoding == "none" or t in self.anchors:
            return None
        return self.refs[t]

    def history_buffer(
        self, level_path: str, row: int, col: int, extent: tuple[int, int]
    ) -> HistoryBuffer | None:
        """The companion writer of cell (row, col) of a level (``extent``: the cell trimmed to
        the array), or None when the level carries no companion (C25)."""
        if self.history is None or level_path not in self.history.levels:
            return None
        return HistoryBuffer(
            self.store, self.history, level_path, dtype=self.dtype, codecs=self.data_codecs,
            fill=self.fill, n_time=self.n_time, n_band=self.n_band,
            origin=(row * self.cs, col * self.cs), extent=extent, has_mask=self.has_mask,
            has_coverage=self.has_coverage,
        )  # fmt: skip

    def pad(self, plane: np.ndarray, fill: Any) -> np.ndarray:
        """Full (1, ..., cs, cs) chunk from a trimmed plane: padding is fill (anchors, none,
        mask/coverage) or 0 (residuals) (spec 2.1)."""
        if plane.shape[-2:] == (self.cs, self.cs) and plane.dtype == (
            np.uint8 if plane.ndim == 2 else self.dtype
        ):  # a full cell: nothing to pad, no copy (the codec makes it contiguous, once)
            return plane[None]
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
    extra: Any = None  # what a cell source's ``summary()`` returned (JSON), else None


class Planes:
    """Source planes of one cell at one level with a small LRU (anchors are asked for out of order)."""

    def __init__(
        self,
        fn: Callable[[int], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]],
        keep: int = 6,
    ):
        self.fn = fn
        self.cache: LRU[int, Any] = LRU(max_items=keep)

    def get(self, t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        planes: tuple[np.ndarray, np.ndarray | None, np.ndarray | None]
        planes = self.cache.get_or_make(t, lambda: self.fn(t))
        return planes


def contiguous_cell(layout: Layout, values: np.ndarray) -> np.ndarray:
    """A full cell's values as one contiguous array (no copy when they are already): the copy
    the codec would make, made first, so that the volatility sum, the block mean and the
    compression all read it while it is in the core's cache (decision 0063). A trimmed edge
    cell is left as it is: the codec pads it into a new array anyway."""
    if values.shape[-2:] == (layout.cs, layout.cs) and values.dtype == layout.dtype:
        out: np.ndarray = np.ascontiguousarray(values)
        return out
    return values


def write_cell_series(
    layout: Layout,
    level_path: str,
    row: int,
    col: int,
    planes: Planes,
    times: Sequence[int],
    *,
    volatility: bool,
    shard_prefix: Callable[[str, int, int, int], tuple[bytes, list[Any]] | None] | None = None,
    encoded: Mapping[int, bytes] | None = None,
    history: HistoryBuffer | None = None,
) -> CellResult:
    """Write data (and mask/coverage) chunks of one cell for the given timesteps, in order.

    Unsharded: one object per timestep. Sharded: one object per time shard, assembled from its
    inner chunks; ``shard_prefix(array_path, ts, row, col)`` supplies the payload and index entries of an
    existing shard (append keeps old chunks at their old offsets, spec 14). ``encoded`` holds data
    chunk bytes already produced (the auto sample) to be reused as they are. ``history`` receives
    each timestep's true planes and writes the companion's chunks of the cell (C25).
    """
    writer = CellWriter(
        layout, level_path, row, col, planes, volatility=volatility, shard_prefix=shard_prefix,
        encoded=encoded, history=history,
    )  # fmt: skip
    times = list(times)
    for i, t in enumerate(times):
        writer.write(t, last_in_shard=last_in_shard(layout, times, i))
    return writer.result


def last_in_shard(layout: Layout, times: Sequence[int], i: int) -> bool:
    """Whether ``times[i]`` is the last of the run in its time shard (always, unsharded)."""
    st = layout.shard_time
    return st is None or i + 1 == len(times) or times[i + 1] // st != times[i] // st


class CellWriter:
    """The chunks of one cell, one timestep at a time (see :func:`write_cell_series`).

    A writer per cell lets a task write several cells in step, timestep by timestep: the encoder
    writes the level-0 cells under a coarser cell and then the coarser cells from the planes
    still in memory (:func:`chronozarr.write._fused.fused_task`)."""

    def __init__(
        self,
        layout: Layout,
        level_path: str,
        row: int,
        col: int,
        planes: Planes,
        *,
        volatility: bool,
        shard_prefix: Callable[[str, int, int, int], tuple[bytes, list[Any]] | None] | None = None,
        encoded: Mapping[int, bytes] | None = None,
        history: HistoryBuffer | None = None,
        keep_reduced: bool = False,
    ) -> None:
        self.layout, self.row, self.col, self.planes = layout, row, col, planes
        self.volatility, self.shard_prefix = volatility, shard_prefix
        self.encoded, self.history = encoded, history
        self.keep_reduced = keep_reduced
        self._reduced: tuple[int, PlaneTriple] | None = None
        self.result = CellResult(row, col, {})
        self.arrays = [(f"{level_path}/{layout.variable}", True)]
        if layout.has_mask:
            self.arrays.append((f"{level_path}/mask", False))
        if layout.has_coverage:
            self.arrays.append((f"{level_path}/coverage", False))
        self.pending: dict[str, dict[int, bytes]] = {p: {} for p, _ in self.arrays}

    def write(self, t: int, *, last_in_shard: bool) -> None:
        """Timestep ``t``'s chunks (sharded: kept until ``last_in_shard`` writes the shard)."""
        layout = self.layout
        source, mask, cov = self.planes.get(t)
        if self.history is not None:
            self.history.add(t, source, mask, cov)
        source = contiguous_cell(layout, source)
        if self.volatility and t not in layout.vol_anchors:
            self.result.vol_sum += abs_diff_sum(source, self.planes.get(layout.vol_refs[t])[0])
            self.result.vol_count += source.size
        if self.keep_reduced:  # the cell above reduces timestep t next (decision 0063)
            self._reduced = (t, reduce_region(layout, source, mask, cov))
        blobs = [self._data_chunk(t, source)]
        if layout.has_mask:
            assert mask is not None  # the layout has a mask: every plane source gives one
            blobs.append(layout.plane_codec.encode(layout.pad(mask, 0)))
        if layout.has_coverage:
            assert cov is not None  # likewise for coverage
            blobs.append(layout.plane_codec.encode(layout.pad(cov, 0)))
        for (path, has_band), b in zip(self.arrays, blobs, strict=True):
            if layout.shard_time is None:
                layout.store.put(chunk_key(path, t, self.row, self.col, has_band=has_band), b)
            else:
                self.pending[path][t] = b
        if layout.shard_time is not None and last_in_shard:
            self._flush(t // layout.shard_time)

    def reduced(self, t: int) -> PlaneTriple:
        """This cell's planes at ``t`` reduced for the level above (spec 6): the ones
        :meth:`write` made from its copy in cache when ``t`` was the last written, else made
        now from the planes (an anchor asked for before it is written)."""
        if self._reduced is not None and self._reduced[0] == t:
            part, self._reduced = self._reduced[1], None
            return part
        return reduce_region(self.layout, *self.planes.get(t))

    def _data_chunk(self, t: int, source: np.ndarray) -> bytes:
        """The data chunk's bytes: reused from the auto sample, a value or a residual (4.2)."""
        layout = self.layout
        if self.encoded is not None and t in self.encoded:
            return self.encoded[t]
        ref = layout.ref(t)
        if ref is None:
            return layout.data_codec.encode(layout.pad(source, layout.fill))
        delta = residual(source, self.planes.get(ref)[0])
        return layout.data_codec.encode(layout.pad(delta, 0))

    def _flush(self, ts: int) -> None:
        """Time shard ``ts`` of every array: its pending chunks after an existing prefix (14)."""
        st = self.layout.shard_time
        assert st is not None  # only a sharded layout keeps chunks pending
        for path, has_band in self.arrays:
            chunks: list[Any] = [None] * st
            prefix = b""
            if self.shard_prefix is not None:
                existing = self.shard_prefix(path, ts, self.row, self.col)
                if existing is not None:
                    prefix, entries = existing
                    chunks = list(entries)
            for t, blob in self.pending[path].items():
                chunks[t - ts * st] = blob
            shard = build_shard(chunks, prefix=prefix)
            self.layout.store.put(chunk_key(path, ts, self.row, self.col, has_band=has_band), shard)
            if has_band:
                self.result.shard_sizes[f"{ts}/{self.row}/{self.col}"] = len(shard)
            self.pending[path].clear()


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
            plain: np.ndarray = self.data.inner(t, r, c)[0]
            return plain
        return apply_residual(self._anchor(ref, r, c), self.data.inner(t, r, c)[0])

    def region(
        self, t: int, row: int, col: int
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Level k-1 pixels under level-k cell (row, col) at timestep t, trimmed to the shape."""
        cs = self.layout.cs
        shape = (self.level.shape[-2], self.level.shape[-1])
        values = assemble_region(
            lambda r, c: self.cell(t, r, c), row, col, cs, shape, (self.layout.n_band,),
            self.layout.dtype,
        )  # fmt: skip
        mask = cov = None
        if self.mask is not None:
            m = self.mask
            mask = assemble_region(
                lambda r, c: m.inner(t, r, c)[0], row, col, cs, shape, (), np.uint8
            )
        if self.coverage is not None:
            cv = self.coverage
            cov = assemble_region(
                lambda r, c: cv.inner(t, r, c)[0], row, col, cs, shape, (), np.uint8
            )
        return values, mask, cov

    def reduced(
        self, t: int, row: int, col: int
    ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
        """Level-k planes of cell (row, col) at t: block mean, mask max, coverage mean (spec 6)."""
        values, mask, cov = self.region(t, row, col)
        return reduce_region(self.layout, values, mask, cov)


def reduce_region(
    layout: Layout, values: np.ndarray, mask: np.ndarray | None, cov: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """The level-k planes of a region of level k-1: block mean over the valid pixels, mask
    max, coverage mean (spec 2.3-2.5, 6)."""
    return (
        valid_block_mean(values, layout.nodata, mask),
        None if mask is None else mask_reduce(mask),
        None if cov is None else coverage_reduce(cov),
    )


def parallel(fn: Callable[[Any], Any], items: Sequence[Any], workers: int) -> list[Any]:
    if workers <= 1 or len(items) <= 1:
        return [fn(i) for i in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))


def default_workers() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def split_tasks(
    cells: Sequence[tuple[int, int]],
    times: range,
    shard_time: int | None,
    workers: int,
    history_time: int | None = None,
) -> list[tuple[tuple[int, int], range]]:
    """(cell, timesteps) work items: whole time shards when sharded (a shard is assembled by one
    task), else enough time groups that every worker is busy even when a level has one cell.
    With a companion of ``history_time`` timesteps per chunk, groups hold whole chunks of it (and
    whole shards) and are otherwise as large as without (C25)."""
    groups = time_groups(len(cells), times, shard_time, workers, history_time)
    return [(cell, g) for cell in cells for g in groups]


def time_groups(
    n_cells: int,
    times: range,
    shard_time: int | None,
    workers: int,
    history_time: int | None = None,
) -> list[range]:
    """The time groups :func:`split_tasks` cuts each of ``n_cells`` cells' ``times`` into."""
    if not len(times):
        return []
    groups: list[range] = []
    if history_time is not None:
        n_groups = max(1, min(len(times), math.ceil(2 * workers / max(1, n_cells))))
        size = shard_time if shard_time is not None else math.ceil(len(times) / n_groups)
        groups = history_groups(times, history_time, shard_time, size)
    elif shard_time is not None:
        t = times.start
        while t < times.stop:
            end = min((t // shard_time + 1) * shard_time, times.stop)
            groups.append(range(t, end))
            t = end
    else:
        n_groups = max(1, min(len(times), math.ceil(2 * workers / max(1, n_cells))))
        size = math.ceil(len(times) / n_groups)
        groups = [range(t, min(t + size, times.stop)) for t in range(times.start, times.stop, size)]
    return groups


def merge_results(results: Sequence[CellResult]) -> list[CellResult]:
    """One CellResult per cell from the results of its time-group tasks."""
    merged: dict[tuple[int, int], CellResult] = {}
    for res in results:
        m = merged.setdefault((res.row, res.col), CellResult(res.row, res.col, {}))
        m.shard_sizes.update(res.shard_sizes)
        m.vol_sum += res.vol_sum
        m.vol_count += res.vol_count
    return list(merged.values())

"""Writing the time-series companion (docs/spec.md C25; decision 0048) from the cell tasks.

A level-0 cell task already holds each timestep's true planes (the input's, or for an append the
old ones reconstructed from the store); :class:`HistoryBuffer` keeps them for one time block of
the cell and, at the block's end, writes every ``B x B`` block of the cell as one companion chunk
``(T, n_field, B, B)``. Blocks never straddle cells (``B`` divides the cell size), so each task
writes its own objects, on a local thread or a dask worker alike, and a time block is written
by one task (the encode's time groups are aligned to it, :func:`history_groups`).

The commit adds the documents (:func:`history_documents`): the group, the ``values`` array, the
``field`` coordinate and its chunk, and the root's ``chronozarr.history`` block.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.format import (
    HISTORY_ARRAY,
    HISTORY_FIELD,
    HISTORY_PATH,
    ChunkCodec,
    Codec,
    HistoryBlock,
    compressor_for,
    coord_array_doc,
    group_doc,
    history_array_doc,
    history_fields,
    pack_history,
    vlen_utf8_encode,
)
from chronozarr.io import Store

__all__ = [
    "HistoryBuffer",
    "HistoryLayout",
    "history_block",
    "history_documents",
    "history_groups",
    "history_key",
]


@dataclass(frozen=True)
class HistoryLayout:
    """The companion's chunking: ``time_block`` timesteps, ``block`` pixels a side, in the
    group ``path`` of each level in ``levels`` (the writer's: level 0)."""

    time_block: int
    block: int
    path: str = HISTORY_PATH
    levels: tuple[str, ...] = ("0",)


def history_key(level_path: str, path: str, tb: int, by: int, bx: int) -> str:
    """The object key of companion chunk (tb, by, bx): ``{level}/{path}/values/c/tb/0/by/bx``."""
    return f"{level_path}/{path}/{HISTORY_ARRAY}/c/{tb}/0/{by}/{bx}"


class HistoryBuffer:
    """One cell's true planes of one time block at a time; :meth:`flush` writes its chunks.

    ``n_time`` is the store's axis after this write; ``(y0, x0)`` the cell's first pixel and
    ``(h, w)`` its extent inside the level (the cell trimmed to the array)."""

    def __init__(
        self,
        store: Store,
        spec: HistoryLayout,
        level_path: str,
        *,
        dtype: np.dtype,
        codecs: list[dict[str, Any]],
        fill: Any,
        n_time: int,
        n_band: int,
        origin: tuple[int, int],
        extent: tuple[int, int],
        has_mask: bool,
        has_coverage: bool,
    ):
        self.store, self.spec, self.level_path = store, spec, level_path
        self.dtype, self.fill, self.n_time = dtype, fill, n_time
        self.origin, self.extent = origin, extent
        self.has_mask, self.has_coverage = has_mask, has_coverage
        n_field = n_band + has_mask + has_coverage
        b = spec.block
        self.codec = ChunkCodec(codecs, dtype.name, (spec.time_block, n_field, b, b))
        h, w = extent
        self.values = np.full((spec.time_block, n_band, h, w), fill, dtype=dtype)
        self.mask = np.zeros((spec.time_block, h, w), np.uint8) if has_mask else None
        self.coverage = np.zeros((spec.time_block, h, w), np.uint8) if has_coverage else None
        self.block_index: int | None = None
        self.added: set[int] = set()
        self.chunks_written = 0

    def add(
        self, t: int, values: np.ndarray, mask: np.ndarray | None, coverage: np.ndarray | None
    ) -> None:
        """Timestep ``t``'s (band, h, w) true values and (h, w) planes; writes the time block
        when ``t`` ends it (its last timestep, or the axis's last)."""
        tb, i = divmod(t, self.spec.time_block)
        if self.block_index is None:
            self.block_index = tb
        if tb != self.block_index:
            raise ValueError(f"timestep {t} is not in time block {self.block_index}")
        self.values[i] = values
        self.added.add(i)
        if self.mask is not None:
            if mask is None:
                raise ValueError(f"timestep {t}: the store has a mask, none was given")
            self.mask[i] = mask
        if self.coverage is not None:
            if coverage is None:
                raise ValueError(f"timestep {t}: the store has coverage, none was given")
            self.coverage[i] = coverage
        if i == self.spec.time_block - 1 or t == self.n_time - 1:
            self.flush()

    def flush(self) -> None:
        """Write every block of the cell for the current time block (C25: padding is fill)."""
        tb = self.block_index
        if tb is None:
            return
        n_t = min(self.spec.time_block, self.n_time - tb * self.spec.time_block)
        if self.added != set(range(n_t)):  # a chunk holds the whole time block, never part of it
            missing = sorted(set(range(n_t)) - self.added)
            raise ValueError(f"time block {tb}: timesteps at {missing} were not given")
        b = self.spec.block
        h, w = self.extent
        y0, x0 = self.origin
        for y in range(0, h, b):
            for x in range(0, w, b):
                part = (slice(None, n_t), slice(y, y + b), slice(x, x + b))
                chunk = pack_history(
                    self.values[:n_t, :, y : y + b, x : x + b],
                    None if self.mask is None else self.mask[part],
                    None if self.coverage is None else self.coverage[part],
                    self.fill,
                    (self.spec.time_block, b),
                )
                key = history_key(self.level_path, self.spec.path, tb, (y0 + y) // b, (x0 + x) // b)
                self.store.put(key, self.codec.encode(chunk))
                self.chunks_written += 1
        self.block_index = None
        self.added.clear()
        self.values.fill(self.fill)


def history_groups(times: range, time_block: int, shard_time: int | None, size: int) -> list[range]:
    """Time groups of about ``size`` timesteps whose bounds fall on multiples of the companion's
    time block (and of the shard length when sharded): each companion chunk and each shard is
    then written by one task."""
    unit = time_block if shard_time is None else math.lcm(time_block, shard_time)
    size = max(unit, math.ceil(size / unit) * unit)
    out: list[range] = []
    t = times.start
    while t < times.stop:
        end = min((t // unit) * unit + size, times.stop)
        out.append(range(t, end))
        t = end
    return out


def history_documents(
    spec: HistoryLayout,
    *,
    level_path: str,
    shape: Sequence[int],
    dtype: str,
    codecs: list[dict[str, Any]],
    fill_value: Any,
    band_names: Sequence[str],
    has_mask: bool,
    has_coverage: bool,
    codec: Codec,
) -> tuple[dict[str, dict[str, Any]], dict[str, bytes]]:
    """The documents of one level's companion (its group, ``values`` and ``field``) and the
    ``field`` chunk: ``shape`` is the level's (time, band, y, x)."""
    fields = history_fields(band_names, has_mask, has_coverage)
    n_time, _n_band, height, width = (int(s) for s in shape)
    group = f"{level_path}/{spec.path}"
    comp = codec.compressor("uint8")
    docs = {
        group: group_doc({}),
        f"{group}/{HISTORY_ARRAY}": history_array_doc(
            shape=(n_time, len(fields), height, width),
            dtype=dtype,
            codecs=codecs,
            fill_value=fill_value,
            time_block=spec.time_block,
            block=spec.block,
        ),
        f"{group}/{HISTORY_FIELD}": coord_array_doc(HISTORY_FIELD, len(fields), "string", comp),
    }
    raw = bytes(compressor_for(comp).encode(vlen_utf8_encode(fields)))
    return docs, {f"{group}/{HISTORY_FIELD}/c/0": raw}


def history_block(spec: HistoryLayout) -> HistoryBlock:
    """The root's ``chronozarr.history`` block (C25)."""
    return HistoryBlock(spec.path, spec.levels)

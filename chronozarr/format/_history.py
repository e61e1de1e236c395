"""The time-series companion layout (docs/spec.md C25; decision 0048): one pixel's whole history
in a few small objects.

A level that carries it holds, besides its data, mask and coverage arrays, a group
``{level}/{path}`` (``path`` from the root's ``chronozarr.history`` block, ``"history"`` as written)
with two plain Zarr v3 arrays:

- ``values``: dims ``[time, field, y, x]``, shape ``[n_time, n_field, H, W]``, the data's type,
  fill value and codec chain, chunks ``[T, n_field, B, B]`` (unsharded): the *true* values of
  every band (never residuals), then the mask and the coverage as further fields when the store
  has them, so one chunk is a ``B x B`` block's whole history over ``T`` timesteps;
- ``field``: the field names (a vlen string coordinate): the band names, then ``"mask"``,
  then ``"coverage"``.

The field list is a rule (:func:`history_fields`), so a reader needs no request to learn it; the
``field`` array is for readers that do not know the rule. Everything here is pure: the root
block, the documents, the geometry of blocks and the packing of planes into a chunk.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError

__all__ = [
    "HISTORY_ARRAY",
    "HISTORY_ATTRIBUTE",
    "HISTORY_BLOCK",
    "HISTORY_FIELD",
    "HISTORY_PATH",
    "HISTORY_TIME",
    "HistoryBlock",
    "HistoryGeometry",
    "history_array_doc",
    "history_fields",
    "pack_history",
]

#: the group of a level that holds the companion, as the writer names it
HISTORY_PATH = "history"
#: the companion's array of values and its field coordinate (fixed names inside the group)
HISTORY_ARRAY = "values"
HISTORY_FIELD = "field"
#: writer defaults: timesteps per chunk (a year of months) and pixels per block side
HISTORY_TIME = 12
HISTORY_BLOCK = 16
#: the attribute that says, on the array itself, what it holds (as C23 does for residuals)
HISTORY_ATTRIBUTE = "chronozarr:history"


@dataclass(frozen=True)
class HistoryBlock:
    """The root's ``chronozarr.history`` block: the group name and the levels that carry it."""

    path: str
    levels: tuple[str, ...]

    @classmethod
    def from_json(cls, obj: Any) -> HistoryBlock:
        key = "chronozarr.history"
        if not isinstance(obj, Mapping):
            raise CorruptStoreError(f"{key}: expected an object", field="history")
        path, levels = obj.get("path"), obj.get("levels")
        if not isinstance(path, str) or not path:
            raise CorruptStoreError(f"{key}.path: expected a group name", field="history")
        if (
            not isinstance(levels, list)
            or not levels
            or not all(isinstance(v, str) for v in levels)
            or len(set(levels)) != len(levels)
        ):
            raise CorruptStoreError(
                f"{key}.levels: expected a non-empty list of distinct level paths", field="history"
            )
        return cls(path, tuple(levels))

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "levels": list(self.levels)}


def history_fields(band_names: Sequence[str], has_mask: bool, has_coverage: bool) -> list[str]:
    """The fields of the companion, in order: every band, then mask, then coverage (C25)."""
    return [*band_names, *(["mask"] if has_mask else []), *(["coverage"] if has_coverage else [])]


def history_array_doc(
    *,
    shape: Sequence[int],
    dtype: str,
    codecs: list[dict[str, Any]],
    fill_value: Any,
    time_block: int,
    block: int,
) -> dict[str, Any]:
    """``{level}/{path}/values/zarr.json``: (time, field, y, x), chunks (T, n_field, B, B)."""
    n_time, n_field, height, width = (int(s) for s in shape)
    dims = ["time", "field", "y", "x"]
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [n_time, n_field, height, width],
        "data_type": dtype,
        "chunk_grid": {
            "name": "regular",
            "configuration": {"chunk_shape": [int(time_block), n_field, int(block), int(block)]},
        },
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "dimension_names": dims,
        "attributes": {
            "_ARRAY_DIMENSIONS": dims,
            HISTORY_ATTRIBUTE: (
                "true values of the level's data array (every band, never residuals), then its "
                "mask and coverage, chunked along time (docs/spec.md C25); the field "
                "coordinate names each field"
            ),
        },
    }


@dataclass(frozen=True)
class HistoryGeometry:
    """Where a pixel's history lives: ``time_block`` timesteps and ``block`` pixels per chunk."""

    time_block: int
    block: int
    n_time: int
    height: int
    width: int

    @property
    def n_time_blocks(self) -> int:
        return math.ceil(self.n_time / self.time_block)

    def time_blocks(self, t0: int = 0, t1: int | None = None) -> range:
        """The time chunk indices that hold timesteps [t0, t1)."""
        t1 = self.n_time if t1 is None else t1
        if t1 <= t0:
            return range(0)
        return range(t0 // self.time_block, (t1 - 1) // self.time_block + 1)

    def blocks(self, y0: int, y1: int, x0: int, x1: int) -> list[tuple[int, int]]:
        """The (block row, block col) chunks that cover pixels [y0, y1) x [x0, x1)."""
        b = self.block
        if y1 <= y0 or x1 <= x0:
            return []
        return [
            (by, bx)
            for by in range(y0 // b, (y1 - 1) // b + 1)
            for bx in range(x0 // b, (x1 - 1) // b + 1)
        ]


def pack_history(
    values: np.ndarray,
    mask: np.ndarray | None,
    coverage: np.ndarray | None,
    fill: Any,
    shape: tuple[int, int],
) -> np.ndarray:
    """One full companion chunk (T, n_field, B, B) from (t, band, h, w) true values and
    (t, h, w) mask and coverage planes of at most that size; padding (timesteps past the
    axis, pixels past the edge) holds ``fill``, the array's fill value (Zarr edge chunks)."""
    n_t, n_band, h, w = values.shape
    n_field = n_band + (mask is not None) + (coverage is not None)
    out = np.full((shape[0], n_field, shape[1], shape[1]), fill, dtype=values.dtype)
    out[:n_t, :n_band, :h, :w] = values
    k = n_band
    for plane in (mask, coverage):
        if plane is not None:
            out[:n_t, k, :h, :w] = plane
            k += 1
    return out

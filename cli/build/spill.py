"""The spill: raw composites per (month, block) on disk, and their gap-filled planes."""

from __future__ import annotations

import math
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from chronozarr.io import LRU
from cz.build.tasks import (
    BlockResult,
    spill_codec,
)
from cz.composite import (
    assemble_filled,
    carry_forward_source,
    fill_value,
    mask_from_source,
)
from cz.composite.gapfill import assemble_linear, linear_neighbours, linear_source


class Spill:
    """Raw composites of (month, block) as small zstd files in a folder; thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=False)
        self._present: set[tuple[int, int, int]] = set()
        self._lock = threading.Lock()

    def _path(self, t: int, row: int, col: int, kind: str) -> Path:
        return self.root / f"{t}.{row}.{col}.{kind}"

    def put(self, result: BlockResult) -> None:
        for kind, blob in (("v", result.values), ("c", result.coverage)):
            path = self._path(result.t, result.row, result.col, kind)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_bytes(blob)
            tmp.replace(path)
        with self._lock:
            self._present.add((result.t, result.row, result.col))

    def has(self, t: int, row: int, col: int) -> bool:
        with self._lock:
            return (t, row, col) in self._present

    def get(self, t: int, row: int, col: int, kind: str) -> bytes:
        return self._path(t, row, col, kind).read_bytes()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


History = Callable[[int, int, int], tuple[np.ndarray, np.ndarray] | None]


class SpillPlanes:
    """Final (gap-filled) values, mask and coverage of any (month, cell), from the spill.

    ``history(t, row, col)`` gives ``(values, coverage)`` of month ``t < 0`` (months before the
    first one built: an append reads them from the store), or ``None``.
    """

    def __init__(
        self,
        spill: Spill,
        *,
        n_months: int,
        shape: tuple[int, int],
        cs: int,
        n_band: int,
        dtype: str,
        nodata: float | None,
        max_age: int,
        gap: str = "carry-forward",
        history: History | None = None,
        on_data: Callable[[int, int, int], None] | None = None,
        readers: int = 2,
    ) -> None:
        self.spill = spill
        self.n_months = n_months
        self.height, self.width = shape
        self.cs = cs
        self.n_band = n_band
        self.dtype = np.dtype(dtype)
        self.fill = fill_value(self.dtype, nodata)
        self.max_age = max_age
        self.gap = gap  # carry-forward (look back) or linear (back and ahead, cz.composite.gapfill)
        self.history = history
        self.on_data = on_data
        self.codec = spill_codec()
        # the writer reads each cell's months in order on ``readers`` threads; a month looks back
        # at most ``max_age`` months of the same cell: keep that much, decompress the rest again
        block = cs * cs
        reach = (2 * max_age if gap == "linear" else max_age) + 2  # linear looks ahead too
        self._cov: LRU[tuple[int, int, int], np.ndarray] = LRU(
            max(8 << 20, readers * reach * block * 4)
        )
        self._values: LRU[tuple[int, int, int], np.ndarray] = LRU(
            readers * reach * block * n_band * self.dtype.itemsize
        )
        self._past: LRU[tuple[int, int, int], Any] = LRU(max_items=max(16, 4 * (max_age + 1)))
        # made on the first mask(): a cluster task asks only its cell's planes (decision 0058)
        self._counted: np.ndarray | None = None
        self._valid = 0
        self._filled = 0
        self._count_lock = threading.Lock()

    def block_shape(self, row: int, col: int) -> tuple[int, int]:
        return (
            min(self.cs, self.height - row * self.cs),
            min(self.cs, self.width - col * self.cs),
        )

    def _history(self, t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Month t < 0 from ``history`` (cached: every later month looks back at it)."""
        history = self.history
        if history is None:
            return None
        past: tuple[np.ndarray, np.ndarray] | None = self._past.get_or_make(
            (t, row, col), lambda: history(t, row, col)
        )
        return past

    def _raw_coverage(self, t: int, row: int, col: int) -> np.ndarray | None:
        if t < 0:
            past = self._history(t, row, col)
            return None if past is None else past[1]
        if not self.spill.has(t, row, col):
            return None

        def make() -> np.ndarray:
            raw = self.codec.decode(self.spill.get(t, row, col, "c"))
            return np.frombuffer(raw, dtype=np.uint8).reshape(self.block_shape(row, col))

        return self._cov.get_or_make((t, row, col), make)

    def _raw_values(self, t: int, row: int, col: int) -> np.ndarray:
        if t < 0:
            past = self._history(t, row, col)
            assert past is not None
            return past[0]

        def make() -> np.ndarray:
            raw = self.codec.decode(self.spill.get(t, row, col, "v"))
            h, w = self.block_shape(row, col)
            return np.frombuffer(raw, dtype=self.dtype).reshape(self.n_band, h, w)

        return self._values.get_or_make((t, row, col), make)

    def source(self, t: int, row: int, col: int) -> np.ndarray:
        """Gap-fill source plane of (month t, block): 0 own, -1 none; carry-forward: k = month
        t-k; linear: 1 = interpolated."""
        if self.gap == "linear":
            return linear_source(self._raw_coverage(t, row, col), *self._neighbours(t, row, col))
        covs = [self._raw_coverage(t - k, row, col) for k in range(self.max_age + 1)]
        return carry_forward_source(covs, self.block_shape(row, col))

    def _neighbours(self, t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray]:
        """Linear gap-fill's distances to the nearest observed months before and after t (the
        months after the last one of this run are unknown: an append never looks ahead)."""
        before = [self._raw_coverage(t - k, row, col) for k in range(1, self.max_age + 1)]
        after = [
            self._raw_coverage(t + k, row, col) if t + k < self.n_months else None
            for k in range(1, self.max_age + 1)
        ]
        own = self._raw_coverage(t, row, col)
        return linear_neighbours(own, before, after, self.block_shape(row, col))

    def coverage(self, t: int, row: int, col: int) -> np.ndarray:
        cov = self._raw_coverage(t, row, col)
        return np.zeros(self.block_shape(row, col), np.uint8) if cov is None else cov

    def mask(self, t: int, row: int, col: int) -> np.ndarray:
        src = self.source(t, row, col)
        with self._count_lock:  # the summary's shares, each (month, cell) counted once
            if self._counted is None:
                rows, cols = math.ceil(self.height / self.cs), math.ceil(self.width / self.cs)
                self._counted = np.zeros((self.n_months, rows, cols), dtype=bool)
            if not self._counted[t, row, col]:
                self._counted[t, row, col] = True
                self._valid += int(np.count_nonzero(src >= 0))
                self._filled += int(np.count_nonzero(src > 0))
        return mask_from_source(src)

    def fractions(self) -> tuple[float, float]:
        """(valid, gap-filled) share of the level-0 pixels of the months the writer read."""
        total = self.n_months * self.height * self.width
        if not total:
            return 0.0, 0.0
        return self._valid / total, self._filled / total

    def values(self, t: int, row: int, col: int) -> np.ndarray:
        if self.on_data is not None:
            self.on_data(t, row, col)
        if self.gap == "linear":
            back, ahead = self._neighbours(t, row, col)
            source = linear_source(self._raw_coverage(t, row, col), back, ahead)
            return assemble_linear(
                source,
                back,
                ahead,
                lambda k: self._raw_values(t + k, row, col),
                self.n_band,
                self.dtype,
                self.fill,
            )
        src = self.source(t, row, col)
        return assemble_filled(
            src,
            lambda k: self._raw_values(t - k, row, col),
            self.n_band,
            self.dtype,
            self.fill,
        )

"""Streaming: the writer reads the files one cell window at a time, each window once."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import chronozarr
from cz.build import Progress
from cz.convert import ConvertOptions, convert, plan_source, store_spec
from cz.convert.stream import WindowReader
from tests.cz.convert.helpers import read_tif, series, write_series


class _Count(Progress):
    def __init__(self) -> None:
        self.total: float | None = None
        self.done = 0.0

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        if phase == "read":
            self.total = total

    def advance(self, phase: str, amount: float = 1.0) -> None:
        if phase == "read":
            self.done += amount


def test_windows_are_cells_and_each_is_read_once(tmp_path: Path, monkeypatch) -> None:
    values = series(6, 2, 50, 41, "uint16", seed=51)
    files = write_series(tmp_path / "src", values, [f"2024-{m:02d}-01" for m in range(1, 7)])
    windows: list[tuple[int, int, int, int, int]] = []
    original = WindowReader.data

    def recording(self, t, y0, y1, x0, x1):  # type: ignore[no-untyped-def]
        windows.append((t, y0, y1, x0, x1))
        return original(self, t, y0, y1, x0, x1)

    monkeypatch.setattr(WindowReader, "data", recording)
    plan = plan_source(str(tmp_path / "src"), ConvertOptions())
    spec = store_spec(plan.dtype, chunk_size=16, encoding="none")
    progress = _Count()
    convert(plan, str(tmp_path / "s.zarr"), spec, workers=2, progress=progress)
    cells = 4 * 3  # ceil(50 / 16) x ceil(41 / 16)
    assert len(windows) == len(set(windows)) == 6 * cells  # each (timestep, cell) read once
    assert max((y1 - y0) * (x1 - x0) for _, y0, y1, x0, x1 in windows) == 16 * 16
    assert progress.total == progress.done == 6 * cells
    reader = chronozarr.open_store(tmp_path / "s.zarr")
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))

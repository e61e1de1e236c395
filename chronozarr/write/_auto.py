"""The ``auto`` temporal choice (spec 4.3): encode a sample of level-0 cells both ways and keep
star-delta when its bytes are at most 0.85 of the plain ones. The sampled chunks of the chosen
encoding are handed to the writer, which reuses them instead of encoding them twice.
"""

from __future__ import annotations

import numpy as np

from chronozarr.format import grid_shape, residual
from chronozarr.write._cells import Layout, parallel, split_tasks
from chronozarr.write._inputs import CellInput

__all__ = [
    "AUTO_THRESHOLD",
    "choose_encoding",
    "encode_sample",
    "sample_cells",
    "sample_ratio",
    "sample_tasks",
    "sample_window",
]

AUTO_THRESHOLD = 0.85  # spec 4.3


def sample_cells(rows: int, cols: int) -> list[tuple[int, int]]:
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


SampleTask = tuple[tuple[int, int], range]


def sample_tasks(
    layout_sd: Layout, height: int, width: int, workers: int, anchor_interval: int
) -> tuple[list[tuple[int, int]], list[SampleTask]]:
    """The sampled cells and the (cell, timesteps) tasks that encode them both ways."""
    rows, cols = grid_shape(height, width, layout_sd.cs)
    cells = sample_cells(rows, cols)
    window = sample_window(layout_sd.n_time, anchor_interval)
    return cells, split_tasks(cells, window, None, workers)


def encode_sample(
    layout_sd: Layout, inp: CellInput, height: int, width: int, task: SampleTask
) -> tuple[int, int, dict[int, bytes], dict[int, bytes]]:
    """One sample task: its chunks encoded plain and as star-delta residuals (spec 4.2, 4.3)."""
    cs = layout_sd.cs
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


def sample_ratio(sizes: list[tuple[int, int]]) -> float:
    """star-delta bytes / plain bytes over every sampled chunk, from per-task (plain, delta)
    byte totals: integer sums, so the ratio does not depend on how the sample was split."""
    plain_total = sum(p for p, _ in sizes)
    delta_total = sum(d for _, d in sizes)
    return delta_total / plain_total if plain_total else 1.0


def choose_encoding(
    layout_sd: Layout, inp: CellInput, height: int, width: int, workers: int, anchor_interval: int
) -> tuple[
    float, int, dict[tuple[int, int], dict[int, bytes]], dict[tuple[int, int], dict[int, bytes]]
]:
    """Encode the sampled cells both ways (spec 4.3); returns the ratio, the sample count and the
    chunk bytes of both encodings (the chosen one is reused by the writer, not encoded twice)."""
    cells, tasks = sample_tasks(layout_sd, height, width, workers, anchor_interval)
    results = parallel(
        lambda task: encode_sample(layout_sd, inp, height, width, task), tasks, workers
    )
    ratio = sample_ratio(
        [
            (sum(len(b) for b in p.values()), sum(len(b) for b in d.values()))
            for _, _, p, d in results
        ]
    )
    plains: dict[tuple[int, int], dict[int, bytes]] = {}
    deltas: dict[tuple[int, int], dict[int, bytes]] = {}
    for r, c, p, d in results:
        plains.setdefault((r, c), {}).update(p)
        deltas.setdefault((r, c), {}).update(d)
    return ratio, len(cells), plains, deltas

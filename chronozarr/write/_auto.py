"""The ``auto`` temporal choice (spec 4.3): encode a sample of level-0 cells both ways and keep
star-delta when its bytes are at most 0.85 of the plain ones. The sampled chunks of the chosen
encoding are handed to the writer, which reuses them instead of encoding them twice.

:func:`select_encoding` makes the choice of an ``encode``: read back from a resumed run's work
prefix, one task per sampled cell on a cluster when a cell source produces the planes there
(decision 0021), else here on local threads.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from chronozarr.format import DELTA_DTYPES, Temporal, grid_shape, residual
from chronozarr.write._arguments import EncodeArgs
from chronozarr.write._cell_tasks import is_cell_source
from chronozarr.write._cells import Layout, parallel, split_tasks
from chronozarr.write._inputs import CellInput
from chronozarr.write._runner import Runner
from chronozarr.write._worklog import WorkLog

__all__ = [
    "AUTO_THRESHOLD",
    "choose_encoding",
    "encode_sample",
    "fine_sample_tasks",
    "sample_cells",
    "sample_ratio",
    "sample_tasks",
    "sample_window",
    "select_encoding",
]

AUTO_THRESHOLD = 0.85  # spec 4.3

log = logging.getLogger("chronozarr.writer")


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


def fine_sample_tasks(layout_sd: Layout, tasks: list[SampleTask]) -> list[SampleTask]:
    """The sample's tasks one timestep each, those with two encodings first (a delta timestep
    is encoded plain and as a residual, an anchor once), for an in-memory input whose planes are
    views (decision 0067): the threads share the sample evenly and end together, where a few
    tasks of several timesteps left one thread idle while the other finished its last. A lazy
    input keeps its tasks of several timesteps (each task reads its batch once)."""
    fine = [(cell, range(t, t + 1)) for cell, times in tasks for t in times]
    return sorted(fine, key=lambda task: layout_sd.ref(task[1].start) is None)


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
    if isinstance(inp, CellInput) and not inp.lazy:
        tasks = fine_sample_tasks(layout_sd, tasks)
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


class _SourceInput:
    """A cell source seen as :class:`CellInput` (data planes only), for the auto sample."""

    def __init__(self, source: Any, cs: int, height: int, width: int):
        self.source, self.cs, self.height, self.width = source, cs, height, width

    def cell(self, ys: slice, xs: slice, times: Any = None) -> Any:
        planes = self.source.open_cell(ys.start // self.cs, xs.start // self.cs, ys, xs, times)
        return lambda t: planes(t)[0]


def _sample_input(args: EncodeArgs) -> Any:
    if is_cell_source(args.data):
        return _SourceInput(args.data, args.cs, args.shape[2], args.shape[3])
    return CellInput(args.data, args.dtype)


def _auto_task(ctx: tuple[Layout, EncodeArgs], task: SampleTask) -> tuple[int, int]:
    """One sampled cell of the auto choice on a worker (a cell source produces its planes
    there): the (plain, star-delta) byte totals of its chunks, not the chunks."""
    layout, args = ctx
    h, w = args.shape[2:]
    _r, _c, plain, delta = encode_sample(layout, _sample_input(args), h, w, task)
    return sum(len(b) for b in plain.values()), sum(len(b) for b in delta.values())


def _choose(
    layout: Layout, args: EncodeArgs, runner: Runner, work: WorkLog | None
) -> tuple[
    float, int, dict[tuple[int, int], dict[int, bytes]], dict[tuple[int, int], dict[int, bytes]]
]:
    """The auto sample (4.3): read back from a resumed run's work prefix, run on a worker for a
    cell source on a cluster, else here (reusing the sampled chunks)."""
    if work is not None:
        saved = work.done("choice")
        if saved is not None:
            return float(saved["ratio"]), int(saved["sampled_cells"]), {}, {}
    h, w = args.shape[2:]
    if runner.remote and is_cell_source(args.data):
        # one task per sampled cell, so the workers share the sample (decision 0021: one task held
        # every other worker idle while it composited all three cells); whole time series per
        # cell, as a time split would composite anchor and gap-fill months twice
        cells = sample_cells(*grid_shape(h, w, layout.cs))
        window = sample_window(layout.n_time, args.layout.anchor_interval)
        tasks = [(cell, window) for cell in cells]
        sizes = runner.run_tasks(_auto_task, (layout, args), tasks, name="cz-auto")
        ratio, n = sample_ratio(sizes), len(cells)
        plains: dict[tuple[int, int], dict[int, bytes]] = {}
        deltas: dict[tuple[int, int], dict[int, bytes]] = {}
    else:
        ratio, n, plains, deltas = choose_encoding(
            layout, _sample_input(args), h, w, runner.workers, args.layout.anchor_interval
        )
    if work is not None:
        work.record("choice", {"ratio": ratio, "sampled_cells": n})
    return ratio, n, plains, deltas


def select_encoding(
    layout: Layout, args: EncodeArgs, runner: Runner, work: WorkLog | None
) -> tuple[Temporal, dict[tuple[int, int], dict[int, bytes]]]:
    """The temporal block (4.1-4.3) and, for auto, the sampled chunks of the chosen encoding
    (reused by level 0 on local threads). ``layout`` (the per-cell writer's) is switched to
    ``none`` when that is the choice."""
    selection = None
    samples: dict[tuple[int, int], dict[int, bytes]] = {}
    chosen = args.layout.encoding
    if args.layout.encoding == "auto":
        if args.dtype.name in DELTA_DTYPES:
            ratio, n_sampled, plains, deltas = _choose(layout, args, runner, work)
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
        return Temporal(encoding="none", selection=selection), samples
    return (
        Temporal(
            encoding="star-delta",
            anchor_interval=args.layout.anchor_interval,
            anchor_indices=tuple(sorted(layout.vol_anchors)),
            delta_reference=dict(layout.vol_refs),
            selection=selection,
        ),
        samples,
    )

"""The streaming writer: ``encode`` (spec 2-9).

Memory is bounded by a few cells whatever the region: level 0 is written cell by cell from the
input (a numpy, dask or xarray array read one cell-timestep batch at a time), each level k from
level k-1 as stored (read back, reconstructed, block-averaged), so nothing larger than a 2 x 2
block of cells is held. Write order (spec 9): every chunk/shard object, then the coordinate
arrays and volatility, then every zarr.json below the root, the root zarr.json last: a crash
leaves no root, never a root that describes missing data.

The steps live beside this module: argument checks and cell reads in :mod:`chronozarr.write._inputs`,
the auto choice in :mod:`chronozarr.write._auto` (4.3), per-cell writing in :mod:`chronozarr.write._cells`,
the metadata commit in :mod:`chronozarr.write._commit` (9).
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.errors import ClusterError, EncodeError, RemoteStoreError, StoreAccessError
from chronozarr.format import (
    DELTA_DTYPES,
    DTYPES,
    SPEC_VERSION,
    Band,
    LevelInfo,
    RootAttrs,
    Temporal,
    cell_slice,
    chunk_key,
    codec_chain,
    data_array_doc,
    dumps,
    format_time,
    grid_shape,
    level_resolution,
    level_shapes,
    level_transform,
    multiscales,
    parse_times,
    plane_array_doc,
    residuals_attribute,
    schedule,
    volatility_value,
)
from chronozarr.io import WORK_PREFIX, LocalStore, Store, open_target, store_is_empty
from chronozarr.provenance import PROVENANCE_ITEMS, items_array_objects
from chronozarr.write._auto import (
    AUTO_THRESHOLD,
    SampleTask,
    choose_encoding,
    encode_sample,
    sample_cells,
    sample_ratio,
    sample_window,
)
from chronozarr.write._cell_tasks import (
    ArrayInput,
    Level0Context,
    UpperContext,
    is_cell_source,
    level0_task,
    upper_task,
)
from chronozarr.write._cells import CellResult, Layout, default_workers, merge_results, split_tasks
from chronozarr.write._commit import write_metadata
from chronozarr.write._inputs import (
    DEFAULT,
    CellInput,
    normalize_bands,
    normalize_crs,
    normalize_nodata,
    normalize_transform,
    unwrap_array,
)
from chronozarr.write._runner import DEFAULT_RETRIES, DEFAULT_WORKER_TIMEOUT, Runner, Stage
from chronozarr.write._worklog import WorkLog, clear_work, pending_tasks

__all__ = ["EncodeSummary", "encode"]

log = logging.getLogger("chronozarr.writer")

_FROM_SOURCE = "planes of the cell source"  # mask/coverage given by a cell source
_RESERVED = {"mask", "coverage", "time", "band", "y", "x", "volatility"}
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass
class _Args:
    """The checked arguments of one ``encode`` call."""

    data: Any
    dtype: np.dtype
    shape: tuple[int, int, int, int]  # (time, band, y, x)
    times_ms: list[int]
    bands: tuple[Band, ...]
    crs: str
    transform: tuple[float, ...]
    resolution: float
    nodata: float | int | None
    cs: int
    encoding: str
    anchor_interval: int
    shard_time: int | None
    data_codecs: list[dict[str, Any]]
    plane_codecs: list[dict[str, Any]]
    variable: str
    mask: Any
    coverage: Any


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def _check_data(data: Any) -> tuple[Any, np.dtype, tuple[int, int, int, int]]:
    if not is_cell_source(
        data
    ):  # a cell source produces its own planes (chronozarr.write._cell_tasks)
        data = unwrap_array(data, "data")
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
    return data, dtype, (n_time, n_band, height, width)


def _check_layout(
    dtype: np.dtype,
    n_time: int,
    chunk_size: Any,
    encoding: Any,
    anchor_interval: Any,
    shard: bool,
    shard_time: Any,
) -> tuple[int, int | None]:
    """The chunk size (2.1), encoding (4.1), anchor interval (4.2) and shard_time (7.1)."""
    if not _is_int(chunk_size) or chunk_size < 2 or chunk_size % 2:
        raise EncodeError(
            "chunk_size", f"must be an even integer >= 2 (spec 2.1), got {chunk_size!r}"
        )
    if encoding not in ("auto", "none", "star-delta"):
        raise EncodeError("encoding", f"expected 'auto', 'none' or 'star-delta', got {encoding!r}")
    if encoding == "star-delta" and dtype.name not in DELTA_DTYPES:
        raise EncodeError(
            "encoding",
            f"star-delta is only valid for uint8 and uint16 data (spec 4.1), data is {dtype.name}",
        )
    if not _is_int(anchor_interval) or anchor_interval < 1:
        raise EncodeError("anchor_interval", f"must be an integer >= 1, got {anchor_interval!r}")
    sharded = bool(shard) or shard_time is not None
    if shard_time is not None and (not _is_int(shard_time) or shard_time < 1):
        raise EncodeError("shard_time", f"must be an integer >= 1 (spec 7.1), got {shard_time!r}")
    st = (int(shard_time) if shard_time is not None else n_time) if sharded else None
    return int(chunk_size), st


def _check_planes(
    mask: Any, coverage: Any, n_time: int, height: int, width: int
) -> tuple[Any, Any]:
    """mask (2.4) and coverage (2.5): (time, y, x) uint8 (or bool); mask values 0 or 1."""
    mask = unwrap_array(mask, "mask")
    coverage = unwrap_array(coverage, "coverage")
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
    return mask, coverage


def _codecs_for(codec: Any, options: Any, dtype: np.dtype) -> tuple[list[Any], list[Any]]:
    """The chunk codec chains of data and of the uint8 planes (spec 8)."""
    try:
        return codec_chain(codec, options, dtype.name), codec_chain(codec, options, "uint8")
    except ValueError as exc:  # codec_chain names the bad option; report it under its argument
        arg = "codec_options" if str(exc).startswith("codec_options") else "codec"
        raise EncodeError(arg, str(exc).split(": ", 1)[-1]) from exc


def _open_target(store: Any, options: Mapping[str, Any] | None, work_key: str | None) -> Store:
    """The new or empty target the store is written into (spec 9: never over a store). A
    resumable run (``work_key``) may continue a partial of the same key (decision 0017)."""
    target = open_target(store, dict(options) if options else None)
    try:
        return _check_target(target, work_key)
    except (RemoteStoreError, StoreAccessError) as exc:  # unreachable, no credentials: say where
        raise EncodeError("store", f"cannot use {target.url} as the target: {exc}") from exc


def _check_target(target: Store, work_key: str | None) -> Store:
    if target.get("zarr.json") is not None:
        raise EncodeError(
            "store",
            f"{target.url} already holds a Zarr store; a re-encode goes under a new prefix (spec 9)",
        )
    if isinstance(target, LocalStore) and target.root.exists() and not target.root.is_dir():
        raise EncodeError("store", f"{target.url} is not a folder")
    if work_key is not None:
        work = WorkLog(target, work_key)
        others = work.other_keys()
        if others:
            raise EncodeError(
                "store",
                f"{target.url} holds the partial of another build ({WORK_PREFIX}/"
                f"{sorted(others)[0]}/); finish that build, or delete it, or write elsewhere",
            )
        if work.started():
            log.info("resuming the partial build %s at %s", work_key, target.url)
            return target
    if not store_is_empty(target):
        raise EncodeError(
            "store",
            f"{target.url} is not empty; a store is written into a new or empty folder or prefix "
            "(a re-encode goes under a new prefix, spec 9)",
        )
    return target


class _SourceInput:
    """A cell source seen as :class:`CellInput` (data planes only), for the auto sample."""

    def __init__(self, source: Any, cs: int, height: int, width: int):
        self.source, self.cs, self.height, self.width = source, cs, height, width

    def cell(self, ys: slice, xs: slice, times: Any = None) -> Any:
        planes = self.source.open_cell(ys.start // self.cs, xs.start // self.cs, ys, xs, times)
        return lambda t: planes(t)[0]


def _sample_input(args: _Args) -> Any:
    if is_cell_source(args.data):
        return _SourceInput(args.data, args.cs, args.shape[2], args.shape[3])
    return CellInput(args.data, args.dtype)


def _auto_task(ctx: tuple[Layout, _Args], task: SampleTask) -> tuple[int, int]:
    """One sampled cell of the auto choice on a worker (a cell source produces its planes
    there): the (plain, star-delta) byte totals of its chunks, not the chunks."""
    layout, args = ctx
    h, w = args.shape[2:]
    _r, _c, plain, delta = encode_sample(layout, _sample_input(args), h, w, task)
    return sum(len(b) for b in plain.values()), sum(len(b) for b in delta.values())


def _choose(
    layout: Layout, args: _Args, runner: Runner, work: WorkLog | None
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
        window = sample_window(layout.n_time, args.anchor_interval)
        tasks = [(cell, window) for cell in cells]
        sizes = runner.run(_auto_task, (layout, args), tasks, name="cz-auto")
        ratio, n = sample_ratio(sizes), len(cells)
        plains: dict[tuple[int, int], dict[int, bytes]] = {}
        deltas: dict[tuple[int, int], dict[int, bytes]] = {}
    else:
        ratio, n, plains, deltas = choose_encoding(
            layout, _sample_input(args), h, w, runner.workers, args.anchor_interval
        )
    if work is not None:
        work.record("choice", {"ratio": ratio, "sampled_cells": n})
    return ratio, n, plains, deltas


def _select(
    layout: Layout, args: _Args, runner: Runner, work: WorkLog | None
) -> tuple[Temporal, dict[tuple[int, int], dict[int, bytes]]]:
    """The temporal block (4.1-4.3) and, for auto, the sampled chunks of the chosen encoding.
    ``layout`` is switched to ``none`` when that is the choice."""
    selection = None
    samples: dict[tuple[int, int], dict[int, bytes]] = {}
    chosen = args.encoding
    if args.encoding == "auto":
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
            anchor_interval=args.anchor_interval,
            anchor_indices=tuple(sorted(layout.vol_anchors)),
            delta_reference=dict(layout.vol_refs),
            selection=selection,
        ),
        samples,
    )


def _level_info(args: _Args, k: int, h: int, w: int) -> LevelInfo:
    tf = level_transform(args.transform, k)
    return LevelInfo(
        str(k),
        level_resolution(args.resolution, k),
        tuple(tf),
        (args.shape[0], args.shape[1], h, w),
        grid_shape(h, w, args.cs),
    )


def _level_docs(args: _Args, info: LevelInfo) -> dict[str, dict[str, Any]]:
    """The zarr.json documents of a level's data, mask and coverage arrays (2.1, 2.4, 2.5)."""
    path = info.path
    docs = {
        f"{path}/{args.variable}": data_array_doc(
            shape=info.shape,
            dtype=args.dtype.name,
            cs=args.cs,
            codecs=args.data_codecs,
            nodata=args.nodata,
            shard_time=args.shard_time,
            crs=args.crs,
            transform=list(info.transform),
        )
    }
    h, w = info.shape[2:]
    for name, plane in (("mask", args.mask), ("coverage", args.coverage)):
        if plane is not None:
            docs[f"{path}/{name}"] = plane_array_doc(
                shape=(args.shape[0], h, w),
                cs=args.cs,
                codecs=args.plane_codecs,
                shard_time=args.shard_time,
            )
    return docs


def _tasks(info: LevelInfo, args: _Args, threads: int) -> list[tuple[tuple[int, int], range]]:
    cells = [(r, c) for r in range(info.grid[0]) for c in range(info.grid[1])]
    return split_tasks(cells, range(args.shape[0]), args.shard_time, threads)


def _morton(cell: tuple[int, int]) -> int:
    """The Z-order index of a cell: the four cells under a coarser cell are consecutive, at
    every level, so a pipelined run completes coarser cells early (not a row of them last)."""
    r, c = cell
    z = 0
    for bit in range(32):
        z |= ((r >> bit) & 1) << (2 * bit + 1) | ((c >> bit) & 1) << (2 * bit)
    return z


def _needs_below(
    tasks: list[Any], todo: list[int], below_tasks: list[Any], below_todo: list[int]
) -> Callable[[int], list[int]]:
    """For stage position p (task ``tasks[todo[p]]`` of level k): the stage positions of the
    level k-1 tasks it reads, every time group of the 2 x 2 cells below it (spec 6; a
    delta's reference timesteps may lie in another group, so all of them)."""
    by_cell: dict[tuple[int, int], list[int]] = {}
    for q, j in enumerate(below_todo):
        by_cell.setdefault(tuple(below_tasks[j][0]), []).append(q)

    def needs(p: int) -> list[int]:
        r, c = tasks[todo[p]][0]
        return [
            q
            for cell in (
                (2 * r, 2 * c),
                (2 * r, 2 * c + 1),
                (2 * r + 1, 2 * c),
                (2 * r + 1, 2 * c + 1),
            )
            for q in by_cell.get(cell, ())
        ]

    return needs


def _level0_stage(
    layout: Layout,
    args: _Args,
    info: LevelInfo,
    samples: dict[tuple[int, int], dict[int, bytes]],
    runner: Runner,
    work: WorkLog | None,
) -> tuple[Any, list[Any]]:
    """Level 0's context and tasks: from the input, cell by cell, with the volatility terms (5)."""
    h, w = info.shape[2:]
    source = args.data if is_cell_source(args.data) else None
    array = (
        None if source is not None else ArrayInput(args.data, args.dtype, args.mask, args.coverage)
    )
    tasks: list[Any] = _tasks(info, args, runner.threads())
    if runner.remote and array is not None:  # each task carries its cell's part of the input
        tasks = [
            (cell, times, array.view(*cell_slice(cell[0], cell[1], args.cs, h, w)))
            for cell, times in tasks
        ]
    ctx = Level0Context(
        layout, h, w, source if source is not None else (None if runner.remote else array),
        {} if runner.remote else samples, work.key if work else None,
    )  # fmt: skip
    return ctx, tasks


def _check_visible(layout: Layout, args: _Args) -> None:
    """The workers' first chunk is visible here: else they wrote to a target this process does
    not see (a local path that is not on a filesystem shared with every worker), and the
    metadata written here would describe missing data (spec 9)."""
    key = chunk_key(f"0/{args.variable}", 0, 0, 0, has_band=True)
    if layout.store.size(key) is None:
        raise ClusterError(
            f"{layout.store.url}: the workers wrote level 0 but {key} is not visible from this "
            "process; a local path must be on a filesystem every worker shares (or write to "
            "s3://...)"
        )


def _write_levels(
    layout: Layout,
    args: _Args,
    samples: dict[tuple[int, int], dict[int, bytes]],
    runner: Runner,
    work: WorkLog | None,
    on_task: Any = None,
) -> tuple[
    list[LevelInfo], dict[str, dict[str, Any]], dict[str, dict[str, int]], np.ndarray, list[Any]
]:
    """Every level's chunks; returns the levels, their array documents, the shard sizes (7.3),
    the volatility grid (5) and the level-0 sources' summaries.

    Level 0 from the input, level k from level k-1 as stored (read back, reconstructed,
    block-averaged, spec 6). Locally level by level; on a cluster pipelined (each level-k task
    waits only for the cells below it, :mod:`chronozarr.write._runner`), level 0 submitted in
    Z-order so that coarser cells complete early. A resumed run skips the tasks whose summary
    it finds (decision 0017); every level's results are in task order either way."""
    height, width = args.shape[2:]
    levels = [_level_info(args, k, h, w) for k, (h, w) in enumerate(level_shapes(height, width, args.cs))]  # fmt: skip
    docs: dict[str, dict[str, Any]] = {}
    for info in levels:
        docs.update(_level_docs(args, info))
    stages: list[Stage] = []
    plans: list[tuple[list[Any], list[int], dict[int, CellResult]]] = []
    for k, info in enumerate(levels):
        if k == 0:
            fn: Any = level0_task
            ctx, tasks = _level0_stage(layout, args, info, samples, runner, work)
        else:
            below = levels[k - 1]
            needed = {key: dict(doc) for key, doc in docs.items() if key.split("/", 1)[0] == below.path}  # fmt: skip
            fn, ctx = upper_task, UpperContext(layout, info, below, needed, work.key if work else None)  # fmt: skip
            tasks = _tasks(info, args, runner.threads())
        todo, found = pending_tasks(tasks, info.path, work)
        stage = Stage(f"cz-level{info.path}", fn, ctx, [tasks[i] for i in todo])
        if k == 0:
            if on_task is not None:
                stage.on_result = lambda _p, res: on_task(res)

            def level0_done() -> None:
                samples.clear()  # the auto sample's chunks are written
                if runner.remote:
                    _check_visible(layout, args)

            stage.on_done = level0_done
            if runner.remote:
                stage.order = sorted(range(len(todo)), key=lambda p: (_morton(tasks[todo[p]][0]), p))  # fmt: skip
        else:
            below_tasks, below_todo, _found = plans[-1]
            stage.needs = _needs_below(tasks, todo, below_tasks, below_todo)
        stages.append(stage)
        plans.append((tasks, todo, found))
    ran = runner.run_stages(stages)
    shard_bytes: dict[str, dict[str, int]] = {}
    volatility = np.zeros(grid_shape(height, width, args.cs), dtype=np.float32)
    extras: list[Any] = []
    for k, (info, (tasks, todo, found), stage_results) in enumerate(zip(levels, plans, ran, strict=True)):  # fmt: skip
        raw: list[Any] = [found.get(i) for i in range(len(tasks))]
        for i, res in zip(todo, stage_results, strict=True):
            raw[i] = res
        if k == 0:
            extras = [res.extra for res in raw if res.extra is not None]
        results = merge_results(raw)
        if k == 0:
            for res in results:
                volatility[res.row, res.col] = volatility_value(res.vol_sum, res.vol_count)
        if args.shard_time is not None:
            shard_bytes[info.path] = {
                key: size for res in results for key, size in res.shard_sizes.items()
            }
    return levels, docs, shard_bytes, volatility, extras


def _layout(args: _Args, target: Store) -> Layout:
    """The per-cell writer's layout, star-delta on the nominal schedule (spec 4.2, 5); ``_select``
    switches it to none when that is the choice."""
    n_time, n_band = args.shape[:2]
    vol_anchors, vol_refs = schedule(n_time, args.anchor_interval)
    return Layout(
        store=target,
        variable=args.variable,
        n_time=n_time,
        n_band=n_band,
        cs=args.cs,
        dtype=args.dtype,
        nodata=args.nodata,
        encoding="star-delta",
        anchors=frozenset(vol_anchors),
        refs=vol_refs,
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=args.shard_time,
        data_codecs=args.data_codecs,
        plane_codecs=args.plane_codecs,
        has_mask=args.mask is not None,
        has_coverage=args.coverage is not None,
    )


def _check_args(
    data: Any,
    times: Any,
    bands: Any,
    crs: Any,
    transform: Any,
    nodata: Any,
    mask: Any,
    coverage: Any,
    options: Mapping[str, Any],
) -> _Args:
    """Every argument checked (and normalized) before anything is written."""
    data, dtype, shape = _check_data(data)
    n_time, n_band, height, width = shape
    # an xarray coordinate (da.time, da.band) is read as its values
    times = times.values if hasattr(times, "dims") and hasattr(times, "values") else times
    bands = bands.values if hasattr(bands, "dims") and hasattr(bands, "values") else bands
    try:
        times_ms = parse_times(times, n_time)
    except ValueError as exc:  # parse_times says which entry; report it under ``times``
        raise EncodeError("times", str(exc)) from exc
    band_objs = normalize_bands(bands, n_band)
    crs_text = normalize_crs(crs)
    transform_t, resolution = normalize_transform(transform)
    nodata_v = normalize_nodata(nodata, dtype)
    cs, st = _check_layout(
        dtype,
        n_time,
        options["chunk_size"],
        options["encoding"],
        options["anchor_interval"],
        options["shard"],
        options["shard_time"],
    )
    data_codecs, plane_codecs = _codecs_for(options["codec"], options["codec_options"], dtype)
    variable = options["variable"]
    if (
        not isinstance(variable, str)
        or not _VARIABLE_RE.fullmatch(variable)
        or variable in _RESERVED
    ):
        raise EncodeError(
            "variable",
            f"expected a plain array name other than {sorted(_RESERVED)}, got {variable!r}",
        )
    if is_cell_source(data):
        if mask is not None or coverage is not None:
            raise EncodeError("mask", "a cell source gives its own mask and coverage planes")
        mask = _FROM_SOURCE if getattr(data, "has_mask", False) else None
        coverage = _FROM_SOURCE if getattr(data, "has_coverage", False) else None
    else:
        mask, coverage = _check_planes(mask, coverage, n_time, height, width)
    return _Args(
        data, dtype, shape, times_ms, band_objs, crs_text, transform_t, resolution, nodata_v, cs,
        options["encoding"], int(options["anchor_interval"]), st, data_codecs, plane_codecs,
        variable, mask, coverage,
    )  # fmt: skip


@dataclass
class EncodeSummary:
    """What ``encode`` returns: the target's URL, whether it resumed a partial, the level-0
    cell source's summaries (``summary()`` of each task, JSON), and the wall seconds of its
    phases (``select``: the temporal choice, with the auto sample; ``levels``: every chunk of
    every level; ``metadata``: the metadata written last, spec 9)."""

    store: str
    resumed: bool
    sources: list[Any]
    phases: dict[str, float] = field(default_factory=dict)


def _check_provenance(provenance: Any) -> None:
    if provenance is None or callable(provenance):
        return
    if not isinstance(provenance, Mapping):
        raise EncodeError("provenance", "expected an object (mapping)")
    try:  # checked now, not when the root zarr.json is written after every chunk
        dumps(dict(provenance))
    except (TypeError, ValueError) as exc:  # json refuses numpy scalars, NaN, objects
        raise EncodeError("provenance", f"must be JSON (no NaN, no numpy scalars): {exc}") from exc


def encode(
    data: Any,
    store: Any,
    *,
    times: Sequence[Any],
    bands: Sequence[Any],
    crs: Any,
    transform: Sequence[float],
    nodata: Any = DEFAULT,
    mask: Any = None,
    coverage: Any = None,
    encoding: str = "auto",
    anchor_interval: int = 6,
    chunk_size: int = 512,
    shard: bool = False,
    shard_time: int | None = None,
    codec: str = "zstd",
    codec_options: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | Callable[[list[Any]], Mapping[str, Any]] | None = None,
    provenance_items: Sequence[str] | Callable[[list[Any]], Sequence[str]] | None = None,
    variable: str = "data",
    workers: int | None = None,
    scheduler: Any = None,
    retries: int = DEFAULT_RETRIES,
    worker_timeout: float = DEFAULT_WORKER_TIMEOUT,
    store_options: Mapping[str, Any] | None = None,
    resume_key: str | None = None,
    on_task: Callable[[Any], None] | None = None,
) -> EncodeSummary:
    """Write ``data`` (time, band, y, x) as a chronozarr v0.2 store at ``store``.

    See docs/spec.md for every argument's meaning. Raises ``EncodeError`` naming the argument on
    bad input, before anything is written. ``shard_time`` implies ``shard``. ``workers`` is the
    number of cells encoded at once (default: up to 4, bounded by the CPU count).

    ``store``: a local path or ``file://`` URL, an ``s3://bucket/prefix`` URL (obstore;
    ``store_options`` are its endpoint, region, client_options...), an obstore store object, or
    any :class:`chronozarr.io.Store` (:mod:`chronozarr.io._targets`). ``data`` may also be a
    *cell source* producing a cell's planes on the worker (:mod:`chronozarr.write._cell_tasks`).

    ``scheduler``: a ``distributed.Client``. Every per-cell task then runs on its workers and
    writes its chunk objects to the target itself (a numpy/dask input travels as the cell's part,
    a cell source is scattered once); upper levels are computed on the workers from the level
    below read back from the target; this process writes the metadata last (spec 9). Same
    objects, same bytes as a local run. ``retries`` is dask's per-task retry count;
    ``worker_timeout`` bounds the wait when no worker is left (then ``ClusterError``).

    ``resume_key``: keep each finished task's summary under ``.cz-build/<resume_key>/`` in the
    target, so that the same call after an interruption skips what is written (decision 0017);
    the prefix is removed after the root is written. The caller promises that the same key means
    the same input and arguments.

    ``provenance`` and ``provenance_items`` (one JSON document per timestep, the
    ``provenance_items`` array) may be callables of the cell source's summaries, called after
    level 0. ``on_task`` is called here with each level-0 task's result (progress).
    """
    options = dict(
        chunk_size=chunk_size,
        encoding=encoding,
        anchor_interval=anchor_interval,
        shard=shard,
        shard_time=shard_time,
        codec=codec,
        codec_options=codec_options,
        variable=variable,
    )
    args = _check_args(data, times, bands, crs, transform, nodata, mask, coverage, options)
    _check_provenance(provenance)
    if resume_key is not None and not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", str(resume_key)):
        raise EncodeError(
            "resume_key", f"expected 1-64 letters, digits, _ or -, got {resume_key!r}"
        )
    target = _open_target(store, store_options, resume_key)
    work = WorkLog(target, resume_key) if resume_key is not None else None
    resumed = bool(work and work.started())
    if work is not None and not resumed:
        work.start({"shape": list(args.shape), "variable": args.variable})
    workers = workers or default_workers()
    runner = Runner(scheduler, workers=workers, retries=retries, worker_timeout=worker_timeout)
    layout = _layout(args, target)
    clock = time.perf_counter()
    phases: dict[str, float] = {}
    temporal, samples = _select(layout, args, runner, work)
    phases["select"] = time.perf_counter() - clock
    levels, docs, shard_bytes, volatility, extras = _write_levels(
        layout, args, samples, runner, work, on_task
    )
    if temporal.encoding == "star-delta":  # residuals, said on the arrays too (decision 0040)
        for lv in levels:
            docs[f"{lv.path}/{args.variable}"]["attributes"].update(residuals_attribute())
    phases["levels"] = time.perf_counter() - clock - phases["select"]
    clock = time.perf_counter()
    prov = provenance(extras) if callable(provenance) else provenance
    _check_provenance(prov)
    extra_arrays = None
    if provenance_items is not None:
        documents = provenance_items(extras) if callable(provenance_items) else provenance_items
        if len(documents) != args.shape[0]:
            raise EncodeError("provenance_items", f"expected {args.shape[0]} documents")
        objects, doc = items_array_objects(list(documents), args.data_codecs[-1])
        extra_arrays = {PROVENANCE_ITEMS: (doc, objects)}
    attrs = RootAttrs(
        spec_version=SPEC_VERSION,
        variable=args.variable,
        times=tuple(format_time(t) for t in args.times_ms),
        bands=args.bands,
        band_names=tuple(b.name for b in args.bands),
        nodata=args.nodata,
        crs=args.crs,
        temporal=temporal,
        volatility_path="volatility",
        mask_variable="mask" if args.mask is not None else None,
        coverage_variable="coverage" if args.coverage is not None else None,
        provenance=dict(prov) if prov is not None else None,
        levels=tuple(levels),
        shard_bytes=shard_bytes if args.shard_time is not None else None,
    )
    multiscale = multiscales([lv.path for lv in levels], args.crs)
    write_metadata(
        target, attrs, docs, args.times_ms, volatility, multiscale, codec, codec_options,
        extra_arrays=extra_arrays,
    )  # fmt: skip
    if work is not None:
        clear_work(target, work.key)  # after the root: the commit (decision 0017)
    phases["metadata"] = time.perf_counter() - clock
    return EncodeSummary(target.url, resumed, extras, phases)

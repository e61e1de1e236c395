"""The plan of an ``encode`` (spec 2-9; decisions 0017, 0026): its levels, one stage of cell tasks
per level, and the commit of its metadata.

Level 0 is written from the input, cell by cell, with the volatility terms (spec 5); level k
from level k-1 as stored (read back, reconstructed, block-averaged, spec 6). On a cluster the
plan is pipelined: level 0 is submitted in Z-order, and each level-k task waits only for the
cells below it, so coarser cells complete early and the last level's chain is the only tail. A
resumed run skips the tasks whose summary it finds; every level's results are in task order
either way, so the volatility sums add up in the same order and the bytes are the same.

The commit (:class:`EncodeCommit`) writes what comes after every chunk: the provenance items,
the coordinates and the volatility, every zarr.json below the root, the root last (spec 9); the
root is the commit point, and the work prefix is removed after it (decision 0017).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.errors import ClusterError, EncodeError
from chronozarr.format import (
    SPEC_VERSION,
    HistoryBlock,
    LevelInfo,
    RootAttrs,
    Temporal,
    cell_slice,
    chunk_key,
    data_array_doc,
    format_time,
    grid_shape,
    level_resolution,
    level_shapes,
    level_transform,
    multiscales_layout,
    multiscales_list,
    plane_array_doc,
    residuals_attribute,
    root_geo_attributes,
    volatility_value,
)
from chronozarr.io import Store
from chronozarr.provenance import PROVENANCE_ITEMS, items_array_objects
from chronozarr.write._arguments import EncodeArgs, check_provenance
from chronozarr.write._cell_tasks import (
    ArrayInput,
    Level0Context,
    UpperContext,
    is_cell_source,
    level0_task,
    upper_task,
)
from chronozarr.write._cells import CellResult, Layout, merge_results, time_groups
from chronozarr.write._commit import write_metadata
from chronozarr.write._fused import FusedContext, Tail, fused_task
from chronozarr.write._history import history_block, history_documents
from chronozarr.write._plan import Stage, WritePlan, needs_below
from chronozarr.write._runner import Runner
from chronozarr.write._tasks import (
    CellResults,
    GridTasks,
    grid_order,
    pyramid_needed_by,
    pyramid_needs,
)
from chronozarr.write._worklog import WorkLog, clear_work, pending_tasks

__all__ = ["EncodeCommit", "encode_plan", "level_infos"]

Samples = dict[tuple[int, int], dict[int, bytes]]

#: Level-0 cells per side of a group sharing one context on a cluster when the cell source has
#: ``part(rows, cols)`` (decision 0058): aligned with Z-order, so a group's tasks are submitted
#: one after the other and at most a few groups' contexts exist at a time.
GROUP = 16


def level_infos(args: EncodeArgs) -> list[LevelInfo]:
    """Every level of the store: path, resolution, transform, shape and grid (spec 3.7, 6)."""
    height, width = args.shape[2:]
    out = []
    for k, (h, w) in enumerate(level_shapes(height, width, args.cs)):
        out.append(
            LevelInfo(
                str(k),
                level_resolution(args.resolution, k),
                tuple(level_transform(args.transform, k)),
                (args.shape[0], args.shape[1], h, w),
                grid_shape(h, w, args.cs),
            )
        )
    return out


def _level_docs(args: EncodeArgs, info: LevelInfo) -> dict[str, dict[str, Any]]:
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


def _tasks(info: LevelInfo, args: EncodeArgs, threads: int, history_time: int | None) -> GridTasks:
    """The level's (cell, timesteps) tasks, made on demand (decision 0049)."""
    rows, cols = info.grid
    groups = time_groups(rows * cols, range(args.shape[0]), args.shard_time, threads, history_time)
    return GridTasks(rows, cols, groups)


def _check_visible(cells: Layout, args: EncodeArgs) -> None:
    """The workers' first chunk is visible here: else they wrote to a target this process does
    not see (a local path that is not on a filesystem shared with every worker), and the
    metadata written here would describe missing data (spec 9)."""
    key = chunk_key(f"0/{args.variable}", 0, 0, 0, has_band=True)
    if cells.store.size(key) is None:
        raise ClusterError(
            f"{cells.store.url}: the workers wrote level 0 but {key} is not visible from this "
            "process; a local path must be on a filesystem every worker shares (or write to "
            "s3://...)"
        )


def _level0_stage(
    cells: Layout,
    args: EncodeArgs,
    info: LevelInfo,
    samples: Samples,
    runner: Runner,
    work: WorkLog | None,
) -> Stage:
    """Level 0: from the input, cell by cell, with the volatility terms (spec 5). On a cluster
    a numpy or dask input travels as each task's part of it, in Z-order."""
    h, w = info.shape[2:]
    source = args.data if is_cell_source(args.data) else None
    array = None if source else ArrayInput(args.data, args.dtype, args.mask, args.coverage)
    history = cells.history
    grid_tasks = _tasks(info, args, runner.threads(), history.time_block if history else None)
    tasks: Sequence[Any] = grid_tasks
    if runner.remote and array is not None:  # each task carries its cell's part of the input
        tasks = [
            (cell, times, array.view(*cell_slice(cell[0], cell[1], args.cs, h, w)))
            for cell, times in tasks
        ]
    grouped = runner.remote and callable(getattr(source, "part", None))
    ctx = Level0Context(
        cells, h, w,
        None if grouped else source if source is not None else (None if runner.remote else array),
        {} if runner.remote else samples, work.key if work else None,
    )  # fmt: skip

    def done() -> None:
        samples.clear()  # the auto sample's chunks are written
        if runner.remote:
            _check_visible(cells, args)

    _todo, found = pending_tasks(tasks, info.path, work)
    stage = Stage(
        "cz-level0", level0_task, ctx, tasks, done=found, on_done=done,
        order=grid_order(grid_tasks) if runner.remote else None, sink=CellResults(len(tasks)),
    )  # fmt: skip
    if grouped:  # a context per group of cells, each made as the group is submitted (0058)
        grid = info.grid

        def group_context(key: tuple[int, int]) -> Level0Context:
            rows = range(key[0] * GROUP, min(grid[0], (key[0] + 1) * GROUP))
            cols = range(key[1] * GROUP, min(grid[1], (key[1] + 1) * GROUP))
            assert source is not None
            return dataclasses.replace(ctx, source=source.part(rows, cols))

        stage.group = lambda i: (tasks[i][0][0] // GROUP, tasks[i][0][1] // GROUP)
        stage.group_context = group_context
    return stage


def _upper_stage(
    cells: Layout,
    args: EncodeArgs,
    levels: Sequence[LevelInfo],
    k: int,
    docs: Mapping[str, dict[str, Any]],
    below: Stage,
    runner: Runner,
    work: WorkLog | None,
) -> Stage:
    """Level k from level k-1 as stored; each task needs the tasks of the 2 x 2 cells below."""
    info, lower = levels[k], levels[k - 1]
    needed = {key: dict(doc) for key, doc in docs.items() if key.split("/", 1)[0] == lower.path}
    ctx = UpperContext(cells, info, lower, needed, work.key if work else None)
    tasks = _tasks(info, args, runner.threads(), None)
    _todo, found = pending_tasks(tasks, info.path, work)
    stage = Stage(
        f"cz-level{info.path}", upper_task, ctx, tasks, done=found, sink=CellResults(len(tasks))
    )
    if isinstance(below.tasks, GridTasks):  # computed, not tabulated (decision 0049)
        stage.needs = pyramid_needs(tasks, below.tasks)
        stage.needed_by = pyramid_needed_by(tasks, below.tasks)
    else:  # level 0 of a numpy or dask input on a cluster: its tasks carry their input
        stage.needs = needs_below(tasks, below.tasks)
    return stage


def _fusable(args: EncodeArgs, cells: Layout, levels: Sequence[LevelInfo], runner: Runner,
             work: WorkLog | None) -> bool:  # fmt: skip
    """Whether levels 0 and 1 are written by one stage of :func:`level01_task` (decision 0057):
    a local, not resumable run (its work log names a task per level) of an in-memory numpy
    input (its planes are views: holding the 2 x 2 cells costs nothing, where a lazy input
    would hold a batch per cell), without the companion (a buffer per cell), of an integer
    dtype (the volatility terms are integers, exact in any grouping of timesteps; float sums
    would depend on the fused stage's time groups)."""
    return (
        len(levels) > 1
        and not runner.remote
        and work is None
        and cells.history is None
        and args.dtype.kind in "ui"
        and isinstance(args.data, np.ndarray)
        and all(a is None or isinstance(a, np.ndarray) for a in (args.mask, args.coverage))
    )


#: the coarsest level the fused stage writes (decision 0059): level 2 still saves reading back
#: and decoding level 1 (a quarter of level 0's chunks); each level further would quadruple the
#: planes a task holds to save a sixteenth
FUSED_TOP = 2


def _fused_top(args: EncodeArgs, levels: Sequence[LevelInfo], runner: Runner) -> int:
    """The coarsest level of the fused stage: 2 when its tasks keep every thread busy twice
    over (tasks by level-2 cell and time range), else 1 (decision 0057's stage)."""
    top = min(FUSED_TOP, len(levels) - 1)
    while top > 1 and len(_tasks(levels[top], args, runner.threads(), None)) < 2 * runner.threads():
        top -= 1
    return top


def _fused_stage(
    cells: Layout, args: EncodeArgs, levels: Sequence[LevelInfo], samples: Samples, runner: Runner
) -> Stage:
    """Levels 0 to :func:`_fused_top` in one stage (see :func:`_fusable`): a task per (cell of
    that level, time range) writes the cells under it and then it, timestep by timestep."""
    fused = list(levels[: _fused_top(args, levels, runner) + 1])
    array = ArrayInput(args.data, args.dtype, args.mask, args.coverage)
    tasks = _tasks(fused[-1], args, runner.threads(), None)
    tail = Tail(len(tasks), runner.threads())
    ctx = FusedContext(cells, fused, array, samples, tail)
    rows, cols = levels[0].grid
    side = 2 ** (len(fused) - 1)  # level-0 cells per side of a top cell

    def chunks_to_encode(i: int) -> int:
        (r, c), times = tasks[i]
        below = [
            (y, x)
            for y in range(side * r, min(side * (r + 1), rows))
            for x in range(side * c, min(side * (c + 1), cols))
        ]
        reused = sum(len(set(samples.get(cell, ())) & set(times)) for cell in below)
        return len(below) * len(times) - reused

    # the largest tasks first, so the threads end together: a task whose cells the auto sample
    # encoded (decision 0057) is lighter
    order = sorted(range(len(tasks)), key=lambda i: (-chunks_to_encode(i), i))

    def done() -> None:
        samples.clear()  # the auto sample's chunks are written
        tail.close()  # the helper of the last task (decision 0067)

    return Stage("cz-fused", fused_task, ctx, tasks, order=order, on_done=done)


def _unfused(results: list[list[Any]], n_fused: int) -> list[list[CellResult]]:
    """The fused stage's results as the stages by level would give them: each level by cell,
    then time (as :func:`_tasks` lists them; the sort is stable, so a cell's time ranges stay
    in order)."""
    fused, rest = results[0], results[1:]
    by_level = [
        sorted((res for task in fused for res in task[k]), key=lambda res: (res.row, res.col))
        for k in range(n_fused)
    ]
    return [*by_level, *rest]


@dataclass
class EncodeCommit:
    """What an encode writes after every chunk (spec 9), given the stages' results: returns the
    level-0 cell source's summaries (the extras)."""

    args: EncodeArgs
    target: Store
    levels: list[LevelInfo]
    docs: dict[str, dict[str, Any]]
    temporal: Temporal
    work: WorkLog | None
    provenance: Any = None
    provenance_items: Any = None
    history: HistoryBlock | None = None
    extras: list[Any] = field(default_factory=list)
    history_objects: dict[str, tuple[dict[str, Any], Mapping[str, bytes]]] = field(
        default_factory=dict
    )  # the companion's field coordinates (docs/spec.md C25)

    def __call__(self, results: Sequence[Sequence[CellResult] | CellResults]) -> list[Any]:
        args = self.args
        if self.temporal.encoding == "star-delta":  # residuals, said on the arrays (decision 0040)
            for lv in self.levels:
                self.docs[f"{lv.path}/{args.variable}"]["attributes"].update(residuals_attribute())
        self.extras = _extras(results[0])
        volatility = _volatility(results[0], self.levels[0].grid)
        shard_bytes = None
        if args.shard_time is not None:
            shard_bytes = {
                info.path: _shard_sizes(ran) for info, ran in zip(self.levels, results, strict=True)
            }
        prov = self.provenance(self.extras) if callable(self.provenance) else self.provenance
        check_provenance(prov)
        attrs = RootAttrs(
            spec_version=SPEC_VERSION,
            variable=args.variable,
            times=tuple(format_time(t) for t in args.times_ms),
            bands=args.bands,
            band_names=tuple(b.name for b in args.bands),
            nodata=args.nodata,
            crs=args.crs,
            temporal=self.temporal,
            volatility_path="volatility",
            mask_variable="mask" if args.mask is not None else None,
            coverage_variable="coverage" if args.coverage is not None else None,
            provenance=dict(prov) if prov is not None else None,
            levels=tuple(self.levels),
            shard_bytes=shard_bytes,
            history=self.history,
        )
        write_metadata(
            self.target, attrs, self.docs, args.times_ms, volatility,
            self._multiscales(), args.layout.codec,
            other_root_attrs=root_geo_attributes(args.crs, self.levels, args.layout.multiscales),
            extra_arrays={**self.history_objects, **(self._items() or {})},
        )  # fmt: skip
        if self.work is not None:
            clear_work(self.target, self.work.key)  # after the root: the commit (decision 0017)
        return self.extras

    def _multiscales(self) -> Any:
        """The root's multiscales in the layout's form (spec 3.4; docs/spec.md C26)."""
        if self.args.layout.multiscales == "layout":
            return multiscales_layout(self.levels)
        return multiscales_list(self.levels, self.args.crs)

    def _items(self) -> dict[str, tuple[dict[str, Any], Mapping[str, bytes]]] | None:
        """The ``provenance_items`` array (one JSON document per timestep, spec 3.8)."""
        items = self.provenance_items
        if items is None:
            return None
        documents = items(self.extras) if callable(items) else items
        if len(documents) != self.args.shape[0]:
            raise EncodeError("provenance_items", f"expected {self.args.shape[0]} documents")
        objects, doc = items_array_objects(list(documents), self.args.data_codecs[-1])
        return {PROVENANCE_ITEMS: (doc, objects)}


def encode_plan(
    args: EncodeArgs,
    cells: Layout,
    temporal: Temporal,
    samples: Samples,
    runner: Runner,
    work: WorkLog | None,
    *,
    on_task: Callable[[Any], None] | None = None,
    on_source: Callable[[int, Any], None] | None = None,
    provenance: Any = None,
    provenance_items: Any = None,
) -> WritePlan:
    """The plan of an encode whose temporal choice is made (``cells`` holds it): see the
    module docstring. ``samples`` are the auto sample's chunks of the chosen encoding, reused
    by level 0 on local threads. ``on_source(i, summary)``: see ``encode``."""
    levels = level_infos(args)
    docs: dict[str, dict[str, Any]] = {}
    for info in levels:
        docs.update(_level_docs(args, info))
    fused = _fusable(args, cells, levels, runner, work)
    if fused:  # a local numpy input: no cell source summaries to fold
        stages = [_fused_stage(cells, args, levels, samples, runner)]
        if on_task is not None:

            def each_child(_i: int, res: Any) -> None:
                for child in res[0]:
                    on_task(child)

            stages[0].on_result = each_child
    else:
        stages = [_level0_stage(cells, args, levels[0], samples, runner, work)]
        stages[0].on_result = _level0_result(stages[0], on_task, on_source)
    n_fused = len(stages[0].ctx.levels) if fused else 1
    for k in range(n_fused, len(levels)):
        stages.append(_upper_stage(cells, args, levels, k, docs, stages[-1], runner, work))
    commit = EncodeCommit(
        args, cells.store, levels, docs, temporal, work, provenance, provenance_items
    )
    if cells.history is not None:  # the companion's documents (docs/spec.md C25)
        commit.history = history_block(cells.history)
        for info in levels:
            if info.path in cells.history.levels:
                history_docs, objects = history_documents(
                    cells.history, level_path=info.path, shape=info.shape,
                    dtype=args.dtype.name, codecs=args.data_codecs, fill_value=_fill(args),
                    band_names=[b.name for b in args.bands], has_mask=args.mask is not None,
                    has_coverage=args.coverage is not None, codec=args.layout.codec,
                )  # fmt: skip
                field_path = next(iter(objects)).rsplit("/c/", 1)[0]
                commit.history_objects[field_path] = (history_docs.pop(field_path), objects)
                docs.update(history_docs)
    if fused:
        return WritePlan(stages, lambda results: commit(_unfused(results, n_fused)), pipelined=True)
    return WritePlan(stages, commit, pipelined=True)


def _level0_result(
    stage: Stage,
    on_task: Callable[[Any], None] | None,
    on_source: Callable[[int, Any], None] | None,
) -> Callable[[int, Any], None] | None:
    """Level 0's result hook: progress, and the summaries folded by ``on_source`` as they
    arrive (those a resumed run found first, in task order), not kept (decision 0058)."""
    if on_source is not None:
        for i in sorted(stage.done):
            on_source(i, stage.done[i].extra)
            stage.done[i].extra = None

    def arrived(i: int, res: Any) -> None:
        if on_task is not None:
            on_task(res)
        if on_source is not None:
            on_source(i, res.extra)
            res.extra = None

    return arrived if on_task is not None or on_source is not None else None


def _extras(level0: Sequence[CellResult] | CellResults) -> list[Any]:
    """The level-0 cell source summaries, in task order."""
    if isinstance(level0, CellResults):
        return level0.extras()
    return [res.extra for res in level0 if res.extra is not None]


def _volatility(level0: Sequence[CellResult] | CellResults, grid: tuple[int, int]) -> np.ndarray:
    """Each level-0 cell's volatility (spec 5) from its tasks' terms, added in task order."""
    if isinstance(level0, CellResults):
        return level0.volatility(grid, volatility_value)
    volatility = np.zeros(grid, dtype=np.float32)
    for res in merge_results(level0):
        volatility[res.row, res.col] = volatility_value(res.vol_sum, res.vol_count)
    return volatility


def _shard_sizes(ran: Sequence[CellResult] | CellResults) -> dict[str, int]:
    """A level's shard sizes (spec 3.9 ``shard_bytes``), cell by cell in task order."""
    if isinstance(ran, CellResults):
        return ran.shard_sizes()
    return {key: n for res in merge_results(ran) for key, n in res.shard_sizes.items()}


def _fill(args: EncodeArgs) -> Any:
    """The data array's fill_value (spec 2.3), which the companion shares (C25)."""
    return data_array_doc(
        shape=args.shape, dtype=args.dtype.name, cs=args.cs, codecs=args.data_codecs,
        nodata=args.nodata, shard_time=None, crs=None, transform=args.transform,
    )["fill_value"]  # fmt: skip

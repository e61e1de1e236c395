"""A level's tasks made on demand, its results folded into arrays, the submission order generated
as it is consumed (decision 0049): each is what the tabulated form was, checked against an
independent definition (the list ``split_tasks`` makes, ``sorted`` by ``morton``, the inverse of
``needs_below``, the eager depth-first order of decision 0026, ``merge_results``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.format import volatility_value
from chronozarr.write import split_tasks
from chronozarr.write._cells import CellResult, merge_results, time_groups
from chronozarr.write._plan import Stage, iter_submission_order, morton, needs_below
from chronozarr.write._tasks import (
    CellResults,
    GridTasks,
    grid_order,
    pyramid_needed_by,
    pyramid_needs,
)

grids = st.tuples(st.integers(1, 9), st.integers(1, 9))


def grid_tasks(rows: int, cols: int, n_time: int, shard: int | None, workers: int) -> GridTasks:
    return GridTasks(rows, cols, time_groups(rows * cols, range(n_time), shard, workers))


def listed(rows: int, cols: int, n_time: int, shard: int | None, workers: int) -> list[Any]:
    cells = [(r, c) for r in range(rows) for c in range(cols)]
    return split_tasks(cells, range(n_time), shard, workers)


@settings(deadline=None)  # a loaded machine: hypothesis times examples
@given(grids, st.integers(1, 30), st.none() | st.integers(1, 12), st.integers(1, 64))
def test_grid_tasks_are_the_list_split_tasks_makes(
    grid: tuple[int, int], n_time: int, shard: int | None, workers: int
) -> None:
    tasks = grid_tasks(*grid, n_time, shard, workers)
    expected = listed(*grid, n_time, shard, workers)
    assert len(tasks) == len(expected)
    assert list(tasks) == expected
    assert [tasks[i] for i in range(len(tasks))] == expected
    assert tasks[-1] == expected[-1] and tasks[1:3] == expected[1:3]


@settings(deadline=None)
@given(grids, st.integers(1, 30), st.integers(1, 64))
def test_grid_order_is_the_tasks_sorted_by_z_order_then_index(
    grid: tuple[int, int], n_time: int, workers: int
) -> None:
    tasks = grid_tasks(*grid, n_time, None, workers)
    expected = sorted(range(len(tasks)), key=lambda i: (morton(tasks[i][0]), i))
    assert grid_order(tasks).tolist() == expected


@settings(deadline=None)
@given(grids, st.integers(1, 30), st.integers(1, 64))
def test_pyramid_needs_are_needs_below_and_needed_by_is_their_inverse(
    grid: tuple[int, int], n_time: int, workers: int
) -> None:
    rows, cols = grid
    below = grid_tasks(rows, cols, n_time, None, workers)
    above = grid_tasks((rows + 1) // 2, (cols + 1) // 2, n_time, None, workers)
    tabulated = needs_below(list(above), list(below))
    needs = pyramid_needs(above, below)
    needed_by = pyramid_needed_by(above, below)
    inverse: dict[int, list[int]] = {}
    for i in range(len(above)):
        assert needs(i) == tabulated(i)
        for j in tabulated(i):
            inverse.setdefault(j, []).append(i)
    assert {j: needed_by(j) for j in range(len(below))} == inverse


def eager_order(stages: Sequence[Stage]) -> list[tuple[int, int]]:
    """The pipelined submission order as decision 0026 defined it, tabulated: every waiting
    count and dependents list first, then a depth-first walk (the former implementation)."""
    waits: dict[tuple[int, int], int] = {}
    dependents: dict[tuple[int, int], list[tuple[int, int]]] = {}
    first: list[tuple[int, int]] = []
    for k in range(1, len(stages)):
        for i in stages[k].todo():
            wanted = stages[k].wanted(i, stages[k - 1])
            if not wanted:
                first.append((k, i))
            waits[(k, i)] = len(wanted)
            for j in wanted:
                dependents.setdefault((k - 1, j), []).append((k, i))
    out: list[tuple[int, int]] = []
    stack = [(0, i) for i in reversed(stages[0].todo())] + list(reversed(first))
    while stack:
        item = stack.pop()
        out.append(item)
        ready = []
        for dependent in dependents.get(item, ()):
            waits[dependent] -= 1
            if not waits[dependent]:
                ready.append(dependent)
        stack += reversed(ready)
    return out


def pyramid(side: tuple[int, int], n_time: int, workers: int, done: st.DataObject) -> list[Stage]:
    """The stages of a pyramid over ``side`` cells, some tasks found done (a resumed run)."""
    stages: list[Stage] = []
    rows, cols = side
    below: GridTasks | None = None
    while True:
        tasks = grid_tasks(rows, cols, n_time, None, workers)
        found = done.draw(st.sets(st.integers(0, len(tasks) - 1), max_size=len(tasks)))
        stage = Stage(
            f"l{len(stages)}", lambda ctx, task: None, None, tasks, done=dict.fromkeys(found)
        )
        if below is None:
            stage.order = grid_order(tasks)
        else:
            stage.needs = pyramid_needs(tasks, below)
            stage.needed_by = pyramid_needed_by(tasks, below)
        stages.append(stage)
        if rows == cols == 1:
            return stages
        below, rows, cols = tasks, (rows + 1) // 2, (cols + 1) // 2


@settings(max_examples=60, deadline=None)
@given(grids, st.integers(1, 6), st.integers(1, 40), st.data())
def test_the_generated_order_is_the_eager_one_fresh_or_resumed(
    grid: tuple[int, int], n_time: int, workers: int, data: st.DataObject
) -> None:
    stages = pyramid(grid, n_time, workers, data)
    expected = eager_order(stages)
    assert list(iter_submission_order(stages)) == expected
    for stage in stages:  # without the inverse: the generic table gives the same order
        stage.needed_by = None
    assert list(iter_submission_order(stages)) == expected


results = st.builds(
    lambda vol, n, shards, extra: (vol, n, shards, extra),
    st.floats(0, 1e12) | st.integers(0, 2**40),
    st.integers(0, 10**9),
    st.dictionaries(st.text("abc/0123", min_size=1, max_size=6), st.integers(0, 10**6), max_size=3),
    st.none() | st.integers(0, 9),
)


@settings(max_examples=60, deadline=None)
@given(st.tuples(st.integers(1, 5), st.integers(1, 5)), st.integers(1, 3), st.data())
def test_folded_results_give_the_volatility_and_shard_sizes_of_the_list(
    grid: tuple[int, int], groups: int, data: st.DataObject
) -> None:
    rows, cols = grid
    listed_results = []
    for r in range(rows):
        for c in range(cols):
            for _g in range(groups):
                vol, n, shards, extra = data.draw(results)
                listed_results.append(CellResult(r, c, shards, vol, n, extra))
    folded = CellResults(len(listed_results))
    arrival = data.draw(st.permutations(range(len(listed_results))))
    for i in arrival:  # in the order they arrive, not task order
        folded.put(i, listed_results[i])
    expected = np.zeros(grid, dtype=np.float32)
    for res in merge_results(listed_results):
        expected[res.row, res.col] = volatility_value(res.vol_sum, res.vol_count)
    got = folded.volatility(grid, volatility_value)
    assert got.tobytes() == expected.tobytes()
    sizes = {k: n for res in merge_results(listed_results) for k, n in res.shard_sizes.items()}
    assert list(folded.shard_sizes().items()) == list(sizes.items())  # the same order too
    assert folded.extras() == [res.extra for res in listed_results if res.extra is not None]
    assert list(folded) == listed_results

"""The writer's staged run (decision 0026): the Z-order of level 0, which level k-1
tasks a level-k task needs, and the local Runner's stages (order, results, hooks)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from chronozarr.write import Runner, Stage, split_tasks
from chronozarr.write._encode import _morton, _needs_below

cells_st = st.tuples(st.integers(0, 2**12), st.integers(0, 2**12))


@given(cells_st, st.integers(0, 3))
def test_z_order_keeps_the_four_cells_under_a_coarser_cell_together(
    cell: tuple[int, int], child: int
) -> None:
    r, c = cell
    dr, dc = divmod(child, 2)
    # every level: the children of (r, c) are the four codes after 4 * code(r, c)
    assert _morton((2 * r + dr, 2 * c + dc)) == 4 * _morton((r, c)) + child


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 7), st.integers(1, 4))
def test_a_level_k_task_needs_exactly_the_tasks_of_the_cells_below_it(
    rows: int, cols: int, n_time: int, workers: int
) -> None:
    below_cells = [(r, c) for r in range(rows) for c in range(cols)]
    cells = [(r, c) for r in range(-(-rows // 2)) for c in range(-(-cols // 2))]
    below = split_tasks(below_cells, range(n_time), None, workers)
    tasks = split_tasks(cells, range(n_time), None, workers)
    below_todo = list(range(0, len(below), 2))  # a resumed run: every other task is done
    todo = list(range(len(tasks)))
    needs = _needs_below(tasks, todo, below, below_todo)
    for p, i in enumerate(todo):
        r, c = tasks[i][0]
        want = {
            q
            for q, j in enumerate(below_todo)
            if below[j][0][0] // 2 == r and below[j][0][1] // 2 == c
        }
        assert set(needs(p)) == want


def test_local_stages_run_in_order_and_return_results_in_task_order() -> None:
    seen: list[tuple[str, int]] = []
    lock = threading.Lock()
    done: list[str] = []

    def record(name: str) -> Callable[[int, int], None]:
        def hook(i: int, res: int) -> None:
            with lock:
                seen.append((name, res))

        return hook

    stages = [
        Stage("a", lambda ctx, t: ctx * t, 10, [1, 2, 3], order=[2, 0, 1], on_result=record("a")),
        Stage("b", lambda ctx, t: ctx + t, 100, [5, 6], on_result=record("b")),
    ]
    stages[0].on_done = lambda: done.append("a")
    stages[1].on_done = lambda: done.append("b")
    results = Runner(workers=1).run_stages(stages)
    assert results == [[10, 20, 30], [105, 106]]
    assert seen == [("a", 30), ("a", 10), ("a", 20), ("b", 105), ("b", 106)]
    assert done == ["a", "b"]
    assert Runner(workers=3).run_stages(stages)[0] == [10, 20, 30]

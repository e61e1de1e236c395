"""The write plan's stages (decision 0026): the Z-order of level 0, which level k-1 tasks a
level-k task needs, the order a cluster submits the tasks in, and the local runner (order,
results, hooks, resumed tasks)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from hypothesis import given
from hypothesis import strategies as st

from chronozarr.write import Runner, Stage, split_tasks
from chronozarr.write._plan import morton, needs_below, submission_order

cells_st = st.tuples(st.integers(0, 2**12), st.integers(0, 2**12))


@given(cells_st, st.integers(0, 3))
def test_z_order_keeps_the_four_cells_under_a_coarser_cell_together(
    cell: tuple[int, int], child: int
) -> None:
    r, c = cell
    dr, dc = divmod(child, 2)
    # every level: the children of (r, c) are the four codes after 4 * code(r, c)
    assert morton((2 * r + dr, 2 * c + dc)) == 4 * morton((r, c)) + child


@given(st.integers(1, 9), st.integers(1, 9), st.integers(1, 7), st.integers(1, 4))
def test_a_level_k_task_needs_exactly_the_tasks_of_the_cells_below_it(
    rows: int, cols: int, n_time: int, workers: int
) -> None:
    below_cells = [(r, c) for r in range(rows) for c in range(cols)]
    cells = [(r, c) for r in range(-(-rows // 2)) for c in range(-(-cols // 2))]
    below = split_tasks(below_cells, range(n_time), None, workers)
    tasks = split_tasks(cells, range(n_time), None, workers)
    needs = needs_below(tasks, below)
    for i, ((r, c), _times) in enumerate(tasks):
        want = {j for j, ((br, bc), _t) in enumerate(below) if br // 2 == r and bc // 2 == c}
        assert set(needs(i)) == want


def _pyramid(rows: int, cols: int, levels: int, done_every: int) -> list[Stage]:
    """Stages of one task per cell, a level per stage, with every ``done_every``-th task of
    each stage found done (a resumed run); level 0 in Z-order."""
    stages: list[Stage] = []
    for k in range(levels):
        r, c = -(-rows // 2**k), -(-cols // 2**k)
        tasks = [((y, x), range(1)) for y in range(r) for x in range(c)]
        done = {i: f"found {k}.{i}" for i in range(0, len(tasks), done_every)} if done_every else {}
        stage = Stage(f"s{k}", lambda ctx, t: t, None, tasks, done=done)
        if k:
            stage.needs = needs_below(tasks, stages[-1].tasks)
        else:
            stage.order = sorted(range(len(tasks)), key=lambda i: (morton(tasks[i][0]), i))
        stages.append(stage)
    return stages


@given(st.integers(1, 12), st.integers(1, 12), st.integers(1, 4), st.sampled_from([0, 2, 3]))
def test_a_pipelined_plan_submits_each_task_after_the_tasks_it_reads(
    rows: int, cols: int, levels: int, done_every: int
) -> None:
    stages = _pyramid(rows, cols, levels, done_every)
    order = submission_order(stages)
    expected = {
        (k, i) for k, s in enumerate(stages) for i in range(len(s.tasks)) if i not in s.done
    }
    assert sorted(order) == sorted(expected) and len(order) == len(expected)  # each once
    at = {item: n for n, item in enumerate(order)}
    assert [i for k, i in order if k == 0] == stages[0].todo()  # level 0 in its (Z-)order
    for k, i in order:
        if not k:
            continue
        wanted = [at[(k - 1, j)] for j in stages[k].needs(i) if j not in stages[k - 1].done]  # type: ignore[misc]
        if wanted:  # right after its last need: no level-0 task between them
            assert max(wanted) < at[(k, i)]
            assert all(kk for kk, _ in order[max(wanted) + 1 : at[(k, i)]])
        else:  # it waits for nothing: before any level-0 task
            assert all(kk for kk, _ in order[: at[(k, i)]])


def test_a_plan_that_is_not_pipelined_runs_stage_after_stage() -> None:
    stages = _pyramid(5, 3, 3, 2)
    order = submission_order(stages, pipelined=False)
    assert order == [(k, i) for k, s in enumerate(stages) for i in s.todo()]


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
        Stage(
            "b", lambda ctx, t: ctx + t, 100, [5, 6, 7], done={1: "found"}, on_result=record("b")
        ),
    ]
    stages[0].on_done = lambda: done.append("a")
    stages[1].on_done = lambda: done.append("b")
    results = Runner(workers=1).run(stages)
    assert results == [[10, 20, 30], [105, "found", 107]]  # found results in their place
    assert seen == [("a", 30), ("a", 10), ("a", 20), ("b", 105), ("b", 107)]  # not run again
    assert done == ["a", "b"]
    assert Runner(workers=3).run(stages)[0] == [10, 20, 30]

"""Pass 1 of a local build (every (month, block) composited into the spill) runs on the
library's one runner (decision 0064): a failing task stops the pass without running the tasks not
started, nothing is left at the target, and each month's item references are made (signed) when
its first task is taken and dropped with its last."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from cz.build import BuildError, BuildOptions, build
from cz.build import executor as pass_one
from cz.plan import plan_recipe
from cz.recipe import load_recipe
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items

pytestmark = LOADER_WARNINGS


def _recipe(tmp_path: Path, chunk: int) -> Any:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes)
    return load_recipe(recipe(tmp_path, start="2024-01", end="2024-04", chunk=chunk))


def test_a_failing_composite_stops_the_pass_and_leaves_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recipe(tmp_path, chunk=8)
    plan = plan_recipe(rec)
    total = len(pass_one._BlockTasks(plan, rec, halo=0))
    calls: list[int] = []
    lock = threading.Lock()
    real = pass_one.compute_block

    def failing(task: Any, ctx: Any) -> Any:
        with lock:
            calls.append(task.t)
            first = len(calls) == 1
        if first:
            raise RuntimeError("a bug in one block")
        return real(task, ctx)

    monkeypatch.setattr(pass_one, "compute_block", failing)
    out = tmp_path / "out.zarr"
    with pytest.raises(BuildError, match="a composite task failed: RuntimeError: a bug"):
        build(rec, out=str(out), options=BuildOptions(workers=2))
    assert total >= 8, total  # enough tasks that running them all would show
    assert len(calls) < total, (len(calls), total)  # the queued ones were cancelled
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.zarr")]


def test_a_month_is_signed_at_its_first_task_and_dropped_with_its_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rec = _recipe(tmp_path, chunk=8)
    plan = plan_recipe(rec)
    made: list[str] = []

    def refs(month: Any, recipe: Any) -> list[str]:
        made.append(month.month)
        return [f"{month.month}/{i}" for i in range(len(month.items))]

    monkeypatch.setattr(pass_one, "item_refs", refs)
    tasks = pass_one._BlockTasks(plan, rec, halo=0)
    with_items = [m.month for m in plan.months if m.items]
    assert len(with_items) >= 2 and len(tasks) > len(with_items)
    assert made == []  # nothing signed before the first task is taken
    seen: list[str] = []
    taken = []
    for i in range(len(tasks)):
        task = tasks[i]
        taken.append(task.month)
        if task.month not in seen:
            seen.append(task.month)
            assert made == seen  # signed when its first task is taken, once
        assert all(ref.startswith(f"{task.month}/") for ref in task.items)
        assert len(tasks._refs) <= 1  # taken in order, only the month in hand is held
    assert made == with_items and not tasks._refs
    # each month's shares of the progress add up to one month
    for month in with_items:
        share = sum(s for s, m in zip(tasks.shares, taken, strict=True) if m == month)
        assert share == pytest.approx(1.0)

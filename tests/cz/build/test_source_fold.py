"""A cluster build counts the items its cells read without keeping their ids (decision 0068).

Oracle: the number of distinct ids among the items marked read, counted with a Python set over
the plan's own items (what ``BuildResult.items_read`` counted before: the union of each month's
set of ids).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from cz.build.cluster_write import SourceFold
from cz.build.executor import CompositeStats

_month = st.lists(st.tuples(st.sampled_from([f"i{k}" for k in range(12)]), st.booleans()))


@given(st.lists(_month, min_size=1, max_size=6))
def test_the_count_of_distinct_items_read(months: list[list[tuple[str, bool]]]) -> None:
    """Months of items (an id may be in two months, or twice in one), some of them read."""
    plan: Any = SimpleNamespace(
        months=[SimpleNamespace(items=[SimpleNamespace(id=i) for i, _ in m]) for m in months]
    )
    fold = SourceFold(plan)
    for t, month in enumerate(months):
        read = [j for j, (_i, was) in enumerate(month) if was]
        fold.add(t, {"items_read": {str(t): read}, "observations": {}, "skipped": [],
                     "valid": 0, "filled": 0})  # fmt: skip
    expected = {i for month in months for i, was in month if was}
    stats = fold.result()
    assert stats.distinct_read() == len(expected)
    assert stats.items_read == {}  # no id kept


def test_a_local_builds_sets_are_counted() -> None:
    stats = CompositeStats(items_read={0: {"a", "b"}, 3: {"b", "c"}})
    assert stats.distinct_read() == 3
    assert CompositeStats().distinct_read() == 0

"""``cz.months``: the one implementation of month arithmetic (recipes, STAC windows, plans,
appends), checked against Python's own calendar arithmetic (``datetime``)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cz import months

MONTHS = st.builds(lambda y, m: f"{y:04d}-{m:02d}", st.integers(1900, 2200), st.integers(1, 12))


@given(MONTHS)
def test_next_month_is_the_first_day_after_the_month(month: str) -> None:
    start, after = months.month_bounds(month)
    last_day = after - timedelta(days=1)
    assert months.month_of(start) == months.month_of(last_day) == month
    assert 28 <= (after - start).days <= 31
    assert months.next_month(month) == months.month_of(after)
    assert months.month_bounds(months.next_month(month))[0] == after


@given(MONTHS, st.integers(0, 40))
def test_parse_months_of_a_range_steps_by_next_month(first: str, n: int) -> None:
    want = [first]
    for _ in range(n):
        want.append(months.next_month(want[-1]))
    assert months.parse_months(f"{first}..{want[-1]}") == want
    assert months.parse_months(first) == [first]
    assert months.month_range(first, want[-1]) == want


@pytest.mark.parametrize("text", ["2024-13", "2024-00", "24-01", "2024-1", "2024-01..", "x"])
def test_parse_months_refuses_what_is_no_month(text: str) -> None:
    assert not months.is_month(text) or ".." in text
    with pytest.raises(ValueError, match="expected a month"):
        months.parse_months(text)


def test_an_empty_range_is_refused() -> None:
    with pytest.raises(ValueError, match="is empty"):
        months.parse_months("2024-05..2024-04")


@given(st.datetimes(min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1)))
def test_iso_utc_round_trips_through_fromisoformat(moment: datetime) -> None:
    text = months.iso_utc(moment)
    assert text.endswith("Z")
    assert datetime.fromisoformat(text.replace("Z", "+00:00")) == moment.replace(tzinfo=UTC)
    assert months.month_of_time(text) == months.month_of(moment)


def test_the_stac_interval_covers_whole_months() -> None:
    assert (
        months.month_datetime_range("2020-12", "2021-01")
        == "2020-12-01T00:00:00Z/2021-02-01T00:00:00Z"
    )

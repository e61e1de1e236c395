"""Composite periods (cz.periods; docs/recipes.md, "composite", ``period``) against pandas'
calendar arithmetic and the definitions' words, for any day."""

from __future__ import annotations

import itertools
from datetime import UTC, date, datetime, timedelta

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cz.periods import PeriodRule, label_of_time, parse_labels, period_adjective

days = st.dates(min_value=date(1950, 1, 1), max_value=date(2100, 12, 31))
RULES = [
    PeriodRule("month"),
    PeriodRule("dekad"),
    PeriodRule("8-day"),
    PeriodRule("16-day"),
    PeriodRule("days", days=5),
    PeriodRule("days", days=7, anchor=date(2024, 1, 1)),
    PeriodRule("quarter"),
    PeriodRule("season"),
    PeriodRule("year"),
]


def reference_start(rule: PeriodRule, day: date) -> date:
    """The start of the period holding ``day``, from pandas or the definition's words."""
    ts = pd.Timestamp(day)
    if rule.kind == "month":
        return pd.Period(ts, freq="M").start_time.date()
    if rule.kind == "quarter":
        return pd.Period(ts, freq="Q-DEC").start_time.date()
    if rule.kind == "season":  # quarters ending in November: DJF, MAM, JJA, SON
        return pd.Period(ts, freq="Q-NOV").start_time.date()
    if rule.kind == "year":
        return pd.Period(ts, freq="Y").start_time.date()
    if rule.kind == "days":
        origin = pd.Timestamp(rule.anchor)
        return (
            origin + ((ts - origin) // pd.Timedelta(days=rule.days)) * pd.Timedelta(days=rule.days)
        ).date()
    if rule.kind == "dekad":  # days 1-10, 11-20, 21 to the end
        return day.replace(day=1 if day.day <= 10 else 11 if day.day <= 20 else 21)
    n = 8 if rule.kind == "8-day" else 16  # windows from January 1, by day of year
    doy = day.timetuple().tm_yday
    return date(day.year, 1, 1) + timedelta(days=(doy - 1) // n * n)


@settings(max_examples=300, deadline=None)
@given(days, st.sampled_from(RULES))
def test_each_day_lies_in_the_reference_period(day: date, rule: PeriodRule) -> None:
    start = rule.start_of(day)
    assert start == reference_start(rule, day)
    end = rule.end_of(start)
    assert start <= day < end
    assert rule.start_of(end) == end == rule.following(start)  # the periods tile the calendar
    assert rule.start_of(end - timedelta(days=1)) == start
    moment = datetime(day.year, day.month, day.day, 23, 59, tzinfo=UTC)
    period = rule.containing(moment)
    assert period is not None and period.start == start and period.end == end


@settings(max_examples=100, deadline=None)
@given(days, st.integers(0, 400), st.sampled_from(RULES))
def test_between_lists_the_periods_starting_in_the_range(
    first: date, span: int, rule: PeriodRule
) -> None:
    last = first + timedelta(days=span)
    got = rule.between(first, last)
    want = sorted({reference_start(rule, first + timedelta(days=k)) for k in range(span + 400)})
    want = [d for d in want if first <= d <= last]
    assert [p.start for p in got] == want
    assert all(p.end == q.start for p, q in itertools.pairwise(got))


def test_known_periods_and_labels() -> None:
    season = PeriodRule("season")
    djf = season.containing(datetime(2024, 2, 10, tzinfo=UTC))
    assert djf is not None and (djf.start, djf.end) == (date(2023, 12, 1), date(2024, 3, 1))
    assert djf.label == "2023-12-01" and djf.time == "2023-12-01T00:00:00Z"
    assert djf.bounds == ("2023-12-01T00:00:00Z", "2024-03-01T00:00:00Z")
    sixteen = PeriodRule("16-day")
    last = sixteen.containing(datetime(2024, 12, 31, tzinfo=UTC))
    assert last is not None and (last.start, last.end) == (date(2024, 12, 18), date(2025, 1, 1))
    assert PeriodRule("month").period(date(2024, 3, 1)).label == "2024-03"
    assert parse_labels("2024-03-11..2024-04-01", PeriodRule("dekad")) == [
        "2024-03-11",
        "2024-03-21",
        "2024-04-01",
    ]
    with pytest.raises(ValueError, match=r"2024-03-12 is not the start of a dekad period"):
        parse_labels("2024-03-12", PeriodRule("dekad"))
    assert label_of_time("2024-03-11T00:00:00Z", PeriodRule("dekad")) == "2024-03-11"
    assert label_of_time("2024-03-01T00:00:00Z", PeriodRule("month")) == "2024-03"
    assert [period_adjective(PeriodRule(k)) for k in ("month", "dekad", "16-day", "season")] == [
        "monthly",
        "dekadal",
        "16-day",
        "seasonal",
    ]
    assert period_adjective(PeriodRule("days", days=5)) == "5-day"


def test_windows_are_explicit_and_may_leave_gaps() -> None:
    rule = PeriodRule(
        "windows",
        windows=((date(2024, 3, 1), date(2024, 6, 1)), (date(2024, 9, 1), date(2024, 12, 1))),
    )
    assert rule.containing(datetime(2024, 7, 1, tzinfo=UTC)) is None  # a gap
    spring = rule.containing(datetime(2024, 5, 31, 23, tzinfo=UTC))
    assert spring is not None and spring.end == date(2024, 6, 1)
    assert rule.following(date(2024, 3, 1)) == date(2024, 9, 1)
    assert rule.following(date(2024, 9, 1)) is None
    assert [p.label for p in rule.between(date(2024, 1, 1), date(2024, 12, 31))] == [
        "2024-03-01",
        "2024-09-01",
    ]
    with pytest.raises(ValueError, match="not overlap"):
        PeriodRule(
            "windows",
            windows=((date(2024, 3, 1), date(2024, 6, 1)), (date(2024, 5, 1), date(2024, 7, 1))),
        )

"""Calendar months (pure): ``YYYY-MM`` strings, their UTC bounds, ranges and ISO times.

A store has one timestep per UTC calendar month (its first instant, spec 3.9 times); every
month computation of the toolkit (recipes, STAC search windows, plans, appends) is here.
"""

from __future__ import annotations

from datetime import UTC, datetime


def parse_month(month: str) -> tuple[int, int]:
    year, mon = month.split("-")
    return int(year), int(mon)


def month_bounds(month: str) -> tuple[datetime, datetime]:
    """``[start, next month start)`` of a ``YYYY-MM`` month, as UTC datetimes."""
    year, mon = parse_month(month)
    start = datetime(year, mon, 1, tzinfo=UTC)
    after = datetime(year + (mon == 12), mon % 12 + 1, 1, tzinfo=UTC)
    return start, after


def month_range(start: str, end: str) -> list[str]:
    """Every month from ``start`` to ``end``, both included (empty if ``end`` < ``start``)."""
    y0, m0 = parse_month(start)
    y1, m1 = parse_month(end)
    first, last = y0 * 12 + m0 - 1, y1 * 12 + m1 - 1
    return [f"{i // 12:04d}-{i % 12 + 1:02d}" for i in range(first, last + 1)]


def month_of(moment: datetime) -> str:
    """The UTC calendar month of a datetime (a naive datetime is taken as UTC)."""
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment.year:04d}-{moment.month:02d}"


def iso_utc(moment: datetime) -> str:
    """``2020-06-01T08:06:11.024Z`` style: UTC, ``Z``, fractional seconds only when non-zero."""
    moment = moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + "Z"

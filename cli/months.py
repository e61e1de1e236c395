"""Calendar months (pure): ``YYYY-MM`` strings, their UTC bounds, ranges and ISO times.

A store has one timestep per UTC calendar month (its first instant, spec 3.9 times); every
month computation of the toolkit (recipes, STAC search windows, plans, appends) is here.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

__all__ = [
    "MONTH_RE",
    "is_month",
    "iso_utc",
    "month_bounds",
    "month_datetime_range",
    "month_of",
    "month_of_time",
    "month_range",
    "next_month",
    "parse_month",
    "parse_months",
]

#: A calendar month as a recipe, a plan and ``cz append --month`` write it.
MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")


def is_month(text: str) -> bool:
    """Whether ``text`` is a ``YYYY-MM`` month (01..12)."""
    return MONTH_RE.match(text) is not None


def parse_month(month: str) -> tuple[int, int]:
    """``2024-03`` -> ``(2024, 3)``."""
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


def next_month(month: str) -> str:
    """The month after ``month``."""
    year, mon = parse_month(month)
    return f"{year + (mon == 12):04d}-{mon % 12 + 1:02d}"


def month_of_time(iso: str) -> str:
    """The month of a store time (``2024-03-01T00:00:00Z`` -> ``2024-03``, spec 3.9)."""
    return iso[:7]


def month_datetime_range(start: str, end: str) -> str:
    """The RFC 3339 interval covering months ``start`` .. ``end`` (both included), UTC."""
    first, _ = month_bounds(start)
    _, after = month_bounds(end)
    return f"{first:%Y-%m-%dT%H:%M:%SZ}/{after:%Y-%m-%dT%H:%M:%SZ}"


def parse_months(text: str) -> list[str]:
    """``2026-10`` or ``2026-10..2026-12`` -> the months, in order. Raises ValueError."""
    parts = [p.strip() for p in text.split("..")]
    if len(parts) not in (1, 2) or not all(is_month(p) for p in parts):
        raise ValueError(f"expected a month YYYY-MM or a range YYYY-MM..YYYY-MM, got {text!r}")
    months = month_range(parts[0], parts[-1])
    if not months:
        raise ValueError(f"the range {text!r} is empty: {parts[-1]} is before {parts[0]}")
    return months

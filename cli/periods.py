"""Composite periods (pure): the time windows a store's timesteps stand for (docs/recipes.md,
"composite", ``period``).

A store has one timestep per period, stamped with the period's first instant (spec 3.9 times);
the period is ``[start, end)`` in UTC. Kinds:

- ``month``: calendar months (the default; labels ``YYYY-MM``, as before periods existed);
- ``dekad``: days 1-10, 11-20 and 21 to the month's end (FAO's and openEO's dekads);
- ``8-day``, ``16-day``: windows of 8 or 16 days from each January 1, the year's last one
  shorter (MODIS' 8- and 16-day composites: day of year 1, 17, 33, ... 353);
- ``days`` (``{days: N}``): consecutive N-day windows counted from ``anchor`` (default
  1970-01-01), across year ends;
- ``quarter``: January-March, April-June, July-September, October-December;
- ``season``: meteorological seasons DJF (December to February, starting in December of the year
  before), MAM, JJA, SON;
- ``year``: calendar years;
- ``windows``: explicit ``[start, end)`` date pairs, in order, not overlapping (gaps allowed).

A period's label is ``YYYY-MM`` for months and its start date ``YYYY-MM-DD`` for every other kind.
The periods of a recipe are those whose start falls in its time range (:func:`periods_between`).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta

from cz.months import iso_utc

__all__ = [
    "KINDS",
    "Period",
    "PeriodRule",
    "label_of_time",
    "parse_day",
    "parse_labels",
    "period_adjective",
]

#: Every ``composite.period`` kind.
KINDS = ("month", "dekad", "8-day", "16-day", "days", "quarter", "season", "year", "windows")

_DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def parse_day(text: str) -> date:
    """``2024-03-11`` -> a date. Raises ValueError."""
    if not _DAY.match(text):
        raise ValueError(f"expected a date YYYY-MM-DD, got {text!r}")
    return date.fromisoformat(text)


def _add_months(day: date, months: int) -> date:
    index = day.year * 12 + day.month - 1 + months
    return date(index // 12, index % 12 + 1, 1)


@dataclass(frozen=True)
class Period:
    """One period: ``[start, end)`` as UTC dates, and its label."""

    label: str
    start: date
    end: date

    @property
    def time(self) -> str:
        """The store time of the period: its first instant (``2024-03-11T00:00:00Z``)."""
        return iso_utc(datetime(self.start.year, self.start.month, self.start.day, tzinfo=UTC))

    @property
    def bounds(self) -> tuple[str, str]:
        """``[start, end)`` as ISO times (what the provenance records)."""
        end = datetime(self.end.year, self.end.month, self.end.day, tzinfo=UTC)
        return self.time, iso_utc(end)


@dataclass(frozen=True)
class PeriodRule:
    """A period kind with its parameters (``days`` and ``anchor`` for ``days``; ``windows``)."""

    kind: str = "month"
    days: int | None = None
    anchor: date = date(1970, 1, 1)
    windows: tuple[tuple[date, date], ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown period {self.kind!r} (one of {', '.join(KINDS)})")
        if self.kind == "days" and (self.days is None or self.days < 1):
            raise ValueError("a period of days needs days >= 1")
        if self.kind == "windows":
            if not self.windows:
                raise ValueError("period windows: expected at least one [start, end) pair")
            for (a, b), (c, _d) in zip(self.windows, self.windows[1:], strict=False):
                if c < b:
                    raise ValueError(
                        f"period windows must be in order and not overlap: {c} starts before "
                        f"{b}, the end of the window from {a}"
                    )
            for a, b in self.windows:
                if b <= a:
                    raise ValueError(f"period window [{a}, {b}): the end must follow the start")

    # --- the arithmetic of each kind ----------------------------------------------------------

    def start_of(self, day: date) -> date | None:
        """The start of the period holding ``day`` (``None``: no window holds it)."""
        kind = self.kind
        if kind == "month":
            return day.replace(day=1)
        if kind == "dekad":
            return day.replace(day=min(21, 1 + 10 * ((day.day - 1) // 10)))
        if kind in ("8-day", "16-day"):
            n = int(kind.split("-")[0])
            jan1 = date(day.year, 1, 1)
            return jan1 + timedelta(days=n * ((day - jan1).days // n))
        if kind == "days":
            assert self.days is not None
            return self.anchor + timedelta(days=self.days * ((day - self.anchor).days // self.days))
        if kind == "quarter":
            return date(day.year, 1 + 3 * ((day.month - 1) // 3), 1)
        if kind == "season":  # DJF starts in December of the year before
            return _add_months(date(day.year, day.month, 1), -(day.month % 3))
        if kind == "year":
            return date(day.year, 1, 1)
        starts = [a for a, _b in self.windows]
        i = bisect_right(starts, day) - 1
        if i >= 0 and day < self.windows[i][1]:
            return self.windows[i][0]
        return None

    def end_of(self, start: date) -> date:
        """The end (exclusive) of the period starting at ``start``."""
        kind = self.kind
        if kind == "month":
            return _add_months(start, 1)
        if kind == "dekad":
            return start.replace(day=start.day + 10) if start.day < 21 else _add_months(start, 1)
        if kind in ("8-day", "16-day"):
            n = int(kind.split("-")[0])
            return min(start + timedelta(days=n), date(start.year + 1, 1, 1))
        if kind == "days":
            assert self.days is not None
            return start + timedelta(days=self.days)
        if kind == "quarter" or kind == "season":
            return _add_months(start, 3)
        if kind == "year":
            return date(start.year + 1, 1, 1)
        return dict(self.windows)[start]

    def following(self, start: date) -> date | None:
        """The start of the period after the one starting at ``start`` (``None``: no more
        windows)."""
        if self.kind != "windows":
            return self.end_of(start)
        starts = [a for a, _b in self.windows]
        i = starts.index(start)
        return starts[i + 1] if i + 1 < len(starts) else None

    # --- periods and labels -------------------------------------------------------------------

    def period(self, start: date) -> Period:
        """The period starting at ``start`` (which must be a period start)."""
        label = f"{start:%Y-%m}" if self.kind == "month" else start.isoformat()
        return Period(label, start, self.end_of(start))

    def containing(self, moment: datetime) -> Period | None:
        """The period holding a UTC instant (a naive one is taken as UTC)."""
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
        start = self.start_of(moment.date())
        return None if start is None else self.period(start)

    def between(self, first: date, last: date) -> list[Period]:
        """Every period whose start falls in ``[first, last]`` (both days included), in order."""
        if self.kind == "windows":
            return [self.period(a) for a, _b in self.windows if first <= a <= last]
        start = self.start_of(first)
        assert start is not None
        if start < first:
            start = self.end_of(start)
        out = []
        while start <= last:
            out.append(self.period(start))
            start = self.end_of(start)
        return out

    def is_start(self, day: date) -> bool:
        """Whether ``day`` is the first day of a period."""
        return self.start_of(day) == day

    def label_day(self, label: str) -> date:
        """The start date of a period label (``YYYY-MM`` for months, else ``YYYY-MM-DD``).
        Raises ValueError for another form or a date that starts no period."""
        if self.kind == "month":
            if not _MONTH.match(label):
                raise ValueError(f"expected a month YYYY-MM, got {label!r}")
            return date(int(label[:4]), int(label[5:7]), 1)
        day = parse_day(label)
        if not self.is_start(day):
            start = self.start_of(day)
            hint = f" (the period holding it starts {start})" if start is not None else ""
            raise ValueError(f"{label} is not the start of a {self.describe()} period{hint}")
        return day

    def describe(self) -> str:
        """The kind in words: ``month``, ``dekad``, ``5-day``, ``windows``..."""
        return f"{self.days}-day" if self.kind == "days" else self.kind


def period_adjective(rule: PeriodRule) -> str:
    """The word of the provenance's ``composite`` entry: ``monthly median``, ``dekadal median``,
    ``16-day median``, ``quarterly``, ``seasonal``, ``yearly``, ``windowed``."""
    return {
        "month": "monthly",
        "dekad": "dekadal",
        "quarter": "quarterly",
        "season": "seasonal",
        "year": "yearly",
        "windows": "windowed",
    }.get(rule.kind, rule.describe())


def parse_labels(text: str, rule: PeriodRule) -> list[str]:
    """``A`` or ``A..B`` (period labels, both included) -> the labels, in order. Raises
    ValueError."""
    parts = [p.strip() for p in text.split("..")]
    if len(parts) not in (1, 2) or not all(parts):
        raise ValueError(f"expected a period or a range A..B, got {text!r}")
    first, last = rule.label_day(parts[0]), rule.label_day(parts[-1])
    if last < first:
        raise ValueError(f"the range {text!r} is empty: {parts[-1]} is before {parts[0]}")
    return [p.label for p in rule.between(first, last)]


def label_of_time(iso: str, rule: PeriodRule) -> str:
    """The label of the period a store time starts (``2024-03-11T00:00:00Z`` -> ``2024-03-11``,
    or ``2024-03`` for months; spec 3.9 times)."""
    return iso[:7] if rule.kind == "month" else iso[:10]

"""The recipe's ``composite.period`` (docs/recipes.md, "composite"; cz.periods)."""

from __future__ import annotations

from datetime import date
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from cz.periods import KINDS, PeriodRule, parse_day
from cz.recipe.base import SectionModel

__all__ = ["PeriodSpec", "as_period"]


def as_period(value: Any) -> Any:
    """``dekad`` is shorthand for ``{kind: dekad}``; ``{days: 5}`` for ``{kind: days, days: 5}``;
    ``{windows: [...]}`` for ``{kind: windows, windows: [...]}``."""
    if isinstance(value, str):
        return {"kind": value.strip()}
    if isinstance(value, dict) and "kind" not in value:
        if "days" in value:
            return {"kind": "days", **value}
        if "windows" in value:
            return {"kind": "windows", **value}
    return value


class PeriodSpec(SectionModel):
    """What one timestep of the store stands for: a calendar month (the default), a dekad, an
    8- or 16-day window of the year, N days from an anchor, a quarter, a meteorological season,
    a year, or explicit windows."""

    kind: Literal[KINDS] = "month"  # type: ignore[valid-type]
    days: int | None = Field(default=None, ge=1, le=366)
    anchor: str | None = Field(default=None, description="days: the first day of a window")
    windows: list[list[str]] | None = Field(default=None, min_length=1, max_length=10000)

    @field_validator("anchor")
    @classmethod
    def _anchor_is_a_day(cls, value: str | None) -> str | None:
        if value is not None:
            parse_day(value)
        return value

    @field_validator("windows")
    @classmethod
    def _window_pairs(cls, value: list[list[str]] | None) -> list[list[str]] | None:
        if value is None:
            return None
        for pair in value:
            if len(pair) != 2:
                raise ValueError(f"expected [start, end) date pairs, got {pair!r}")
            for day in pair:
                parse_day(day)
        return value

    @model_validator(mode="after")
    def _parameters_fit_the_kind(self) -> PeriodSpec:
        if self.kind == "days" and self.days is None:
            raise ValueError("a period of days needs days, e.g. period: {days: 5}")
        if self.kind != "days" and (self.days is not None or self.anchor is not None):
            raise ValueError(f"days and anchor go with a period of days, not {self.kind}")
        if self.kind == "windows" and not self.windows:
            raise ValueError("period windows need windows: [[YYYY-MM-DD, YYYY-MM-DD], ...]")
        if self.kind != "windows" and self.windows is not None:
            raise ValueError(f"windows go with period windows, not {self.kind}")
        self.rule()  # windows in order and not overlapping
        return self

    def rule(self) -> PeriodRule:
        """The period arithmetic of :mod:`cz.periods`. Raises ValueError."""
        windows = tuple((parse_day(a), parse_day(b)) for a, b in self.windows or ())
        anchor = parse_day(self.anchor) if self.anchor else date(1970, 1, 1)
        return PeriodRule(self.kind, self.days, anchor, windows)

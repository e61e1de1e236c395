"""Timestamps of ``chronozarr.times`` and the ``time`` coordinate (spec 2.2, 3.2, 3.5).

``time`` stores int64 milliseconds since the epoch (zarrita cannot read datetime64); the root's
mirror renders each as ``2024-01-01T00:00:00Z``, fractional seconds only when non-zero (C6)."""

from __future__ import annotations

import datetime as _dt
from typing import Any

import numpy as np

__all__ = ["format_time", "parse_time", "parse_times"]


def parse_time(value: Any) -> int:
    """Milliseconds since the epoch (UTC) of a datetime, numpy datetime64 or ISO-8601 string."""
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ms]").astype(np.int64))
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        value = value.to_pydatetime()
    if isinstance(value, _dt.datetime):
        dt = value
    elif isinstance(value, _dt.date):
        dt = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        dt = _dt.datetime.fromisoformat(text)
    else:
        raise TypeError(f"cannot read {value!r} as a time")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    delta = dt - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def parse_times(times: Any, expected: int) -> list[int]:
    """Milliseconds of ``expected`` strictly increasing times (encode and append share the rule).

    Raises ValueError with a message meant to follow the argument name ``times``.
    """
    if isinstance(times, str) or not hasattr(times, "__len__") or len(times) != expected:
        got = 0 if isinstance(times, str) or not hasattr(times, "__len__") else len(times)
        raise ValueError(f"expected {expected} times (data axis 0), got {got}")
    try:
        values = [parse_time(t) for t in times]
    except (TypeError, ValueError) as exc:  # an unparsable entry: ValueError naming it
        raise ValueError(f"cannot read a time: {exc}") from exc
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            raise ValueError(
                f"must be strictly increasing: times[{i}] = {format_time(values[i])} is not "
                f"after times[{i - 1}] = {format_time(values[i - 1])}"
            )
    return values


def format_time(ms: int) -> str:
    """ISO-8601 rendering of a time value (spec 2.2, 3.9): ``2024-01-01T00:00:00Z``.

    Fractional seconds appear only when non-zero (milliseconds).
    """
    dt = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=int(ms))
    # not strftime("%Y"): glibc does not zero-pad years below 1000, and ISO-8601 needs 4 digits
    text = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    if dt.microsecond:
        text += f".{dt.microsecond // 1000:03d}"
    return text + "Z"

"""Time rendering and parsing (spec 2.2, 3.9)."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronozarr.format import format_time, parse_time

FAST = settings(max_examples=40, deadline=None)


# --- time rendering (spec 2.2, 3.9) ------------------------------------------------------------------

MS_1900 = -2208988800000
MS_2200 = 7258118400000


@FAST
@given(ms=st.integers(MS_1900, MS_2200))
def test_format_parse_time_round_trip(ms: int) -> None:
    text = format_time(ms)
    assert parse_time(text) == ms
    assert text.endswith("Z")
    if ms % 1000:
        assert text[19] == "." and len(text) == 24
    else:
        assert len(text) == 20  # no fractional seconds when zero
    assert format_time(parse_time(text)) == text
    assert dt.datetime.fromisoformat(
        text.replace("Z", "+00:00")
    ).timestamp() * 1000 == pytest.approx(ms)


def test_time_examples() -> None:
    assert format_time(1704067200000) == "2024-01-01T00:00:00Z"
    assert format_time(1704067200123) == "2024-01-01T00:00:00.123Z"
    assert format_time(-1) == "1969-12-31T23:59:59.999Z"
    assert parse_time("2024-01-01T00:00:00Z") == 1704067200000
    assert parse_time("2024-01-01") == 1704067200000
    assert parse_time("2024-01-01T02:00:00+02:00") == 1704067200000
    assert parse_time(np.datetime64("2024-01-01T00:00:00.123456789")) == 1704067200123
    assert parse_time(dt.datetime(2024, 1, 1)) == 1704067200000
    assert parse_time(dt.date(2024, 1, 1)) == 1704067200000
    with pytest.raises(TypeError):
        parse_time(3.5)


def test_format_time_pads_the_year() -> None:
    ms = parse_time(dt.datetime(999, 5, 1, tzinfo=dt.UTC))
    assert format_time(ms) == "0999-05-01T00:00:00Z"
    assert parse_time(format_time(ms)) == ms

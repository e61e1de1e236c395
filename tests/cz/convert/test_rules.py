"""Property tests of the pure rules: dates in file names, dtype conversions, time selection."""

from __future__ import annotations

from datetime import UTC, date, datetime

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cz.convert.dtypes import DtypeRule
from cz.convert.errors import ConvertError
from cz.convert.export import select_times
from cz.convert.sources import compile_date_pattern, date_from_name

dates = st.dates(min_value=date(1000, 1, 1), max_value=date(9999, 12, 31))
noise = st.text(alphabet="abcXYZ_-.", max_size=6)


@given(dates, noise, noise, st.sampled_from(["%Y-%m-%d", "%Y%m%d", "%Y_%m_%d"]))
def test_the_default_rule_reads_any_date_written_in_a_supported_form(
    day: date, before: str, after: str, form: str
) -> None:
    name = f"{before}{day.strftime(form).zfill(8)}{after}.tif"
    assert date_from_name(name, compile_date_pattern(None)) == datetime(
        day.year, day.month, day.day, tzinfo=UTC
    )


@given(dates)
def test_strftime_patterns_with_day_of_year(day: date) -> None:
    doy = day.timetuple().tm_yday
    name = f"MOD13Q1.A{day.year:04d}{doy:03d}.h18v04.tif"
    when = date_from_name(name, compile_date_pattern("A%Y%j"))
    assert when == datetime(day.year, day.month, day.day, tzinfo=UTC)


def test_the_first_real_date_wins_and_non_dates_are_skipped() -> None:
    pattern = compile_date_pattern(None)
    name = "LC08_L2SP_190026_20240115_20240124_02_T1_SR_B4.TIF"
    assert date_from_name(name, pattern) == datetime(2024, 1, 15, tzinfo=UTC)
    assert date_from_name("tile_123456789.tif", pattern) is None
    assert date_from_name("x_2024-13-01.tif", pattern) is None
    with pytest.raises(ConvertError, match="needs a year"):
        compile_date_pattern("%d.%m")


ints = st.sampled_from(["int8", "int16", "int32", "uint8", "uint16", "uint32", "int64"])


@given(ints, st.sampled_from(["uint8", "uint16", "int16"]), st.data())
def test_integer_conversion_is_exact_or_refused(src: str, dst: str, data: st.DataObject) -> None:
    info = np.iinfo(src)
    values = np.array(
        data.draw(st.lists(st.integers(int(info.min), int(info.max)), min_size=1, max_size=20)),
        dtype=src,
    )
    rule = DtypeRule(src, dst)
    lo, hi = np.iinfo(dst).min, np.iinfo(dst).max
    if values.min() < lo or values.max() > hi:
        with pytest.raises(ConvertError, match="does not fit"):
            rule.apply(values, None, None, "f.tif")
    else:
        out = rule.apply(values, None, None, "f.tif")
        assert out.dtype == np.dtype(dst)
        assert (out.astype(np.int64) == values.astype(np.int64)).all()


@given(st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64), min_size=1, max_size=20))
def test_float_to_float32_rounds_to_nearest_and_maps_nan_to_nodata(values: list[float]) -> None:
    arr = np.array(values, dtype=np.float64)
    rule = DtypeRule("float64", "float32")
    big = np.isfinite(arr) & (np.abs(arr) > np.finfo(np.float32).max)
    if big.any():
        with pytest.raises(ConvertError, match="does not fit float32"):
            rule.apply(arr, None, -9999.0, "f.tif")
        return
    out = rule.apply(arr, None, -9999.0, "f.tif")
    nan = np.isnan(arr)
    assert (out[nan] == -9999.0).all()
    assert (out[~nan] == arr[~nan].astype(np.float32)).all()


def test_time_selection_by_periods() -> None:
    times = np.array(
        ["2023-12-31T23:00", "2024-01-01", "2024-01-31T12:00", "2024-02-01", "2025-06-01"],
        dtype="datetime64[ms]",
    )
    assert select_times(times, None) == [0, 1, 2, 3, 4]
    assert select_times(times, "2024-01") == [1, 2]
    assert select_times(times, "2024") == [1, 2, 3]
    assert select_times(times, "2024-01-31..") == [2, 3, 4]
    assert select_times(times, "..2024-01-01") == [0, 1]
    assert select_times(times, "2023-12-31T23:00:00Z..2024-01-01T00:00:00Z") == [0, 1]

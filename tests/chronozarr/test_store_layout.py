"""``StoreLayout`` (spec 2.1, 4.1, 4.2, 7.1): every rule of a field is checked when the layout is
made, and a layout passed to ``encode`` writes the bytes its keywords write."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import EncodeError
from chronozarr.format import BloscCodec, GzipCodec, StoreLayout, ZstdCodec
from tests.chronozarr.helpers import files_under
from tests.chronozarr.test_bytes_pinned import digests

ANY = st.one_of(
    st.integers(-1000, 100_000), st.floats(allow_nan=False), st.booleans(), st.text(max_size=3)
)


@given(ANY)
def test_chunk_size_is_an_even_integer_of_at_least_two(value: Any) -> None:
    # spec 2.1: "the chunk size ... MUST be even"; a cell needs at least one 2 x 2 block (spec 6)
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 2 and value % 2 == 0
    if ok:
        assert StoreLayout(chunk_size=value).chunk_size == value
    else:
        with pytest.raises(EncodeError) as info:
            StoreLayout(chunk_size=value)
        assert info.value.argument == "chunk_size"


@given(ANY)
def test_anchor_interval_and_shard_time_are_positive_integers(value: Any) -> None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    for name in ("anchor_interval", "shard_time"):
        # decision 0047: a shard's index (16 bytes per timestep, spec 7.2) is at most 1 MiB
        if ok and (name != "shard_time" or 16 * value <= 1 << 20):
            assert getattr(StoreLayout(**{name: value}), name) == value
        else:
            with pytest.raises(EncodeError) as info:
                StoreLayout(**{name: value})
            assert info.value.argument == name


@pytest.mark.parametrize("encoding", ["auto", "none", "star-delta"])
def test_the_three_encodings(encoding: str) -> None:
    assert StoreLayout(encoding=encoding).encoding == encoding


@pytest.mark.parametrize("encoding", ["", "delta", None, 1])
def test_other_encodings_are_refused(encoding: Any) -> None:
    with pytest.raises(EncodeError, match="encoding"):
        StoreLayout(encoding=encoding)


def test_shard_time_implies_shard_and_the_whole_axis_is_the_default() -> None:
    assert StoreLayout(shard_time=4).shard and StoreLayout(shard_time=4).shard_time_for(10) == 4
    assert StoreLayout(shard=True).shard_time_for(10) == 10
    assert StoreLayout().shard_time_for(10) is None


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_star_delta_needs_unsigned_data(dtype: str) -> None:
    # spec 4.1: star-delta is only for uint8 and uint16
    with pytest.raises(EncodeError, match="star-delta"):
        StoreLayout(encoding="star-delta").check_dtype(np.dtype(dtype))
    StoreLayout(encoding="star-delta").check_dtype(np.dtype("uint8"))


def test_a_layout_is_frozen() -> None:
    layout = StoreLayout()
    with pytest.raises(AttributeError):
        layout.chunk_size = 4  # type: ignore[misc]


def _encode(path: Path, **layout: Any) -> dict[str, str]:
    data = (np.arange(5 * 2 * 6 * 6) % 97).reshape(5, 2, 6, 6).astype("uint16")
    chronozarr.encode(
        data, path, times=[f"2024-0{m}-01" for m in range(1, 6)], bands=["a", "b"],
        crs=32631, transform=[10, 0, 0, 0, -10, 0], **layout,
    )  # fmt: skip
    return digests(path)


@pytest.mark.parametrize(
    ("layout", "keywords"),
    [
        (
            StoreLayout(chunk_size=4, encoding="star-delta", anchor_interval=2, shard_time=2),
            dict(chunk_size=4, encoding="star-delta", anchor_interval=2, shard_time=2),
        ),
        (
            StoreLayout(chunk_size=2, codec=BloscCodec(cname="lz4", clevel=3)),
            dict(chunk_size=2, codec="blosc", codec_options={"cname": "lz4", "clevel": 3}),
        ),
        (
            StoreLayout(chunk_size=4, encoding="none", codec=GzipCodec(level=6)),
            dict(chunk_size=4, encoding="none", codec="gzip", codec_options={"level": 6}),
        ),
    ],
)
def test_a_layout_writes_what_its_keywords_write(
    tmp_path: Path, layout: StoreLayout, keywords: dict[str, Any]
) -> None:
    by_layout = _encode(tmp_path / "layout.zarr", layout=layout)
    assert by_layout == _encode(tmp_path / "keywords.zarr", **keywords)
    assert (
        _encode(
            tmp_path / "codec.zarr", **{**keywords, "codec": layout.codec, "codec_options": None}
        )
        == by_layout
    )


def test_a_layout_and_its_keywords_are_not_both_given(tmp_path: Path) -> None:
    with pytest.raises(EncodeError) as info:
        _encode(tmp_path / "s.zarr", layout=StoreLayout(chunk_size=4), chunk_size=2)
    assert info.value.argument == "layout" and "chunk_size" in str(info.value)
    assert files_under(tmp_path / "s.zarr") == []


def test_a_codec_object_with_options_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EncodeError) as info:
        _encode(tmp_path / "s.zarr", chunk_size=2, codec=ZstdCodec(3), codec_options={"level": 3})
    assert info.value.argument == "codec_options"

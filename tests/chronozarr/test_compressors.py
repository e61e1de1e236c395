"""The compressors of spec 8 as typed values: each makes the codec entry spec 8 describes, refuses
an option outside its range where it is made, and round-trips through ``encode``'s keyword form."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from chronozarr.format import BloscCodec, GzipCodec, ZstdCodec, codec_chain, codec_from

CODECS = st.one_of(
    st.builds(ZstdCodec, st.integers(-131072, 22)),
    st.builds(GzipCodec, st.integers(0, 9)),
    st.builds(
        BloscCodec,
        st.sampled_from(["zstd", "lz4"]),
        st.integers(0, 9),
        st.sampled_from(["shuffle", "noshuffle"]),
        st.integers(0, 1 << 20),
    ),
)
DTYPES = st.sampled_from(["uint8", "uint16", "int16", "float32", "float64", "int64"])


@given(CODECS)
def test_the_keyword_form_makes_the_same_codec(codec: Any) -> None:
    assert codec_from(codec.name, codec.options()) == codec
    assert codec_from(codec) is codec


@given(CODECS, DTYPES)
def test_the_chain_is_bytes_then_the_compressor(codec: Any, dtype: str) -> None:
    # spec 8: "bytes" (little-endian; no byte order for one-byte types) then exactly one compressor
    chain = codec_chain(codec, None, dtype)
    itemsize = np.dtype(dtype).itemsize
    assert chain[0] == (
        {"name": "bytes"}
        if itemsize == 1
        else {"name": "bytes", "configuration": {"endian": "little"}}
    )
    assert len(chain) == 2 and chain[1]["name"] == codec.name
    conf = chain[1]["configuration"]
    if codec.name == "zstd":
        assert conf == {"level": codec.level, "checksum": False}
    elif codec.name == "gzip":
        assert conf == {"level": codec.level}
    else:  # blosc's typesize is the array's item size
        assert conf == {
            "typesize": itemsize, "cname": codec.cname, "clevel": codec.clevel,
            "shuffle": codec.shuffle, "blocksize": codec.blocksize,
        }  # fmt: skip


@pytest.mark.parametrize(
    ("make", "option"),
    [
        (lambda: ZstdCodec(23), "level"),
        (lambda: ZstdCodec(-131073), "level"),
        (lambda: ZstdCodec(5.0), "level"),  # type: ignore[arg-type]
        (lambda: GzipCodec(10), "level"),
        (lambda: GzipCodec(True), "level"),
        (lambda: BloscCodec(cname="blosclz"), "cname"),
        (lambda: BloscCodec(shuffle="bitshuffle"), "shuffle"),
        (lambda: BloscCodec(clevel=10), "clevel"),
        (lambda: BloscCodec(blocksize=1.5), "blocksize"),  # type: ignore[arg-type]
    ],
)
def test_an_option_out_of_range_is_refused_where_it_is_made(make: Any, option: str) -> None:
    with pytest.raises(ValueError, match=rf"^codec_options\.{option}: "):
        make()


def test_the_keyword_form_names_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^codec: 'lzma' is not allowed"):
        codec_from("lzma")
    with pytest.raises(ValueError, match=r"^codec_options: unknown option\(s\) \['clevel'\]"):
        codec_from("zstd", {"clevel": 3})
    with pytest.raises(ValueError, match=r"^codec_options\.level: expected an integer"):
        codec_from("gzip", {"level": "9"})

"""chronozarr.io._location: the one local-path / URL rule, and its users (reader, writer)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import ChronozarrError, EncodeError
from chronozarr.io import LocalStore, ObjectStore, is_remote, is_url, location, open_store_bytes


@pytest.mark.parametrize(
    ("text", "kind", "path"),
    [
        ("/data/store", "local", "/data/store"),
        ("relative/store", "local", "relative/store"),
        ("C:\\data\\store", "local", "C:\\data\\store"),
        ("a:b", "local", "a:b"),
        ("file:///tmp/my%20store", "local", "/tmp/my store"),
        ("FILE:///tmp/x", "local", "/tmp/x"),
        ("http://127.0.0.1:8000/s", "http", None),
        ("HTTPS://example.org/s", "http", None),
        ("s3://bucket/prefix", "s3", None),
        ("gs://bucket/prefix", "unsupported", None),
        ("ftp://host/x", "unsupported", None),
    ],
)
def test_kinds(text: str, kind: str, path: str | None) -> None:
    loc = location(text)
    assert (loc.kind, loc.path, loc.text) == (kind, path, text)
    assert loc.is_remote == (kind in ("http", "s3")) == is_remote(text)
    assert is_url(text) == ("://" in text)


def test_pathlike() -> None:
    assert location(Path("/x/y")).path == "/x/y"


@given(st.text(alphabet=st.characters(blacklist_characters=":"), max_size=30))
def test_text_without_a_colon_is_a_local_path(text: str) -> None:
    loc = location(text)
    assert (loc.kind, loc.path, is_url(text)) == ("local", text, False)


def test_reader_and_writer_follow_the_rule(tmp_path: Path) -> None:
    assert isinstance(open_store_bytes(f"file://{tmp_path}"), LocalStore)
    assert isinstance(open_store_bytes("s3://bucket/p"), ObjectStore)
    with pytest.raises(ChronozarrError, match="unsupported URL scheme 'gs'"):
        open_store_bytes("gs://bucket/p")
    kwargs: dict[str, Any] = dict(
        times=["2024-01-01"], bands=["B1"], crs="EPSG:4326", transform=[1, 0, 0, 0, -1, 0],
        chunk_size=2,
    )  # fmt: skip
    data = np.zeros((1, 1, 2, 2), dtype="uint8")
    # an http host cannot be written: refused with the publish hint, before any request
    with pytest.raises(EncodeError, match=r"cannot be written .*cz publish") as info:
        chronozarr.encode(data, "http://example.com/p", **kwargs)
    assert info.value.argument == "store"
    # s3:// is a target (decision 0017); unreachable here (no credentials): a typed error naming it
    with pytest.raises(EncodeError, match="cannot use s3://bucket/p as the target") as info:
        chronozarr.encode(data, "s3://bucket/p", **kwargs)
    assert info.value.argument == "store"

"""Hostile JSON in a store's metadata is a typed error or a finding (decision 0013).

Regressions of main: a deeply nested zarr.json raised RecursionError from open_store and
validate (the loads were guarded for ValueError only); ``1e999`` in a level shape raised
OverflowError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import CorruptStoreError
from chronozarr.format import MAX_NESTING, load_json

HOSTILE_DOCS = {
    "deep-list": "[" * 100_000 + "]" * 100_000,
    "deep-dict": '{"a":' * 5000 + "1" + "}" * 5000,
    "nan": '{"a": NaN}',
    "inf-literal": '{"a": -Infinity}',
    "1e999": '{"a": 1e999}',
    "5000-digits": '{"a": ' + "9" * 5000 + "}",
    "truncated": '{"a": [1, 2',
    "not-utf8": b'{"a": "\xff"}',
}


@pytest.mark.parametrize("name", sorted(HOSTILE_DOCS))
def test_load_json_raises_a_typed_error_naming_the_document(name: str) -> None:
    with pytest.raises(CorruptStoreError, match=r"0/data/zarr\.json"):
        load_json(HOSTILE_DOCS[name], "0/data/zarr.json")


@given(st.integers(1, MAX_NESTING), st.sampled_from(["[]", "{}"]))
def test_nesting_up_to_the_limit_loads(depth: int, pair: str) -> None:
    text = (
        pair[0] * depth + pair[1] * depth if pair == "[]" else '{"a":' * depth + "1" + "}" * depth
    )
    assert load_json(text, "x") is not None


@given(st.text(alphabet='[]{}"\\', max_size=200))
def test_brackets_inside_strings_do_not_count(inner: str) -> None:
    text = json.dumps({"s": inner})
    assert load_json(text, "x") == {"s": inner}


def _write_root(store: Path, text: str) -> None:
    (store / "zarr.json").write_text(text)


@pytest.mark.parametrize("target", ["root", "provenance", "level-shape"])
@pytest.mark.parametrize("payload", ["deep", "1e999", "NaN"])
def test_open_store_and_validate_never_raise_untyped(store_copy, target: str, payload: str) -> None:
    store = store_copy("none-zstd")
    root = json.loads((store / "zarr.json").read_text())
    cz = root["attributes"]["chronozarr"]
    if target == "root":
        root["attributes"]["chronozarr"] = "@X@"
    elif target == "provenance":
        cz["provenance"] = "@X@"
    else:
        cz["levels"][1]["shape"][2] = "@X@"
    literal = {"deep": "[" * 50_000 + "]" * 50_000, "1e999": "1e999", "NaN": "NaN"}[payload]
    _write_root(store, json.dumps(root).replace('"@X@"', literal))
    with pytest.raises(CorruptStoreError, match=r"zarr\.json"):
        chronozarr.open_store(store)
    report = chronozarr.validate(store, deep=True)  # a finding, never an exception
    # free-form provenance may hold any JSON number the validator can parse (spec 3.8)
    assert report.errors or (target == "provenance" and payload != "deep")

"""Chunk key encodings other than chronozarr's are refused, never read as fill (decision 0013).

Regression of main: a store whose arrays declare ``chunk_key_encoding: v2`` (keys such as
``0/data/0.0.0.0``) opened and read as all fill values, because the reader built ``c/...`` keys
for it; a separator of the wrong type raised TypeError.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import chronozarr
from chronozarr.errors import CorruptStoreError, UnsupportedError


def _set_cke(store: Path, value) -> None:
    root = json.loads((store / "zarr.json").read_text())
    meta = root["consolidated_metadata"]["metadata"]
    for key, doc in meta.items():
        if doc.get("node_type") == "array":
            doc["chunk_key_encoding"] = value
            on_disk = json.loads((store / key / "zarr.json").read_text())
            on_disk["chunk_key_encoding"] = value
            (store / key / "zarr.json").write_text(json.dumps(on_disk))
    (store / "zarr.json").write_text(json.dumps(root))


def test_v2_keys_are_refused_with_a_typed_error(store_copy) -> None:
    store = store_copy("none-zstd")
    for f in sorted((store / "0" / "data" / "c").rglob("*")):
        if f.is_file():  # move the chunks to where v2 keys put them
            rel = f.relative_to(store / "0" / "data" / "c").as_posix().replace("/", ".")
            f.rename(store / "0" / "data" / rel)
    _set_cke(store, {"name": "v2", "configuration": {"separator": "."}})
    with pytest.raises(UnsupportedError, match="chunk_key_encoding 'v2'"):
        chronozarr.open_store(store)
    report = chronozarr.validate(store)
    hits = [f for f in report.errors if f.rule == "array.key_encoding"]
    assert hits and all(f.section == "2" for f in hits), report.findings
    # the array is not checked further: no codec or layout finding stems from the refused keys
    assert not [f for f in report.findings if f.rule in ("array.codec", "array.malformed")]


@pytest.mark.parametrize(
    "cke",
    [
        {"name": "default", "configuration": {"separator": 5}},
        {"name": "default", "configuration": {"separator": ".."}},
        {"name": "default", "configuration": "x"},
        "default",
        {"name": 5},
    ],
)
def test_malformed_key_encodings_are_typed(store_copy, cke) -> None:
    store = store_copy("none-zstd")
    _set_cke(store, cke)
    with pytest.raises((CorruptStoreError, UnsupportedError)):
        chronozarr.open_store(store)
    assert not chronozarr.validate(store).ok


def test_dot_separator_of_the_default_encoding_still_reads(store_copy) -> None:
    store = store_copy("none-zstd")
    want = chronozarr.open_store(store).read(1)
    for f in sorted((store / "0" / "data" / "c").rglob("*")):
        if f.is_file():
            rel = f.relative_to(store / "0" / "data" / "c").as_posix().replace("/", ".")
            f.rename(store / "0" / "data" / f"c.{rel}")
    root = json.loads((store / "zarr.json").read_text())
    cke = {"name": "default", "configuration": {"separator": "."}}
    root["consolidated_metadata"]["metadata"]["0/data"]["chunk_key_encoding"] = cke
    (store / "zarr.json").write_text(json.dumps(root))
    assert (chronozarr.open_store(store).read(1) == want).all()

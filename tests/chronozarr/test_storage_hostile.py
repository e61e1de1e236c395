"""LocalStore never leaves its root and never trusts a byte range (decision 0013).

Regressions of main: ``get_range`` passed shard offsets of 2^63 to seek() (OverflowError) and
lengths of 2^62 to read() (MemoryError); a symlink inside a store was followed to any file; an
over-long name escaped as a bare OSError.
"""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import CorruptStoreError, StoreAccessError
from chronozarr.io import LocalStore


@pytest.fixture
def local(tmp_path: Path) -> LocalStore:
    (tmp_path / "s" / "a").mkdir(parents=True)
    (tmp_path / "s" / "a" / "obj").write_bytes(b"0123456789")
    (tmp_path / "outside").write_bytes(b"secret")
    return LocalStore(tmp_path / "s")


@pytest.mark.parametrize(
    ("start", "end", "want"),
    [(0, 4, b"0123"), (8, 2**62, b"89"), (10, 20, b""), (2**63, 2**63 + 16, b""), (3, 3, b"")],
)
def test_get_range_is_clamped_to_the_object(local: LocalStore, start, end, want) -> None:
    tracemalloc.start()
    try:
        assert local.get_range("a/obj", start, end) == want
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize(("start", "end"), [(-1, 4), (5, 4), (-(2**63), 0)])
def test_get_range_refuses_impossible_ranges(local: LocalStore, start, end) -> None:
    with pytest.raises(CorruptStoreError, match="a/obj"):
        local.get_range("a/obj", start, end)


def test_symlink_out_of_the_store_is_refused(local: LocalStore, tmp_path: Path) -> None:
    os.symlink(tmp_path / "outside", tmp_path / "s" / "a" / "link")
    os.symlink(tmp_path, tmp_path / "s" / "dir")
    for read in (
        lambda: local.get("a/link"),
        lambda: local.get_range("a/link", 0, 3),
        lambda: local.size("a/link"),
        lambda: local.get("dir/outside"),
    ):
        with pytest.raises(CorruptStoreError, match="outside the store"):
            read()


def test_symlink_inside_the_store_is_followed(local: LocalStore, tmp_path: Path) -> None:
    os.symlink("obj", tmp_path / "s" / "a" / "alias")
    assert local.get("a/alias") == b"0123456789"


def test_os_errors_are_typed_and_name_the_object(local: LocalStore) -> None:
    key = "a/" + "x" * 300  # ENAMETOOLONG: the system refuses the path
    with pytest.raises(StoreAccessError, match="x" * 20):
        local.get(key)
    with pytest.raises(StoreAccessError):
        local.get_range(key, 0, 1)


def test_reader_refuses_a_chunk_symlinked_outside(store_copy) -> None:
    store = store_copy("none-zstd")
    chunk = store / "0" / "data" / "c" / "0" / "0" / "0" / "0"
    secret = store.parent / "secret-chunk"
    secret.write_bytes(chunk.read_bytes())
    chunk.unlink()
    os.symlink(secret, chunk)
    reader = chronozarr.open_store(store)
    with pytest.raises(CorruptStoreError, match="outside the store"):
        reader.read_cell(0, 0, 0)
    assert np.asarray(reader.read_cell(0, 0, 1)).size  # the other cells still read
    report = chronozarr.validate(store, deep=True)
    assert any("outside the store" in f.message for f in report.errors), report.findings


def test_validator_reports_a_document_symlinked_outside(store_copy) -> None:
    """A zarr.json the store refuses to serve is an ``object.refused`` finding (spec 9), never a
    crash and never the outside file's content."""
    store = store_copy("none-zstd")
    doc = store / "0" / "data" / "zarr.json"
    secret = store.parent / "secret-zarr.json"
    secret.write_bytes(doc.read_bytes())
    doc.unlink()
    os.symlink(secret, doc)
    report = chronozarr.validate(store)
    hits = [f for f in report.errors if f.rule == "object.refused"]
    assert hits and hits[0].section == "9" and "outside the store" in hits[0].message, report
    assert not report.ok

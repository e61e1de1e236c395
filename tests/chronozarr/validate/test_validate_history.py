"""The validator on the time-series companion (docs/spec.md C25): a store with it is valid,
shallow and deep; each rule of the ``history.*`` family is broken by exactly one edit."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.format import ChunkCodec
from tests.chronozarr.helpers import edit_chronozarr, edit_doc, edit_root, read_json
from tests.chronozarr.validate.test_validate import _assert_finding
from tests.conftest import monthly, synthetic_series


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("history") / "h.zarr"
    data = synthetic_series(n_time=7, n_band=2, height=13, width=11, seed=11)
    mask = (data[:, 0] % 7 != 0).astype(np.uint8)
    cov = (data[:, 1] % 5).astype(np.uint8)
    chronozarr.encode(
        data, path, times=monthly(7), bands=["B04", "B08"], crs="EPSG:32631",
        transform=[10, 0, 500000, 0, -10, 4000000], chunk_size=4, encoding="star-delta",
        anchor_interval=2, mask=mask, coverage=cov, history=True, history_time=3,
    )  # fmt: skip
    return path


@pytest.fixture
def store(base: Path, tmp_path: Path) -> Path:
    dst = tmp_path / "h.zarr"
    shutil.copytree(base, dst)
    return dst


@pytest.mark.parametrize("deep", [False, True])
def test_a_store_with_the_companion_is_valid(base: Path, deep: bool) -> None:
    report = chronozarr.validate(base, deep=deep)
    assert report.ok, report.findings
    if deep:
        assert report.checked["history blocks compared"] == 4 * 3 * 3  # 4 x 3 cells, 3 blocks


def _both(store: Path, node: str, fn: Callable[[dict[str, Any]], Any]) -> None:
    """Edit a node's zarr.json and its consolidated copy alike (the edit is not staleness)."""
    edit_doc(store, node, fn)


def _rewrite_chunk(store: Path, key: str, change: Callable[[np.ndarray], None]) -> None:
    doc = read_json(store / "0/history/values/zarr.json")
    codec = ChunkCodec(
        doc["codecs"], doc["data_type"], tuple(doc["chunk_grid"]["configuration"]["chunk_shape"])
    )
    path = store / key
    chunk = codec.decode(path.read_bytes()).copy()
    change(chunk)
    path.write_bytes(codec.encode(chunk))


# (id, base, breaker, rule, section, key): the case form tests/.../test_rules.py recognises
CASES: list[tuple[str, str, Callable[[Path], None], str, str, str]] = [
    (
        "a level the store lacks",
        "h",
        lambda s: edit_chronozarr(s, lambda b: b["history"].update(levels=["0", "7"])),
        "history.block",
        "2",
        "chronozarr.history",
    ),
    (
        "no values array",
        "h",
        lambda s: (
            shutil.rmtree(s / "0/history/values"),
            edit_root(s, lambda r: r["consolidated_metadata"]["metadata"].pop("0/history/values")),
        ),
        "history.missing",
        "2",
        "0/history/values",
    ),
    (
        "values a timestep short",
        "h",
        lambda s: _both(s, "0/history/values", lambda d: d.update(shape=[6, *d["shape"][1:]])),
        "history.layout",
        "2",
        "0/history/values",
    ),
    (
        "values of another type",
        "h",
        lambda s: _both(s, "0/history/values", lambda d: d.update(data_type="uint8")),
        "history.layout",
        "2",
        "0/history/values",
    ),
    (
        "another codec",
        "h",
        lambda s: _both(
            s,
            "0/history/values",
            lambda d: d.update(
                codecs=[d["codecs"][0], {"name": "gzip", "configuration": {"level": 5}}]
            ),
        ),
        "history.codec",
        "8",
        "0/history/values",
    ),
    (
        "fields in another order",
        "h",
        lambda s: _write_fields(s, ["B08", "B04", "mask", "coverage"]),
        "history.field",
        "2",
        "0/history/field",
    ),
]


def _write_fields(store: Path, names: list[str]) -> None:
    from chronozarr.format import compressor_for, vlen_utf8_encode

    doc = read_json(store / "0/history/field/zarr.json")
    raw = bytes(compressor_for(doc["codecs"][1]).encode(vlen_utf8_encode(names)))
    (store / "0/history/field/c/0").write_bytes(raw)


@pytest.mark.parametrize(
    ("what", "kind", "breaker", "rule", "section", "key"), CASES, ids=[c[0] for c in CASES]
)
def test_each_rule_is_broken_by_one_edit(
    store: Path,
    what: str,
    kind: str,
    breaker: Callable[[Path], None],
    rule: str,
    section: str,
    key: str,
) -> None:
    breaker(store)
    _assert_finding(chronozarr.validate(store), rule, section, key)


def test_deep_finds_a_corrupted_companion_chunk(store: Path) -> None:
    # one value of one band at t=4 (time block 1, position 1) of block (1, 2): the data keeps it
    _rewrite_chunk(
        store, "0/history/values/c/1/0/1/2", lambda chunk: chunk.__setitem__((1, 0, 2, 1), 1234)
    )
    assert chronozarr.validate(store).ok  # shallow: the metadata is intact
    finding = _assert_finding(
        chronozarr.validate(store, deep=True), "history.values", "10", "0/history/values"
    )
    assert "values at t=4" in finding.message


def test_deep_finds_a_corrupted_mask_field(store: Path) -> None:
    _rewrite_chunk(
        store,
        "0/history/values/c/0/0/0/0",
        lambda chunk: chunk.__setitem__((0, 2, 0, 0), 1 - chunk[0, 2, 0, 0]),
    )
    finding = _assert_finding(
        chronozarr.validate(store, deep=True), "history.values", "10", "0/history/values"
    )
    assert "mask at t=0" in finding.message

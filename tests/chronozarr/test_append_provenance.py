"""chronozarr.append(provenance=...) replaces the root provenance in the final root write."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.conftest import monthly, synthetic_series


def _store(tmp_path: Path) -> tuple[Path, np.ndarray]:
    data = synthetic_series(n_time=5, n_band=1, height=9, width=7)
    path = tmp_path / "s.zarr"
    chronozarr.encode(
        data[:3],
        path,
        times=monthly(3),
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
        provenance={"sources": ["first"]},
    )
    return path, data


def test_append_replaces_or_keeps_the_provenance(tmp_path: Path) -> None:
    path, data = _store(tmp_path)
    chronozarr.append(path, data[3:4], times=monthly(5)[3:4])
    assert chronozarr.open_store(path).attrs.provenance == {"sources": ["first"]}
    chronozarr.append(
        path, data[4:5], times=monthly(5)[4:5], provenance={"sources": ["first", "second"]}
    )
    root = json.loads((path / "zarr.json").read_text())
    assert root["attributes"]["chronozarr"]["provenance"] == {"sources": ["first", "second"]}
    reader = chronozarr.open_store(path)
    np.testing.assert_array_equal(reader.read(4), data[4])
    assert chronozarr.validate(str(path), deep=True).ok


def test_a_provenance_that_is_not_an_object_is_refused_before_writing(tmp_path: Path) -> None:
    path, data = _store(tmp_path)
    before = {p: p.read_bytes() for p in path.rglob("*") if p.is_file()}
    with pytest.raises(chronozarr.AppendError, match="provenance: expected an object"):
        chronozarr.append(path, data[3:4], times=monthly(5)[3:4], provenance=["x"])  # type: ignore[arg-type]
    assert {p: p.read_bytes() for p in path.rglob("*") if p.is_file()} == before

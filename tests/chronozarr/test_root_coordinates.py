"""Root-level time and band arrays (chronozarr/root_coordinates.py, docs/spec.md "Root-level
coordinates"): written as copies of level 0's, read back by zarr-python as the store's own
coordinates, kept in step by append, checked by the validator, and optional for old stores."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from chronozarr.format import ChunkCodec, compressor_for, vlen_utf8_encode
from tests.chronozarr.helpers import edit_root, read_json
from tests.conftest import monthly, synthetic_series


def _encode(path: Path, **kw: Any) -> tuple[Path, np.ndarray]:
    data = synthetic_series(n_time=5, n_band=2, height=13, width=11, seed=3)
    chronozarr.encode(
        data,
        str(path),
        times=monthly(5),
        bands=[{"name": "B04"}, {"name": "B08"}],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=4,
        **kw,
    )
    return path, data


@pytest.mark.parametrize("kw", [{}, {"shard": True, "shard_time": 2, "encoding": "star-delta"}])
def test_root_time_and_band_equal_level0(tmp_path: Path, kw: dict[str, Any]) -> None:
    store, _ = _encode(tmp_path / "s.zarr", **kw)
    for name in ("time", "band"):
        assert (store / name / "c" / "0").read_bytes() == (
            store / "0" / name / "c" / "0"
        ).read_bytes()
        assert read_json(store / name / "zarr.json") == read_json(store / "0" / name / "zarr.json")
        assert name in read_json(store / "zarr.json")["consolidated_metadata"]["metadata"]
    # zarr-python, which we did not write, reads them as the values chronozarr.times names.
    group = zarr.open_group(str(store), mode="r")
    ms = [int(np.datetime64(t.rstrip("Z"), "ms").astype(np.int64)) for t in monthly(5)]
    assert list(group["time"][:]) == ms
    assert list(group["band"][:]) == ["B04", "B08"]
    assert chronozarr.validate(str(store)).ok


def test_append_keeps_root_time_in_step(tmp_path: Path) -> None:
    store, data = _encode(tmp_path / "s.zarr")
    chronozarr.append(str(store), data[:2], times=monthly(7)[5:])
    group = zarr.open_group(str(store), mode="r")
    assert list(group["time"][:]) == list(group["0/time"][:])
    assert len(group["time"][:]) == 7
    report = chronozarr.validate(str(store))
    assert report.ok, report.findings


def _edit_root_band(store: Path, names: list[str]) -> None:
    doc = read_json(store / "band" / "zarr.json")
    raw = vlen_utf8_encode(names)
    for c in doc["codecs"][1:]:
        raw = bytes(compressor_for(c).encode(raw))
    (store / "band" / "c" / "0").write_bytes(raw)


def test_validator_flags_a_stale_root_band(tmp_path: Path) -> None:
    store, _ = _encode(tmp_path / "s.zarr")
    _edit_root_band(store, ["B04", "B99"])
    report = chronozarr.validate(str(store))
    hits = [f for f in report.findings if f.rule == "mirror.band_coord" and f.key == "band"]
    assert hits, [(f.rule, f.key) for f in report.findings]
    assert hits[0].section == "2.2"


def test_validator_flags_a_stale_root_time(tmp_path: Path) -> None:
    store, _ = _encode(tmp_path / "s.zarr")
    doc = read_json(store / "time" / "zarr.json")
    codec = ChunkCodec(doc["codecs"], "int64", (5,))
    shifted = (
        np.asarray(zarr.open_group(str(store), mode="r")["time"][:], dtype=np.int64) + 86_400_000
    )
    (store / "time" / "c" / "0").write_bytes(codec.encode(shifted))
    report = chronozarr.validate(str(store))
    hits = [f for f in report.findings if f.rule == "mirror.time_values" and f.key == "time"]
    assert hits, [(f.rule, f.key) for f in report.findings]


def test_a_store_without_root_coordinates_is_valid_and_readable(tmp_path: Path) -> None:
    store, data = _encode(tmp_path / "s.zarr")
    for name in ("time", "band"):
        shutil.rmtree(store / name)
    edit_root(
        store, lambda d: [d["consolidated_metadata"]["metadata"].pop(n) for n in ("time", "band")]
    )
    report = chronozarr.validate(str(store))
    assert report.ok, report.findings
    assert np.array_equal(chronozarr.open_store(str(store)).read(3, 0), data[3])
    chronozarr.append(str(store), data[:1], times=monthly(6)[5:])  # old stores stay old
    assert not (store / "time").exists()
    assert chronozarr.validate(str(store)).ok

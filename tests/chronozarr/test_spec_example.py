"""The complete example of spec 3.9, reproduced: encode its parameters and compare every zarr.json
with the example text (shard byte lengths, consolidated metadata and the selection ratio aside).
Attributes the writer adds beyond the example (proj:code, spatial:*, _CRS, spec 3.3) are expected."""

from __future__ import annotations

import copy
import json
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from tests.chronozarr.helpers import read_json, shard_index
from tests.conftest import monthly

# --- the example, as the spec prints it ------------------------------------------------------------

SPEC_ROOT = json.loads("""
{
  "zarr_format": 3,
  "node_type": "group",
  "attributes": {
    "multiscales": [{
      "datasets": [
        { "path": "0", "crs": "EPSG:32631" },
        { "path": "1", "crs": "EPSG:32631" }
      ],
      "type": "reduce",
      "metadata": { "method": "block_mean", "version": "chronozarr 0.2.0", "args": [] }
    }],
    "chronozarr": {
      "spec_version": "0.2.0",
      "variable": "data",
      "times": ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z",
                "2024-04-01T00:00:00Z", "2024-05-01T00:00:00Z"],
      "bands": [
        { "name": "B04", "common_name": "red", "scale": 0.0001, "offset": 0.0, "units": "reflectance" },
        { "name": "B08", "common_name": "nir", "scale": 0.0001, "offset": 0.0, "units": "reflectance" }
      ],
      "band_names": ["B04", "B08"],
      "nodata": 0,
      "crs": "EPSG:32631",
      "temporal": {
        "encoding": "star-delta",
        "anchor_interval": 2,
        "anchor_indices": [0, 2, 4],
        "delta_reference": { "1": 0, "3": 2 },
        "selection": { "mode": "auto", "sampled_cells": 3, "ratio": 0.78 }
      },
      "volatility_path": "volatility",
      "mask_variable": "mask",
      "coverage_variable": "coverage",
      "provenance": {
        "sources": ["sentinel-2-l2a"],
        "composite": "monthly median",
        "gap_fill": "carry-forward",
        "notes": "SCL classes 4, 5, 6, 7 and 11 kept"
      },
      "levels": [
        { "path": "0", "resolution": 10.0, "transform": [10.0, 0.0, 746090.0, 0.0, -10.0, 2540440.0],
          "shape": [5, 2, 700, 600], "grid": [2, 2] },
        { "path": "1", "resolution": 20.0, "transform": [20.0, 0.0, 746090.0, 0.0, -20.0, 2540440.0],
          "shape": [5, 2, 350, 300], "grid": [1, 1] }
      ],
      "shard_bytes": {
        "0": {
          "0/0/0": 1412807, "0/0/1": 388120, "0/1/0": 1290455, "0/1/1": 351902,
          "1/0/0": 402211, "1/0/1": 101347, "1/1/0": 377689, "1/1/1": 96410
        },
        "1": { "0/0/0": 388554, "1/0/0": 98203 }
      }
    }
  }
}
""")

SPEC_LEVEL0 = json.loads("""
{ "zarr_format": 3, "node_type": "group", "attributes": { "crs": "EPSG:32631",
  "transform": [10.0, 0.0, 746090.0, 0.0, -10.0, 2540440.0], "resolution": 10.0 } }
""")

SPEC_DATA0 = json.loads("""
{
  "zarr_format": 3,
  "node_type": "array",
  "shape": [5, 2, 700, 600],
  "data_type": "uint16",
  "chunk_grid": { "name": "regular", "configuration": { "chunk_shape": [4, 2, 512, 512] } },
  "chunk_key_encoding": { "name": "default", "configuration": { "separator": "/" } },
  "fill_value": 0,
  "codecs": [{
    "name": "sharding_indexed",
    "configuration": {
      "chunk_shape": [1, 2, 512, 512],
      "codecs": [{ "name": "bytes", "configuration": { "endian": "little" } },
                 { "name": "zstd", "configuration": { "level": 5, "checksum": false } }],
      "index_codecs": [{ "name": "bytes", "configuration": { "endian": "little" } },
                       { "name": "crc32c" }],
      "index_location": "end"
    }
  }],
  "dimension_names": ["time", "band", "y", "x"],
  "attributes": { "_ARRAY_DIMENSIONS": ["time", "band", "y", "x"], "nodata": 0 }
}
""")

SPEC_MASK0 = json.loads("""
{
  "zarr_format": 3,
  "node_type": "array",
  "shape": [5, 700, 600],
  "data_type": "uint8",
  "chunk_grid": { "name": "regular", "configuration": { "chunk_shape": [4, 512, 512] } },
  "chunk_key_encoding": { "name": "default", "configuration": { "separator": "/" } },
  "fill_value": 0,
  "codecs": [{
    "name": "sharding_indexed",
    "configuration": {
      "chunk_shape": [1, 512, 512],
      "codecs": [{ "name": "bytes" }, { "name": "zstd", "configuration": { "level": 5, "checksum": false } }],
      "index_codecs": [{ "name": "bytes", "configuration": { "endian": "little" } }, { "name": "crc32c" }],
      "index_location": "end"
    }
  }],
  "dimension_names": ["time", "y", "x"],
  "attributes": { "_ARRAY_DIMENSIONS": ["time", "y", "x"] }
}
""")

SPEC_TIME0 = json.loads("""
{
  "zarr_format": 3, "node_type": "array", "shape": [5], "data_type": "int64", "fill_value": 0,
  "chunk_grid": { "name": "regular", "configuration": { "chunk_shape": [5] } },
  "chunk_key_encoding": { "name": "default", "configuration": { "separator": "/" } },
  "codecs": [{ "name": "bytes", "configuration": { "endian": "little" } },
             { "name": "zstd", "configuration": { "level": 5, "checksum": false } }],
  "dimension_names": ["time"],
  "attributes": { "_ARRAY_DIMENSIONS": ["time"], "units": "milliseconds since 1970-01-01T00:00:00",
                  "calendar": "proleptic_gregorian" }
}
""")

SPEC_TIMES_MS = [1704067200000, 1706745600000, 1709251200000, 1711929600000, 1714521600000]

BANDS = [
    {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
    {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": 0.0, "units": "reflectance"},
]
PROVENANCE = SPEC_ROOT["attributes"]["chronozarr"]["provenance"]
TRANSFORM = [10.0, 0.0, 746090.0, 0.0, -10.0, 2540440.0]


def _example_inputs(static: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(39)
    base = rng.integers(1, 10000, size=(1, 2, 700, 600), dtype=np.uint16)
    if static:  # hardly changes month to month: star-delta pays off, auto keeps it
        step = rng.integers(0, 3, size=(5, 2, 700, 600), dtype=np.uint16)
    else:
        step = rng.integers(0, 3000, size=(5, 2, 700, 600), dtype=np.uint16)
    data = base + step
    mask = (rng.random((5, 700, 600)) < 0.9).astype(np.uint8)
    data[:, :, mask[0] == 0] = 0  # the producer writes nodata where its mask is 0 (DESIGN)
    coverage = rng.integers(0, 6, size=(5, 700, 600), dtype=np.uint8)
    return data, mask, coverage


@pytest.fixture(scope="module", params=["forced", "auto"])
def example(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    mode = request.param
    data, mask, coverage = _example_inputs(static=mode == "auto")
    path = tmp_path_factory.mktemp(f"spec39-{mode}") / "example.zarr"
    chronozarr.encode(
        data,
        path,
        times=monthly(5),
        bands=BANDS,
        crs="EPSG:32631",
        transform=TRANSFORM,
        encoding="star-delta" if mode == "forced" else "auto",
        anchor_interval=2,
        chunk_size=512,
        shard_time=4,
        mask=mask,
        coverage=coverage,
        provenance=PROVENANCE,
    )
    return mode, path, data, mask, coverage


def _without(doc: dict[str, Any], *keys: str) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for k in keys:
        out.pop(k, None)
    return out


def test_root_zarr_json(example: Any) -> None:
    mode, path, *_ = example
    root = read_json(path / "zarr.json")
    want = copy.deepcopy(SPEC_ROOT)
    got_cz = root["attributes"]["chronozarr"]
    want_cz = want["attributes"]["chronozarr"]
    if mode == "forced":
        assert "selection" not in got_cz["temporal"]  # spec 4.3: a forced choice writes none
        del want_cz["temporal"]["selection"]
    else:
        sel = got_cz["temporal"]["selection"]
        assert isinstance(sel["ratio"], float) and 0 < sel["ratio"] <= 0.85
        sel["ratio"] = want_cz["temporal"]["selection"]["ratio"]
    # shard byte lengths are illustrative: same keys, every length the real object size
    got_sb, want_sb = got_cz.pop("shard_bytes"), want_cz.pop("shard_bytes")
    assert {lvl: sorted(v) for lvl, v in got_sb.items()} == {
        lvl: sorted(v) for lvl, v in want_sb.items()
    }
    for lvl, entries in got_sb.items():
        for key, size in entries.items():
            ts, r, c = key.split("/")
            assert (path / lvl / "data" / "c" / ts / "0" / r / c).stat().st_size == size
    assert got_cz == want_cz
    assert list(got_cz) == list(want_cz)  # key order of the example
    # docs/spec.md C26: the zarr-conventions attributes beside the example's, level 0's values,
    # and each multiscales entry's spatial:shape and spatial:transform
    attributes = root["attributes"]
    root_extra = {k: attributes.pop(k) for k in list(attributes) if k not in want["attributes"]}
    level0 = _extra_attrs(700, 600, 0)
    assert root_extra == {
        "zarr_conventions": root_extra["zarr_conventions"],
        **{k: level0[k] for k in level0 if k != "_CRS"},
    }
    assert [c["uuid"] for c in root_extra["zarr_conventions"]] == [
        "f17cb550-5864-4468-aeb7-f3180cfb622f",  # proj:, zarr-conventions/geo-proj
        "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4",  # spatial:, zarr-conventions/spatial
    ]
    for k, entry in enumerate(attributes["multiscales"][0]["datasets"]):
        lv = _extra_attrs(*((700, 600) if k == 0 else (350, 300)), k)
        assert (entry.pop("spatial:shape"), entry.pop("spatial:transform")) == (
            lv["spatial:shape"],
            lv["spatial:transform"],
        )
    assert _without(root, "consolidated_metadata") == want
    assert root["consolidated_metadata"]["kind"] == "inline"


@pytest.mark.parametrize("level", ["0", "1"])
def test_level_group_zarr_json(example: Any, level: str) -> None:
    _, path, *_ = example
    want = copy.deepcopy(SPEC_LEVEL0)
    if level == "1":
        want["attributes"]["transform"] = [20.0, 0.0, 746090.0, 0.0, -20.0, 2540440.0]
        want["attributes"]["resolution"] = 20.0
    assert read_json(path / level / "zarr.json") == want


def _extra_attrs(height: int, width: int, level: int) -> dict[str, Any]:
    s = 2.0**level
    return {
        "proj:code": "EPSG:32631",
        "spatial:dimensions": ["y", "x"],
        "spatial:shape": [height, width],
        "spatial:transform": [10.0 * s, 0.0, 746090.0, 0.0, -10.0 * s, 2540440.0],
        "spatial:bbox": [746090.0, 2540440.0 - 7000.0, 746090.0 + 6000.0, 2540440.0],
        "_CRS": {"url": "http://www.opengis.net/def/crs/EPSG/0/32631"},
    }


@pytest.mark.parametrize("level", [0, 1])
def test_data_array_zarr_json(example: Any, level: int) -> None:
    _, path, *_ = example
    got = read_json(path / str(level) / "data" / "zarr.json")
    want = copy.deepcopy(SPEC_DATA0)
    h, w = (700, 600) if level == 0 else (350, 300)
    want["shape"] = [5, 2, h, w]
    extra = {k: got["attributes"].get(k) for k in _extra_attrs(h, w, level)}
    assert extra == _extra_attrs(h, w, level)  # spec 3.3 SHOULDs, with the same values
    got["attributes"] = {k: v for k, v in got["attributes"].items() if k not in extra}
    # docs/spec.md C23: a star-delta data array says on itself that it holds residuals (the spec
    # example predates the addition; both modes of this fixture end in star-delta)
    root = read_json(path / "zarr.json")["attributes"]["chronozarr"]
    assert root["temporal"]["encoding"] == "star-delta"
    said = got["attributes"].pop("chronozarr:temporal")
    assert said["encoding"] == "star-delta"
    assert "anchor_indices" in said["anchors"] and "delta_reference" in said["values"]
    assert got == want


@pytest.mark.parametrize("level", [0, 1])
@pytest.mark.parametrize("name", ["mask", "coverage"])
def test_plane_array_zarr_json(example: Any, level: int, name: str) -> None:
    _, path, *_ = example
    want = copy.deepcopy(SPEC_MASK0)
    if level == 1:
        want["shape"] = [5, 350, 300]
    assert read_json(path / str(level) / name / "zarr.json") == want


@pytest.mark.parametrize("level", [0, 1])
def test_coordinate_arrays(example: Any, level: int) -> None:
    _, path, *_ = example
    assert read_json(path / str(level) / "time" / "zarr.json") == SPEC_TIME0
    h, w = (700, 600) if level == 0 else (350, 300)
    for axis, n in (("y", h), ("x", w)):
        doc = read_json(path / str(level) / axis / "zarr.json")
        assert doc["data_type"] == "float64" and doc["shape"] == [n]
        assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [n]
        assert doc["dimension_names"] == [axis] == doc["attributes"]["_ARRAY_DIMENSIONS"]
    band = read_json(path / str(level) / "band" / "zarr.json")
    assert band["data_type"] == "string" and band["shape"] == [2]
    assert band["codecs"][0]["name"] == "vlen-utf8"
    assert band["dimension_names"] == ["band"] == band["attributes"]["_ARRAY_DIMENSIONS"]
    group = zarr.open_group(str(path / str(level)), mode="r")
    assert group["time"][:].tolist() == SPEC_TIMES_MS  # "0/time/c/0 decodes to [...]"
    assert group["band"][:].tolist() == ["B04", "B08"]
    res = 10.0 * 2**level
    assert group["y"][:2].tolist() == [2540440.0 - res / 2, 2540440.0 - 1.5 * res]
    assert group["x"][-1] == 746090.0 + res * (w - 0.5)


def test_volatility_array(example: Any) -> None:
    _, path, *_ = example
    doc = read_json(path / "volatility" / "zarr.json")
    assert doc["shape"] == [2, 2] and doc["data_type"] == "float32"
    assert doc["chunk_grid"]["configuration"]["chunk_shape"] == [2, 2]
    assert doc["fill_value"] == 0.0
    assert doc["dimension_names"] == ["row", "col"] == doc["attributes"]["_ARRAY_DIMENSIONS"]


def test_objects_of_the_example(example: Any) -> None:
    """Shard objects as the spec lists them; the partial time shard has 4 index entries."""
    _, path, *_ = example
    for arr, band in (("data", "0/"), ("mask", ""), ("coverage", "")):
        got0 = sorted(
            str(p.relative_to(path / "0" / arr))
            for p in (path / "0" / arr / "c").rglob("*")
            if p.is_file()
        )
        assert got0 == sorted(
            f"c/{ts}/{band}{r}/{c}" for ts in (0, 1) for r in (0, 1) for c in (0, 1)
        )
        got1 = sorted(
            str(p.relative_to(path / "1" / arr))
            for p in (path / "1" / arr / "c").rglob("*")
            if p.is_file()
        )
        assert got1 == [f"c/0/{band}0/0", f"c/1/{band}0/0"]
    blob = (path / "0" / "data" / "c" / "1" / "0" / "1" / "1").read_bytes()
    index = shard_index(blob, 4)  # 16 x 4 + 4 = 68 bytes, crc32c checked
    assert [int(v) for v in index[0]] != [2**64 - 1] * 2
    assert index[1:].tolist() == [[2**64 - 1, 2**64 - 1]] * 3
    assert not any(p.name.startswith(".") for p in path.rglob("*"))  # no dotfiles (spec 9)


def test_example_decodes_and_validates(example: Any) -> None:
    _, path, data, mask, coverage = example
    reader = chronozarr.open_store(path)
    assert reader.encoding == "star-delta"
    for t in range(5):
        assert np.array_equal(reader.read(t), data[t])
        assert np.array_equal(reader.read_mask(t), mask[t])
        assert np.array_equal(reader.read_coverage(t), coverage[t])
    # Shards at r=1 hold rows 512..699 plus fill; the stored padding is fill (anchor) or 0 (delta)
    raw = zarr.open_array(str(path / "0" / "data"), mode="r")
    assert raw.shape == (5, 2, 700, 600)
    assert np.array_equal(raw[0], data[0]) and np.array_equal(raw[4], data[4])
    report = chronozarr.validate(path, deep=True)
    assert report.ok, report.findings
    assert [f for f in report.findings if f.severity == "error"] == []

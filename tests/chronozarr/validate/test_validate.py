"""The validator: a valid store is ok with zero errors; for each MUST rule it checks, a store that
breaks exactly that rule gets a finding naming the rule's section and key (the rule catalogue)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import StoreNotFoundError
from chronozarr.format import ChunkCodec
from tests.chronozarr.helpers import (
    drop_consolidated,
    edit_chronozarr,
    edit_doc,
    edit_root,
    make_shard,
    read_json,
    rewrite_index_location,
    shard_chunks,
    write_json,
)
from tests.conftest import monthly, synthetic_series

# Store "sd": star-delta (interval 2), sharded (shard_time 2: 3 time shards), mask + coverage,
# 5 x 2 x 13 x 11 uint16 at cs 4: levels 13 x 11 (grid 4 x 3), 7 x 6 (2 x 2), 4 x 3 (1 x 1).
# Store "none": none, unsharded, no mask or coverage, same data.
# Store "i16": int16, none, nodata null, unsharded.


def _build(path: Path, kind: str) -> Path:
    data = synthetic_series(n_time=5, n_band=2, height=13, width=11, seed=11)
    kw: dict[str, Any] = dict(
        times=monthly(5),
        bands=[
            {"name": "B04", "common_name": "red", "scale": 0.0001, "offset": 0.0},
            {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": 0.0},
        ],
        crs="EPSG:32631",
        transform=[10, 0, 500000, 0, -10, 4000000],
        chunk_size=4,
        provenance={"sources": ["synthetic"]},
    )
    if kind == "sd":
        mask = (data[:, 0] % 7 != 0).astype(np.uint8)
        cov = (data[:, 1] % 5).astype(np.uint8)
        data = np.where(mask[:, None] == 1, data, 0).astype(data.dtype)
        kw.update(encoding="star-delta", anchor_interval=2, shard_time=2, mask=mask, coverage=cov)
    elif kind == "none":
        kw.update(encoding="none")
    elif kind == "i16":
        data = synthetic_series(n_time=5, n_band=2, height=13, width=11, dtype="int16", seed=11)
        kw.update(encoding="none", nodata=None)
    chronozarr.encode(data, path, **kw)
    return path


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("bases")
    return {kind: _build(root / f"{kind}.zarr", kind) for kind in ("sd", "none", "i16")}


def _copy(bases: dict[str, Path], kind: str, tmp_path: Path) -> Path:
    dst = tmp_path / f"{kind}.zarr"
    shutil.copytree(bases[kind], dst)
    return dst


def _errors(report: chronozarr.Report) -> list[chronozarr.Finding]:
    return [f for f in report.findings if f.severity == "error"]


def _assert_finding(
    report: chronozarr.Report, rule: str, section: str, key: str, severity: str = "error"
) -> chronozarr.Finding:
    hits = [f for f in report.findings if f.rule == rule]
    assert hits, f"no {rule} finding; got {[(f.rule, f.section, f.key) for f in report.findings]}"
    good = [f for f in hits if f.section == section and key in f.key and f.severity == severity]
    assert good, f"{rule}: wrong section/key/severity: {hits}"
    if severity == "error":
        assert not report.ok
    return good[0]


# --- valid stores -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sd", "none", "i16"])
@pytest.mark.parametrize("deep", [False, True])
def test_valid_store_is_ok(bases: dict[str, Path], kind: str, deep: bool) -> None:
    report = chronozarr.validate(bases[kind], deep=deep)
    assert report.ok
    assert _errors(report) == []
    assert report.checked["arrays"] >= 4
    if deep:
        assert report.checked["chunks decoded"] > 0
    as_json = report.to_json()
    assert as_json["ok"] is True and as_json["errors"] == 0
    json.dumps(as_json)


def test_valid_store_with_pixels_per_tile(bases: dict[str, Path], tmp_path: Path) -> None:
    """spec 3.4: a validator MUST accept a store with or without pixels_per_tile."""
    path = _copy(bases, "sd", tmp_path)

    def add(doc: dict[str, Any]) -> None:
        for d in doc["attributes"]["multiscales"][0]["datasets"]:
            d["pixels_per_tile"] = 256

    edit_root(path, add)
    report = chronozarr.validate(path, deep=True)
    assert report.ok and _errors(report) == []


def test_valid_without_consolidated_metadata(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)
    drop_consolidated(path)
    report = chronozarr.validate(path, deep=True)
    assert report.ok
    _assert_finding(report, "root.consolidated", "3.1", "zarr.json", "warning")


def test_v01_store_is_valid(bases: dict[str, Path], tmp_path: Path) -> None:
    """spec 13: every v0.1 store is a valid v0.2 store."""
    src = tmp_path / "src.zarr"
    _build_v01_source(src)

    def edit(doc: dict[str, Any]) -> None:
        cz = doc["attributes"]["chronozarr"]
        cz["spec_version"] = "0.1.0"
        cz["bands"] = [b["name"] for b in cz["bands"]]
        for key in ("band_names", "levels", "shard_bytes", "mask_variable"):
            cz.pop(key, None)
        cz["temporal"].pop("encoding")
        for d in doc["attributes"]["multiscales"][0]["datasets"]:
            d["pixels_per_tile"] = 4
        doc.pop("consolidated_metadata")

    edit_root(src, edit)
    report = chronozarr.validate(src, deep=True)
    assert report.ok, _errors(report)


def _build_v01_source(path: Path) -> None:
    data = synthetic_series(n_time=4, n_band=2, height=9, width=9, seed=2)
    chronozarr.encode(
        data,
        path,
        times=monthly(4),
        bands=["B04", "B08"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
        encoding="star-delta",
        anchor_interval=6,
        shard=True,
    )


def test_missing_store_raises(tmp_path: Path) -> None:
    with pytest.raises(StoreNotFoundError):
        chronozarr.validate(tmp_path / "nothing")


# --- one broken MUST per case ------------------------------------------------------------------------


def cz(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    return lambda p: edit_chronozarr(p, fn)


def doc(node: str, fn: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    return lambda p: edit_doc(p, node, fn)


def root(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    return lambda p: edit_root(p, fn)


def ms(fn: Callable[[dict[str, Any]], Any]) -> Callable[[Path], None]:
    return root(lambda d: fn(d["attributes"]["multiscales"][0]))


def both(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def run(p: Path) -> None:
        for e in edits:
            e(p)

    return run


def nodata_everywhere(value: Any) -> Callable[[Path], None]:
    """Set ``nodata`` on the root and ``fill_value`` + ``nodata`` on every level's data array."""

    def set_level(d: dict[str, Any]) -> None:
        d["fill_value"] = value
        d["attributes"]["nodata"] = value

    return both(cz(setitem("nodata", value)), *(doc(f"{k}/data", set_level) for k in "012"))


def remove_node(node: str) -> Callable[[Path], None]:
    def run(p: Path) -> None:
        shutil.rmtree(p / node)
        edit_root(p, lambda d: d["consolidated_metadata"]["metadata"].pop(node, None))

    return run


def setitem(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def run(d: dict[str, Any]) -> None:
        target = d
        parts = key.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        last = parts[-1]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return run


def delitem(key: str) -> Callable[[dict[str, Any]], None]:
    def run(d: dict[str, Any]) -> None:
        target = d
        parts = key.split(".")
        for part in parts[:-1]:
            target = target[int(part)] if isinstance(target, list) else target[part]
        del target[parts[-1]]

    return run


def rewrite_coord(node: str, values: Any, dtype: str = "float64") -> Callable[[Path], None]:
    """Replace a 1-d coordinate array's values (and its shape) keeping its codecs."""

    def run(p: Path) -> None:
        d = read_json(p / node / "zarr.json")
        arr = np.asarray(values, dtype=dtype)
        codec = ChunkCodec(d["codecs"], dtype, arr.shape)
        (p / node / "c" / "0").write_bytes(codec.encode(arr))

        def shape(x: dict[str, Any]) -> None:
            x["shape"] = [len(arr)]
            x["chunk_grid"]["configuration"]["chunk_shape"] = [len(arr)]

        edit_doc(p, node, shape)

    return run


def write_file(rel: str, data: bytes) -> Callable[[Path], None]:
    def run(p: Path) -> None:
        (p / rel).parent.mkdir(parents=True, exist_ok=True)
        (p / rel).write_bytes(data)

    return run


def unlink(rel: str) -> Callable[[Path], None]:
    return lambda p: (p / rel).unlink()


CASES: list[tuple[str, str, Callable[[Path], None], str, str, str]] = [
    # (id, base, break, rule, section, key)
    ("root-not-group", "none", root(setitem("node_type", "array")), "root.group", "2", "zarr.json"),
    ("root-v2", "none", root(setitem("zarr_format", 2)), "root.group", "2", "zarr.json"),
    (
        "no-chronozarr",
        "none",
        root(delitem("attributes.chronozarr")),
        "root.chronozarr",
        "3.2",
        "zarr.json",
    ),
    (
        "spec-version",
        "none",
        cz(setitem("spec_version", "0.3.0")),
        "root.chronozarr",
        "3.2",
        "chronozarr",
    ),
    ("no-crs", "none", cz(delitem("crs")), "chronozarr.key", "3.2", "chronozarr.crs"),
    ("no-nodata", "none", cz(delitem("nodata")), "chronozarr.key", "3.2", "chronozarr.nodata"),
    (
        "no-variable",
        "none",
        cz(delitem("variable")),
        "chronozarr.key",
        "3.2",
        "chronozarr.variable",
    ),
    (
        "no-band-names",
        "sd",
        cz(delitem("band_names")),
        "chronozarr.key",
        "3.2",
        "chronozarr.band_names",
    ),
    ("no-levels", "sd", cz(delitem("levels")), "chronozarr.key", "3.2", "chronozarr.levels"),
    (
        "no-volatility-path",
        "none",
        cz(delitem("volatility_path")),
        "chronozarr.key",
        "3.2",
        "chronozarr.volatility_path",
    ),
    (
        "no-multiscales",
        "none",
        root(delitem("attributes.multiscales")),
        "multiscales.missing",
        "3.4",
        "multiscales",
    ),
    ("ms-empty", "none", ms(setitem("datasets", [])), "multiscales.datasets", "3.4", "multiscales"),
    (
        "ms-order",
        "none",
        ms(lambda m: m["datasets"].reverse()),
        "multiscales.order",
        "3.4",
        "multiscales",
    ),
    (
        "ms-crs",
        "none",
        ms(setitem("datasets.1.crs", "EPSG:4326")),
        "multiscales.crs",
        "3.4",
        "multiscales",
    ),
    (
        "ms-method-top",
        "none",
        ms(setitem("method", "block_mean")),
        "multiscales.method",
        "3.4",
        "multiscales",
    ),
    (
        "ms-metadata",
        "none",
        ms(delitem("metadata.args")),
        "multiscales.metadata",
        "3.4",
        "multiscales",
    ),
    ("ms-type", "none", ms(delitem("type")), "multiscales.type", "3.4", "multiscales"),
    ("ms-layout", "none", ms(setitem("layout", [])), "multiscales.layout", "3.4", "multiscales"),
    (
        "bands-unique",
        "none",
        cz(
            lambda c: (
                c["bands"][1].__setitem__("name", "B04"),
                c.__setitem__("band_names", ["B04", "B04"]),
            )
        ),
        "bands.unique",
        "3.6",
        "chronozarr.bands",
    ),
    (
        "band-names-mirror",
        "none",
        cz(setitem("band_names", ["B08", "B04"])),
        "mirror.band_names",
        "3.5",
        "chronozarr.band_names",
    ),
    (
        "nodata-nan",
        "i16",
        cz(setitem("nodata", float("nan"))),
        "nodata.nan",
        "2.3",
        "chronozarr.nodata",
    ),
    ("data-missing", "none", remove_node("1/data"), "array.missing", "2", "1/data/zarr.json"),
    (
        "data-int32",
        "none",
        doc("0/data", setitem("data_type", "int32")),
        "data.data_type",
        "2.3",
        "0/data/zarr.json",
    ),
    (
        "data-lzma",
        "none",
        doc("0/data", setitem("codecs.1", {"name": "lzma"})),
        "array.codec",
        "8",
        "0/data/zarr.json",
    ),
    (
        "data-two-compressors",
        "none",
        doc(
            "0/data", lambda d: d["codecs"].append({"name": "gzip", "configuration": {"level": 1}})
        ),
        "array.codec",
        "8",
        "0/data/zarr.json",
    ),
    (
        "data-no-compressor",
        "none",
        doc("0/data", lambda d: d["codecs"].pop()),
        "codec.one",
        "8",
        "0/data/zarr.json",
    ),
    (
        "data-big-endian",
        "none",
        doc("0/data", setitem("codecs.0.configuration.endian", "big")),
        "array.codec",
        "8",
        "0/data/zarr.json",
    ),
    (
        "blosc-bitshuffle",
        "none",
        doc(
            "1/data",
            setitem(
                "codecs.1",
                {
                    "name": "blosc",
                    "configuration": {
                        "cname": "lz4",
                        "clevel": 5,
                        "shuffle": "bitshuffle",
                        "typesize": 2,
                        "blocksize": 0,
                    },
                },
            ),
        ),
        "array.codec",
        "8",
        "1/data/zarr.json",
    ),
    (
        "no-dimension-names",
        "none",
        doc("1/data", delitem("dimension_names")),
        "array.dimension_names",
        "2.2",
        "1/data/zarr.json",
    ),
    (
        "no-array-dimensions",
        "sd",
        doc("0/mask", delitem("attributes._ARRAY_DIMENSIONS")),
        "array.array_dimensions",
        "2.2",
        "0/mask/zarr.json",
    ),
    (
        "array-dimensions-differ",
        "none",
        doc("0/data", setitem("attributes._ARRAY_DIMENSIONS", ["t", "b", "y", "x"])),
        "array.array_dimensions",
        "2.2",
        "0/data/zarr.json",
    ),
    (
        "coord-dims",
        "none",
        doc("0/time", delitem("dimension_names")),
        "array.dimension_names",
        "2.2",
        "0/time/zarr.json",
    ),
    (
        "levels-gap",
        "none",
        both(cz(setitem("levels.2.path", "3")), ms(setitem("datasets.2.path", "3"))),
        "levels.consecutive",
        "6",
        "chronozarr.levels",
    ),
    ("level-group-missing", "none", remove_node("1"), "level.group", "2", "1/zarr.json"),
    (
        "level-attr",
        "none",
        doc("1", delitem("attributes.resolution")),
        "level.attrs",
        "3.3",
        "1/zarr.json",
    ),
    (
        "level-crs",
        "none",
        doc("2", setitem("attributes.crs", "EPSG:4326")),
        "level.crs",
        "3.3",
        "2/zarr.json",
    ),
    (
        "data-dims",
        "none",
        doc(
            "0/data",
            lambda d: (
                d.__setitem__("dimension_names", ["t", "band", "y", "x"]),
                d["attributes"].__setitem__("_ARRAY_DIMENSIONS", ["t", "band", "y", "x"]),
            ),
        ),
        "data.dims",
        "2.1",
        "0/data/zarr.json",
    ),
    (
        "data-3d",
        "none",
        doc(
            "2/data",
            lambda d: (
                d.__setitem__("shape", [5, 4, 3]),
                d["chunk_grid"]["configuration"].__setitem__("chunk_shape", [1, 4, 4]),
                d.__setitem__("dimension_names", ["time", "y", "x"]),
                d["attributes"].__setitem__("_ARRAY_DIMENSIONS", ["time", "y", "x"]),
            ),
        ),
        "data.shape",
        "2.1",
        "2/data/zarr.json",
    ),
    (
        "data-chunks-not-square",
        "none",
        doc("0/data", setitem("chunk_grid.configuration.chunk_shape", [1, 2, 4, 2])),
        "data.chunks",
        "2.1",
        "0/data/zarr.json",
    ),
    (
        "data-chunks-two-t",
        "none",
        doc("0/data", setitem("chunk_grid.configuration.chunk_shape", [2, 2, 4, 4])),
        "data.chunks",
        "2.1",
        "0/data/zarr.json",
    ),
    (
        "data-cs-differs",
        "none",
        doc("1/data", setitem("chunk_grid.configuration.chunk_shape", [1, 2, 2, 2])),
        "data.cs",
        "2.1",
        "1/data/zarr.json",
    ),
    (
        "data-cs-odd",
        "none",
        both(
            *(
                doc(f"{k}/data", setitem("chunk_grid.configuration.chunk_shape", [1, 2, 3, 3]))
                for k in "012"
            )
        ),
        "data.cs",
        "2.1",
        "0/data/zarr.json",
    ),
    (
        "data-dtype-differs",
        "none",
        doc("1/data", setitem("data_type", "uint8")),
        "data.dtype",
        "2.3",
        "1/data/zarr.json",
    ),
    (
        "data-time-axis",
        "none",
        doc("1/data", setitem("shape", [4, 2, 7, 6])),
        "data.time",
        "3.5",
        "1/data/zarr.json",
    ),
    (
        "data-band-axis",
        "none",
        doc("1/data", setitem("shape", [5, 3, 7, 6])),
        "data.band",
        "3.5",
        "1/data/zarr.json",
    ),
    (
        "shard-shape",
        "sd",
        doc("0/data", setitem("chunk_grid.configuration.chunk_shape", [2, 2, 8, 8])),
        "data.shard",
        "7.1",
        "0/data/zarr.json",
    ),
    (
        "fill-not-nodata",
        "none",
        doc("0/data", setitem("fill_value", 5)),
        "nodata.fill",
        "2.3",
        "0/data/zarr.json",
    ),
    (
        "nodata-attr",
        "none",
        doc("2/data", setitem("attributes.nodata", 5)),
        "nodata.attr",
        "2.3",
        "2/data/zarr.json",
    ),
    (
        "nodata-attr-missing",
        "none",
        doc("1/data", delitem("attributes.nodata")),
        "nodata.attr",
        "2.3",
        "1/data/zarr.json",
    ),
    (
        "null-nodata-fill",
        "i16",
        doc("0/data", setitem("fill_value", -1)),
        "nodata.fill",
        "2.3",
        "0/data/zarr.json",
    ),
    (
        "null-nodata-attr",
        "i16",
        doc("1/data", setitem("attributes.nodata", 0)),
        "nodata.attr",
        "2.3",
        "1/data/zarr.json",
    ),
    (
        "pyramid-shape",
        "none",
        both(
            doc("1/data", setitem("shape", [5, 2, 8, 6])),
            cz(setitem("levels.1.shape", [5, 2, 8, 6])),
        ),
        "pyramid.shape",
        "6",
        "1/data/zarr.json",
    ),
    (
        "pyramid-resolution",
        "none",
        both(
            doc("1", setitem("attributes.resolution", 30.0)),
            cz(setitem("levels.1.resolution", 30.0)),
        ),
        "pyramid.resolution",
        "6",
        "1/zarr.json",
    ),
    (
        "mask-shape",
        "sd",
        doc("1/mask", setitem("shape", [5, 7, 7])),
        "mask.shape",
        "2.4",
        "1/mask/zarr.json",
    ),
    (
        "mask-fill",
        "sd",
        doc("0/mask", setitem("fill_value", 1)),
        "mask.fill",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "mask-dims",
        "sd",
        doc(
            "0/mask",
            lambda d: (
                d.__setitem__("dimension_names", ["time", "row", "col"]),
                d["attributes"].__setitem__("_ARRAY_DIMENSIONS", ["time", "row", "col"]),
            ),
        ),
        "mask.dims",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "mask-chunks",
        "sd",
        doc("0/mask", setitem("codecs.0.configuration.chunk_shape", [1, 2, 2])),
        "mask.chunks",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "mask-layout",
        "sd",
        doc("0/mask", setitem("chunk_grid.configuration.chunk_shape", [1, 4, 4])),
        "mask.layout",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "mask-codec",
        "sd",
        doc(
            "0/mask",
            setitem(
                "codecs.0.configuration.codecs.1", {"name": "gzip", "configuration": {"level": 5}}
            ),
        ),
        "mask.codec",
        "8",
        "0/mask/zarr.json",
    ),
    (
        "mask-dtype",
        "sd",
        doc("0/mask", setitem("data_type", "uint16")),
        "mask.data_type",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "coverage-shape",
        "sd",
        doc("2/coverage", setitem("shape", [5, 4, 4])),
        "coverage.shape",
        "2.5",
        "2/coverage/zarr.json",
    ),
    (
        "coverage-fill",
        "sd",
        doc("1/coverage", setitem("fill_value", 3)),
        "coverage.fill",
        "2.5",
        "1/coverage/zarr.json",
    ),
    ("mask-not-every-level", "sd", remove_node("2/mask"), "mask.levels", "2.4", "mask"),
    (
        "coverage-not-every-level",
        "sd",
        remove_node("0/coverage"),
        "coverage.levels",
        "2.5",
        "coverage",
    ),
    (
        "mask-variable-absent",
        "sd",
        cz(delitem("mask_variable")),
        "mask.variable",
        "2.4",
        "chronozarr.mask_variable",
    ),
    (
        "coverage-variable-name",
        "sd",
        cz(setitem("coverage_variable", "cov")),
        "coverage.variable",
        "2.5",
        "chronozarr.coverage_variable",
    ),
    (
        "mask-variable-no-arrays",
        "none",
        cz(setitem("mask_variable", "mask")),
        "mask.variable",
        "2.4",
        "chronozarr.mask_variable",
    ),
    (
        "levels-mirror-grid",
        "none",
        cz(setitem("levels.1.grid", [3, 3])),
        "mirror.levels",
        "3.7",
        "chronozarr.levels[1]",
    ),
    (
        "levels-mirror-shape",
        "none",
        cz(setitem("levels.0.shape", [5, 2, 13, 12])),
        "mirror.levels",
        "3.7",
        "chronozarr.levels[0]",
    ),
    (
        "levels-mirror-resolution",
        "none",
        cz(setitem("levels.2.resolution", 41.0)),
        "mirror.levels",
        "3.7",
        "chronozarr.levels[2]",
    ),
    (
        "levels-mirror-transform",
        "none",
        cz(setitem("levels.1.transform", [20.0, 0.0, 500010.0, 0.0, -20.0, 4000000.0])),
        "mirror.levels",
        "3.7",
        "chronozarr.levels[1]",
    ),
    (
        "levels-mirror-length",
        "none",
        cz(lambda c: c["levels"].pop()),
        "mirror.levels",
        "3.7",
        "chronozarr.levels",
    ),
    (
        "selection-ratio",
        "sd",
        cz(setitem("temporal.selection", {"mode": "auto", "sampled_cells": 3, "ratio": 0.9})),
        "temporal.selection",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "selection-shape",
        "sd",
        cz(setitem("temporal.selection", {"mode": "manual"})),
        "temporal.selection",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "none-with-anchors",
        "none",
        cz(setitem("temporal.anchor_interval", 6)),
        "temporal.none",
        "4.1",
        "chronozarr.temporal",
    ),
    (
        "star-delta-int16",
        "i16",
        cz(
            setitem(
                "temporal",
                {
                    "encoding": "star-delta",
                    "anchor_interval": 2,
                    "anchor_indices": [0, 2, 4],
                    "delta_reference": {"1": 0, "3": 2},
                },
            )
        ),
        "temporal.dtype",
        "4.1",
        "chronozarr.temporal",
    ),
    (
        "anchor-interval-0",
        "sd",
        cz(setitem("temporal.anchor_interval", 0)),
        "temporal.anchor_interval",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "anchor-indices",
        "sd",
        cz(setitem("temporal.anchor_indices", [0, 3])),
        "temporal.anchor_indices",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "ref-missing",
        "sd",
        cz(delitem("temporal.delta_reference.3")),
        "temporal.delta_reference",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "ref-not-anchor",
        "sd",
        cz(setitem("temporal.delta_reference.3", 1)),
        "temporal.delta_reference",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "ref-too-far",
        "sd",
        cz(setitem("temporal.delta_reference.1", 4)),
        "temporal.delta_reference",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "ref-on-anchor",
        "sd",
        cz(setitem("temporal.delta_reference.2", 0)),
        "temporal.delta_reference",
        "4.2",
        "chronozarr.temporal",
    ),
    (
        "ref-out-of-range",
        "sd",
        cz(setitem("temporal.delta_reference.7", 4)),
        "temporal.delta_reference",
        "4.2",
        "chronozarr.temporal",
    ),
    ("coord-missing", "none", remove_node("1/x"), "coord.missing", "2.2", "1/x/zarr.json"),
    (
        "coord-dtype",
        "none",
        doc("0/y", setitem("data_type", "float32")),
        "coord.dtype",
        "2.2",
        "0/y/zarr.json",
    ),
    ("coord-chunk-missing", "none", unlink("2/time/c/0"), "coord.chunk", "2.2", "2/time/c/0"),
    (
        "coord-garbage",
        "none",
        write_file("0/time/c/0", b"not zstd at all"),
        "coord.decode",
        "2.2",
        "0/time/c/0",
    ),
    (
        "times-mirror-value",
        "none",
        cz(setitem("times.2", "2024-03-02T00:00:00Z")),
        "mirror.time_values",
        "2.2",
        "0/time",
    ),
    (
        "times-mirror-rendering",
        "none",
        cz(setitem("times.0", "2024-01-01T00:00:00.000Z")),
        "mirror.time_values",
        "2.2",
        "0/time",
    ),
    (
        "times-mirror-length",
        "none",
        cz(lambda c: c["times"].pop()),
        "mirror.times",
        "3.5",
        "0/time",
    ),
    (
        "time-order",
        "none",
        both(*(rewrite_coord(f"{k}/time", [3, 2, 1, 4, 5], "int64") for k in "012")),
        "time.order",
        "14",
        "0/time",
    ),
    (
        "band-coord",
        "none",
        lambda p: [
            (p / k / "band" / "c" / "0").write_bytes(
                (p / "0" / "band" / "c" / "0").read_bytes().replace(b"B08", b"B8A")
            )
            for k in "1"
        ],
        "mirror.band_coord",
        "2.2",
        "1/band",
    ),
    (
        "x-length",
        "none",
        rewrite_coord("0/x", 500005.0 + 10.0 * np.arange(10)),
        "coord.length",
        "2.2",
        "0/x",
    ),
    (
        "x-centres",
        "none",
        rewrite_coord("1/x", 500000.0 + 20.0 * np.arange(6)),
        "coord.centres",
        "2.2",
        "1/x",
    ),
    (
        "y-centres",
        "none",
        rewrite_coord("0/y", 4000000.0 + 10.0 * (np.arange(13) + 0.5)),
        "coord.centres",
        "2.2",
        "0/y",
    ),
    (
        "volatility-shape",
        "none",
        doc(
            "volatility",
            lambda d: (
                d.__setitem__("shape", [3, 3]),
                d["chunk_grid"]["configuration"].__setitem__("chunk_shape", [3, 3]),
            ),
        ),
        "volatility.shape",
        "5",
        "volatility/zarr.json",
    ),
    (
        "volatility-chunk",
        "none",
        doc("volatility", setitem("chunk_grid.configuration.chunk_shape", [2, 3])),
        "volatility.chunk",
        "5",
        "volatility/zarr.json",
    ),
    (
        "volatility-dtype",
        "none",
        doc("volatility", setitem("data_type", "float64")),
        "volatility.data_type",
        "5",
        "volatility/zarr.json",
    ),
    (
        "shard-bytes-unsharded",
        "none",
        cz(setitem("shard_bytes", {"0": {}})),
        "shard_bytes.unsharded",
        "7.3",
        "chronozarr.shard_bytes",
    ),
    (
        "shard-bytes-size",
        "sd",
        cz(
            lambda c: c["shard_bytes"]["0"].__setitem__("1/2/1", c["shard_bytes"]["0"]["1/2/1"] + 1)
        ),
        "shard_bytes.size",
        "7.3",
        "0/data/c/1/0/2/1",
    ),
    (
        "shard-bytes-unlisted",
        "sd",
        cz(lambda c: c["shard_bytes"]["1"].pop("2/1/0")),
        "shard_bytes.missing",
        "7.3",
        "1/data/c/2/0/1/0",
    ),
    (
        "shard-bytes-no-object",
        "sd",
        unlink("2/data/c/1/0/0/0"),
        "shard_bytes.exists",
        "7.3",
        "2/data/c/1/0/0/0",
    ),
    (
        "shard-bytes-outside",
        "sd",
        cz(lambda c: c["shard_bytes"]["0"].__setitem__("9/0/0", 10)),
        "shard_bytes.exists",
        "7.3",
        "chronozarr.shard_bytes",
    ),
    (
        "consolidated-stale",
        "none",
        lambda p: write_json(
            p / "1" / "x" / "zarr.json",
            {
                **read_json(p / "1" / "x" / "zarr.json"),
                "attributes": {"_ARRAY_DIMENSIONS": ["x"], "extra": 1},
            },
        ),
        "consolidated.stale",
        "3.1",
        "1/x/zarr.json",
    ),
    (
        "consolidated-orphan",
        "none",
        lambda p: (p / "0" / "y" / "zarr.json").unlink(),
        "consolidated.stale",
        "3.1",
        "0/y/zarr.json",
    ),
    (
        "dotfile",
        "none",
        write_file("0/data/.zarray", b"{}"),
        "hosting.dotfile",
        "9",
        "0/data/.zarray",
    ),
    ("dotfile-root", "none", write_file(".zmetadata", b"{}"), "hosting.dotfile", "9", ".zmetadata"),
    # checks added to the validator with this suite
    (
        "key-encoding-dot",
        "none",
        doc("0/data", setitem("chunk_key_encoding.configuration.separator", ".")),
        "array.key_encoding",
        "2",
        "0/data/zarr.json",
    ),
    (
        "key-encoding-v2",
        "sd",
        doc(
            "1/mask",
            setitem("chunk_key_encoding", {"name": "v2", "configuration": {"separator": "."}}),
        ),
        "array.key_encoding",
        "2",
        "1/mask/zarr.json",
    ),
    (
        "shard-index-no-crc",
        "sd",
        doc(
            "0/data",
            setitem(
                "codecs.0.configuration.index_codecs",
                [{"name": "bytes", "configuration": {"endian": "little"}}],
            ),
        ),
        "shard.index",
        "7.2",
        "0/data/zarr.json",
    ),
    (
        "shard-index-codec",
        "sd",
        doc(
            "1/data",
            setitem("codecs.0.configuration.index_codecs", [{"name": "bytes"}, {"name": "zstd"}]),
        ),
        "array.shard_index",
        "7.2",
        "1/data/zarr.json",
    ),
    (
        "mask-shard-spatial",
        "sd",
        doc("0/mask", setitem("chunk_grid.configuration.chunk_shape", [2, 8, 8])),
        "mask.layout",
        "2.4",
        "0/mask/zarr.json",
    ),
    (
        "pyramid-transform",
        "none",
        both(
            doc("2", setitem("attributes.transform", [40.0, 0.0, 500040.0, 0.0, -40.0, 4000000.0])),
            cz(setitem("levels.2.transform", [40.0, 0.0, 500040.0, 0.0, -40.0, 4000000.0])),
        ),
        "pyramid.transform",
        "6",
        "2/zarr.json",
    ),
    (
        "pyramid-transform-size",
        "none",
        both(
            doc("1", setitem("attributes.transform", [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0])),
            cz(setitem("levels.1.transform", [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0])),
        ),
        "pyramid.transform",
        "6",
        "1/zarr.json",
    ),
    (
        "nodata-out-of-range",
        "none",
        nodata_everywhere(70000),
        "nodata.range",
        "2.3",
        "chronozarr.nodata",
    ),
    (
        "nodata-fraction",
        "none",
        nodata_everywhere(0.5),
        "nodata.range",
        "2.3",
        "chronozarr.nodata",
    ),
    (
        "sampled-cells",
        "sd",
        cz(setitem("temporal.selection", {"mode": "auto", "sampled_cells": 1, "ratio": 0.5})),
        "temporal.selection",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "sampled-cells-too-many",
        "sd",
        cz(setitem("temporal.selection", {"mode": "auto", "sampled_cells": 13, "ratio": 0.5})),
        "temporal.selection",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "coord-dims-name",
        "none",
        doc(
            "1/y",
            lambda d: (
                d.__setitem__("dimension_names", ["row"]),
                d["attributes"].__setitem__("_ARRAY_DIMENSIONS", ["row"]),
            ),
        ),
        "coord.dims",
        "2.2",
        "1/y/zarr.json",
    ),
    (
        "coord-codec",
        "none",
        doc("0/time", setitem("codecs.1", {"name": "lzma"})),
        "coord.codec",
        "8",
        "0/time/zarr.json",
    ),
    (
        "shard-bytes-level",
        "sd",
        cz(lambda c: c["shard_bytes"].__setitem__("7", {})),
        "shard_bytes.exists",
        "7.3",
        "chronozarr.shard_bytes",
    ),
    (
        "volatility-nan",
        "none",
        lambda p: _set_volatility(p, 0, 1, float("nan")),
        "volatility.range",
        "5",
        "volatility/c/0/0",
    ),
    (
        "volatility-above-one",
        "sd",
        lambda p: _set_volatility(p, 3, 2, 1.5),
        "volatility.range",
        "5",
        "volatility/c/0/0",
    ),
    # rules catalogued in chronozarr.validate.rules with no case above (decision 0006)
    (
        "root-invalid-json",
        "none",
        write_file("zarr.json", b"{not json"),
        "json.invalid",
        "3",
        "zarr.json",
    ),
    (
        "root-unreadable",
        "none",
        write_file("zarr.json", b"{not json"),
        "root.missing",
        "2",
        "zarr.json",
    ),
    (
        "no-levels-anywhere",
        "none",
        both(root(delitem("attributes.multiscales")), cz(delitem("levels"))),
        "levels.missing",
        "3.7",
        "zarr.json",
    ),
    (
        "chunk-grid-rectangular",
        "none",
        doc("0/data", setitem("chunk_grid.name", "rectangular")),
        "array.chunk_grid",
        "2.1",
        "0/data/zarr.json",
    ),
    (
        "coverage-uint16",
        "sd",
        doc("0/coverage", setitem("data_type", "uint16")),
        "coverage.data_type",
        "2.5",
        "0/coverage/zarr.json",
    ),
    (
        "coverage-dims",
        "sd",
        doc("0/coverage", setitem("dimension_names", ["t", "y", "x"])),
        "coverage.dims",
        "2.5",
        "0/coverage/zarr.json",
    ),
    (
        "coverage-inner-chunks",
        "sd",
        doc("0/coverage", setitem("codecs.0.configuration.chunk_shape", [1, 2, 2])),
        "coverage.chunks",
        "2.5",
        "0/coverage/zarr.json",
    ),
    (
        "coverage-shard-time",
        "sd",
        doc(
            "0/coverage",
            lambda d: (
                setitem("chunk_grid.configuration.chunk_shape", [1, 4, 4])(d),
                setitem("codecs.0.configuration.chunk_shape", [1, 4, 4])(d),
            ),
        ),
        "coverage.layout",
        "2.5",
        "0/coverage/zarr.json",
    ),
    (
        "coverage-gzip",
        "sd",
        doc(
            "0/coverage",
            setitem(
                "codecs.0.configuration.codecs.1", {"name": "gzip", "configuration": {"level": 1}}
            ),
        ),
        "coverage.codec",
        "8",
        "0/coverage/zarr.json",
    ),
    (
        "volatility-garbage",
        "none",
        write_file("volatility/c/0/0", b"not a zstd frame"),
        "volatility.decode",
        "5",
        "volatility/c/0/0",
    ),
]


def _set_volatility(path: Path, r: int, c: int, value: float) -> None:
    d = read_json(path / "volatility" / "zarr.json")
    codec = ChunkCodec(d["codecs"], "float32", d["shape"])
    f = path / "volatility" / "c" / "0" / "0"
    vol = codec.decode(f.read_bytes()).copy()
    vol[r, c] = value
    f.write_bytes(codec.encode(vol))


@pytest.mark.parametrize(
    ("base", "breaker", "rule", "section", "key"),
    [pytest.param(*c[1:], id=c[0]) for c in CASES],
)
def test_broken_rule_is_found(
    bases: dict[str, Path],
    tmp_path: Path,
    base: str,
    breaker: Callable[[Path], None],
    rule: str,
    section: str,
    key: str,
) -> None:
    path = _copy(bases, base, tmp_path)
    breaker(path)
    report = chronozarr.validate(path)
    _assert_finding(report, rule, section, key)


def test_each_case_breaks_only_what_it_says(bases: dict[str, Path], tmp_path: Path) -> None:
    """Guard against cases that pass by accident: a no-op edit yields no finding."""
    path = _copy(bases, "sd", tmp_path)
    edit_chronozarr(path, lambda c: None)
    edit_doc(path, "0/data", lambda d: None)
    assert chronozarr.validate(path).findings == []


# --- deep mode ---------------------------------------------------------------------------------------


def _rewrite_unsharded_chunk(path: Path, node: str, key: str, fn: Callable[[np.ndarray], Any]):
    d = read_json(path / node / "zarr.json")
    shape = d["chunk_grid"]["configuration"]["chunk_shape"]
    codec = ChunkCodec(d["codecs"], d["data_type"], shape)
    f = path / node / "c" / key
    chunk = codec.decode(f.read_bytes()).copy()
    fn(chunk)
    f.write_bytes(codec.encode(chunk))


def _rewrite_sharded_chunk(
    path: Path, node: str, shard_key: str, pos: int, fn: Callable[[np.ndarray], Any]
) -> None:
    d = read_json(path / node / "zarr.json")
    conf = d["codecs"][0]["configuration"]
    n = d["chunk_grid"]["configuration"]["chunk_shape"][0]
    codec = ChunkCodec(conf["codecs"], d["data_type"], conf["chunk_shape"])
    f = path / node / "c" / shard_key
    chunks = shard_chunks(f.read_bytes(), n)
    chunk = codec.decode(chunks[pos]).copy()
    fn(chunk)
    chunks[pos] = codec.encode(chunk)
    f.write_bytes(make_shard(chunks))
    if node.endswith("/data"):
        level = node.split("/")[0]
        ts, _, r, c = shard_key.split("/")
        edit_chronozarr(
            path, lambda cz: cz["shard_bytes"][level].__setitem__(f"{ts}/{r}/{c}", f.stat().st_size)
        )


def test_deep_level1_chunk_value(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "none", tmp_path)

    def bump(chunk: np.ndarray) -> None:
        chunk[0, 1, 2, 3] += 1

    _rewrite_unsharded_chunk(path, "1/data", "3/0/1/0", bump)
    assert chronozarr.validate(path).ok  # metadata is fine
    report = chronozarr.validate(path, deep=True)
    _assert_finding(report, "pyramid.mean", "6", "1/data")


def test_deep_level1_chunk_value_star_delta(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)

    def bump(chunk: np.ndarray) -> None:
        chunk[0, 0, 0, 0] ^= 0x0101

    _rewrite_sharded_chunk(path, "2/data", "1/0/0/0", 1, bump)  # t=3, a delta timestep
    assert chronozarr.validate(path).ok
    report = chronozarr.validate(path, deep=True)
    _assert_finding(report, "pyramid.mean", "6", "2/data")


def test_deep_mask_value_above_one(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)

    def two(chunk: np.ndarray) -> None:
        chunk[0, 0, 0] = 2

    _rewrite_sharded_chunk(path, "0/mask", "0/1/1", 1, two)
    report = chronozarr.validate(path, deep=True)
    _assert_finding(report, "mask.values", "2.4", "0/mask")


def test_deep_mask_pyramid(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)

    def flip(chunk: np.ndarray) -> None:
        chunk[0, 1, 1] ^= 1

    _rewrite_sharded_chunk(path, "1/mask", "2/0/0", 0, flip)
    report = chronozarr.validate(path, deep=True)
    _assert_finding(report, "pyramid.mask", "2.4", "1/mask")


def test_deep_coverage_pyramid(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)

    def inc(chunk: np.ndarray) -> None:
        chunk[0, 2, 1] += 1

    _rewrite_sharded_chunk(path, "2/coverage", "0/0/0", 1, inc)
    report = chronozarr.validate(path, deep=True)
    _assert_finding(report, "pyramid.coverage", "2.5", "2/coverage")


def test_deep_volatility_of_star_delta_store(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)
    d = read_json(path / "volatility" / "zarr.json")
    codec = ChunkCodec(d["codecs"], "float32", d["shape"])
    f = path / "volatility" / "c" / "0" / "0"
    vol = codec.decode(f.read_bytes()).copy()
    vol[1, 2] += 0.01
    f.write_bytes(codec.encode(vol))
    assert chronozarr.validate(path).ok
    report = chronozarr.validate(path, deep=True)
    hits = [x for x in report.findings if x.rule == "volatility.value"]
    assert hits and hits[0].section == "5" and "volatility" in hits[0].key
    assert "(1, 2)" in hits[0].message


def test_deep_corrupt_shard_index(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "sd", tmp_path)
    f = path / "0" / "data" / "c" / "2" / "0" / "3" / "2"
    blob = bytearray(f.read_bytes())
    blob[-2] ^= 0x55
    f.write_bytes(bytes(blob))
    assert chronozarr.validate(path).ok  # same length: shallow mode cannot see it
    report = chronozarr.validate(path, deep=True)
    finding = _assert_finding(report, "deep.decode", "10", "data")
    assert "checksum" in finding.message


def test_deep_skipped_when_metadata_is_broken(bases: dict[str, Path], tmp_path: Path) -> None:
    path = _copy(bases, "none", tmp_path)
    edit_doc(path, "0/data", setitem("fill_value", 5))
    report = chronozarr.validate(path, deep=True)
    assert any(f.rule == "deep.skipped" for f in report.findings)
    assert "chunks decoded" not in report.checked


def test_start_index_store_is_valid(bases: dict[str, Path], tmp_path: Path) -> None:
    """index_location start is allowed (readers MUST support it); deep mode decodes it."""
    path = _copy(bases, "sd", tmp_path)
    for k in "012":
        for name in ("data", "mask", "coverage"):
            rewrite_index_location(path, f"{k}/{name}", "start")
    report = chronozarr.validate(path, deep=True)
    assert _errors(report) == []


WARNINGS: list[tuple[str, str, Callable[[Path], None], str, str, str]] = [
    (
        "spatial-shape",
        "none",
        doc("0/data", setitem("attributes.spatial:shape", [11, 13])),
        "data.spatial",
        "3.3",
        "0/data/zarr.json",
    ),
    (
        "spatial-bbox",
        "none",
        doc("1/data", setitem("attributes.spatial:bbox", [0, 0, 1, 1])),
        "data.spatial",
        "3.3",
        "1/data/zarr.json",
    ),
    (
        "spatial-transform",
        "none",
        doc(
            "2/data",
            setitem("attributes.spatial:transform", [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]),
        ),
        "data.spatial",
        "3.3",
        "2/data/zarr.json",
    ),
    (
        "proj-code",
        "none",
        doc("0/data", setitem("attributes.proj:code", "EPSG:4326")),
        "data.spatial",
        "3.3",
        "0/data/zarr.json",
    ),
    (
        "gdal-crs",
        "none",
        doc(
            "0/data",
            setitem("attributes._CRS", {"url": "http://www.opengis.net/def/crs/EPSG/0/4326"}),
        ),
        "data.spatial",
        "3.3",
        "0/data/zarr.json",
    ),
    (
        "no-gdal-crs",
        "none",
        doc("0/data", delitem("attributes._CRS")),
        "data.crs",
        "3.3",
        "0/data/zarr.json",
    ),
    (
        "no-spatial",
        "none",
        doc("0/data", delitem("attributes.spatial:bbox")),
        "data.spatial",
        "3.3",
        "0/data/zarr.json",
    ),
    (
        "index-at-start",
        "sd",
        doc("0/coverage", setitem("codecs.0.configuration.index_location", "start")),
        "shard.index_location",
        "7.2",
        "0/coverage/zarr.json",
    ),
    (
        "selection-on-int16",
        "i16",
        cz(setitem("temporal.selection", {"mode": "auto", "sampled_cells": 3, "ratio": 1.2})),
        "temporal.selection_dtype",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "none-but-ratio-low",
        "none",
        cz(setitem("temporal.selection", {"mode": "auto", "sampled_cells": 3, "ratio": 0.5})),
        "temporal.selection_none",
        "4.3",
        "chronozarr.temporal",
    ),
    (
        "no-scale",
        "none",
        cz(lambda c: c["bands"][0].pop("scale")),
        "bands.scale",
        "3.6",
        "chronozarr.bands[0]",
    ),
    (
        "codecs-differ-between-levels",
        "none",
        doc("1/data", setitem("codecs.1.configuration.level", 3)),
        "codec.same",
        "8",
        "1/data/zarr.json",
    ),
    (
        "coord-two-chunks",
        "none",
        doc("0/x", setitem("chunk_grid.configuration.chunk_shape", [6])),
        "coord.single_chunk",
        "2.2",
        "0/x/zarr.json",
    ),
    (
        "tmp-file-of-a-killed-write",
        "none",
        write_file("0/data/c/0/0/0/.0.1f2e3d4c5b6a.tmp", b"half a chunk"),
        "hosting.leftover",
        "9",
        "0/data/c/0/0/0/.0.1f2e3d4c5b6a.tmp",
    ),
    (
        "stale-append-journal",
        "none",
        write_file(".chronozarr-append.json", b'{"n_time": 1, "volatility_chunk": null}'),
        "hosting.leftover",
        "9",
        ".chronozarr-append.json",
    ),
]


@pytest.mark.parametrize(
    ("base", "breaker", "rule", "section", "key"),
    [pytest.param(*c[1:], id=c[0]) for c in WARNINGS],
)
def test_should_rules_warn(
    bases: dict[str, Path],
    tmp_path: Path,
    base: str,
    breaker: Callable[[Path], None],
    rule: str,
    section: str,
    key: str,
) -> None:
    """A broken SHOULD is a warning: the store stays ok."""
    path = _copy(bases, base, tmp_path)
    breaker(path)
    report = chronozarr.validate(path)
    _assert_finding(report, rule, section, key, "warning")
    assert report.ok, _errors(report)


def test_none_store_volatility_with_another_anchor_interval(tmp_path: Path) -> None:
    """A none store's nominal schedule is not recorded (spec 5): interval 3 is not a warning,
    a tampered value still is."""
    data = synthetic_series(n_time=7, n_band=1, height=9, width=9, seed=5)
    path = tmp_path / "n3.zarr"
    chronozarr.encode(
        data,
        path,
        times=monthly(7),
        bands=["a"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
        encoding="none",
        anchor_interval=3,
    )
    report = chronozarr.validate(path, deep=True)
    assert [f for f in report.findings if f.rule == "volatility.value"] == []
    _set_volatility(path, 1, 1, 0.9)
    report = chronozarr.validate(path, deep=True)
    assert [f.section for f in report.findings if f.rule == "volatility.value"] == ["5"]


# --- malformed metadata: findings, never a crash ------------------------------------------------

MALFORMED = [
    ("root-attributes", root(setitem("attributes", -1)), "root.attributes", "3"),
    ("band-names-int", cz(setitem("band_names", -1)), "root.chronozarr", "3.2"),
    (
        "delta-reference-null",
        cz(setitem("temporal.delta_reference", None)),
        "root.chronozarr",
        "3.2",
    ),
    ("shard-bytes-str", cz(setitem("shard_bytes", "x")), "shard_bytes.malformed", "7.3"),
    ("shard-bytes-level-null", cz(setitem("shard_bytes.0", None)), "shard_bytes.malformed", "7.3"),
    (
        "shard-bytes-length-null",
        cz(setitem("shard_bytes.0.0/0/0", None)),
        "shard_bytes.malformed",
        "7.3",
    ),
    (
        "shard-bytes-length-negative",
        cz(setitem("shard_bytes.1.0/0/0", -1)),
        "shard_bytes.malformed",
        "7.3",
    ),
    (
        "consolidated-entry-null",
        root(setitem("consolidated_metadata.metadata.0/x", None)),
        "consolidated.stale",
        "3.1",
    ),
    ("level-attributes-str", doc("0", setitem("attributes", "x")), "level.attrs", "3.3"),
    ("level-transform-str", doc("1", setitem("attributes.transform", "x")), "level.attrs", "3.3"),
    ("level-transform-short", doc("0", setitem("attributes.transform", [])), "level.attrs", "3.3"),
    (
        "chunk-shape-empty",
        doc("0/data", setitem("chunk_grid.configuration.chunk_shape", [])),
        "array.malformed",
        "2",
    ),
    (
        "key-encoding-null",
        doc("0/data", setitem("chunk_key_encoding", None)),
        "array.malformed",
        "2",
    ),
    ("codecs-str", doc("1/data", setitem("codecs", "x")), "array.malformed", "2"),
    (
        "inner-chunk-str",
        doc("0/data", setitem("codecs.0.configuration.chunk_shape", "x")),
        "array.malformed",
        "2",
    ),
    (
        "index-codecs-null",
        doc("0/mask", setitem("codecs.0.configuration.index_codecs", None)),
        "array.malformed",
        "2",
    ),
    (
        "compressor-conf-str",
        doc("0/data", setitem("codecs.0.configuration.codecs.1.configuration", "x")),
        "array.malformed",
        "2",
    ),
    ("dimension-names-int", doc("0/data", setitem("dimension_names", -1)), "array.malformed", "2"),
    ("array-attributes-str", doc("0/coverage", setitem("attributes", "x")), "array.malformed", "2"),
    ("coord-shape-int", doc("0/time", setitem("shape", -1)), "coord.malformed", "2.2"),
    ("coord-chunk-grid-null", doc("0/time", setitem("chunk_grid", None)), "coord.malformed", "2.2"),
    ("coord-codec-null", doc("0/x", setitem("codecs.1", None)), "coord.malformed", "2.2"),
]


@pytest.mark.parametrize(
    ("breaker", "rule", "section"), [pytest.param(*c[1:], id=c[0]) for c in MALFORMED]
)
def test_malformed_metadata_is_a_finding(
    bases: dict[str, Path], tmp_path: Path, breaker: Callable[[Path], None], rule: str, section: str
) -> None:
    path = _copy(bases, "sd", tmp_path)
    breaker(path)
    for deep in (False, True):
        report = chronozarr.validate(path, deep=deep)
        assert not report.ok
        assert any(f.rule == rule and f.section == section for f in report.errors), [
            (f.rule, f.section, f.key) for f in report.findings
        ]


@pytest.mark.parametrize(("nodata", "ok"), [(0.1, True), (-9999.0, True), (1e39, False)])
def test_float32_nodata_range(tmp_path: Path, nodata: float, ok: bool) -> None:
    """A JSON nodata that rounds to a float32 (0.1, as other writers store it) is a value of
    the data type; one beyond the float32 range is not (spec 2.3)."""
    path = tmp_path / "f.zarr"
    data = np.linspace(0, 1, 2 * 1 * 5 * 5, dtype=np.float32).reshape(2, 1, 5, 5)
    chronozarr.encode(
        data,
        path,
        times=monthly(2),
        bands=["a"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
        nodata=-1.0,
    )
    edit_chronozarr(path, setitem("nodata", nodata))
    for k in ("0", "1"):
        edit_doc(path, f"{k}/data", setitem("fill_value", nodata))
        edit_doc(path, f"{k}/data", setitem("attributes.nodata", nodata))
    report = chronozarr.validate(path)
    assert report.ok == ok, report.findings
    assert any(f.rule == "nodata.range" for f in report.findings) != ok


@pytest.mark.parametrize(
    "breaker",
    [
        pytest.param(doc("1/data", setitem("shape", [5, 2, 2**62, 6])), id="huge-shape"),
        pytest.param(cz(setitem("shard_bytes.0.0/0/0", 2**70)), id="huge-length"),
        pytest.param(cz(setitem("volatility_path", ["x"])), id="volatility-path-list"),
        pytest.param(doc("0", setitem("attributes.resolution", "x")), id="resolution-str"),
    ],
)
def test_hostile_metadata_is_cheap_to_validate(
    bases: dict[str, Path], tmp_path: Path, breaker: Callable[[Path], None]
) -> None:
    """A shape or length gone wrong yields findings, not a grid of 2^62 shards to enumerate."""
    path = _copy(bases, "sd", tmp_path)
    breaker(path)
    report = chronozarr.validate(path)
    assert not report.ok
    assert not any(f.rule == "metadata.malformed" for f in report.findings), report.findings


def test_v01_store_without_volatility_path_warns(tmp_path: Path) -> None:
    """spec 5/13: a v0.1 store without volatility_path decodes but does not conform (a warning)."""
    src = tmp_path / "v01.zarr"
    _build_v01_source(src)

    def edit(d: dict[str, Any]) -> None:
        cz = d["attributes"]["chronozarr"]
        cz["spec_version"] = "0.1.0"
        cz.pop("volatility_path")

    edit_root(src, edit)
    report = chronozarr.validate(src)
    _assert_finding(report, "volatility.path", "5", "chronozarr.volatility_path", "warning")


def test_shard_grid_too_large_to_enumerate_warns(bases: dict[str, Path], tmp_path: Path) -> None:
    """spec 7.3: beyond a million shards only the listed ones are checked, and the report says so."""
    path = _copy(bases, "sd", tmp_path)
    edit_doc(path, "2/data", setitem("shape", [5, 2, 2**40, 3]))
    report = chronozarr.validate(path)
    _assert_finding(report, "shard_bytes.unchecked", "7.3", "chronozarr.shard_bytes", "warning")


def test_unfinished_append_warns(tmp_path: Path) -> None:
    """spec 14: an append interrupted after its chunks and coordinates is reported as such (a
    warning: re-running the append finishes it)."""
    data = synthetic_series(n_time=6, n_band=1, height=9, width=9, seed=4)
    path = tmp_path / "a.zarr"
    kw: dict[str, Any] = dict(bands=["B04"], crs="EPSG:32631", transform=[10, 0, 0, 0, -10, 0])
    chronozarr.encode(data[:4], path, times=monthly(6)[:4], chunk_size=4, **kw)
    with pytest.raises(RuntimeError):
        chronozarr.append(path, data[4:], times=monthly(6)[4:], _fail_after="coords")
    report = chronozarr.validate(path)
    _assert_finding(report, "append.in_progress", "14", "time/c/0", "warning")

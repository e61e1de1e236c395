"""Any CRS (docs/spec.md C16): EPSG codes, WKT, PROJJSON, pyproj and rasterio CRS objects.

What a store carries is checked with tools we did not write: pyproj parses the stored WKT2 and
PROJJSON back to the CRS that was given, zarr-python reads the attributes, and our validator and
reader read them back.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pyproj = pytest.importorskip("pyproj", reason="pyproj (the xarray extra) is not installed")
import zarr  # noqa: E402

import chronozarr  # noqa: E402
from chronozarr.errors import EncodeError  # noqa: E402

SINUSOIDAL = "+proj=sinu +lon_0=0 +x_0=0 +y_0=0 +R=6371007.181 +units=m +no_defs"
LAEA = "+proj=laea +lat_0=52 +lon_0=10 +x_0=4321000 +y_0=3210000 +ellps=GRS80 +units=m +no_defs"
TRANSFORM = [463.3127165279165, 0, -1111950.519667, 0, -463.3127165279165, 5559752.598333]


def _encode(path: Path, crs: Any, **kw: Any) -> chronozarr.Reader:
    data = (np.arange(2 * 1 * 10 * 12, dtype=np.uint16).reshape(2, 1, 10, 12) % 50).astype(
        np.uint16
    )
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01", "2024-02-01"],
        bands=["B01"],
        crs=crs,
        transform=TRANSFORM,
        chunk_size=8,
        **kw,
    )
    return chronozarr.open_store(path)


def _rasterio_crs(text: str) -> Any:
    rasterio_crs = pytest.importorskip("rasterio.crs", reason="rasterio (the cli extra) is absent")
    return rasterio_crs.CRS.from_user_input(text)


EPSG_INPUTS = {
    "int": lambda: 32631,
    "numpy int": lambda: np.int64(32631),
    "lower string": lambda: "epsg:32631",
    "pyproj": lambda: pyproj.CRS.from_epsg(32631),
    "rasterio": lambda: _rasterio_crs("EPSG:32631"),
    "wkt2 with its EPSG id": lambda: pyproj.CRS.from_epsg(32631).to_wkt(),
    "projjson with its EPSG id": lambda: pyproj.CRS.from_epsg(32631).to_json(),
}


@pytest.mark.parametrize("kind", sorted(EPSG_INPUTS))
def test_an_epsg_crs_becomes_its_code(tmp_path: Path, kind: str) -> None:
    reader = _encode(tmp_path / "s.zarr", EPSG_INPUTS[kind]())
    assert reader.attrs.crs == "EPSG:32631"
    assert reader.crs is not None and reader.crs.epsg == 32631
    attrs = zarr.open_group(tmp_path / "s.zarr", mode="r")["0/data"].attrs
    assert attrs["proj:code"] == "EPSG:32631"
    assert attrs["_CRS"] == {"url": "http://www.opengis.net/def/crs/EPSG/0/32631"}
    assert "proj:wkt2" not in attrs


NO_CODE_INPUTS = {
    "pyproj sinusoidal": (SINUSOIDAL, lambda: pyproj.CRS.from_proj4(SINUSOIDAL)),
    "rasterio sinusoidal": (SINUSOIDAL, lambda: _rasterio_crs(SINUSOIDAL)),
    "wkt2 string": (LAEA, lambda: pyproj.CRS.from_proj4(LAEA).to_wkt()),
    "wkt1 string": (LAEA, lambda: pyproj.CRS.from_proj4(LAEA).to_wkt("WKT1_GDAL")),
    "projjson string": (LAEA, lambda: pyproj.CRS.from_proj4(LAEA).to_json()),
    "projjson mapping": (LAEA, lambda: pyproj.CRS.from_proj4(LAEA).to_json_dict()),
}


@pytest.mark.parametrize("kind", sorted(NO_CODE_INPUTS))
def test_a_crs_without_code_is_carried_where_readers_look(tmp_path: Path, kind: str) -> None:
    proj4, make = NO_CODE_INPUTS[kind]
    want = pyproj.CRS.from_proj4(proj4)
    reader = _encode(tmp_path / "s.zarr", make())
    stored = reader.attrs.crs
    assert stored.startswith(("PROJCRS[", "PROJCS[")), stored[:40]
    assert pyproj.CRS.from_wkt(stored).equals(want, ignore_axis_order=True)
    group = zarr.open_group(tmp_path / "s.zarr", mode="r")
    for level in range(len(reader.levels)):
        attrs = group[f"{level}/data"].attrs
        assert "proj:code" not in attrs
        assert attrs["proj:wkt2"] == stored
        assert attrs["_CRS"] == {"wkt": stored}  # GDAL's Zarr driver reads _CRS.wkt
        assert pyproj.CRS.from_json_dict(attrs["proj:projjson"]).equals(
            want, ignore_axis_order=True
        )
        assert group[str(level)].attrs["crs"] == stored
    info = reader.crs
    assert info is not None and info.epsg is None and info.wkt2 == stored
    assert info.projjson is not None
    report = chronozarr.validate(tmp_path / "s.zarr", deep=True)
    assert report.ok, report
    assert not [f for f in report.findings if f.rule in ("data.crs", "data.spatial")], report


def test_the_validator_sees_a_wrong_wkt_copy(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    _encode(path, pyproj.CRS.from_proj4(SINUSOIDAL))
    root = json.loads((path / "zarr.json").read_text())
    other = pyproj.CRS.from_proj4(LAEA).to_wkt()
    root["consolidated_metadata"]["metadata"]["0/data"]["attributes"]["proj:wkt2"] = other
    (path / "zarr.json").write_text(json.dumps(root))
    report = chronozarr.validate(path)
    assert any(f.rule == "data.spatial" and "proj:wkt2" in f.message for f in report.findings)


def test_the_validator_sees_a_wkt_store_without_proj_wkt2(tmp_path: Path) -> None:
    """The negative test of the WKT half of data.crs (C16): a store whose crs is a WKT and whose
    data array lacks proj:wkt2 gets the SHOULD warning, and only then."""
    path = tmp_path / "s.zarr"
    _encode(path, pyproj.CRS.from_proj4(SINUSOIDAL))
    assert not [f for f in chronozarr.validate(path).findings if f.rule == "data.crs"]
    root = json.loads((path / "zarr.json").read_text())
    del root["consolidated_metadata"]["metadata"]["0/data"]["attributes"]["proj:wkt2"]
    (path / "zarr.json").write_text(json.dumps(root))
    array = json.loads((path / "0" / "data" / "zarr.json").read_text())
    del array["attributes"]["proj:wkt2"]
    (path / "0" / "data" / "zarr.json").write_text(json.dumps(array))
    report = chronozarr.validate(path)
    found = [f for f in report.findings if f.rule == "data.crs"]
    assert found and all(f.severity == "warning" for f in found), report
    assert any("proj:wkt2" in f.message and f.key == "0/data/zarr.json" for f in found), report


@pytest.mark.parametrize(
    "crs",
    [
        'PROJCRS["broken",BASEGEOGCRS[',  # WKT that PROJ cannot parse
        '{"type": "ProjectedCRS", "name": 3}',  # PROJJSON that PROJ cannot parse
        "{not json",
        "[1, 2]",  # neither
        0,
        -5,
        object(),
    ],
)
def test_a_bad_crs_is_refused_before_anything_is_written(tmp_path: Path, crs: Any) -> None:
    path = tmp_path / "s.zarr"
    with pytest.raises(EncodeError, match=r"^crs: "):
        _encode(path, crs)
    assert not path.exists() or not any(path.iterdir())


def test_an_authority_string_is_kept_as_given(tmp_path: Path) -> None:
    reader = _encode(tmp_path / "s.zarr", "ESRI:54008")
    assert reader.attrs.crs == "ESRI:54008"
    attrs = zarr.open_group(tmp_path / "s.zarr", mode="r")["0/data"].attrs
    assert "proj:code" not in attrs and "proj:wkt2" not in attrs


def test_numpy_band_names_and_xarray_coordinates(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    da = xr.DataArray(
        np.ones((2, 2, 6, 6), dtype=np.uint8),
        dims=("time", "band", "y", "x"),
        coords={
            "time": np.array(["2024-01-01", "2024-02-01"], dtype="datetime64[ns]"),
            "band": ["B04", "B08"],
        },
    )
    assert isinstance(next(iter(da.band.values)), np.str_)
    for i, (times, bands) in enumerate(
        [
            (list(da.time.values), list(da.band.values)),
            (da.time, da.band),
            (da.time.values, da.band.values),
        ]
    ):
        chronozarr.encode(
            da,
            tmp_path / f"{i}.zarr",
            times=times,
            bands=bands,
            crs=32631,
            transform=TRANSFORM,
            chunk_size=6,
        )
        reader = chronozarr.open_store(tmp_path / f"{i}.zarr")
        assert reader.band_names == ("B04", "B08")
        assert all(type(n) is str for n in reader.band_names)
        assert chronozarr.validate(tmp_path / f"{i}.zarr", deep=True).ok


@pytest.mark.parametrize(
    ("bands", "argument"),
    [
        ([b"B04", "B08"], "bands[0]"),
        (["B04", ""], "bands[1]"),
        ([{"name": "B04", "units": 3}, "B08"], "bands[0].units"),
        ([{"name": "B04", "common_name": ["red"]}, "B08"], "bands[0].common_name"),
    ],
)
def test_bad_band_names_are_refused_first(tmp_path: Path, bands: Any, argument: str) -> None:
    path = tmp_path / "s.zarr"
    with pytest.raises(EncodeError) as info:
        chronozarr.encode(
            np.ones((1, 2, 4, 4), dtype=np.uint8),
            path,
            times=["2024-01-01"],
            bands=bands,
            crs=32631,
            transform=TRANSFORM,
            chunk_size=4,
        )
    assert info.value.argument == argument
    assert not path.exists() or not any(path.iterdir())


def test_provenance_that_is_not_json_is_refused_first(tmp_path: Path) -> None:
    path = tmp_path / "s.zarr"
    with pytest.raises(EncodeError, match=r"^provenance: "):
        _encode(path, 32631, provenance={"count": np.int64(3)})
    assert not path.exists() or not any(path.iterdir())

"""The zarr-conventions attributes at the root (docs/spec.md C26, decision 0054).

The oracle is the conventions' own text: the registrations (uuids) as each convention's README
gives them, ``spatial:bbox`` as [xmin, ymin, xmax, ymax] of the pixel edges computed here from
the transform and the shape, ``spatial:transform`` in rasterio's [a, b, c, d, e, f] order.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from chronozarr.errors import EncodeError
from tests.chronozarr.helpers import edit_root, read_json
from tests.conftest import monthly, synthetic_series

PROJ_UUID = "f17cb550-5864-4468-aeb7-f3180cfb622f"  # zarr-conventions/geo-proj README
SPATIAL_UUID = "689b58e2-cf7b-45e0-9fff-9cfc0883d6b4"  # zarr-conventions/spatial README
MULTISCALES_UUID = "d35379db-88df-4056-af3a-620245f8e347"  # zarr-conventions/multiscales README

TRANSFORM = [30.0, 0.0, 600000.0, 0.0, -30.0, 5000000.0]
H, W = 21, 13  # odd sizes: the coarser levels' extents exceed level 0's


def _store(path: Path, **kw: Any) -> Path:
    data = synthetic_series(n_time=4, n_band=2, height=H, width=W, seed=3)
    args: dict[str, Any] = dict(
        times=monthly(4), bands=["B04", "B08"], crs="EPSG:32631", transform=TRANSFORM,
        chunk_size=4, encoding="none",
    )  # fmt: skip
    args.update(kw)
    chronozarr.encode(data, path, **args)
    return path


def _attrs(path: Path) -> dict[str, Any]:
    return read_json(path / "zarr.json")["attributes"]


def _uuids(attrs: dict[str, Any]) -> list[str]:
    return [c["uuid"] for c in attrs["zarr_conventions"]]


def _level_shape(k: int) -> tuple[int, int]:
    h, w = H, W
    for _ in range(k):
        h, w = -(-h // 2), -(-w // 2)
    return h, w


def test_list_form_root_carries_proj_and_spatial(tmp_path: Path) -> None:
    attrs = _attrs(_store(tmp_path / "s.zarr"))
    assert _uuids(attrs) == [PROJ_UUID, SPATIAL_UUID]
    assert attrs["proj:code"] == "EPSG:32631"
    assert attrs["spatial:dimensions"] == ["y", "x"]
    assert attrs["spatial:shape"] == [H, W]
    assert attrs["spatial:transform"] == TRANSFORM
    assert attrs["spatial:bbox"] == [600000.0, 5000000.0 - 30 * H, 600000.0 + 30 * W, 5000000.0]
    ms = attrs["multiscales"]
    assert isinstance(ms, list) and len(ms) == 1 and "pixels_per_tile" not in json.dumps(ms)
    for k, entry in enumerate(ms[0]["datasets"]):
        assert entry["path"] == str(k) and entry["crs"] == "EPSG:32631"
        assert entry["spatial:shape"] == list(_level_shape(k))
        res = 30.0 * 2**k
        assert entry["spatial:transform"] == [res, 0.0, 600000.0, 0.0, -res, 5000000.0]
    assert chronozarr.validate(tmp_path / "s.zarr", deep=True).findings == []


def test_layout_form(tmp_path: Path) -> None:
    path = _store(tmp_path / "s.zarr", multiscales="layout", encoding="star-delta")
    attrs = _attrs(path)
    assert _uuids(attrs) == [PROJ_UUID, SPATIAL_UUID, MULTISCALES_UUID]
    ms = attrs["multiscales"]
    assert isinstance(ms, dict) and set(ms) == {"layout", "resampling_method"}
    n = len(ms["layout"])
    assert n == len(_attrs(path)["chronozarr"]["levels"]) >= 3
    for k, entry in enumerate(ms["layout"]):
        assert entry["asset"] == str(k)
        assert entry["spatial:shape"] == list(_level_shape(k))
        if k:
            assert entry["derived_from"] == str(k - 1)
            assert entry["transform"]["scale"] == [2.0, 2.0]
    assert chronozarr.validate(path, deep=True).findings == []
    # every reader here still reads it: chronozarr's, and zarr-python as a plain group
    reader = chronozarr.open_store(path)
    assert [lv.path for lv in reader.levels] == [str(k) for k in range(n)]
    group = zarr.open_group(path, mode="r")
    assert group["1/data"].shape == (4, 2, *_level_shape(1))


def test_wkt_crs_root_has_wkt2_and_no_code(tmp_path: Path) -> None:
    pyproj = pytest.importorskip("pyproj", reason="pyproj gives the WKT of a CRS without code")
    wkt = pyproj.CRS.from_proj4("+proj=utm +zone=31 +ellps=intl +units=m +no_defs").to_wkt()
    attrs = _attrs(_store(tmp_path / "s.zarr", crs=wkt))
    assert "proj:code" not in attrs
    assert pyproj.CRS.from_wkt(attrs["proj:wkt2"]) == pyproj.CRS.from_wkt(wkt)
    assert pyproj.CRS.from_json_dict(attrs["proj:projjson"]) == pyproj.CRS.from_wkt(wkt)
    assert chronozarr.validate(tmp_path / "s.zarr").findings == []


@pytest.mark.parametrize("form", ["list", "layout"])
def test_append_keeps_them(tmp_path: Path, form: str) -> None:
    path = _store(tmp_path / "s.zarr", multiscales=form)
    before = {k: v for k, v in _attrs(path).items() if k != "chronozarr"}
    more = synthetic_series(n_time=2, n_band=2, height=H, width=W, seed=4)
    chronozarr.append(path, more, times=["2024-05-01", "2024-06-01"])
    after = {k: v for k, v in _attrs(path).items() if k != "chronozarr"}
    assert after == before
    assert len(_attrs(path)["chronozarr"]["times"]) == 6
    assert chronozarr.validate(path, deep=True).findings == []


def test_unknown_form_is_refused(tmp_path: Path) -> None:
    with pytest.raises(EncodeError) as err:
        _store(tmp_path / "s.zarr", multiscales="both")
    assert err.value.argument == "multiscales"
    assert not (tmp_path / "s.zarr" / "zarr.json").exists()


# --- the validator: what the store carries must be true ----------------------------------------------


def _assert_finding(report: chronozarr.Report, rule: str, section: str, key: str) -> None:
    hits = [f for f in report.findings if f.rule == rule]
    assert hits, f"no {rule} finding; got {[(f.rule, f.key) for f in report.findings]}"
    assert any(f.section == section and key in f.key and f.severity == "error" for f in hits)
    assert not report.ok


def _broken(tmp_path: Path, form: str, edit: Any) -> chronozarr.Report:
    path = _store(tmp_path / "s.zarr", multiscales=form)
    edit_root(path, lambda d: edit(d["attributes"]))
    return chronozarr.validate(path)


def test_root_bbox_that_lies(tmp_path: Path) -> None:
    report = _broken(tmp_path, "list", lambda a: a.__setitem__("spatial:bbox", [0, 0, 1, 1]))
    _assert_finding(report, "root.spatial", "3.1", "spatial:bbox")


def test_root_code_that_lies(tmp_path: Path) -> None:
    report = _broken(tmp_path, "list", lambda a: a.__setitem__("proj:code", "EPSG:32632"))
    _assert_finding(report, "root.spatial", "3.1", "proj:code")


def test_unregistered_convention(tmp_path: Path) -> None:
    report = _broken(tmp_path, "list", lambda a: a["zarr_conventions"].pop(1))
    _assert_finding(report, "root.conventions", "3.1", "zarr_conventions")


def test_layout_without_registration(tmp_path: Path) -> None:
    report = _broken(tmp_path, "layout", lambda a: a["zarr_conventions"].pop(2))
    _assert_finding(report, "root.conventions", "3.1", "zarr_conventions")


@pytest.mark.parametrize("form", ["list", "layout"])
def test_entry_transform_that_lies(tmp_path: Path, form: str) -> None:
    def edit(a: dict[str, Any]) -> None:
        ms = a["multiscales"]
        entries = ms[0]["datasets"] if form == "list" else ms["layout"]
        entries[1]["spatial:transform"] = TRANSFORM  # level 0's, not level 1's

    _assert_finding(_broken(tmp_path, form, edit), "multiscales.spatial", "3.4", "multiscales")


def test_layout_out_of_order(tmp_path: Path) -> None:
    def edit(a: dict[str, Any]) -> None:
        a["multiscales"]["layout"][2]["derived_from"] = "0"

    _assert_finding(_broken(tmp_path, "layout", edit), "multiscales.order", "3.4", "multiscales")


def test_old_store_without_them_stays_valid(tmp_path: Path) -> None:
    """A store written before C26 (no zarr_conventions, proj:, spatial: at the root, entries with
    path and crs only) has no finding."""

    def edit(a: dict[str, Any]) -> None:
        for k in [k for k in a if k.startswith(("proj:", "spatial:")) or k == "zarr_conventions"]:
            del a[k]
        for entry in a["multiscales"][0]["datasets"]:
            entry.pop("spatial:shape")
            entry.pop("spatial:transform")

    assert _broken(tmp_path, "list", edit).findings == []


def test_bbox_is_the_pixel_edges_for_a_south_up_free_grid(tmp_path: Path) -> None:
    """A grid whose origin is not a multiple of the pixel size: bbox from the edges, not centres."""
    transform = [10.0, 0.0, 500003.0, 0.0, -10.0, 4000007.0]
    attrs = _attrs(_store(tmp_path / "s.zarr", transform=transform))
    edges_x = 500003.0 + 10.0 * np.array([0, W])
    edges_y = 4000007.0 - 10.0 * np.array([0, H])
    assert attrs["spatial:bbox"] == [edges_x.min(), edges_y.min(), edges_x.max(), edges_y.max()]

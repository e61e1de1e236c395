"""The plan's rules: months, grid, de-duplication, digital-number correction, estimate, JSON."""

from __future__ import annotations

import itertools
import json
import sys
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pystac
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyproj import Transformer

from chronozarr.format import grid_shape, level_shapes
from cz.errors import SigningError
from cz.plan import (
    Plan,
    aligned_bounds,
    dn_offset_of,
    estimate_store,
    grid_for,
    make_plan,
    month_bounds,
    month_of,
    month_range,
    plan_recipe,
    utm_epsg,
)
from cz.recipe import load_recipe
from cz.stac import Resolution, read_local_items, sign_items
from tests.cz.helpers import ES_C1_ITEMS, PC_35MNM, RECIPE_35MNM, need, s2_item, write_recipe

# ---------------------------------------------------------------------------------------------
# months

months_st = st.tuples(st.integers(1970, 2100), st.integers(1, 12)).map(
    lambda ym: f"{ym[0]:04d}-{ym[1]:02d}"
)
moments_st = st.datetimes(
    min_value=datetime(1970, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)
)


@given(months_st, months_st)
def test_month_range_is_consecutive_and_inclusive(a: str, b: str) -> None:
    start, end = min(a, b), max(a, b)
    months = month_range(start, end)
    (y0, m0), (y1, m1) = (map(int, start.split("-")), map(int, end.split("-")))
    assert len(months) == (y1 - y0) * 12 + (m1 - m0) + 1
    assert months[0] == start and months[-1] == end
    for before, after in itertools.pairwise(months):
        assert month_bounds(before)[1] == month_bounds(after)[0]
    assert month_range(end, start) == ([] if start != end else [start])


@given(moments_st, st.integers(-14 * 60, 14 * 60))
def test_month_of_is_the_utc_calendar_month(moment: datetime, offset_minutes: int) -> None:
    # the same instant written in any time zone falls in the same (UTC) month
    local = moment.astimezone(timezone(timedelta(minutes=offset_minutes)))
    month = month_of(local)
    start, after = month_bounds(month)
    assert start <= moment < after
    assert month == f"{moment.year:04d}-{moment.month:02d}"


@given(moments_st, months_st, months_st)
def test_grouping_puts_an_instant_in_range_iff_its_month_is(
    moment: datetime, a: str, b: str
) -> None:
    start, end = min(a, b), max(a, b)
    first, _ = month_bounds(start)
    _, after = month_bounds(end)
    assert (month_of(moment) in month_range(start, end)) == (first <= moment < after)


def test_month_of_naive_is_utc_and_offsets_cross_months() -> None:
    assert month_of(datetime(2020, 6, 30, 23, 59)) == "2020-06"
    plus5 = timezone(timedelta(hours=5))
    assert month_of(datetime(2020, 7, 1, 2, 0, tzinfo=plus5)) == "2020-06"  # 2020-06-30 21:00Z


# ---------------------------------------------------------------------------------------------
# grid

coords_st = st.floats(-2e7, 2e7, allow_nan=False)
res_st = st.sampled_from([0.5, 1.0, 2.5, 10.0, 20.0, 30.0, 60.0, 100.0, 0.3])


@settings(max_examples=300)
@given(coords_st, coords_st, st.floats(0, 5e5), st.floats(0, 5e5), res_st)
def test_aligned_bounds_cover_snap_and_are_minimal(
    x: float, y: float, w: float, h: float, res: float
) -> None:
    bounds = (x, y, x + w, y + h)
    (kx0, ky0, kx1, ky1), (x0, y0, x1, y1) = aligned_bounds(bounds, res)
    tol = 1e-6 * res + 1e-9 * max(abs(x), abs(y), 1.0)
    # edges on whole multiples of the resolution
    assert (x0, y0, x1, y1) == (kx0 * res, ky0 * res, kx1 * res, ky1 * res)
    assert kx1 - kx0 >= 1 and ky1 - ky0 >= 1
    # covers the bounds
    assert x0 <= bounds[0] + tol and y0 <= bounds[1] + tol
    assert x1 >= bounds[2] - tol and y1 >= bounds[3] - tol
    # minimal: one pixel less on any side would uncover part of the bounds (or leave nothing)
    assert x0 + res > bounds[0] - tol or kx1 - kx0 == 1
    assert y0 + res > bounds[1] - tol or ky1 - ky0 == 1
    assert x1 - res < bounds[2] + tol or kx1 - kx0 == 1
    assert y1 - res < bounds[3] + tol or ky1 - ky0 == 1


def test_aligned_bounds_keep_edges_already_on_the_grid() -> None:
    assert aligned_bounds((500000.0, 9093580.0, 533080.0, 9126760.0), 20) == (
        (25000, 454679, 26654, 456338),
        (500000.0, 9093580.0, 533080.0, 9126760.0),
    )


@pytest.mark.parametrize(
    ("lon", "lat", "epsg"),
    [
        (27.15, -8.05, 32735),
        (-105.2, 40.0, 32613),
        (0.0, 0.0, 32631),
        (179.99, 10.0, 32660),
        (-180.0, -1.0, 32701),
        (3.0, 51.0, 32631),
    ],
)
def test_utm_epsg(lon: float, lat: float, epsg: int) -> None:
    assert utm_epsg(lon, lat) == epsg


def test_grid_of_a_recipe(tmp_path: Path) -> None:
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))
    grid = grid_for(recipe)
    assert grid.crs == "EPSG:32735"
    assert grid.crs_reason.startswith("utm: zone 35S")
    res = grid.resolution
    a, b, c, d, e, f = grid.transform
    assert (a, b, d, e) == (res, 0.0, 0.0, -res)
    assert c / res == int(c / res) and f / res == int(f / res)
    height, width = grid.shape
    assert grid.bounds == [c, f - height * res, c + width * res, f]
    # every densified AOI edge point lies inside the grid
    to_utm = Transformer.from_crs("EPSG:4326", grid.crs, always_xy=True)
    west, south, east, north = recipe.aoi.bbox  # type: ignore[misc]
    for i in range(101):
        t = i / 100
        for lon, lat in (
            (west + t * (east - west), south),
            (west + t * (east - west), north),
            (west, south + t * (north - south)),
            (east, south + t * (north - south)),
        ):
            x, y = to_utm.transform(lon, lat)
            assert c <= x <= c + width * res and f - height * res <= y <= f
    # levels mirror chronozarr.format._grid
    shapes = level_shapes(height, width, 512)
    assert [lv.shape for lv in grid.levels] == [list(s) for s in shapes]
    assert [lv.grid for lv in grid.levels] == [list(grid_shape(*s, 512)) for s in shapes]
    assert grid.levels[-1].grid == [1, 1]
    assert grid.levels[1].transform == [2 * res, 0.0, c, 0.0, -2 * res, f]
    assert grid.cells == grid.levels[0].grid[0] * grid.levels[0].grid[1]
    geobox = grid.geobox()
    assert tuple(geobox.shape) == (height, width)
    assert geobox.crs.epsg == 32735
    assert list(geobox.affine)[:6] == grid.transform


def test_grid_explicit_crs(tmp_path: Path) -> None:
    text = RECIPE_35MNM.format(catalog="path: items.json").replace("crs: utm", "crs: 32736")
    grid = grid_for(load_recipe(write_recipe(tmp_path, text)))
    assert grid.crs == "EPSG:32736" and grid.crs_reason == "grid.crs"


# ---------------------------------------------------------------------------------------------
# estimate


def test_estimate_counts_bytes_and_objects(tmp_path: Path) -> None:
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))
    grid = grid_for(recipe).model_copy(
        update={
            "levels": [
                grid_for(recipe)
                .levels[0]
                .model_copy(update={"shape": [1000, 1000], "grid": [2, 2]}),
                grid_for(recipe).levels[0].model_copy(update={"shape": [500, 500], "grid": [1, 1]}),
            ]
        }
    )
    est = estimate_store(grid, timesteps=3, bands=2, dtype="uint16")
    assert est.raw_bytes == 3 * 2 * 1_250_000 * 2 + 2 * 3 * 1_250_000
    assert est.chunk_objects == 3 * 3 * (4 + 1)
    # the root (zarr.json, volatility, time, band: 7), provenance_items (1 + 3), 12 a level
    assert est.metadata_objects == 7 + 1 + 3 + 12 * 2
    assert est.objects == est.chunk_objects + est.metadata_objects
    assert 0 < est.estimated_bytes < est.raw_bytes
    sharded = estimate_store(grid, timesteps=3, bands=2, dtype="uint16", shard=True, shard_time=2)
    assert sharded.chunk_objects == 3 * 2 * 5
    whole = estimate_store(grid, timesteps=3, bands=2, dtype="uint16", shard=True)
    assert whole.chunk_objects == 3 * 1 * 5


# ---------------------------------------------------------------------------------------------
# synthetic items


def plan_of(tmp_path: Path, items: list[dict[str, Any]], extra: str = "", **subs: str) -> Plan:
    text = RECIPE_35MNM.format(catalog="path: items.json") + extra
    for old, new in subs.items():
        text = text.replace(old, new)
    recipe = load_recipe(write_recipe(tmp_path, text))
    return make_plan(recipe, Resolution(items=items, source={"kind": "test"}))


def kept_ids(plan: Plan) -> list[str]:
    return [p.id for m in plan.months for p in m.items]


def dropped(plan: Plan) -> dict[str, tuple[str, str, str | None]]:
    out = {d.id: (d.reason, d.detail, d.duplicate_of) for m in plan.months for d in m.dropped}
    out.update({d.id: (d.reason, d.detail, d.duplicate_of) for d in plan.outside})
    return out


def test_months_are_grouped_and_empty_months_kept(tmp_path: Path) -> None:
    items = [
        s2_item("a", "2020-06-30T23:59:59Z"),
        s2_item("b", "2020-07-01T00:00:00Z", tile="35MNN"),
        s2_item("c", "2020-07-15T08:00:00+00:00", tile="35MNP"),
    ]
    plan = plan_of(tmp_path, items)
    assert [m.month for m in plan.months] == ["2020-05", "2020-06", "2020-07", "2020-08"]
    assert [[p.id for p in m.items] for m in plan.months] == [[], ["a"], ["b", "c"], []]
    assert plan.months[0].time == "2020-05-01T00:00:00Z"
    assert plan.totals.empty_months == 2
    assert any("2 of 4 month(s) have no items" in w for w in plan.warnings)


def test_client_side_checks_and_reasons(tmp_path: Path) -> None:
    items = [
        s2_item("keep-at-ceiling", "2020-06-02T08:00:00Z", cloud=10.0),
        s2_item("cloudy", "2020-06-03T08:00:00Z", cloud=10.5),
        s2_item("no-cloud-cover", "2020-06-04T08:00:00Z", cloud=None),
        s2_item("far-away", "2020-06-05T08:00:00Z", footprint=(30, 0, 31, 1)),
        s2_item("touching-only", "2020-06-06T08:00:00Z", footprint=(27.3, -8.2, 27.6, -7.9)),
        s2_item("other-collection", "2020-06-07T08:00:00Z", collection="landsat-c2-l2"),
        s2_item("too-late", "2020-09-01T00:00:00Z"),
        s2_item("no-red", "2020-06-08T08:00:00Z", assets=("B08", "SCL")),
        s2_item("no-scl", "2020-06-09T08:00:00Z", assets=("B04", "B08")),
        s2_item("es-keys", "2020-06-10T08:00:00Z", assets=("red", "nir", "scl"), tile="35MNN"),
        {"type": "Feature", "id": "no-datetime", "properties": {}, "assets": {}, "links": []},
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["keep-at-ceiling", "es-keys"]
    reasons = dropped(plan)
    assert reasons["cloudy"][:2] == ("cloud", "eo:cloud_cover 10.5 > 10")
    assert reasons["no-cloud-cover"][:2] == ("cloud", "no eo:cloud_cover")
    assert reasons["far-away"][0] == "aoi"
    assert reasons["touching-only"][0] == "aoi"
    assert reasons["other-collection"][:2] == ("collection", "collection 'landsat-c2-l2'")
    assert reasons["too-late"][0] == "time"
    assert reasons["no-red"][:2] == ("asset", "no asset for band red (tried red, B04)")
    assert reasons["no-scl"][:2] == ("asset", "no mask asset (tried scl, SCL)")
    assert reasons["no-datetime"][0] == "invalid"
    assert {d.id for d in plan.outside} == {"too-late", "no-datetime"}
    es = plan.month("2020-06").items[1]
    assert es.assets == {"red": "red", "nir": "nir", "mask": "scl"}
    assert es.hrefs["mask"] == "https://data.test/es-keys/scl.tif"
    assert plan.totals.items_found == len(items)
    assert plan.totals.dropped == {
        "aoi": 2,
        "asset": 2,
        "cloud": 2,
        "collection": 1,
        "invalid": 1,
        "time": 1,
    }


def test_property_conditions(tmp_path: Path) -> None:
    extra = (
        "  properties:\n"
        "    s2:nodata_pixel_percentage: {lte: 50}\n"
        "    platform: {in: [Sentinel-2A, Sentinel-2B]}\n"
    )
    items = [
        s2_item("ok", "2020-06-02T08:00:00Z", nodata=50.0),
        s2_item("edge-sliver", "2020-06-03T08:00:00Z", nodata=73.4, tile="35MNN"),
        s2_item("s2c", "2020-06-04T08:00:00Z", platform="Sentinel-2C"),
        s2_item("unknown-nodata", "2020-06-05T08:00:00Z", nodata=None, tile="35MNP"),
    ]
    plan = plan_of(tmp_path, items, extra)
    assert kept_ids(plan) == ["ok"]
    reasons = dropped(plan)
    assert reasons["edge-sliver"][:2] == (
        "property",
        "s2:nodata_pixel_percentage = 73.4 fails lte 50.0",
    )
    assert reasons["s2c"][0] == "property"
    assert reasons["unknown-nodata"][0] == "property"


# ---------------------------------------------------------------------------------------------
# de-duplication


def test_reprocessed_baseline_keeps_the_newest(tmp_path: Path) -> None:
    items = [
        s2_item("old", "2020-06-11T08:06:11Z", baseline="02.12"),
        s2_item("new", "2020-06-11T08:06:11Z", baseline="05.00"),
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["new"]
    reason, detail, of = dropped(plan)["old"]
    assert (reason, of) == ("duplicate", "new")
    assert "kept baseline 05.00 over 02.12" in detail


def test_sequence_numbers_keep_the_most_complete(tmp_path: Path) -> None:
    # Earth Search lists a scene as _0_ and _1_; same baseline, one with more nodata
    props = {"platform": "sentinel-2b", "s2:product_uri": "S2B_MSIL2A_20200611T080609_N0212_R078"}
    items = [
        s2_item("S2B_35MNM_20200611_0_L2A", "2020-06-11T08:06:09Z", nodata=60.0, **props),
        s2_item("S2B_35MNM_20200611_1_L2A", "2020-06-11T08:06:10Z", nodata=2.0, **props),
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["S2B_35MNM_20200611_1_L2A"]
    reason, detail, _ = dropped(plan)["S2B_35MNM_20200611_0_L2A"]
    assert reason == "duplicate" and "nodata 2 % vs 60 %" in detail


def test_two_receiving_stations_keep_the_newer_processing(tmp_path: Path) -> None:
    items = [
        s2_item("S2A_MSIL2A_20200611T080611_R078_T35MNM_20200826T230619", "2020-06-11T08:06:11Z"),
        s2_item("S2A_MSIL2A_20200611T080611_R078_T35MNM_20200901T101010", "2020-06-11T08:06:11Z"),
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["S2A_MSIL2A_20200611T080611_R078_T35MNM_20200901T101010"]
    assert "newer processing" in next(iter(dropped(plan).values()))[1]


def test_same_day_different_tiles_are_all_kept_as_one_observation(tmp_path: Path) -> None:
    items = [
        s2_item("t1", "2020-06-11T08:06:11Z", tile="35MNM"),
        s2_item("t2", "2020-06-11T08:06:15Z", tile="35MNN"),
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["t1", "t2"]
    assert plan.month("2020-06").solar_days == ["2020-06-11"]
    assert plan.totals.observations == 1


def test_complementary_granules_of_one_scene_are_both_kept(tmp_path: Path) -> None:
    # a tile split across two datastrips: same scene key, footprints side by side
    items = [
        s2_item("west", "2020-06-11T08:06:11Z", footprint=(27.0, -8.2, 27.15, -7.9), nodata=50),
        s2_item("east", "2020-06-11T08:06:12Z", footprint=(27.15, -8.2, 27.3, -7.9), nodata=50),
    ]
    assert kept_ids(plan_of(tmp_path, items)) == ["west", "east"]


def test_different_orbits_same_day_are_not_duplicates(tmp_path: Path) -> None:
    items = [
        s2_item("o1", "2020-06-11T08:06:11Z", orbit=78),
        s2_item("o2", "2020-06-11T09:46:11Z", orbit=79),
    ]
    assert kept_ids(plan_of(tmp_path, items)) == ["o1", "o2"]


def test_the_same_id_twice_is_a_duplicate(tmp_path: Path) -> None:
    items = [s2_item("x", "2020-06-11T08:06:11Z"), s2_item("x", "2020-06-11T08:06:11Z")]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["x"]
    assert dropped(plan)["x"][0] == "duplicate"


def test_dedupe_runs_after_the_filters(tmp_path: Path) -> None:
    # the newer version is cloudier than the ceiling: the older, clear one is used
    items = [
        s2_item("old-clear", "2020-06-11T08:06:11Z", baseline="02.12", cloud=8.0),
        s2_item("new-cloudy", "2020-06-11T08:06:11Z", baseline="05.00", cloud=12.0),
    ]
    plan = plan_of(tmp_path, items)
    assert kept_ids(plan) == ["old-clear"]
    assert dropped(plan)["new-cloudy"][0] == "cloud"


# ---------------------------------------------------------------------------------------------
# digital numbers


def test_dn_offset_rules() -> None:
    pc_old = s2_item("a", "2020-06-01T00:00:00Z", baseline="02.12")
    assert dn_offset_of(pc_old, ["B04"])[:2] == (0, "baseline")
    pc_new = s2_item("b", "2023-06-01T00:00:00Z", baseline="05.09")
    assert dn_offset_of(pc_new, ["B04"])[:2] == (1000, "baseline")
    exactly_four = s2_item("c", "2022-02-01T00:00:00Z", baseline="04.00")
    assert dn_offset_of(exactly_four, ["B04"]).offset == 1000
    # Earth Search: the flag wins over the baseline and over raster:bands (the double-offset trap)
    es = s2_item(
        "d", "2025-07-31T00:00:00Z", baseline="05.11", **{"earthsearch:boa_offset_applied": True}
    )
    es["assets"]["B04"]["raster:bands"] = [{"scale": 0.0001, "offset": -0.1}]
    decision = dn_offset_of(es, ["B04"])
    assert (decision.offset, decision.rule) == (0, "earthsearch-flag")
    assert decision.notes == ["raster:bands of B04 imply an offset of 1000 DN; trusting the flag"]
    es_false = s2_item(
        "e", "2023-01-01T00:00:00Z", baseline="05.09", **{"earthsearch:boa_offset_applied": False}
    )
    assert dn_offset_of(es_false, ["B04"]).offset == 1000
    # only raster:bands
    rb = s2_item("f", "2024-01-01T00:00:00Z", baseline=None)
    rb["assets"]["B04"]["raster:bands"] = [{"scale": 0.0001, "offset": -0.1}]
    assert dn_offset_of(rb, ["B04"])[:2] == (1000, "raster-bands")
    # nothing at all: by acquisition date, with a note
    before = s2_item("g", "2022-01-24T10:00:00Z", baseline=None)
    after = s2_item("h", "2022-01-25T10:00:00Z", baseline=None)
    assert dn_offset_of(before, ["B04"])[:2] == (0, "acquisition-date")
    assert dn_offset_of(after, ["B04"]).offset == 1000
    assert dn_offset_of(after, ["B04"]).notes


def test_corrections_bring_every_item_to_the_store_convention(tmp_path: Path) -> None:
    items = [
        s2_item("pc-2020", "2020-06-01T08:00:00Z", baseline="02.12"),
        s2_item("pc-2023", "2020-06-02T08:00:00Z", baseline="05.09", tile="35MNN"),
        s2_item(
            "es-flag",
            "2020-06-03T08:00:00Z",
            baseline="05.09",
            tile="35MNP",
            **{"earthsearch:boa_offset_applied": True},
        ),
    ]
    plan = plan_of(tmp_path, items)
    got = {p.id: (p.dn_offset, p.correction, p.lossless) for p in plan.month("2020-06").items}
    assert got == {
        "pc-2020": (0, 1000, True),
        "pc-2023": (1000, 0, True),
        "es-flag": (0, 1000, True),
    }
    assert plan.dn_convention["store_dn_offset"] == 1000
    assert plan.bands[0]["offset"] == pytest.approx(-0.1)
    assert plan.totals.corrections == {"+0": 1, "+1000": 2}
    # a store that removes the offset: newer items lose their numbers below 1000
    offset0 = "    common_name: red\n    offset: 0\n"
    plan0 = plan_of(
        tmp_path,
        items,
        **{
            "    common_name: red\n": offset0,
            "    common_name: nir\n": "    common_name: nir\n    offset: 0\n",
        },
    )
    got0 = {p.id: (p.correction, p.lossless) for p in plan0.month("2020-06").items}
    assert got0 == {"pc-2020": (0, True), "pc-2023": (-1000, False), "es-flag": (0, True)}
    assert any("negative correction" in w for w in plan0.warnings)


def test_no_harmonised_band_means_no_correction(tmp_path: Path) -> None:
    items = [s2_item("pc-2020", "2020-06-01T08:00:00Z", baseline="02.12")]
    subs = {
        "    common_name: red\n": "    common_name: red\n    harmonize: false\n",
        "    common_name: nir\n": "    common_name: nir\n    harmonize: false\n",
    }
    plan = plan_of(tmp_path, items, **subs)
    item = plan.month("2020-06").items[0]
    assert item.correction == 0 and item.dn_offset_source.startswith("not applied")
    assert plan.bands[0]["offset"] == 0.0
    assert plan.dn_convention["harmonized_bands"] == []


def test_real_items_dn_conventions(tmp_path: Path) -> None:
    """The fixture catalogs: PC 2020 items (baseline 02.12) and Earth Search c1 (05.10)."""
    need(PC_35MNM)
    need(ES_C1_ITEMS)
    pc = read_local_items(PC_35MNM)
    assert {dn_offset_of(i, ["B04"]).offset for i in pc} == {0}
    es = read_local_items(ES_C1_ITEMS)
    decisions = [dn_offset_of(i, ["red", "nir"]) for i in es]
    assert {(d.offset, d.rule) for d in decisions} == {(1000, "baseline")}
    assert all(d.notes == [] for d in decisions)  # raster:bands agree: -0.1 / 0.0001


# ---------------------------------------------------------------------------------------------
# the plan as data


def test_plan_json_roundtrip_and_items(tmp_path: Path) -> None:
    need(PC_35MNM)
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"path: {PC_35MNM}")))
    plan = plan_recipe(recipe, out="out/store.zarr")
    data = plan.to_dict()
    text = json.dumps(data)  # JSON-serialisable as it is
    assert "stac" not in data["months"][1]["items"][0]
    assert Plan.from_dict(json.loads(text)).to_dict() == data
    assert data["store"]["path"] == str(Path("out/store.zarr").resolve())
    assert data["totals"]["items_kept"] == 11
    assert data["totals"]["dropped"] == {"cloud": 2}
    full = plan.to_dict(include_stac=True)
    restored = Plan.from_dict(json.loads(json.dumps(full)))
    june = restored.month_items("2020-06")
    assert [i.id for i in june] == [p.id for p in plan.month("2020-06").items]
    assert all(isinstance(i, pystac.Item) for i in june)
    assert june[0].assets["B04"].href == plan.month("2020-06").items[0].hrefs["red"]
    with pytest.raises(ValueError, match="carries no STAC dict"):
        Plan.from_dict(data).month_items("2020-06")


def test_plan_never_keeps_a_sas_token(tmp_path: Path) -> None:
    item = s2_item("signed", "2020-06-01T08:00:00Z")
    for asset in item["assets"].values():
        asset["href"] += "?st=2020-01-01&se=2020-01-02&sp=rl&sv=2021&sr=c&sig=abc%3D"
    plan = plan_of(tmp_path, [item])
    planned = plan.month("2020-06").items[0]
    assert all("sig=" not in h and "?" not in h for h in planned.hrefs.values())
    assert "sig=" not in json.dumps(plan.to_dict(include_stac=True))


# ---------------------------------------------------------------------------------------------
# signing, late


def _pc_recipe(tmp_path: Path) -> Any:
    text = RECIPE_35MNM.format(catalog="path: items.json\n  sign: planetary-computer")
    return load_recipe(write_recipe(tmp_path, text))


def test_sign_items_without_the_package_fails_clearly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "planetary_computer", None)  # import fails
    recipe = _pc_recipe(tmp_path)
    item = pystac.Item.from_dict(s2_item("a", "2020-06-01T08:00:00Z"))
    with pytest.raises(SigningError, match="pip install planetary-computer"):
        sign_items([item], recipe)
    # a dry run only warns
    plan = make_plan(recipe, Resolution(items=[s2_item("a", "2020-06-01T08:00:00Z")], source={}))
    assert any("a build would fail" in w for w in plan.warnings)


def test_month_range_matches_the_search_interval() -> None:
    from cz.stac import month_datetime_range

    assert month_datetime_range("2020-05", "2020-08") == "2020-05-01T00:00:00Z/2020-09-01T00:00:00Z"
    assert month_datetime_range("2020-12", "2020-12") == "2020-12-01T00:00:00Z/2021-01-01T00:00:00Z"


def test_without_a_mask_no_mask_asset_is_needed(tmp_path: Path) -> None:
    items = [s2_item("no-scl", "2020-06-01T08:00:00Z", assets=("B04", "B08"))]
    plan = plan_of(tmp_path, items, "mask: null\n")
    assert kept_ids(plan) == ["no-scl"]
    assert plan.mask is None
    assert plan.month("2020-06").items[0].assets == {"red": "B04", "nir": "B08"}

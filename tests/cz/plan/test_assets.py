"""Asset resolution (decision 0018): absent assets fail early, eo:bands / bands as a fallback.

Real item JSON: the Planetary Computer 35MNM items (upper-case keys B04, eo:bands with common
names) and the Earth Search ``sentinel-2-c1-l2a`` items (lower-case keys, eo:bands names B04...),
read from a file and served by a STAC API (rustac) on 127.0.0.1; the synthetic scenes of the
build tests for ``cz build`` itself.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from cz import output
from cz.commands import build as cmd_build
from cz.errors import RecipeError
from cz.plan import make_plan, plan_recipe
from cz.plan.assets import band_names_of_assets, did_you_mean, resolve_asset
from cz.recipe import load_recipe
from cz.stac import Resolution, read_local_items
from tests.cz.helpers import ES_C1_ITEMS, PC_35MNM, RECIPE_35MNM, need, s2_item, write_recipe
from tests.cz.scenes import LOADER_WARNINGS, random_scene, recipe, write_items


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> Any:
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)

    @app.callback()
    def _root() -> None:
        """cz (test app)."""

    cmd_build.register(app)
    monkeypatch.setattr(output.out, "width", 220)
    monkeypatch.setattr(output.err, "width", 220)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["build", *args], catch_exceptions=False)


def _pc_recipe(tmp_path: Path, red: str = "[red, B04]", extra: str = "", name: str = "r.yaml"):
    text = RECIPE_35MNM.format(catalog=f"path: {need(PC_35MNM)}").replace("[red, B04]", red)
    return load_recipe(write_recipe(tmp_path, text + extra, name))


# --- the pure resolution -------------------------------------------------------------------


def test_real_pc_items_resolve_red_by_common_name(tmp_path: Path) -> None:
    """PC items have no ``red`` key; their B04 asset's eo:bands says common_name red."""
    plan = plan_recipe(_pc_recipe(tmp_path, red="red"))
    items = [p for m in plan.months for p in m.items]
    assert items and all(p.assets["red"] == "B04" for p in items)
    assert any("band red: found in" in w and "'B04'" in w for w in plan.warnings)
    # the same plan as with the explicit alias, apart from that note
    explicit = plan_recipe(_pc_recipe(tmp_path, name="e.yaml"))
    assert [p.id for m in explicit.months for p in m.items] == [p.id for p in items]


def test_real_earth_search_items_resolve_b04_by_eo_band_name(tmp_path: Path) -> None:
    raw = read_local_items(need(ES_C1_ITEMS))
    for item in raw:
        assets = item["assets"]
        assert resolve_asset(assets, ["B04"]).key == "red"  # type: ignore[union-attr]
        assert resolve_asset(assets, ["B04"]).via == "name"  # type: ignore[union-attr]
        assert resolve_asset(assets, ["red"]).via == "key"  # type: ignore[union-attr]
        # `visual` has three bands (red, green, blue): never chosen for one band
        assert all(
            key != "visual"
            for pairs in band_names_of_assets(assets).values()
            for _via, key in pairs
        )
        assert resolve_asset(assets, ["nope"]) is None


def test_stac_1_1_bands_with_eo_common_name() -> None:
    """STAC 1.1 moved eo:bands into ``bands`` and common_name into ``eo:common_name``."""
    raw = read_local_items(need(PC_35MNM))[0]
    migrated = copy.deepcopy(raw["assets"])
    for asset in migrated.values():
        bands = asset.pop("eo:bands", None)
        if bands:
            asset["bands"] = [
                {"name": b["name"], "eo:common_name": b.get("common_name")} for b in bands
            ]
    found = resolve_asset(migrated, ["nir"])
    assert found is not None and (found.key, found.via) == ("B08", "common_name")
    found = resolve_asset(migrated, ["B8A"])  # an asset key: the key, not a band name
    assert found is not None and (found.key, found.via) == ("B8A", "key")


def test_a_band_name_equal_to_another_asset_key_is_not_a_band_alias() -> None:
    """odc-stac's block list: if ``B04`` is a key, an eo:bands name B04 elsewhere is ignored."""
    assets = {
        "B04": {"href": "a"},
        "red": {"href": "b", "eo:bands": [{"name": "B04", "common_name": "red"}]},
    }
    assert band_names_of_assets(assets) == {}  # "B04" is a key; "red" is a key too
    assert resolve_asset(assets, ["B04"]).key == "B04"  # type: ignore[union-attr]


def test_ties_go_to_the_smallest_asset_key() -> None:
    assets = {
        "z": {"eo:bands": [{"common_name": "nir"}]},
        "a": {"eo:bands": [{"common_name": "nir"}]},
    }
    found = resolve_asset(assets, ["nir"])
    assert found is not None and found.key == "a"


keys_st = st.dictionaries(
    st.text("abcdeBR0123", min_size=1, max_size=4),
    st.just({"href": "x"}),
    min_size=0,
    max_size=6,
)


@given(keys_st, st.lists(st.text("abcdeBR0123", min_size=1, max_size=4), min_size=1, max_size=4))
def test_an_alias_that_is_a_key_always_wins_in_recipe_order(
    assets: dict[str, Any], aliases: list[str]
) -> None:
    found = resolve_asset(assets, aliases)
    keys = [a for a in aliases if a in assets]
    if keys:
        assert found is not None and found.key == keys[0] and found.via == "key"
    else:
        assert found is None  # no band metadata here: nothing else can match


def test_did_you_mean_is_close_and_bounded() -> None:
    keys = ["red", "nir", "scl", "rededge1", "B04"]
    assert did_you_mean(["rde"], keys)[0] == "red"
    assert did_you_mean(["qqqqq"], keys) == []
    assert len(did_you_mean(["red", "rededge", "nir"], keys)) <= 3


# --- the plan refuses an asset no item has --------------------------------------------------


def test_absent_band_asset_is_a_located_recipe_error(tmp_path: Path) -> None:
    rec = _pc_recipe(tmp_path, red="[rde]")
    with pytest.raises(RecipeError) as caught:
        plan_recipe(rec)
    (problem,) = caught.value.problems
    assert problem.field == "bands[0].asset"
    assert problem.line is not None
    text = problem.message
    assert "band 'red'" in text and "'rde'" in text
    assert "B04" in text and "SCL" in text  # the keys the items do have
    assert "eo:bands" in text  # the fallback was tried too


def test_absent_mask_asset_is_a_recipe_error(tmp_path: Path) -> None:
    rec = _pc_recipe(tmp_path, extra="mask:\n  asset: [cloudmask]\n")
    with pytest.raises(RecipeError) as caught:
        plan_recipe(rec)
    assert [p.field for p in caught.value.problems] == ["mask.asset"]
    assert "the mask" in caught.value.problems[0].message


def test_partial_absence_drops_items_with_a_summary(tmp_path: Path) -> None:
    rec = _pc_recipe(tmp_path, red="B04")
    items = [
        s2_item("has", "2020-06-02T08:00:00Z"),
        s2_item("lacks", "2020-06-03T08:00:00Z", assets=("B08", "SCL"), tile="35MNN"),
    ]
    plan = make_plan(rec, Resolution(items=items, source={}))
    assert [p.id for p in plan.month("2020-06").items] == ["has"]
    assert plan.month("2020-06").dropped[0].reason == "asset"
    summary = [w for w in plan.warnings if "have no asset for band red" in w]
    assert summary == [
        "1 of 2 candidate item(s) have no asset for band red (tried B04) and are dropped "
        "(first: lacks)"
    ]


def test_no_candidates_is_not_an_asset_error(tmp_path: Path) -> None:
    """Items all dropped earlier (cloud) say nothing about assets: an empty plan, no error."""
    rec = _pc_recipe(tmp_path, red="[rde]")
    cloudy = [s2_item("cloudy", "2020-06-02T08:00:00Z", cloud=90.0)]
    plan = make_plan(rec, Resolution(items=cloudy, source={}))
    assert plan.totals.items_kept == 0


def test_dry_run_against_a_local_stac_api_exits_2(
    cli: Any, tmp_path: Path, rustac_api: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    items = need(ES_C1_ITEMS)
    url = rustac_api(items.parent / "collection.json", items)
    text = (
        RECIPE_35MNM.replace("sentinel-2-l2a", "sentinel-2-c1-l2a")
        .replace("[27.0, -8.2, 27.3, -7.9]", "[-105.3, 39.95, -105.1, 40.1]")
        .replace("2020-05", "2024-03")
        .replace("2020-08", "2024-05")
        .replace("max_cloud_cover: 10", "max_cloud_cover: 100")
        .replace("[red, B04]", "[rde]")
        .format(catalog=f"url: {url}")
    )
    result = cli(str(write_recipe(tmp_path, text)), "--dry-run")
    assert result.exit_code == 2, result.output
    assert "bands[0].asset" in result.output
    assert "'rde'" in result.output and "did you mean 'red'" in result.output
    assert "Traceback" not in result.output
    from cz.app import app
    from cz.conventions import run

    capsys.readouterr()
    assert (
        run(app, ["build", str(write_recipe(tmp_path, text, "j.yaml")), "--dry-run", "--json"]) == 2
    )
    answer = json.loads(capsys.readouterr().out)
    assert answer["code"] == 2 and "bands[0].asset" in answer["problems"][0]


@pytest.mark.filterwarnings(LOADER_WARNINGS[0].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[1].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[2].args[0])
def test_build_with_an_absent_asset_exits_2_and_writes_nothing(cli: Any, tmp_path: Path) -> None:
    write_items(tmp_path, [random_scene("S2B_31TFJ_20240106_0_L2A", "2024-01-06T10:30:00Z", 1)])
    path = recipe(tmp_path, start="2024-01", end="2024-01")
    path.write_text(path.read_text().replace("asset: red", "asset: [rde]"))
    out = tmp_path / "out.zarr"
    result = cli(str(path), "--out", str(out))
    assert result.exit_code == 2, result.output
    assert "no candidate item has an asset for band 'red'" in result.output
    assert "nir, red, scl" in result.output
    assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".out.zarr")]


def test_asset_keys_are_printed_as_text_never_markup(cli: Any, tmp_path: Path) -> None:
    """Asset keys are the catalog's text: an error lists them literally (no rich markup)."""
    item = s2_item("odd", "2020-06-02T08:00:00Z", assets=("[bold red]B04[/]", "B08", "SCL"))
    path = tmp_path / "items.json"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": [item]}))
    text = RECIPE_35MNM.format(catalog=f"path: {path}").replace("[red, B04]", "[rde]")
    result = cli(str(write_recipe(tmp_path, text)), "--dry-run")
    assert result.exit_code == 2
    assert "[bold red]B04[/]" in result.output


@pytest.mark.filterwarnings(LOADER_WARNINGS[0].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[1].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[2].args[0])
def test_a_band_found_by_common_name_builds_the_same_store(tmp_path: Path) -> None:
    """Items with Planetary Computer keys (B04, B08) and eo:bands common names read by a recipe
    saying ``asset: red`` / ``nir`` give the very store the lower-case keys give."""
    from cz.build import BuildOptions, build
    from tests.cz.scenes import read_all

    write_items(tmp_path, [random_scene("S2B_31TFJ_20240106_0_L2A", "2024-01-06T10:30:00Z", 4)])
    path = recipe(tmp_path, start="2024-01", end="2024-01")
    build(load_recipe(path), out=str(tmp_path / "keys.zarr"), options=BuildOptions(workers=1))
    doc = json.loads((tmp_path / "items.json").read_text())
    for item in doc["features"]:
        assets = item["assets"]
        for key, band in (("red", "B04"), ("nir", "B08")):
            entry = assets.pop(key)
            entry["eo:bands"] = [{"name": band, "common_name": key}]
            assets[band] = entry
    (tmp_path / "items.json").write_text(json.dumps(doc))
    rec = load_recipe(path)
    plan = plan_recipe(rec)
    assert plan.month("2024-01").items[0].assets == {"red": "B04", "nir": "B08", "mask": "scl"}
    build(rec, out=str(tmp_path / "common.zarr"), options=BuildOptions(workers=1))
    for a, b in zip(
        read_all(tmp_path / "keys.zarr"), read_all(tmp_path / "common.zarr"), strict=True
    ):
        assert a.shape == b.shape and (a == b).all()
    assert (read_all(tmp_path / "common.zarr")[1] > 0).any()  # not an empty store


@pytest.mark.filterwarnings(LOADER_WARNINGS[0].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[1].args[0])
@pytest.mark.filterwarnings(LOADER_WARNINGS[2].args[0])
def test_build_with_a_partly_absent_asset_drops_and_says_so(cli: Any, tmp_path: Path) -> None:
    """Some items lack the asset: they are dropped, the build goes on, one summary line."""
    import chronozarr

    write_items(
        tmp_path,
        [
            random_scene("S2B_31TFJ_20240106_0_L2A", "2024-01-06T10:30:00Z", 1),
            random_scene("S2B_31TFJ_20240116_0_L2A", "2024-01-16T10:30:00Z", 2),
        ],
    )
    doc = json.loads((tmp_path / "items.json").read_text())
    del doc["features"][1]["assets"]["nir"]
    (tmp_path / "items.json").write_text(json.dumps(doc))
    path = recipe(tmp_path, start="2024-01", end="2024-01")
    out = tmp_path / "out.zarr"
    result = cli(str(path), "--out", str(out))
    assert result.exit_code == 0, result.output
    assert (
        "1 of 2 candidate item(s) have no asset for band nir (tried nir) and are dropped "
        "(first: S2B_31TFJ_20240116_0_L2A)" in result.output
    )
    assert "1 items read" in result.output
    assert chronozarr.validate(out).ok

"""Collections other than Sentinel-2 (cz.recipe.collections; docs/recipes.md, "Collections"):
the ready Landsat and HLS recipes planned offline against real item JSON, and the Sentinel-2
digital-number harmonisation applied to Sentinel-2 L2A only.

The real items are the recorded responses in the shared fixtures: an Earth Search
``landsat-c2-l2`` item (``test_multiple_collections.yaml``). Planetary Computer's
``landsat-c2-l2`` items use the same asset keys (red, nir08, swir16, qa_pixel) and declare the
same ``classification:bitfields``; no Planetary Computer Landsat item and no HLS item is recorded
there, so those plans use the Earth Search item and an HLS plan skips with the reason printed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from cz.errors import RecipeError
from cz.plan import make_plan
from cz.recipe import load_recipe
from cz.recipe.collections import collection_facts, harmonised_by_default
from cz.stac import Resolution
from tests.cz.helpers import ES_MULTI_CASSETTE, RECIPES, STAC, cassette_items, need, write_recipe

LANDSAT_RECIPES = ("earth-search-landsat.yaml", "planetary-computer-landsat.yaml")
#: where a recorded HLS item would be (none is recorded in the shared fixtures today)
HLS_ITEMS = STAC / "hls" / "items.json"


@pytest.fixture(scope="module")
def landsat() -> dict[str, Any]:
    [item] = cassette_items(ES_MULTI_CASSETTE, "landsat-c2-l2")
    return item


def _offline(tmp_path: Path, name: str, month: str) -> Any:
    """The ready recipe with its catalog a local file and its time range the item's month."""
    text = (RECIPES / name).read_text()
    text = re.sub(r"  url: .*\n", "  path: items.json\n", text)
    text = re.sub(r"  start: .*\n  end: .*\n", f"  start: {month}\n  end: {month}\n", text)
    return load_recipe(write_recipe(tmp_path, text, name))


@pytest.mark.parametrize("name", LANDSAT_RECIPES)
def test_the_landsat_recipes_plan_the_real_item(tmp_path: Path, landsat: dict, name: str) -> None:
    recipe = _offline(tmp_path, name, "2023-10")
    plan = make_plan(recipe, Resolution(items=[landsat], source={"kind": "file"}))
    [item] = plan.month("2023-10").items
    assert item.id == landsat["id"]
    assert item.assets == {"red": "red", "nir08": "nir08", "swir16": "swir16", "mask": "qa_pixel"}
    # no Sentinel-2 offset: the numbers are stored as USGS gives them
    assert (item.correction, item.dn_offset_rule) == (0, "not-applied")
    assert plan.dn_convention["harmonized_bands"] == []
    # the band objects are the items' own raster:bands scale and offset
    for band in plan.bands:
        declared = landsat["assets"][band["name"]]["raster:bands"][0]
        assert (band["scale"], band["offset"]) == (declared["scale"], declared["offset"])
    assert not [w for w in plan.warnings if "offset" in w or "scale" in w], plan.warnings
    # the qa_pixel flags resolved from the item's own declaration
    fields = {f["name"]: f for f in landsat["assets"]["qa_pixel"]["classification:bitfields"]}
    got = {r["name"]: (r["offset"], r["length"], r["values"]) for r in plan.mask["bits"]}
    assert got == {
        name: (fields[name]["offset"], fields[name]["length"], [1])
        for name in ("fill", "dilated_cloud", "cirrus", "cloud", "cloud_shadow")
    }
    assert plan.grid.crs == "EPSG:32613" and plan.grid.transform[0] == 30


def test_the_hls_recipe_plans_a_recorded_item(tmp_path: Path) -> None:
    items = json.loads(need(HLS_ITEMS).read_text())["features"]
    recipe = _offline(
        tmp_path, "planetary-computer-hls.yaml", items[0]["properties"]["datetime"][:7]
    )
    plan = make_plan(recipe, Resolution(items=items, source={"kind": "file"}))
    assert plan.totals.items_kept > 0
    assert all(p.correction == 0 for m in plan.months for p in m.items)


def test_a_landsat_recipe_left_at_the_sentinel2_defaults(tmp_path: Path, landsat: dict) -> None:
    """Before: the Sentinel-2 harmonisation refused scale 2.75e-05 / offset -0.2 (-7272.73 is
    no whole number of digital numbers) and the plan warned about a Sentinel-2 offset. Now the
    numbers are stored as they are; with the scale left at 0.0001 the plan says the items
    declare another."""
    text = (RECIPES / "earth-search-landsat.yaml").read_text()
    loaded = _offline(tmp_path, "earth-search-landsat.yaml", "2023-10")
    assert all(b.harmonize is False for b in loaded.bands)
    bare = text.replace("    scale: 0.0000275\n    offset: -0.2\n", "")
    bare = re.sub(r"  url: .*\n", "  path: items.json\n", bare)
    bare = re.sub(r"  start: .*\n  end: .*\n", "  start: 2023-10\n  end: 2023-10\n", bare)
    recipe = load_recipe(write_recipe(tmp_path, bare, "bare.yaml"))
    plan = make_plan(recipe, Resolution(items=[landsat], source={"kind": "file"}))
    warned = [w for w in plan.warnings if w.startswith("band red:")]
    assert warned and "declare scale 2.75e-05 and offset -0.2" in warned[0]
    assert not [w for w in plan.warnings if "digital-number offset" in w]


def test_harmonize_true_on_landsat_is_refused_at_the_field(tmp_path: Path) -> None:
    text = (RECIPES / "earth-search-landsat.yaml").read_text()
    text = text.replace(
        "    units: reflectance\n", "    units: reflectance\n    harmonize: true\n", 1
    )
    with pytest.raises(RecipeError) as caught:
        load_recipe(write_recipe(tmp_path, text))
    [problem] = caught.value.problems
    assert problem.field == "bands[0].harmonize"
    assert (
        "Landsat Collection 2 Level-2" in problem.message
        and "nothing to harmonise" in problem.message
    )


@pytest.mark.parametrize(
    ("collection", "harmonised"),
    [
        ("sentinel-2-l2a", True),
        ("sentinel-2-c1-l2a", True),
        ("sentinel-2-l2a-cogs", True),  # an older Earth Search id, not listed: named so
        ("landsat-c2-l2", False),
        ("hls2-s30", False),
        ("HLSL30_2.0", False),
        ("some-other-collection", False),
    ],
)
def test_the_sentinel2_correction_is_for_sentinel2_l2a_only(
    collection: str, harmonised: bool
) -> None:
    assert harmonised_by_default(collection) is harmonised
    facts = collection_facts(collection)
    if facts is not None:
        assert facts.sentinel2_offset is harmonised

"""``mask.bits`` resolved against real item JSON (cz.plan.bitfields; docs/recipes.md, "mask").

The reference is the item itself: each named field's ``offset``, ``length`` and class values are
read here from the recorded Earth Search ``landsat-c2-l2`` item's ``qa_pixel`` asset
(``classification:bitfields``), not from the resolver."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from cz.errors import RecipeError
from cz.plan import make_plan
from cz.plan.bitfields import plan_bit_rules, resolve_bits
from cz.recipe import load_recipe
from cz.stac import Resolution
from tests.cz.helpers import ES_MULTI_CASSETTE, cassette_items, write_recipe

LANDSAT_RECIPE = """
catalog:
  path: items.json
  collection: landsat-c2-l2
aoi:
  bbox: [-105.2, 40.1, -105.0, 40.2]
grid:
  crs: utm
  resolution: 30
time:
  start: 2023-10
  end: 2023-10
bands:
  - name: red
    asset: red
    scale: 0.0000275
    offset: -0.2
    harmonize: false
mask:
  asset: qa_pixel
  bits:
{bits}
{clean}
"""

#: The flags the Landsat recipes reject, as the recipe names them (bit 0 .. 7 and a pair).
FLAGS = {
    "fill": ["fill"],
    "dilated_cloud": ["dilated"],
    "cirrus": ["cirrus"],
    "cloud": ["cloud"],
    "cloud_shadow": ["shadow"],
    "snow": ["snow"],
    "water": [1],
    "cloud_confidence": ["medium", "high"],
}


@pytest.fixture(scope="module")
def landsat() -> dict[str, Any]:
    [item] = cassette_items(ES_MULTI_CASSETTE, "landsat-c2-l2")
    return item


def _plan(tmp_path: Path, item: dict[str, Any], bits: dict[str, list[Any]], clean: str = ""):
    lines = "\n".join(f"    {k}: {v}" for k, v in bits.items())
    text = LANDSAT_RECIPE.format(bits=lines, clean=clean)
    recipe = load_recipe(write_recipe(tmp_path, text))
    return make_plan(recipe, Resolution(items=[item], source={"kind": "file"}))


def _declared(item: dict[str, Any], name: str) -> dict[str, Any]:
    return next(
        f for f in item["assets"]["qa_pixel"]["classification:bitfields"] if f["name"] == name
    )


def test_named_flags_resolve_to_the_items_declaration(tmp_path: Path, landsat: dict) -> None:
    plan = _plan(tmp_path, landsat, FLAGS, "  clean: [cloud, cloud_shadow, dilated_cloud, cirrus]")
    assert [p.id for p in plan.month("2023-10").items] == [landsat["id"]]
    got = {r["name"]: r for r in plan.mask["bits"]}
    assert sorted(got) == sorted(FLAGS)
    for name, values in FLAGS.items():
        field = _declared(landsat, name)
        classes = {c["name"]: c["value"] for c in field["classes"]}
        want = sorted({v if isinstance(v, int) else classes[v] for v in values})
        assert (got[name]["offset"], got[name]["length"]) == (field["offset"], field["length"])
        assert got[name]["values"] == want, name
    assert got["cloud_confidence"]["values"] == [2, 3] and got["cloud_confidence"]["length"] == 2
    cloudy = {n for n, r in got.items() if r["cloud"]}
    assert cloudy == {"cloud", "cloud_shadow", "dilated_cloud", "cirrus"}


@pytest.mark.parametrize(
    ("bits", "fragment"),
    [
        ({"clouds": [1]}, "declares no bit field 'clouds' (it declares: fill, dilated_cloud,"),
        ({"cloud_confidence": ["med"]}, "declares no class 'med' (its classes: not_set, low,"),
        ({"cloud": [2]}, "is 1 bit(s) wide: value 2 is not in 0..1"),
    ],
)
def test_an_undeclared_flag_is_refused_naming_what_the_item_declares(
    tmp_path: Path, landsat: dict, bits: dict, fragment: str
) -> None:
    with pytest.raises(RecipeError) as caught:
        _plan(tmp_path, landsat, bits)
    [problem] = caught.value.problems
    assert problem.field == f"mask.bits.{next(iter(bits))}", problem
    assert fragment in problem.message
    assert "water" in problem.message or "class" in problem.message or "wide" in problem.message
    assert problem.line is not None


def test_bit_positions_need_no_declaration(tmp_path: Path, landsat: dict) -> None:
    """HLS v2 Fmask style: bits by position (1 cloud, 3 cloud shadow; 6-7 aerosol level), no
    classification:bitfields needed; a named flag on such an item says how to give positions."""
    bare = copy.deepcopy(landsat)
    del bare["assets"]["qa_pixel"]["classification:bitfields"]
    plan = _plan(tmp_path, bare, {"'1'": [1], "'3'": [1], "'6-7'": [3]}, "  clean: ['1', '3']")
    got = [
        (r["name"], r["offset"], r["length"], r["values"], r["cloud"]) for r in plan.mask["bits"]
    ]
    assert got == [("1", 1, 1, [1], True), ("3", 3, 1, [1], True), ("6-7", 6, 2, [3], False)]
    with pytest.raises(RecipeError, match=r"declares no classification:bitfields.*e\.g\. '3': 1"):
        _plan(tmp_path, bare, {"cloud": [1]})


def test_items_that_declare_a_flag_differently_are_refused(tmp_path: Path, landsat: dict) -> None:
    moved = copy.deepcopy(landsat)
    moved["id"] = "moved"
    for field in moved["assets"]["qa_pixel"]["classification:bitfields"]:
        if field["name"] == "cloud":
            field["offset"] = 9
    rules = resolve_bits({"cloud": [1]}, [], landsat["assets"]["qa_pixel"], "here")
    assert (rules[0].offset, rules[0].values) == (_declared(landsat, "cloud")["offset"], (1,))
    text = LANDSAT_RECIPE.format(bits="    cloud: 1", clean="")
    recipe = load_recipe(write_recipe(tmp_path, text))
    pairs = [(i["id"], i["assets"]["qa_pixel"], "qa_pixel") for i in (landsat, moved)]
    with pytest.raises(RecipeError, match="declare bit field 'cloud' differently"):
        plan_bit_rules(recipe, pairs)

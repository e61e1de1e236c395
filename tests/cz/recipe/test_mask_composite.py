"""The recipe's mask cleaning, cloud probability and composite methods: accepted forms and
located refusals (docs/recipes.md, "mask" and "composite")."""

from __future__ import annotations

from pathlib import Path

import pytest

from cz.errors import RecipeError
from cz.recipe import load_recipe
from tests.cz.helpers import write_recipe
from tests.cz.recipe.test_recipe import GOOD

BANDS = """\
  - name: red
    asset: [red, B04]
    common_name: red
  - name: B08
    asset: [nir, B08]
"""


def _recipe(tmp_path: Path, tail: str) -> Path:
    text = GOOD.replace(
        "  - name: red\n    asset: [red, B04]\n  - name: nir\n    asset: [nir, B08]\n", BANDS
    )
    return write_recipe(tmp_path, text + tail)


def test_mask_cleaning_and_composite_parameters_load(tmp_path: Path) -> None:
    rec = load_recipe(
        _recipe(
            tmp_path,
            "mask:\n  open: 3\n  buffer: 6\n  cloud_probability_max: 40\n"
            "composite:\n  method: best\n  index: (B08 - red) / (B08 + red)\n",
        )
    )
    assert rec.mask is not None
    assert (rec.mask.open, rec.mask.dilate, rec.mask.cloud_probability_max) == (3, 6, 40.0)
    assert rec.mask.cloud_probability_asset[0] == "cloud"  # Earth Search sentinel-2-c1-l2a
    assert rec.composite.parameters() == {"index": "(B08 - red) / (B08 + red)"}
    rec = load_recipe(_recipe(tmp_path, "composite:\n  method: percentile\n  q: 90\n"))
    assert rec.composite.parameters() == {"q": 90.0}
    assert rec.mask is not None and rec.mask.dilate == 0 and rec.mask.open == 0
    assert rec.mask.clean == [3, 8, 9, 10]  # the SCL cloud classes (Digital Earth Australia's)
    rec = load_recipe(_recipe(tmp_path, "mask:\n  keep: [3, 4, 5]\n  open: 2\n"))
    assert rec.mask is not None and rec.mask.clean == [8, 9, 10]  # a kept class is not cleaned
    rec = load_recipe(_recipe(tmp_path, "mask:\n  clean: [10, 9]\n  open: 2\n"))
    assert rec.mask is not None and rec.mask.clean == [9, 10]


@pytest.mark.parametrize(
    ("tail", "field", "fragment"),
    [
        ("composite:\n  method: percentile\n", "composite", "needs q"),
        (
            "composite:\n  method: mean\n  q: 20\n",
            "composite",
            "q is a parameter of method percentile",
        ),
        (
            "composite:\n  method: percentile\n  q: 101\n",
            "composite.q",
            "expected a number <= 100",
        ),
        ("composite:\n  method: best\n", "composite", "needs index"),
        (
            "composite:\n  method: median\n  index: red\n",
            "composite",
            "index is a parameter of method best",
        ),
        (
            "composite:\n  method: best\n  index: __import__('os')\n",
            "composite.index",
            "is not allowed",
        ),
        (
            "composite:\n  method: best\n  index: (nir - red)\n",
            "composite.index",
            "'nir', which is no band",
        ),
        ("composite:\n  method: medain\n", "composite.method", "did you mean 'median'?"),
        ("mask:\n  dilate: 2\n  buffer: 3\n", "mask", "not both"),
        ("mask:\n  clean: [4, 9]\n", "mask", "class 4 is both kept and cleaned"),
        ("mask:\n  clean: [9, 9]\n", "mask.clean", "listed twice"),
        ("mask:\n  clean: [70000]\n", "mask.clean", "expected classes 0..65535"),
        ("mask:\n  dilate: -1\n", "mask.dilate", "expected a number >= 0"),
        ("mask:\n  open: 65\n", "mask.open", "expected a number <= 64"),
        ("mask:\n  cloud_probability_max: 120\n", "mask.cloud_probability_max", "100"),
        (
            "mask:\n  cloud_probability_max: 50\n  cloud_probability_asset: [red]\n",
            "mask.cloud_probability_asset",
            "both the cloud probability and a band",
        ),
    ],
)
def test_refusals_are_located(tmp_path: Path, tail: str, field: str, fragment: str) -> None:
    with pytest.raises(RecipeError) as info:
        load_recipe(_recipe(tmp_path, tail))
    problems = info.value.problems
    assert [p.field for p in problems] == [field], str(info.value)
    assert fragment in problems[0].message, problems[0].message
    assert problems[0].line is not None


DERIVED = "  - name: ndvi\n    expression: (B08 - red) / (B08 + red)\n    scale: 0.0001\n"


def _with_band(tmp_path: Path, band: str, tail: str = "") -> Path:
    text = GOOD.replace(
        "  - name: red\n    asset: [red, B04]\n  - name: nir\n    asset: [nir, B08]\n",
        BANDS + band,
    )
    return write_recipe(tmp_path, text + tail)


@pytest.mark.parametrize(
    ("band", "tail", "field", "fragment"),
    [
        (DERIVED.replace("    scale: 0.0001\n", ""), "", "bands[2]", "needs its own scale"),
        (DERIVED + "    asset: ndvi\n", "", "bands[2]", "one of them"),
        (DERIVED.replace("B08 + red", "B08 + blue"), "", "bands[2].expression", "'blue'"),
        (DERIVED + "    dtype: int16\n", "", "bands[2].dtype", "one dtype, uint16"),
        (DERIVED, "composite:\n  method: geomedian\n", "bands[2].when", "when: composite"),
        (DERIVED + "    resampling: bilinear\n", "", "bands[2]", "resampling applies"),
        (
            DERIVED.replace("(B08 - red)", "__import__('os')"),
            "",
            "bands[2].expression",
            "not allowed",
        ),
    ],
)
def test_derived_band_refusals_are_located(
    tmp_path: Path, band: str, tail: str, field: str, fragment: str
) -> None:
    with pytest.raises(RecipeError) as info:
        load_recipe(_with_band(tmp_path, band, tail))
    problems = info.value.problems
    assert [p.field for p in problems] == [field], str(info.value)
    assert fragment in problems[0].message, problems[0].message


def test_a_derived_band_loads(tmp_path: Path) -> None:
    rec = load_recipe(_with_band(tmp_path, DERIVED + "    when: composite\n"))
    ndvi = rec.bands[2]
    assert ndvi.derived and ndvi.asset is None and ndvi.harmonize is False
    assert (ndvi.scale, ndvi.physical_offset, ndvi.when) == (0.0001, 0.0, "composite")

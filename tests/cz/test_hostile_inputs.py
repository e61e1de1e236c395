"""Hostile inputs of the toolkit's own surfaces that once escaped as untyped errors.

Each case is an input measured on main (docs/reliability.md, "Named inputs"), e.g. a recipe's
``store.nodata: .nan`` (an internal ValueError). Each must end in one located line, never an
internal error. (``cz convert``'s inputs are in tests/cz/convert/test_refusals.py.)
"""

from __future__ import annotations

import pytest

from cz.errors import RecipeError
from cz.recipe import parse_recipe
from tests.cz.helpers import MINIMAL_RECIPE


@pytest.mark.parametrize("value", [".nan", ".NaN", ".inf", "-.inf", "1e999"])
@pytest.mark.parametrize("dtype", ["uint16", "float32"])
def test_recipe_nodata_not_finite_is_a_located_error(value: str, dtype: str) -> None:
    text = MINIMAL_RECIPE + f"store:\n  dtype: {dtype}\n  nodata: {value}\n"
    with pytest.raises(RecipeError) as info:
        parse_recipe(text, source="r.yaml")
    assert str(info.value).startswith("r.yaml:")
    assert "store.nodata" in str(info.value) and "not valid nodata" in str(info.value)

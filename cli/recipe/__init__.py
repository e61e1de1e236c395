"""Recipes: the declarative YAML that says what store to build (reference: ``docs/recipes.md``).

A recipe is parsed with ``cz.recipe_yaml.RecipeLoader`` (a ``yaml.SafeLoader`` with YAML 1.2
core scalars and tags and size, depth and alias budgets: no code execution, no alias bomb) into
pydantic v2 models that forbid unknown keys. Every mistake becomes a :class:`~cz.errors.RecipeProblem` that
names the file, the line and column, the field path (``bands[1].resampling``) and what was
expected; a misspelt key or value gets a "did you mean" suggestion. All problems of a recipe are
reported together.

Modules: :mod:`~cz.recipe.sections` (the models; the mask's in :mod:`~cz.recipe.mask`, their
base in :mod:`~cz.recipe.base`), :mod:`~cz.recipe.normalise` (value
shorthands), :mod:`~cz.recipe.geojson` (the AOI), :mod:`~cz.recipe.positions` (YAML with line
and column), :mod:`~cz.recipe.problems` (phrasing errors), :mod:`~cz.recipe.semantic` (checks
across fields), :mod:`~cz.recipe.loading` (the entry points).

Relative paths: inputs that travel with the recipe (``catalog.path``, ``aoi.file``) resolve
against the recipe's folder; the output ``store.path`` resolves against the working directory,
like ``--out``.
"""

from cz.recipe.loading import load_recipe, parse_recipe
from cz.recipe.mask import DEFAULT_SCL_KEEP, MaskSpec
from cz.recipe.sections import (
    RESAMPLING,
    AoiSpec,
    BandSpec,
    CatalogSpec,
    CodecSpec,
    CompositeSpec,
    Condition,
    FiltersSpec,
    GapFillSpec,
    GridSpec,
    ProvenanceSpec,
    Recipe,
    StoreSpec,
    TimeSpec,
)

__all__ = [
    "DEFAULT_SCL_KEEP",
    "RESAMPLING",
    "AoiSpec",
    "BandSpec",
    "CatalogSpec",
    "CodecSpec",
    "CompositeSpec",
    "Condition",
    "FiltersSpec",
    "GapFillSpec",
    "GridSpec",
    "MaskSpec",
    "ProvenanceSpec",
    "Recipe",
    "StoreSpec",
    "TimeSpec",
    "load_recipe",
    "parse_recipe",
]

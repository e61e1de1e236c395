"""Entry points: :func:`parse_recipe` (text) and :func:`load_recipe` (a file)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import (
    ValidationError,
)

from cz.errors import RecipeError, RecipeProblem
from cz.recipe.positions import load_yaml
from cz.recipe.problems import describe_value, problems_from_validation
from cz.recipe.sections import Recipe
from cz.recipe.semantic import semantic_problems


def parse_recipe(text: str, *, source: str = "<recipe>", base_dir: Path | None = None) -> Recipe:
    """Parse recipe YAML text. ``source`` names it in errors; ``base_dir`` anchors relative inputs.

    Raises :class:`~cz.errors.RecipeError` with every problem found, each located.
    """
    data, marks = load_yaml(text, source)
    if not isinstance(data, dict):
        raise RecipeError(
            [
                RecipeProblem(
                    source,
                    1,
                    1,
                    "",
                    f"expected a mapping of sections (catalog:, aoi:, ...); got {describe_value(data)}",
                )
            ]
        )
    context = {"base_dir": base_dir}
    try:
        recipe = Recipe.model_validate(data, context=context)
    except ValidationError as exc:  # every field problem, located
        problems = problems_from_validation(exc, data, marks, source)
        problems.sort(key=lambda p: (p.line is None, p.line or 0, p.column or 0))
        raise RecipeError(problems) from None
    except (OSError, ValueError) as exc:  # pragma: no cover - defensive
        raise RecipeError([RecipeProblem(source, None, None, "", str(exc))]) from None
    recipe._source = source
    recipe._marks = marks
    found = semantic_problems(recipe)
    if recipe.aoi.file is not None and not found:
        try:
            recipe.aoi.geojson()
        except (ValueError, OSError, json.JSONDecodeError) as exc:  # the AOI file is missing or bad
            found.append((("aoi", "file"), f"{exc}"))
    if found:
        problems = [recipe.problem(path, message) for path, message in found]
        problems.sort(key=lambda p: (p.line is None, p.line or 0, p.column or 0))
        raise RecipeError(problems)
    return recipe


def load_recipe(path: str | Path) -> Recipe:
    """Read and check a recipe file. Errors name this file, the line and the field."""
    file = Path(path)
    source = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:  # no such recipe file
        raise RecipeError(
            [RecipeProblem(source, None, None, "", "recipe file not found")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:  # unreadable or not UTF-8
        raise RecipeError([RecipeProblem(source, None, None, "", f"cannot read: {exc}")]) from None
    return parse_recipe(text, source=source, base_dir=file.resolve().parent)

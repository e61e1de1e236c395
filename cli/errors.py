"""Typed errors of the toolkit (recipes, STAC resolution, planning, signing).

The toolkit raises these; only the command layer (``cmd_*.py``) turns them into messages and exit
codes. Each message names where the problem is (recipe file and line, URL, item id) and what was
expected, so that a user can act on it without reading a traceback.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "CzError",
    "PlanError",
    "RecipeError",
    "RecipeProblem",
    "SigningError",
    "StacError",
]


class CzError(Exception):
    """Base class of every error raised by the ``cz`` toolkit."""


@dataclass(frozen=True)
class RecipeProblem:
    """One located mistake in a recipe.

    ``field`` is the dotted path of the value (``bands[1].resampling``), empty for the whole
    document; ``line`` and ``column`` are 1-based, or ``None`` when the position is unknown.
    """

    file: str
    line: int | None
    column: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        field = f" {self.field}:" if self.field else ""
        return f"{where}:{field} {self.message}"


class RecipeError(CzError, ValueError):
    """A recipe could not be loaded; carries every problem found, each with file, line and field.

    All problems are reported at once (not only the first), so that a user fixes a recipe in one
    round trip.
    """

    def __init__(self, problems: list[RecipeProblem]) -> None:
        if not problems:
            raise ValueError("RecipeError needs at least one problem")
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))

    @property
    def first(self) -> RecipeProblem:
        """The first problem (in document order when lines are known)."""
        return self.problems[0]


class StacError(CzError):
    """Items could not be resolved: the catalog is unreachable, malformed or not a STAC API."""


class PlanError(CzError):
    """The recipe is valid but no plan can be made from it and the items found."""


class SigningError(CzError):
    """Asset URLs could not be signed (for example planetary-computer is not installed)."""

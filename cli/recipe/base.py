"""The base of every recipe section model (docs/recipes.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["SectionModel"]


class SectionModel(BaseModel):
    """Base of every recipe section: unknown keys are errors, defaults are validated too."""

    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)

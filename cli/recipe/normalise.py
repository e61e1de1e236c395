"""Value normalisers of recipe fields (pydantic BeforeValidators) and input path resolution.

BeforeValidators keep the models free of unions, so that an error has one location instead of
one per union member.
"""

from __future__ import annotations

import re
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import (
    ValidationInfo,
)

from cz.months import is_month


def as_list_of_str(value: Any) -> Any:
    """Accept ``red`` as shorthand for ``[red]`` (asset aliases)."""
    if isinstance(value, str):
        return [value]
    return value


def as_month(value: Any) -> Any:
    """Months are ``YYYY-MM`` strings; YAML turns ``2020-06-01`` into a date, which we refuse."""
    if isinstance(value, date):
        raise ValueError(
            f"expected a month as YYYY-MM (e.g. {value:%Y-%m}), got the date {value.isoformat()}; "
            "the time range is whole calendar months"
        )
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"expected a month as YYYY-MM (e.g. {value}-01), got the number {value}")
    if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", value.strip()):
        raise ValueError(  # YAML 1.2 keeps a date a string (cz.recipe_yaml): same advice
            f"expected a month as YYYY-MM (e.g. {value.strip()[:7]}), got the date "
            f"{value.strip()}; the time range is whole calendar months"
        )
    if isinstance(value, str) and not is_month(value.strip()):
        raise ValueError(f"expected a month as YYYY-MM (e.g. 2024-01), got {value!r}")
    if isinstance(value, str) and not 1900 <= int(value.strip()[:4]) <= 2999:
        raise ValueError(f"the year of {value!r} is out of range (1900 .. 2999)")
    return value.strip() if isinstance(value, str) else value


def as_time_bound(value: Any) -> Any:
    """A bound of the time range: a month ``YYYY-MM`` (as :func:`as_month`) or, for periods
    shorter than a month, a day ``YYYY-MM-DD`` (whether a day fits the period is checked with
    the period: cz.recipe.semantic)."""
    if isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}$", value.strip()):
        text = value.strip()
        try:
            date.fromisoformat(text)
        except ValueError:
            raise ValueError(f"expected a date YYYY-MM-DD, got {text!r}") from None
        if not 1900 <= int(text[:4]) <= 2999:
            raise ValueError(f"the year of {text!r} is out of range (1900 .. 2999)")
        return text
    return as_month(value)


def as_crs(value: Any) -> Any:
    """``32633`` and ``epsg:32633`` become ``EPSG:32633``; ``UTM`` becomes ``utm``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"EPSG:{value}"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "utm":
            return "utm"
        if text.isdigit():
            return f"EPSG:{text}"
        if text.upper().startswith("EPSG:"):
            return "EPSG:" + text[5:].strip()
    return value


def as_codec(value: Any) -> Any:
    """``codec: zstd`` is shorthand for ``codec: {name: zstd}``."""
    if isinstance(value, str):
        return {"name": value}
    return value


def resolve_input(value: str | Path, info: ValidationInfo) -> Path:
    """Resolve a recipe-relative input path against the recipe's folder (context ``base_dir``)."""
    path = Path(str(value)).expanduser()
    base = (info.context or {}).get("base_dir")
    if not path.is_absolute() and base is not None:
        path = Path(base) / path
    return path.resolve()


def band_math(value: str | None) -> str | None:
    """Band math as ``cz quicklook --expr`` parses it (numbers, band names, ``+ - * / **``,
    parentheses: cz.look.expr), or a ValueError saying what is refused (without the CLI flag)."""
    if value is None:
        return None
    from cz.look.expr import ExpressionError, names_in

    try:
        names_in(value)
    except ExpressionError as exc:  # band math we refuse: say why, without the CLI flag
        raise ValueError(str(exc).split(": ", 1)[-1]) from None
    return value

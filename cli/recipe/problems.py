"""Locating and phrasing validation errors: field path, line, and a 'did you mean'."""

from __future__ import annotations

import difflib
import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    ValidationError,
)

from cz.errors import RecipeProblem
from cz.recipe.positions import Marks, field_path, locate
from cz.recipe.sections import Recipe


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[str | int, ...], tuple[Any, ...]]:
    """Split a pydantic ``loc`` into the part present in the data and the rest.

    pydantic inserts tags (union members, validator names) into ``loc``; those are skipped.
    """
    path: list[str | int] = []
    current = data
    rest = list(loc)
    while rest:
        part = rest[0]
        if (isinstance(current, dict) and part in current) or (
            isinstance(current, list)
            and isinstance(part, int)
            and not isinstance(part, bool)
            and 0 <= part < len(current)
        ):
            current = current[part]
            path.append(part)
        elif isinstance(part, str) and (
            "[" in part or part in ("function-after", "function-before", "function-wrap")
        ):
            pass  # a pydantic tag such as 'list[str]' or 'function-after[...]'
        else:
            break
        rest.pop(0)
    return tuple(path), tuple(rest)


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional / Union / Annotated / list annotations."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def model_at(path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The recipe model class that describes the mapping at ``path`` (for key suggestions)."""
    current: Any = Recipe
    for part in path:
        candidates = _unwrap(current)
        nxt = None
        for cand in candidates:
            origin = typing.get_origin(cand)
            if isinstance(part, int) and origin is list:
                nxt = typing.get_args(cand)[0]
            elif isinstance(part, str) and origin is dict:
                nxt = typing.get_args(cand)[1]
            elif isinstance(part, str) and isinstance(cand, type) and issubclass(cand, BaseModel):
                field = _field_by_key(cand, part)
                if field is not None:
                    nxt = field.annotation
            if nxt is not None:
                break
        if nxt is None:
            return None
        current = nxt
    for cand in _unwrap(current):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand
    return None


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key == (field.alias or name):
            return field
    return None


def keys_of(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def suggest(word: str, choices: Iterable[str]) -> str | None:
    """The most likely intended choice for a misspelt ``word``, if any is close enough.

    A permutation of the same letters (``let`` for ``lte``) wins over difflib's ratio, which
    prefers the shorter ``lt``.
    """
    choices = list(choices)
    swapped = [c for c in choices if sorted(c.lower()) == sorted(word.lower()) and c != word]
    if swapped:
        return swapped[0]
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in choices}
        matches = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        matches = [lowered[m] for m in matches]
    return matches[0] if matches else None


def describe_value(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "path_type": "a file path",
}


def _phrase(error: Mapping[str, Any]) -> str:
    """An error message that says what was expected and what was found."""
    etype = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if etype == "value_error":
        return str(ctx.get("error", error["msg"])).removeprefix("Value error, ")
    if etype == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        message = f"expected one of {', '.join(choices)}; got {describe_value(value)}"
        if isinstance(value, str) and (hint := suggest(value, choices)):
            message += f" (did you mean {hint!r}?)"
        return message
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(etype, "<=")
        bound = next(iter(ctx.values()))
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"expected a number {sign} {bound}; got {describe_value(value)}"
    if etype in ("too_short", "too_long"):
        kind = "at least" if etype == "too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return f"expected {kind} {limit} item(s); got {ctx.get('actual_length')}"
    if etype in ("string_too_short", "string_too_long"):
        return "expected a non-empty string" if etype == "string_too_short" else error["msg"]
    if etype in _EXPECTED:
        return f"expected {_EXPECTED[etype]}; got {describe_value(value)}"
    return f"{error['msg']}; got {describe_value(value)}"


def problems_from_validation(
    exc: ValidationError, data: Any, marks: dict[tuple[str | int, ...], Marks], source: str
) -> list[RecipeProblem]:
    problems: list[RecipeProblem] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        path, rest = _data_path(data, tuple(error["loc"]))
        etype = error["type"]
        if etype == "missing":
            field, (line, col), message = _missing(path, rest, marks)
        elif etype == "extra_forbidden":
            field, (line, col), message = path, locate(marks, path, key=True), _unknown_key(path)
        else:
            field = path + tuple(p for p in rest if isinstance(p, str | int) and "[" not in str(p))
            line, col = locate(marks, path, key=False)
            message = _phrase(error)
        key = f"{field_path(field)}|{message}"
        if key in seen:
            continue
        seen.add(key)
        problems.append(RecipeProblem(source, line, col, field_path(field), message))
    return _without_echoes(problems)


def _missing(
    path: tuple[Any, ...], rest: tuple[Any, ...], marks: dict[tuple[str | int, ...], Marks]
) -> tuple[tuple[Any, ...], tuple[int | None, int | None], str]:
    """A required field that is missing: its path, where its parent is, the message (with
    the field's description)."""
    missing = tuple(p for p in rest if not (isinstance(p, str) and "[" in p))[:1]
    where: tuple[int | None, int | None] = locate(marks, path, key=True) if path else (1, 1)
    message = "required field is missing"
    model = model_at(path)
    if model is not None and missing:
        field_info = _field_by_key(model, str(missing[0]))
        if field_info is not None and field_info.description:
            message += f" ({field_info.description})"
    return path + missing, where, message


def _unknown_key(path: tuple[Any, ...]) -> str:
    """An unknown key's message: the nearest known key, and every key the section takes."""
    key = str(path[-1]) if path else "?"
    model = model_at(path[:-1])
    allowed = keys_of(model) if model is not None else []
    message = f"unknown key {key!r}"
    if hint := suggest(key, allowed):
        message += f"; did you mean {hint!r}?"
    if allowed:
        message += f" (expected one of: {', '.join(allowed)})"
    return message


def _without_echoes(problems: list[RecipeProblem]) -> list[RecipeProblem]:
    """A misspelt required key shows up twice (unknown 'resolutoin', missing 'resolution'):
    keep the located suggestion, drop the echo."""
    suggested = set()
    for problem in problems:
        match = re.match(r"unknown key '.*'; did you mean '(.*)'\?", problem.message)
        if match:
            parent = problem.field.rsplit(".", 1)[0] if "." in problem.field else ""
            suggested.add(f"{parent}.{match.group(1)}" if parent else match.group(1))
    return [
        p
        for p in problems
        if not (p.message.startswith("required field is missing") and p.field in suggested)
    ]

"""YAML with positions: every value's (line, column) so problems name where they are."""

from __future__ import annotations

import typing
from collections.abc import Iterable
from typing import Any

import yaml

from cz.errors import RecipeError, RecipeProblem
from cz.recipe_yaml import RecipeLoader, check_text, check_tree

_Mark = tuple[int, int]  # (line, column), 1-based


class Marks(typing.NamedTuple):
    key: _Mark | None  # where the key of a mapping entry starts
    value: _Mark  # where the value starts
    container: bool  # the value is a mapping or a list (then its key line is the better anchor)


class _MarkingLoader(RecipeLoader):
    """The recipe loader (cz.recipe_yaml: YAML 1.2 scalars, core tags) keeping the node tree
    so values can be traced back to lines."""


def _mark(m: yaml.Mark) -> _Mark:
    return (m.line + 1, m.column + 1)


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    marks: dict[tuple[str | int, ...], Marks],
    problems: list[tuple[tuple[str | int, ...], _Mark, str]],
    key_mark: _Mark | None = None,
) -> None:
    """Record the marks of every value below ``node``; flag duplicate keys (YAML keeps the last)."""
    container = isinstance(node, yaml.MappingNode | yaml.SequenceNode)
    marks.setdefault(path, Marks(key_mark, _mark(node.start_mark), container))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = str(key_node.value)
            if key in seen:
                problems.append(
                    ((*path, key), _mark(key_node.start_mark), f"duplicate key {key!r}")
                )
            seen.add(key)
            _walk(value_node, (*path, key), marks, problems, _mark(key_node.start_mark))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), marks, problems)


def load_yaml(text: str, source: str) -> tuple[Any, dict[tuple[str | int, ...], Marks]]:
    """Parse YAML safely; return the data and the marks of every value."""
    check_text(text, source)  # size, NUL and control characters (decision 0013)
    loader = _MarkingLoader(text)
    marks: dict[tuple[str | int, ...], Marks] = {}
    dups: list[tuple[tuple[str | int, ...], _Mark, str]] = []
    try:
        node = loader.get_single_node()
        if node is None:
            raise RecipeError(
                [RecipeProblem(source, 1, 1, "", "the recipe is empty; expected a mapping")]
            )
        check_tree(node, source)  # aliases, recursion, depth, expanded size (decision 0013)
        _walk(node, (), marks, dups)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:  # a syntax error with a position
        mark = exc.problem_mark or exc.context_mark
        line, col = _mark(mark) if mark is not None else (None, None)
        what = str(exc.problem or exc.context or "syntax error")
        if exc.context and exc.problem:
            what += f" ({exc.context}"
            if exc.context_mark is not None:
                what += f" that starts at line {exc.context_mark.line + 1}"
            what += ")"
        raise RecipeError([RecipeProblem(source, line, col, "", f"invalid YAML: {what}")]) from None
    except yaml.YAMLError as exc:  # any other YAML error, no position
        raise RecipeError([RecipeProblem(source, None, None, "", f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if dups:
        raise RecipeError(
            [RecipeProblem(source, m[0], m[1], field_path(p), msg) for p, m, msg in dups]
        )
    return data, marks


def field_path(path: Iterable[str | int]) -> str:
    """``('bands', 1, 'asset')`` -> ``bands[1].asset``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def locate(
    marks: dict[tuple[str | int, ...], Marks], path: tuple[str | int, ...], *, key: bool
) -> tuple[int | None, int | None]:
    """Line and column of ``path`` (its key if ``key``), else of its nearest located ancestor."""
    for end in range(len(path), -1, -1):
        found = marks.get(path[:end])
        if found is not None:
            use_key = key or end < len(path) or found.container
            return found.key if use_key and found.key else found.value
    return (None, None)

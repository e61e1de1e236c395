"""The YAML of recipes: YAML 1.2 core scalars, no exotic tags, bounded size, depth and aliases.

PyYAML's SafeLoader is safe from code execution but not from hostile or surprising input:
YAML 1.1 reads ``max_age: 1:30`` as the sexagesimal 90 and ``yes``/``on`` as booleans, accepts
``!!binary``, ``!!set`` and ``!!timestamp`` values no recipe field wants, follows an alias
bomb of 1 KB into gigabytes and a self-referencing anchor into a recursive structure, and
raises bare ValueError for a 5,000-digit integer. :class:`RecipeLoader` resolves plain scalars
by the YAML 1.2 core schema (null, true/false, decimal/0o/0x integers, floats, .inf, .nan;
everything else a string), refuses every tag but the core ones, and :func:`check_text` /
:func:`check_tree` bound the document before it is constructed. Every refusal is a
:class:`~cz.errors.RecipeError` with the file, line and column.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

import yaml

from cz.errors import RecipeError, RecipeProblem

__all__ = [
    "MAX_ALIASES",
    "MAX_DEPTH",
    "MAX_INT_DIGITS",
    "MAX_NODES",
    "MAX_TEXT_BYTES",
    "RecipeLoader",
    "check_text",
    "check_tree",
]

#: A recipe is a page of YAML; an inline AOI polygon of many vertices stays far below this.
MAX_TEXT_BYTES = 4 << 20
#: Values in a recipe, counted while composing and again after expanding aliases (an alias
#: bomb multiplies them): an inline AOI of 6,000 vertices fits; larger ones belong in aoi.file.
MAX_NODES = 20_000
#: Nesting of mappings and sequences (GeoJSON MultiPolygon coordinates need 5).
MAX_DEPTH = 32
#: Aliases in one document: enough for shared band definitions, too few for a bomb.
MAX_ALIASES = 100
#: Digits of an integer scalar (no recipe value needs more than a few).
MAX_INT_DIGITS = 30

_CORE_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
    "tag:yaml.org,2002:map",
    "tag:yaml.org,2002:seq",
    "tag:yaml.org,2002:merge",
}

# YAML 1.2.2 10.3.2 (core schema) tag resolution of plain scalars
_RESOLVERS: list[tuple[str, re.Pattern[str], str]] = [
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), "~nN"),
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), "tTfF"),
    (
        "tag:yaml.org,2002:int",
        re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
        "-+0123456789",
    ),
    (
        "tag:yaml.org,2002:float",
        re.compile(
            r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
            r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
        ),
        "-+0123456789.",
    ),
    ("tag:yaml.org,2002:merge", re.compile(r"^<<$"), "<"),
]


class RecipeLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 core scalars and only the core tags."""

    yaml_implicit_resolvers: ClassVar[dict[Any, Any]] = {}  # only the core schema's, below
    _depth = 0
    _nodes = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        """Compose with a depth and a node budget, failing at the first node past either (so
        a 5,000-deep or 100,000-entry document stops early instead of recursing or crawling)."""
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH or self._nodes > MAX_NODES:
                what = (
                    f"nested deeper than {MAX_DEPTH} levels"
                    if self._depth > MAX_DEPTH
                    else f"more than {MAX_NODES} values (a large AOI belongs in aoi.file)"
                )
                raise yaml.composer.ComposerError(None, None, what, self.peek_event().start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        text = str(node.value).replace("_", "")
        digits = text.lstrip("+-")
        if len(digits) > MAX_INT_DIGITS:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"an integer of {len(digits)} digits is out of range for any recipe value",
                node.start_mark,
            )
        if digits.startswith("0o"):
            return int(text.replace("0o", "", 1), 8)
        if digits.startswith("0x"):
            return int(text.replace("0x", "", 1), 16)
        return int(text, 10)

    def construct_undefined(self, node: yaml.Node) -> Any:
        raise yaml.constructor.ConstructorError(
            None,
            None,
            f"the tag {node.tag!r} is not allowed in a recipe (only plain YAML values)",
            node.start_mark,
        )


for _tag, _regexp, _first in _RESOLVERS:
    RecipeLoader.add_implicit_resolver(_tag, _regexp, list(_first))
RecipeLoader.add_constructor("tag:yaml.org,2002:int", RecipeLoader.construct_yaml_int)
for _tag in (
    "tag:yaml.org,2002:binary",
    "tag:yaml.org,2002:set",
    "tag:yaml.org,2002:omap",
    "tag:yaml.org,2002:pairs",
    "tag:yaml.org,2002:timestamp",
):
    RecipeLoader.add_constructor(_tag, RecipeLoader.construct_undefined)


def _problem(source: str, mark: yaml.Mark | None, message: str) -> RecipeError:
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (None, None)
    return RecipeError([RecipeProblem(source, line, col, "", message)])


def check_text(text: str, source: str) -> None:
    """Refuse text no recipe is: too large, or holding NUL or other C0 control characters."""
    if len(text) > MAX_TEXT_BYTES:
        raise RecipeError(
            [RecipeProblem(source, None, None, "", f"{len(text)} characters: not a recipe")]
        )
    bad = re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", text)
    if bad:
        line = text.count("\n", 0, bad.start()) + 1
        col = bad.start() - (text.rfind("\n", 0, bad.start()) + 1) + 1
        raise RecipeError(
            [
                RecipeProblem(
                    source, line, col, "", f"control character {bad.group()!r} in the recipe"
                )
            ]
        )


def check_tree(node: yaml.Node, source: str) -> None:
    """Bound the composed node graph: aliases, recursion, depth and expanded size."""
    sizes: dict[int, int] = {}
    aliases = 0
    stack: list[tuple[yaml.Node, int, bool]] = [(node, 1, False)]
    active: set[int] = set()
    while stack:
        current, depth, done = stack.pop()
        key = id(current)
        children = _children(current)
        if done:
            active.discard(key)
            sizes[key] = 1 + sum(sizes[id(c)] for c in children)
            if sizes[key] > MAX_NODES:
                raise _problem(
                    source,
                    current.start_mark,
                    f"the document expands to more than {MAX_NODES} values (aliases)",
                )
            continue
        if key in active:
            raise _problem(source, current.start_mark, "an anchor refers to itself (recursion)")
        if key in sizes:  # reached again through an alias, already measured
            continue
        if depth > MAX_DEPTH:
            raise _problem(source, current.start_mark, f"nested deeper than {MAX_DEPTH} levels")
        active.add(key)
        stack.append((current, depth, True))
        for child in children:
            if id(child) in active:
                raise _problem(source, child.start_mark, "an anchor refers to itself (recursion)")
            if id(child) in sizes:
                aliases += 1
                if aliases > MAX_ALIASES:
                    raise _problem(
                        source, child.start_mark, f"more than {MAX_ALIASES} aliases in one recipe"
                    )
                continue
            stack.append((child, depth + 1, False))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []

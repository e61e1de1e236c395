"""Band math for ``cz quicklook --expr``: a small, safe arithmetic language over band names.

``(nir-red)/(nir+red)`` is parsed with :mod:`ast` and evaluated on numpy arrays; only numbers,
band names, ``+ - * / **``, unary minus and parentheses are allowed, so a recipe or a shell
history can never run code. Names resolve by common_name first, then band name (spec 3.6).
Division by zero gives NaN/inf, which the caller treats as invalid.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping

import numpy as np

__all__ = ["ExpressionError", "evaluate", "names_in"]

_BINARY: dict[type, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    ast.Add: np.add,
    ast.Sub: np.subtract,
    ast.Mult: np.multiply,
    ast.Div: np.true_divide,
    ast.Pow: np.power,
}


class ExpressionError(ValueError):
    """The expression is not valid band math; the message names the offending part."""


def _parse(text: str) -> ast.expr:
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:  # not a Python expression
        raise ExpressionError(
            f"--expr {text!r}: not an arithmetic expression ({exc.msg})"
        ) from None
    _check(tree.body, text)
    return tree.body


def _check(node: ast.AST, text: str) -> None:
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        _check(node.left, text)
        _check(node.right, text)
    elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        _check(node.operand, text)
    elif not (
        isinstance(node, ast.Name)
        or (isinstance(node, ast.Constant) and type(node.value) in (int, float))
    ):
        part = ast.get_source_segment(text, node) or type(node).__name__
        raise ExpressionError(
            f"--expr {text!r}: {part!r} is not allowed (only band names, numbers, + - * / ** and "
            "parentheses)"
        )


def names_in(text: str) -> list[str]:
    """The band names an expression uses, in order of first use."""
    seen: list[str] = []
    for node in ast.walk(_parse(text)):
        if isinstance(node, ast.Name) and node.id not in seen:
            seen.append(node.id)
    return seen


def evaluate(text: str, bands: Mapping[str, np.ndarray]) -> np.ndarray:
    """Evaluate ``text`` with ``bands`` (name -> float64 array). Unknown names raise."""
    root = _parse(text)

    def ev(node: ast.AST) -> np.ndarray:
        if isinstance(node, ast.BinOp):
            return _BINARY[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp):
            value = ev(node.operand)
            return -value if isinstance(node.op, ast.USub) else value
        if isinstance(node, ast.Name):
            if node.id not in bands:
                raise ExpressionError(
                    f"--expr {text!r}: no band {node.id!r} (bands: {', '.join(bands)})"
                )
            return bands[node.id]
        assert isinstance(node, ast.Constant)
        return np.float64(node.value)  # type: ignore[arg-type, return-value]  # a number: checked above

    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return np.asarray(ev(root), dtype=np.float64)

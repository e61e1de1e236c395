"""No function of ``chronozarr/`` or ``cli/`` is longer than 80 lines unless the comment right
above its ``def`` (or its decorators) says why it must be (a public signature documented where
it is declared, a typer command whose options are its signature). Longer functions are split
into named steps; cyclomatic complexity is held at C or better with radon, outside the test
dependencies: ``radon cc -s -n D chronozarr cli`` prints nothing."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LIMIT = 80


def long_functions(root: Path) -> list[str]:
    """``path:line name (n lines)`` (path relative to ``root``) of every function over LIMIT
    lines without a comment right above it."""
    out = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for node in ast.walk(ast.parse("\n".join(lines))):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            above = lines[first - 2].strip() if first > 1 else ""
            if length > LIMIT and not above.startswith("#"):
                out.append(f"{path.relative_to(root)}:{node.lineno} {node.name} ({length} lines)")
    return out


def test_long_functions_say_why() -> None:
    found = long_functions(REPO / "chronozarr") + long_functions(REPO / "cli")
    assert not found, f"split these into named steps, or say why they must be long: {found}"


def test_the_check_sees_a_long_function_without_a_comment(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "long.py").write_text(f"def long():\n{body}\n")
    (tmp_path / "said.py").write_text(f"# Long: a table of constants\ndef said():\n{body}\n")
    assert long_functions(tmp_path) == [f"long.py:1 long ({LIMIT + 1} lines)"]

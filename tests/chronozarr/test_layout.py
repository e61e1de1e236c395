"""The library's layout (decision 0032): subpackages by concern, layered, without import circles.

Read from the source (``ast``), not from ``sys.modules``: an import inside a function counts too.
The layers, lowest first: ``format`` (the model and the arithmetic, no I/O), ``io`` (bytes in and
out), ``read``, ``provenance``, then ``write`` and ``validate``. A module may import its own
package's private modules and the public surface (``chronozarr.<package>``) of a lower layer,
never a private module or a private name of another package, and the private modules of one
package import each other without a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

LIBRARY = REPO / "chronozarr"
#: what each package may import besides itself (top-level modules: errors, _optional)
LOWER = {
    "format": set(),
    "io": {"format"},
    "read": {"format", "io"},
    "provenance": {"format", "io", "read"},
    "write": {"format", "io", "read", "provenance"},
    "validate": {"format", "io", "read"},
}
TOP_LEVEL = {"errors", "_optional"}


def _package(path: Path, library: Path = LIBRARY) -> str:
    rel = path.relative_to(library).parts
    return rel[0] if len(rel) > 1 else ""


def _typing_only_lines(tree: ast.AST) -> set[int]:
    """Lines of ``if TYPE_CHECKING:`` blocks: imports for annotations only, which never run."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _imports(path: Path, *, typing_only: bool = True) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every ``from chronozarr... import`` and ``import chronozarr...``;
    without those of ``if TYPE_CHECKING:`` blocks when ``typing_only`` is False."""
    out = []
    tree = ast.parse(path.read_text())
    skip = set() if typing_only else _typing_only_lines(tree)
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if (
            isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.split(".")[0] == "chronozarr"
        ):
            out.append((node.lineno, node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [
                (node.lineno, a.name, []) for a in node.names if a.name.startswith("chronozarr.")
            ]
    return out


def _modules(library: Path = LIBRARY) -> list[Path]:
    return sorted(p for p in library.rglob("*.py") if "__pycache__" not in p.parts)


def layering_violations(library: Path = LIBRARY) -> list[str]:
    wrong = []
    for path in _modules(library):
        own = _package(path, library)
        if own not in LOWER:
            continue
        for line, module, _names in _imports(path):
            parts = module.split(".")
            target = parts[1] if len(parts) > 1 else ""
            if target in (own, *TOP_LEVEL) or target in LOWER[own]:
                continue
            wrong.append(f"{path.relative_to(library)}:{line} imports {module} ({own} may not)")
    return wrong


def privacy_violations(library: Path = LIBRARY) -> list[str]:
    wrong = []
    for path in _modules(library):
        own = _package(path, library)
        for line, module, names in _imports(path):
            parts = module.split(".")
            private_module = any(p.startswith("_") for p in parts[2:])
            if private_module and (len(parts) < 2 or parts[1] != own):
                wrong.append(f"{path.relative_to(library)}:{line} imports private module {module}")
            for name in names:
                if name.startswith("_") and name != "__version__":
                    wrong.append(f"{path.relative_to(library)}:{line} imports private name {name}")
    return wrong


def test_the_packages_are_layered() -> None:
    wrong = layering_violations()
    assert not wrong, "\n".join(wrong)


def test_no_private_module_or_name_of_another_package() -> None:
    wrong = privacy_violations()
    assert not wrong, "\n".join(wrong)


def test_no_import_circle_inside_a_package() -> None:
    graph: dict[str, set[str]] = {}
    for path in _modules():
        if path.name == "__init__.py" or not _package(path):
            continue
        name = ".".join(path.relative_to(REPO).with_suffix("").parts)
        pkg = name.rsplit(".", 1)[0]
        graph[name] = {
            module
            for _line, module, _names in _imports(path, typing_only=False)
            if module.startswith(pkg + "._")
        }  # an annotation-only import (TYPE_CHECKING) runs never, so it makes no circle
    assert len(graph) > 30  # the walk found the modules
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph.get(node, ())):
            assert seen.get(nxt) != 1, "import circle: " + " -> ".join([*path, node, nxt])
            if nxt not in seen:
                visit(nxt, [*path, node])
        seen[node] = 2

    for node in sorted(graph):
        if node not in seen:
            visit(node, [])


def test_the_checks_above_can_fail(tmp_path: Path) -> None:
    (tmp_path / "format").mkdir()
    (tmp_path / "read").mkdir()
    (tmp_path / "format" / "_grid.py").write_text("from chronozarr.read import Reader\n")
    (tmp_path / "read" / "_reader.py").write_text(
        "def f():\n    from chronozarr.write._encode import _morton\n"
    )
    assert layering_violations(tmp_path) == [
        "format/_grid.py:1 imports chronozarr.read (format may not)",
        "read/_reader.py:2 imports chronozarr.write._encode (read may not)",
    ]
    assert privacy_violations(tmp_path) == [
        "read/_reader.py:2 imports private module chronozarr.write._encode",
        "read/_reader.py:2 imports private name _morton",
    ]

"""The toolkit's layout (decision 0034): the commands in one place, STAC in its own package.

Read from the source (``ast``), so an import inside a function counts too. A command module
(``cli/commands/``) parses options and turns typed errors into messages; the work lives in the
packages it calls, which never import a command module back. STAC client code (pystac-client)
lives in ``cli/stac/`` alone.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

CLI = REPO / "cli"
COMMANDS = CLI / "commands"


def _modules() -> list[Path]:
    return sorted(p for p in CLI.rglob("*.py") if "__pycache__" not in p.parts)


def _imported(path: Path) -> set[str]:
    """Every module ``path`` imports (``from a.b import c`` gives ``a.b`` and ``a.b.c``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _in(path: Path, folder: Path) -> bool:
    return folder in path.parents


def test_every_command_module_is_in_commands_and_registered_by_the_app() -> None:
    registering = {
        p
        for p in _modules()
        for node in ast.walk(ast.parse(p.read_text()))
        if isinstance(node, ast.FunctionDef) and node.name == "register"
    }
    assert registering, "the scan found no register(app)"
    outside = sorted(str(p.relative_to(REPO)) for p in registering if not _in(p, COMMANDS))
    assert not outside, f"commands outside cli/commands/: {outside}"
    app = (CLI / "app.py").read_text()
    for p in registering:
        assert f"{p.stem}.register(app)" in app, f"cli/app.py does not register {p.name}"


def test_only_the_app_and_the_commands_import_a_command_module() -> None:
    bad = sorted(
        str(p.relative_to(REPO))
        for p in _modules()
        if not _in(p, COMMANDS)
        and p != CLI / "app.py"
        and any(m == "cz.commands" or m.startswith("cz.commands.") for m in _imported(p))
    )
    assert not bad, f"modules importing a command module (the work must not depend on it): {bad}"


def test_pystac_client_is_imported_in_cli_stac_only() -> None:
    users = {p for p in _modules() if any(m.split(".")[0] == "pystac_client" for m in _imported(p))}
    assert users, "the scan found no pystac_client import"
    outside = sorted(str(p.relative_to(REPO)) for p in users if not _in(p, CLI / "stac"))
    assert not outside, f"STAC client code outside cli/stac/: {outside}"

"""CONTRIBUTING.md's module map names every module of ``chronozarr/`` and ``cli/``, and nothing else.

The map is the newcomer's way into the code: a module missing from it is a module nobody finds,
and a row naming a module that moved sends them nowhere. The map is read from the ``code`` column
(the last) of the table rows between ``<!-- module-map:begin -->`` and ``<!-- module-map:end -->``.
A cell names a module by its path (``chronozarr/grid.py``), a family by a glob (``cli/cmd_*.py``),
or a package folder followed by its modules' file names (``cli/look/`` (``commands.py``, ...)).
A package's ``__init__.py`` needs no row.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

CONTRIBUTING = REPO / "CONTRIBUTING.md"
PACKAGES = ("chronozarr", "cli")
BEGIN, END = "<!-- module-map:begin -->", "<!-- module-map:end -->"


def map_paths(text: str, repo: Path) -> tuple[set[str], set[str]]:
    """The module paths and package folders the map names, relative to ``repo``."""
    assert text.count(BEGIN) == 1 and text.count(END) == 1, f"one {BEGIN} and one {END} expected"
    section = text[text.index(BEGIN) : text.index(END)]
    modules: set[str] = set()
    folders: set[str] = set()
    for line in section.splitlines():
        if not line.startswith("|") or set(line) <= set("|-: "):
            continue
        code = line.strip().strip("|").split("|")[-1]
        base: str | None = None
        for token in re.findall(r"`([^`]+)`", code):
            if token.endswith("/"):
                base = token
                folders.add(token.rstrip("/"))
            elif token.endswith(".py") and "/" in token:
                hits = sorted(repo.glob(token)) if "*" in token else [repo / token]
                if not hits:
                    modules.add(token)  # a glob that matches nothing: reported as missing
                modules.update(p.relative_to(repo).as_posix() for p in hits)
                base = token.rsplit("/", 1)[0] + "/"
            elif token.endswith(".py"):
                assert base is not None, f"{token!r} has no package folder before it: {line}"
                modules.add(base + token)
    return modules, folders


def tree_modules(repo: Path) -> set[str]:
    """Every module under the packages, less the packages' ``__init__.py``."""
    return {
        p.relative_to(repo).as_posix()
        for top in PACKAGES
        for p in (repo / top).rglob("*.py")
        if p.name != "__init__.py" and "__pycache__" not in p.parts
    }


def test_the_map_names_every_module() -> None:
    modules, _ = map_paths(CONTRIBUTING.read_text(), REPO)
    tree = tree_modules(REPO)
    assert len(tree) > 100  # the walk found the packages
    missing = sorted(tree - modules)
    assert not missing, f"modules CONTRIBUTING.md's module map does not name: {missing}"


def test_the_map_names_nothing_that_does_not_exist() -> None:
    modules, folders = map_paths(CONTRIBUTING.read_text(), REPO)
    gone = sorted(m for m in modules if not (REPO / m).is_file())
    gone += sorted(f + "/" for f in folders if not (REPO / f).is_dir())
    assert not gone, f"CONTRIBUTING.md's module map names paths that do not exist: {gone}"


def test_the_reader_of_the_map_follows_its_conventions(tmp_path: Path) -> None:
    for rel in ("a/one.py", "a/sub/two.py", "a/sub/three.py", "a/cmd_x.py", "a/cmd_y.py"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("")
    text = "\n".join(
        [
            "| spec | what | code |",
            BEGIN,
            "|---|---|---|",
            "| 1 | a module, a `name()` that is not a path | `a/one.py`, `register(app)` |",
            "| 2 | a package and its modules | `a/sub/` (`two.py`, `three.py`) |",
            "| - | a family | `a/cmd_*.py` |",
            END,
            "| 9 | outside the markers | `a/elsewhere.py` |",
        ]
    )
    modules, folders = map_paths(text, tmp_path)
    assert modules == {
        "a/one.py",
        "a/sub/two.py",
        "a/sub/three.py",
        "a/cmd_x.py",
        "a/cmd_y.py",
    }
    assert folders == {"a/sub"}


def test_a_bare_module_name_without_its_folder_is_refused() -> None:
    text = f"{BEGIN}\n| 1 | orphan | `two.py` |\n{END}\n"
    with pytest.raises(AssertionError, match="no package folder"):
        map_paths(text, REPO)

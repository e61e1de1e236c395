"""Every package folder is in the wheel: pyproject's package list is explicit (``cz`` is the
folder ``cli/``), so a new subpackage that is not listed would be left out of an installation
while the editable checkout still imports it."""

from __future__ import annotations

import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def package_folders() -> set[str]:
    """Dotted names of the folders holding ``__init__.py`` under the installed top levels."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    dirs = config["tool"]["setuptools"]["package-dir"]
    found = set()
    for top, folder in dirs.items():
        root = REPO / folder
        for init in root.rglob("__init__.py"):
            rel = init.parent.relative_to(root).parts
            found.add(".".join((top, *rel)))
    return found


def test_every_package_folder_is_listed() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    listed = set(config["tool"]["setuptools"]["packages"])
    folders = package_folders()
    assert {"cz", "cz.build", "chronozarr"} <= folders  # the scan itself works
    assert not folders - listed, f"add to [tool.setuptools] packages: {sorted(folders - listed)}"
    assert not listed - folders, f"listed but no such package: {sorted(listed - folders)}"

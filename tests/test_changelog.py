"""CHANGELOG.md follows Keep a Changelog: an Unreleased section first, then releases newest first,
each ``## [X.Y.Z] - YYYY-MM-DD`` with only the standard kinds of change, and the version
pyproject.toml declares is one of them."""

from __future__ import annotations

import re
import tomllib

from tests.conftest import REPO

KINDS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_changelog_is_in_releases() -> None:
    text = (REPO / "CHANGELOG.md").read_text()
    heads = re.findall(r"(?m)^## (.+)$", text)
    assert heads[0] == "[Unreleased]", heads[:1]
    releases = [re.fullmatch(r"\[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})", h) for h in heads[1:]]
    assert all(releases), f"release headings must be '[X.Y.Z] - YYYY-MM-DD': {heads[1:]}"
    versions = [tuple(int(x) for x in m.group(1).split(".")) for m in releases if m]
    dates = [m.group(2) for m in releases if m]
    assert versions == sorted(versions, reverse=True) and dates == sorted(dates, reverse=True)
    kinds = set(re.findall(r"(?m)^### (.+)$", text))
    assert kinds <= KINDS, f"not a Keep a Changelog kind: {sorted(kinds - KINDS)}"
    declared = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert declared in {".".join(map(str, v)) for v in versions}, declared

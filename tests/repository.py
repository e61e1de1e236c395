"""The repository's tracked files, for the tests that check the repository itself (its docs, its
comments, its module map)."""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import REPO


def tracked_files(*patterns: str) -> list[str]:
    """Paths (relative to the repository) that git tracks, optionally only those matching
    ``patterns`` (git pathspecs); skips the test with a reason outside a git checkout."""
    try:
        done = subprocess.run(
            ["git", "ls-files", "-z", *patterns],
            cwd=REPO,
            capture_output=True,
            check=False,
            timeout=60,
        )
    except FileNotFoundError:
        pytest.skip("git is not installed: the tracked files cannot be listed")
    if done.returncode != 0:
        pytest.skip(f"not a git checkout ({done.stderr.decode(errors='replace').strip()})")
    return [p for p in done.stdout.decode().split("\0") if p]

"""Every test module under tests/ is collected: a folder pytest skips by name (its default
norecursedirs holds "build", and tests/cz/build/ went uncollected for a while) would otherwise
hide its tests without a word."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def test_every_test_module_is_collected() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = done.stdout
    files = sorted(p.relative_to(TESTS.parent).as_posix() for p in TESTS.rglob("test_*.py"))
    assert len(files) > 50  # the walk itself found the suite
    missing = [f for f in files if f not in out]
    assert not missing, f"test modules pytest did not collect: {missing}"

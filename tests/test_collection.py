"""Every test module under tests/ is collected: a folder pytest skips by name (its default
norecursedirs holds "build", and tests/cz/build/ went uncollected for a while) would otherwise
hide its tests without a word.

What pytest collected is read from the running session when it collected the whole suite (the
usual run: the same configuration, the same walk, the collection already paid for); a run of a
part of the suite (some files, ``-k``, ``--lf``, ``--ignore``) asks a fresh ``pytest
--collect-only`` in a subprocess instead. Either way the oracle is the folder walk below, not
pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent


def _whole_suite(config: pytest.Config) -> bool:
    """Did this session collect every test of tests/ (no selection narrowing it)?"""
    args = [Path(a.split("::")[0]).resolve() for a in config.args]
    everything = all(a in (TESTS, TESTS.parent) for a in args)
    opt = config.option
    narrowed = (
        getattr(opt, "keyword", "")
        or getattr(opt, "markexpr", "")
        or getattr(opt, "lf", False)
        or getattr(opt, "failedfirst", False)
        or getattr(opt, "ignore", None)
        or getattr(opt, "ignore_glob", None)
        or getattr(opt, "deselect", None)
        or any("::" in a for a in config.args)
    )
    return everything and not narrowed


def _collected_in_a_subprocess() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-rs", "-p", "no:cacheprovider"],
        cwd=TESTS.parent,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def test_every_test_module_is_collected(request: pytest.FixtureRequest) -> None:
    session = request.session
    if _whole_suite(request.config):
        out = "\n".join(item.nodeid for item in session.items)
    else:
        print("a part of the suite was selected: collecting the whole suite in a subprocess")
        out = _collected_in_a_subprocess()
    files = sorted(p.relative_to(TESTS.parent).as_posix() for p in TESTS.rglob("test_*.py"))
    assert len(files) > 50  # the walk itself found the suite
    missing = [f for f in files if f not in out]
    assert not missing, f"test modules pytest did not collect: {missing}"

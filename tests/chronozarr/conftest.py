"""Small stores for the hostile-input tests: the fuzz harness's base stores, built once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.fuzz.stores import BASES, build_base


@pytest.fixture(scope="session")
def fuzz_bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz-bases")
    return {name: build_base(name, root) for name in BASES}


@pytest.fixture
def store_copy(fuzz_bases: dict[str, Path], tmp_path: Path):
    """copy(name) -> a fresh copy of a base store under tmp_path/case/store."""

    def copy(name: str = "none-zstd") -> Path:
        dest = tmp_path / "case" / "store"
        shutil.copytree(fuzz_bases[name], dest)
        return dest

    return copy

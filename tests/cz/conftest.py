"""Fixtures of the toolkit tests (the helpers live in ``helpers.py``), and small stores for the
hostile-input tests: the fuzz harness's base stores, built once."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.cz.helpers import ScriptedAPI, rustac_api_factory
from tests.fuzz.stores import BASES, build_base


@pytest.fixture
def rustac_api() -> Iterator[Callable[..., str]]:
    """Start ``rustac serve`` on 127.0.0.1 with the given hrefs; returns its URL. Stopped after."""
    yield from rustac_api_factory()


@pytest.fixture
def scripted_api() -> Iterator[ScriptedAPI]:
    """A scripted STAC API on 127.0.0.1, started and stopped around the test."""
    with ScriptedAPI() as api:
        yield api


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


@pytest.fixture(autouse=True)
def _no_cz_log_handler_left() -> Iterator[None]:
    """Every in-process ``cz`` run adds a stderr log handler (cz.conventions.configure_logging)
    bound to that run's stderr; a test app without the CzGroup would log through the previous
    run's closed stream ("--- Logging error ---"). Remove it and restore the level after each test."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if getattr(handler, "_cz", False):
            root.removeHandler(handler)
    root.setLevel(level)

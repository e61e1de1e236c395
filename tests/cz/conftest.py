"""Fixtures of the toolkit tests (the helpers live in ``helpers.py``)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

import pytest

from tests.cz.helpers import ScriptedAPI, rustac_api_factory


@pytest.fixture
def rustac_api() -> Iterator[Callable[..., str]]:
    """Start ``rustac serve`` on 127.0.0.1 with the given hrefs; returns its URL. Stopped after."""
    yield from rustac_api_factory()


@pytest.fixture
def scripted_api() -> Iterator[ScriptedAPI]:
    """A scripted STAC API on 127.0.0.1, started and stopped around the test."""
    with ScriptedAPI() as api:
        yield api


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

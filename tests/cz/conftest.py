"""Fixtures of the toolkit tests (the helpers live in ``helpers.py``)."""

from __future__ import annotations

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

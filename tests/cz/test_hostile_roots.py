"""The CLI side of the hostile roots of ``tests/chronozarr/test_reader_hostile.py``: ``cz
inspect``, ``cz export`` and ``cz series`` answer each with one ``error:`` line and exit 1, never
``internal error`` (before: ``cz export`` of a ``null`` time, ``cz inspect``/``series``/``export``
of a zero ``chunk_shape`` and ``cz inspect`` of a one-entry volatility shape were internal
errors). The volatility is not needed to export or to draw a series, so a store whose volatility
is malformed still answers those, and ``cz inspect`` says the volatility is unreadable.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cz.app import app
from tests.chronozarr.test_reader_hostile import CASES, make_store, short_volatility


@pytest.mark.parametrize(("breaker", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
@pytest.mark.parametrize("command", ["inspect", "export", "series"])
def test_one_error_line_never_an_internal_error(
    tmp_path: Path, breaker: Callable[[Path], None], names: str, command: str
) -> None:
    store = make_store(tmp_path / "s.zarr")
    breaker(store)
    args = {
        "inspect": ["inspect", str(store)],
        "export": ["export", str(store), str(tmp_path / "out")],
        "series": ["series", str(store), "--x", "500015", "--y", "3999985"],
    }[command]
    res = CliRunner().invoke(app, args)
    assert "internal error" not in res.output and "Traceback" not in res.output, res.output
    if breaker is short_volatility:
        assert res.exit_code == 0, res.output
        if command == "inspect":
            assert "volatility unreadable" in res.output, res.output
        return
    assert res.exit_code == 1, res.output
    errors = [line for line in res.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and re.search(names, errors[0]), res.output

"""docs/python.md runs: every ```python block, in order, in one namespace, in a temporary folder.

A block that raises (or whose assert fails) fails the test with the block's number, so the Python
API page cannot drift from the code.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO

DOC = REPO / "docs" / "python.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text())


def test_the_page_has_examples() -> None:
    assert len(_blocks()) >= 8


# rioxarray 0.19 (the last for Python 3.11) builds its transform with `*`, which affine 3 deprecates
@pytest.mark.filterwarnings("ignore:Use `@` matmul instead of `\\*` mul:PendingDeprecationWarning")
def test_every_example_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    pytest.importorskip("xarray", reason="the examples use the xarray extra")
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "docs_python"}
    for i, code in enumerate(_blocks(), start=1):
        try:
            exec(compile(code, f"docs/python.md block {i}", "exec"), namespace)
        except Exception as exc:
            raise AssertionError(f"docs/python.md block {i} failed: {exc!r}\n{code}") from exc
    out = capsys.readouterr().out
    # the outputs the page states in its comments
    assert "times | times: expected 12 times (data axis 0), got 3" in out
    assert "None PROJCRS[" in out
    assert "('time', 'band', 'y', 'x') float32" in out
    assert "32631 (10.0, 0.0, 600000.0, 0.0, -10.0, 5100000.0)" in out
    assert "['0', '1', '2']" in out
    assert "\n14\n" in out
    # xarray's habits (decision 0040)
    assert "uint16 0 spatial_ref" in out and "0.0001 -0.1" in out
    assert "milliseconds since 1970-01-01T00:00:00 1704067200000" in out
    assert "['data', 'mask', 'spatial_ref', 'time_bnds']" in out
    assert "['red', 'nir', 'mask', 'coverage'] ('time', 'y', 'x')" in out
    assert "EPSG:4326 ('time', 'y', 'x')" in out
    assert "2024-06-01 2024-06-01" in out

"""The CLI never renders store text as markup and never prints a traceback (decision 0013).

Regressions of main: a store whose strings hold rich markup (``[/]``, ``[bold red]..[/]``)
crashed ``cz inspect`` / ``cz validate`` with a MarkupError traceback or garbled their output;
``cz inspect`` crashed on an empty volatility array and on an auto selection without a ratio.
Each command runs as its console script would (``python -m cz``), on stores written by our encoder
and then edited as a hostile producer would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARKUP = "[bold red]boom[/]"


def cz(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "CZ_DEBUG": ""}
    return subprocess.run(
        [sys.executable, "-m", "cz", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )


def _edit(store: Path, fn) -> None:
    root = json.loads((store / "zarr.json").read_text())
    fn(root)
    (store / "zarr.json").write_text(json.dumps(root))


def _no_traceback(res: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    assert "internal error" not in res.stderr, res.stderr


def test_store_strings_are_printed_literally(store_copy) -> None:
    store = store_copy("none-zstd")

    def hostile(root):
        cz_ = root["attributes"]["chronozarr"]
        cz_["crs"] = MARKUP
        cz_["provenance"] = {"sources": ["[/]", MARKUP], "notes": "[link=http://x]y"}

    _edit(store, hostile)
    res = cz("inspect", str(store))
    _no_traceback(res)
    assert res.returncode == 0, res.stderr
    for literal in (MARKUP, "[/]", "[link=http://x]y"):
        assert literal in res.stdout
    res = cz("validate", str(store))
    _no_traceback(res)
    assert res.returncode in (0, 3)
    assert MARKUP in res.stdout  # the crs finding quotes it literally


def test_an_error_message_quoting_store_text_is_literal(store_copy) -> None:
    store = store_copy("none-zstd")
    _edit(store, lambda r: r["attributes"]["chronozarr"].__setitem__("spec_version", MARKUP))
    res = cz("inspect", str(store))
    _no_traceback(res)
    assert res.returncode == 1
    assert res.stderr.startswith("error: ") and MARKUP in res.stderr


def test_a_store_path_with_markup_is_literal(store_copy, tmp_path: Path) -> None:
    store = store_copy("none-zstd")
    odd = tmp_path / "[bold]store[red]"
    store.rename(odd)
    res = cz("inspect", str(odd))
    _no_traceback(res)
    assert res.returncode == 0 and str(odd) in res.stdout
    res = cz("validate", str(tmp_path / "[bold]missing"))
    _no_traceback(res)
    assert "[bold]missing" in res.stdout + res.stderr


def test_inspect_with_an_empty_volatility_array(store_copy) -> None:
    store = store_copy("none-zstd")

    def empty(root):
        for doc in (root["consolidated_metadata"]["metadata"]["volatility"],):
            doc["shape"] = [0, 0]
        vol = json.loads((store / "volatility" / "zarr.json").read_text())
        vol["shape"] = [0, 0]
        (store / "volatility" / "zarr.json").write_text(json.dumps(vol))

    _edit(store, empty)
    res = cz("inspect", "--json", str(store))
    _no_traceback(res)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["volatility"] is None


@pytest.mark.parametrize("selection", [{}, {"sampled_cells": 3}, {"ratio": "x"}])
def test_inspect_with_a_selection_without_a_ratio(store_copy, selection) -> None:
    store = store_copy("none-zstd")
    _edit(
        store,
        lambda r: r["attributes"]["chronozarr"]["temporal"].__setitem__(
            "selection", {"method": "auto", **selection}
        ),
    )
    res = cz("inspect", str(store))
    _no_traceback(res)
    assert res.returncode in (0, 1), res.stderr
    if res.returncode == 0:
        assert "auto" in res.stdout

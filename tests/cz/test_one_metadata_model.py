"""One metadata model (decision 0007): no code under ``cli/`` reads or writes a store's zarr.json.

The toolkit goes through the format library's public functions (``chronozarr.provenance``,
``chronozarr.io._objects``, ``chronozarr.format._growth``, the reader's model). An AST scan of every module
of the ``cz`` package flags, outside docstrings: a string naming a zarr.json key (``"zarr.json"``,
``".../zarr.json"``, also as the tail of an f-string), the raw keys of Zarr v3 documents
(``consolidated_metadata``, ``chunk_grid``, ``chunk_key_encoding``, ``node_type``,
``zarr_format``, ``dimension_names``), and subscripts or ``.get`` of the ``chronozarr`` attribute
block (``doc["chronozarr"]``, ``attrs.get("chronozarr")``). Prose mentioning zarr.json inside a
longer message is allowed: it names the file to a user, it does not open it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

CLI = Path(__file__).resolve().parents[2] / "cli"

#: raw keys of Zarr v3 documents: code that names them parses the JSON itself
RAW_KEYS = {
    "consolidated_metadata",
    "chunk_grid",
    "chunk_key_encoding",
    "node_type",
    "zarr_format",
    "dimension_names",
}
_ZARR_JSON_KEY = re.compile(r"(^|/)zarr\.json$")


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the Constant nodes that are docstrings (module, class, function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def violations(source: str, name: str = "<source>") -> list[str]:
    """Every place in ``source`` that parses or writes a store's zarr.json itself."""
    tree = ast.parse(source, name)
    docs = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        where = f"{name}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            text = node.value
            if _ZARR_JSON_KEY.search(text.strip()) and " " not in text.strip():
                found.append(f"{where}: the key {text!r}")
            elif text in RAW_KEYS:
                found.append(f"{where}: the raw Zarr key {text!r}")
        elif isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and key.value == "chronozarr":
                found.append(f"{where}: subscript of the chronozarr attribute block")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            args = node.args
            if (
                node.func.attr == "get"
                and args
                and isinstance(args[0], ast.Constant)
                and args[0].value == "chronozarr"
            ):
                found.append(f"{where}: .get of the chronozarr attribute block")
    return found


def cli_modules() -> list[Path]:
    return sorted(CLI.rglob("*.py"))


def test_the_scan_finds_raw_metadata_code() -> None:
    """The scanner itself: each form of raw zarr.json handling is caught, prose is not."""
    bad = '''
import json
def f(store):
    """Reads zarr.json (a docstring may say so)."""
    root = json.loads((store / "zarr.json").read_bytes())
    doc = json.loads(open(f"{store}/0/data/zarr.json").read())
    block = root["attributes"]["chronozarr"]
    other = root.get("attributes", {}).get("chronozarr")
    cons = root["consolidated_metadata"]
    return doc["chunk_grid"], block, other, cons
'''
    found = violations(bad)
    assert len(found) == 6, found
    assert violations('msg = "the root zarr.json is still the old one"') == []


@pytest.mark.parametrize("path", cli_modules(), ids=lambda p: str(p.relative_to(CLI)))
def test_cli_module_leaves_zarr_json_to_the_format_library(path: Path) -> None:
    found = violations(path.read_text(encoding="utf-8"), str(path.relative_to(CLI.parent)))
    assert not found, "use chronozarr's public functions instead:\n" + "\n".join(found)

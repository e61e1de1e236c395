"""The offline demo's first step: make sure its STAC catalog exists.

``python -m cz.demo [FOLDER]`` writes the synthetic Sentinel-2 catalog of :mod:`cz.demo_catalog`
into ``FOLDER`` (default ``out/demo-catalog``, where ``recipes/demo.yaml`` looks for it) unless
it is already there, and prints where it is. ``scripts/demo.sh`` then runs the real toolkit on it:
``cz build recipes/demo.yaml``, ``cz validate --deep`` and ``cz inspect``, with no network.

Beside the catalog it writes ``demo.yaml``, the installed demo recipe with its catalog path
pointing there, so an installed toolkit (no checkout) runs the demo as
``python -m cz.demo demo && cz build demo/demo.yaml --out demo.zarr``.
"""

from __future__ import annotations

import re
import sys
import time
from importlib import resources
from pathlib import Path

from cz.demo_catalog import generate

__all__ = ["DEFAULT_CATALOG", "ensure_catalog", "main"]

#: Where recipes/demo.yaml expects the catalog (relative to the repository root).
DEFAULT_CATALOG = Path("out") / "demo-catalog"


def ensure_catalog(folder: str | Path = DEFAULT_CATALOG) -> tuple[Path, bool]:
    """``(catalog.json, generated)``: generate the demo catalog into ``folder`` if it is missing.

    A folder without ``catalog.json`` (an interrupted generation) is generated again.
    """
    folder = Path(folder)
    catalog = folder / "catalog.json"
    if catalog.is_file():
        return catalog, False
    return generate(folder), True


def write_recipe(folder: str | Path) -> Path:
    """``FOLDER/demo.yaml``: the installed ``demo.yaml`` whose ``catalog.path`` is the catalog
    in ``FOLDER`` (kept when it exists: a user may have edited it)."""
    recipe = Path(folder) / "demo.yaml"
    if not recipe.is_file():
        text = (resources.files("cz.recipes") / "demo.yaml").read_text(encoding="utf-8")
        text = re.sub(
            r"(?m)^(  path: )\S+.*$", r"\1catalog.json   # relative to this file", text, count=1
        )
        recipe.write_text(text, encoding="utf-8")
    return recipe


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else DEFAULT_CATALOG
    start = time.perf_counter()
    catalog, generated = ensure_catalog(folder)
    if generated:
        n = len(list((folder / "items").glob("*.json")))
        print(
            f"wrote the demo catalog {catalog} ({n} items) in {time.perf_counter() - start:.1f} s"
        )
    else:
        print(f"demo catalog: {catalog}")
    recipe = write_recipe(folder)
    print(f"demo recipe: {recipe} (cz build {recipe} --out demo.zarr)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

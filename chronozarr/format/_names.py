"""Names a store's metadata gives to its nodes: checked before they become paths or URLs.

The chronozarr block names the data variable, the mask, coverage and volatility arrays and
the level groups (spec 3.2, 3.7; multiscales datasets, 3.3). A reader joins them to the store's
location, so a name is a relative node path and nothing else: one or more segments separated by
``/``, each of letters, digits, ``_``, ``-`` and ``.``, never ``.`` or ``..``, at most 255
characters. That refuses absolute paths, ``..``, URL schemes and drive letters (``:``),
percent-escapes a host could decode into ``..``, query and fragment characters, backslashes,
control characters and NUL, so that nothing a store says makes a reader leave the store.
The JS reader applies the same rule (js/chronozarr).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from chronozarr.errors import CorruptStoreError

__all__ = ["check_name", "check_names", "name_problem", "store_names"]

_SEGMENT = re.compile(r"[A-Za-z0-9_.\-]{1,255}")


def name_problem(name: Any) -> str | None:
    """Why ``name`` is not a safe node path of a store, or None when it is."""
    if not isinstance(name, str):
        return f"expected a string, got {type(name).__name__}"
    if not name:
        return "empty"
    if len(name) > 1024:
        return f"{len(name)} characters (at most 1024)"
    for segment in name.split("/"):
        if segment in ("", ".", ".."):
            return "an empty, '.' or '..' path segment (names stay inside the store)"
        if not _SEGMENT.fullmatch(segment):
            return (
                "characters other than letters, digits, '_', '-' and '.' "
                "(no scheme, absolute path, escape or control character)"
            )
    return None


def check_name(name: Any, what: str) -> str:
    """``name`` when it is a safe node path; CorruptStoreError naming ``what`` otherwise."""
    problem = name_problem(name)
    if problem is not None:
        shown = name if not isinstance(name, str) or len(name) <= 80 else name[:77] + "..."
        raise CorruptStoreError(f"{what}: {shown!r} is not a safe store name: {problem}")
    return str(name)  # a safe name is a str (name_problem refuses anything else)


def store_names(block: Any, multiscales: Any = None) -> Iterator[tuple[str, Any]]:
    """(where, name) of every node name in a raw chronozarr block and multiscales list."""
    if isinstance(block, dict):
        for key in ("variable", "volatility_path", "mask_variable", "coverage_variable"):
            if block.get(key) is not None:
                yield f"chronozarr.{key}", block[key]
        levels = block.get("levels")
        if isinstance(levels, list):
            for i, lv in enumerate(levels):
                if isinstance(lv, dict) and "path" in lv:
                    yield f"chronozarr.levels[{i}].path", lv["path"]
        history = block.get("history")  # the companion's group (docs/spec.md C25)
        if isinstance(history, dict) and "path" in history:
            yield "chronozarr.history.path", history["path"]
    if isinstance(multiscales, list):
        for m, entry in enumerate(multiscales):
            datasets = entry.get("datasets") if isinstance(entry, dict) else None
            for i, ds in enumerate(datasets if isinstance(datasets, list) else ()):
                if isinstance(ds, dict) and "path" in ds:
                    yield f"multiscales[{m}].datasets[{i}].path", ds["path"]


def check_names(pairs: Iterable[tuple[str, Any]]) -> None:
    """check_name over (where, name) pairs: the first unsafe name raises."""
    for where, name in pairs:
        check_name(name, where)

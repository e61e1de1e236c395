"""Root-level ``time`` and ``band`` coordinate arrays (a v0.2 addition to spec 2 and 2.2).

Why: map libraries that read a store as a plain Zarr hierarchy look up coordinate values at the
root, not inside a level group. CarbonPlan zarr-layer (0.5.0, the newest on npm) resolves a value
selector such as ``band: "B08"`` or ``time: <epoch ms>`` against ``{store}/band`` and
``{store}/time`` and, when they are absent, silently falls back to index 0. So the writer also
puts the two arrays at the root, as byte-for-byte copies of level 0's (same documents, same
chunks): spec 2.2's "time and band MUST be identical at every level" then holds for the root too.

Readers MUST NOT require them (stores written before this addition have none); append keeps them
in step with the levels' ``time`` (spec 14), and the validator checks them as mirrors of
``chronozarr.times`` and ``chronozarr.band_names`` when present (spec 3.5).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ROOT_COORDINATES", "add_root_coordinates", "root_time_paths"]

ROOT_COORDINATES = ("time", "band")


def add_root_coordinates(
    objects: dict[str, bytes], docs: dict[str, dict[str, Any]], level0: str
) -> None:
    """Copy level ``level0``'s time and band arrays (chunk and document) to the root, in place."""
    for name in ROOT_COORDINATES:
        objects[f"{name}/c/0"] = objects[f"{level0}/{name}/c/0"]
        docs[name] = docs[f"{level0}/{name}"]


def root_time_paths(doc: Callable[[str], Mapping[str, Any] | None]) -> list[str]:
    """``["time"]`` when the store has a root-level time array (``doc(path)`` returns its
    zarr.json document or None), else ``[]``: what an append must rewrite besides the levels'."""
    return ["time"] if doc("time") is not None else []

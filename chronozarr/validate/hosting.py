"""What a host serves (spec 3.1, 9, 14): consolidated metadata equal to the zarr.json files (or
an append in progress), and no Zarr v2 dotfiles."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chronozarr.validate.context import Context

__all__ = ["check_consolidated", "check_dotfiles"]


def check_consolidated(ctx: Context) -> None:
    for path, entry in ctx.consolidated.items():
        if not isinstance(entry, Mapping):
            ctx.add(
                "consolidated.stale",
                f"consolidated entry for {path} is not a metadata object",
                "zarr.json#consolidated_metadata",
            )
            continue
        doc = ctx.disk_doc(path)
        if doc is None:
            ctx.add(
                "consolidated.stale",
                f"consolidated metadata lists {path} which has no zarr.json",
                f"{path}/zarr.json",
            )
            continue
        a = {k: v for k, v in entry.items() if k != "consolidated_metadata"}
        b = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
        if a != b and _grown_along_time(a, b):
            ctx.add(
                "append.in_progress",
                f"{path}/zarr.json has {b['shape'][0]} timesteps, the root describes {a['shape'][0]}: an unfinished append; re-run it",
                f"{path}/zarr.json",
            )
        elif a != b:
            ctx.add(
                "consolidated.stale",
                f"consolidated entry for {path} differs from its zarr.json",
                f"{path}/zarr.json",
            )


def check_dotfiles(ctx: Context) -> None:
    listing = ctx.listing()
    if listing is None:
        return
    for key in listing:
        base = key.rsplit("/", 1)[-1]
        if base in (".zarray", ".zattrs", ".zgroup", ".zmetadata"):
            ctx.add("hosting.dotfile", f"Zarr v2 dotfile {base} must not exist", key)
    ctx.count("objects", len(listing))


def _grown_along_time(root_view: Mapping[str, Any], disk: Mapping[str, Any]) -> bool:
    """True when ``disk`` equals ``root_view`` but for a longer time axis (an unfinished append)."""
    try:
        if disk["shape"][0] <= root_view["shape"][0] or disk["shape"][1:] != root_view["shape"][1:]:
            return False
    except (KeyError, TypeError, IndexError):  # no usable shape: not a grown array
        return False
    a, b = json.loads(json.dumps(root_view)), json.loads(json.dumps(disk))
    a["shape"] = b["shape"]
    if a.get("dimension_names") == ["time"]:  # the time coordinate is one chunk of the new length
        a["chunk_grid"] = b.get("chunk_grid")
    return bool(a == b)

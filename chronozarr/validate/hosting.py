"""What a host serves (spec 3.1, 9, 14): consolidated metadata equal to the zarr.json files (or
an append in progress), no Zarr v2 dotfiles, and (local stores) no temporary file that a killed
write left inside the store."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from chronozarr.format import load_json
from chronozarr.io import APPEND_JOURNAL, LEASE_KEY, is_work_file
from chronozarr.validate.context import Context

__all__ = ["check_consolidated", "check_dotfiles", "check_leftovers"]


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


def check_leftovers(ctx: Context) -> None:
    """``.*.tmp`` files inside a local store (an atomic write whose process died before its
    rename: spec 9 keeps them out of the store's objects, but they take space and a publish of
    the folder by other tools would upload them), and the append journal: an unfinished append
    when it belongs to the current root, a stale leftover otherwise. Remote stores: not listed
    with temporary names, nothing to check."""
    root = getattr(ctx.store, "root", None)
    if not isinstance(root, Path) or not root.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != ".cz-build")  # a cluster build's work
        for name in sorted(filenames):
            if not is_work_file(name):
                continue
            key = (Path(dirpath) / name).relative_to(root).as_posix()
            if name == LEASE_KEY and key == LEASE_KEY and _lease_is_live(root / key):
                ctx.add(
                    "append.in_progress",
                    f"{key}: a writer holds this store's lease (decision 0051); it is being"
                    " written now",
                    key,
                )
            elif name == APPEND_JOURNAL and _journal_is_current(ctx, root / key):
                ctx.add(
                    "append.in_progress",
                    f"{key}: the journal of an unfinished append onto this root; re-run it",
                    key,
                )
            else:
                ctx.add(
                    "hosting.leftover",
                    f"{key}: a temporary file left by an interrupted write; remove it "
                    "(cz build, append and publish remove those of dead runs)",
                    key,
                )


def _lease_is_live(path: Path) -> bool:
    """True when the writer's lease at ``path`` has a holder that is not provably gone."""
    from chronozarr.io import holder_gone

    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):  # torn or unreadable: a leftover
        return False
    return isinstance(doc, dict) and holder_gone(doc, time.time()) is None


def _journal_is_current(ctx: Context, path: Path) -> bool:
    """True when the append journal at ``path`` belongs to the root's time axis."""
    try:
        doc = load_json(path.read_bytes(), str(path))
    except Exception:  # unreadable or malformed: a leftover, not an append in progress
        return False
    attrs = ctx.attrs
    return isinstance(doc, dict) and attrs is not None and doc.get("n_time") == len(attrs.times)

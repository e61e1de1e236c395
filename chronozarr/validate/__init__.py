"""``validate``: check a store against every MUST of chronozarr v0.2 that can be seen (and SHOULDs
as warnings). Each finding names a rule of the catalogue (:mod:`.rules`), its spec section and
the key it is about.

Shallow validation reads metadata, the coordinate arrays and the object list (or HEADs where a
host cannot list); ``deep=True`` also decodes every chunk and recomputes the pyramid (block means,
mask max, coverage rounded mean), the volatility and the mirrors.

The checks live in one module per part of the spec: :mod:`.root` (3, 3.1, 3.2, 3.4, 3.6),
:mod:`.arrays` (2, 2.2, 7.2, 8), :mod:`.levels` (2.1, 2.3-2.5, 3.3, 3.7, 6), :mod:`.temporal`
(4), :mod:`.coords` (2.2, 3.5), :mod:`.volatility` (5), :mod:`.shards` (7.3), :mod:`.hosting`
(3.1, 9, 14), :mod:`.history` (the time-series companion, docs/spec.md C25) and :mod:`.deep`
(6, 2.4, 2.5, 5, 10).
"""

from __future__ import annotations

import os
from typing import Any, cast

from chronozarr.errors import CorruptStoreError, StoreNotFoundError
from chronozarr.io import Store, open_store_bytes
from chronozarr.validate.context import Context, Stop
from chronozarr.validate.coords import check_coords
from chronozarr.validate.deep import check_deep
from chronozarr.validate.history import check_history
from chronozarr.validate.hosting import check_consolidated, check_dotfiles, check_leftovers
from chronozarr.validate.levels import check_levels
from chronozarr.validate.report import Finding, Report
from chronozarr.validate.root import check_root
from chronozarr.validate.rules import RULES, Rule
from chronozarr.validate.shards import check_shard_bytes
from chronozarr.validate.temporal import check_temporal
from chronozarr.validate.volatility import check_volatility

__all__ = ["RULES", "Finding", "Report", "Rule", "validate"]


def _check(ctx: Context) -> None:
    """Every check in dependency order; a :class:`Stop` ends the run early."""
    raw, attrs = check_root(ctx)
    levels = check_levels(ctx, attrs)
    if not levels:
        raise Stop
    check_temporal(ctx, raw, attrs, levels)
    check_coords(ctx, attrs, levels)
    check_volatility(ctx, attrs, levels)
    check_shard_bytes(ctx, attrs, levels)
    check_history(ctx, attrs, levels)
    check_consolidated(ctx)
    check_dotfiles(ctx)
    check_leftovers(ctx)
    if ctx.report.deep:
        if ctx.report.errors:
            ctx.add(
                "deep.skipped", "deep checks skipped: fix the metadata errors first", "zarr.json"
            )
        else:
            check_deep(ctx, attrs, levels)


def _run(store: Store, deep: bool) -> Report:
    ctx = Context(store, deep)
    try:
        _check(ctx)
    except Stop:  # a finding made further checks meaningless; it is in the report
        pass
    except CorruptStoreError as exc:  # an object the store refuses to serve (symlink out...)
        ctx.add("object.refused", str(exc), ctx.where)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
        # metadata malformed in a way no specific check anticipated: a finding, never a crash
        ctx.add(
            "metadata.malformed",
            f"malformed metadata stopped validation: {type(exc).__name__}: {exc}",
            ctx.where,
        )
    return ctx.report


def validate(path_or_url: str | os.PathLike[str], deep: bool = False, **options: Any) -> Report:
    """Check a store against chronozarr v0.2. ``report.ok`` is False when any error is found.

    ``deep=True`` decodes every chunk and recomputes the pyramid and the volatility.
    """
    store: Store
    if hasattr(path_or_url, "get_range"):  # already a Store (the toolkit passes its own)
        store = cast(Store, path_or_url)
    else:
        store = open_store_bytes(path_or_url, **options)
    if store.get("zarr.json") is None:
        raise StoreNotFoundError(f"no store at {store.url}: zarr.json not found")
    return _run(store, deep)

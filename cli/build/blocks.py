"""The grid's blocks, the items of a month touching each, and their signed references."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from cz.build.errors import BuildError
from cz.load import ItemRef
from cz.plan import GridPlan, MonthPlan, project_lonlat
from cz.recipe import Recipe


def item_refs(month: MonthPlan, recipe: Recipe, *, sign: bool = True) -> list[ItemRef]:
    """The month's items as :class:`ItemRef`, only the assets read, signed when needed.

    ``sign=False`` leaves the hrefs unsigned (with the token-request bounds in
    :attr:`ItemRef.signing`): a cluster build signs them on the worker when it reads them
    (:func:`sign_refs`), so a token never ages between the client's plan and the read.
    """
    from cz.stac import sign_items

    refs = []
    trimmed_items = []
    for p in month.items:
        doc = p.stac_dict()
        if doc is None:
            raise BuildError(f"plan item {p.id} carries no STAC dict; make the plan again")
        keys = set(p.assets.values())
        stac = {k: v for k, v in doc.items() if k not in ("links", "assets")}
        stac["assets"] = {k: v for k, v in (doc.get("assets") or {}).items() if k in keys}
        stac["links"] = []
        trimmed_items.append(stac)
    if sign and recipe.catalog.sign != "none" and trimmed_items:
        import pystac

        signed = sign_items(
            [pystac.Item.from_dict(s, preserve_dict=False, migrate=False) for s in trimmed_items],
            recipe,
        )
        trimmed_items = [
            it.to_dict(include_self_link=False, transform_hrefs=False) for it in signed
        ]
    signing = None
    if recipe.catalog.sign != "none":  # the bounds of a token request, for a re-sign on 403
        cat = recipe.catalog
        signing = (cat.max_retries, cat.backoff_factor, cat.backoff_max, cat.timeout)
    for p, stac in zip(month.items, trimmed_items, strict=True):
        refs.append(ItemRef(p.id, stac, dict(p.assets), int(p.correction), p.solar_day, signing))
    return refs


def sign_refs(refs: Sequence[ItemRef]) -> tuple[ItemRef, ...]:
    """``refs`` with their hrefs signed now, for a read that starts now: each token has at least
    :data:`cz.stac.signing.MIN_TOKEN_LIFETIME_S` left (the process's token source re-requests one
    with less), so a long build on a cluster never reads with a token signed hours ago on the
    client (decision 0021). Refs without :attr:`ItemRef.signing` are returned as they are."""
    if not any(ref.signing is not None for ref in refs):
        return tuple(refs)
    from cz.errors import SigningError
    from cz.stac import RetryPolicy
    from cz.stac.signing import import_planetary_computer, sign_item_dicts, token_source

    try:
        import_planetary_computer()
    except ImportError:  # the optional package, missing on this worker
        raise SigningError(
            "catalog.sign is planetary-computer but the 'planetary-computer' package is not "
            "installed on this worker: pip install planetary-computer"
        ) from None
    out = []
    for ref in refs:
        if ref.signing is None:
            out.append(ref)
            continue
        [stac] = sign_item_dicts([ref.stac], token_source(RetryPolicy(*ref.signing)))
        out.append(dataclasses.replace(ref, stac=stac))
    return tuple(out)


def grid_blocks(
    grid: GridPlan, rows: range | None = None, cols: range | None = None
) -> list[tuple[int, int, tuple[int, int, int, int]]]:
    """The grid's blocks (row, col, (y0, y1, x0, x1)), row-major; only those of ``rows`` x
    ``cols`` when given (a group's: its own, not a scan of the region's, decision 0049)."""
    height, width = grid.shape
    cs = grid.chunk_size
    n_rows, n_cols = math.ceil(height / cs), math.ceil(width / cs)
    out = []
    for row in rows if rows is not None else range(n_rows):
        if not 0 <= row < n_rows:
            continue
        for col in cols if cols is not None else range(n_cols):
            if not 0 <= col < n_cols:
                continue
            out.append(
                (
                    row,
                    col,
                    (row * cs, min(height, (row + 1) * cs), col * cs, min(width, (col + 1) * cs)),
                )
            )
    return out


def footprint(p: Any, crs: str) -> Any:
    """An item's footprint in the grid's CRS, or None (read it everywhere) when it has none."""
    from shapely.geometry import box

    doc = p.stac_dict() or {}
    geom = doc.get("geometry")
    if not geom:
        bbox = doc.get("bbox")
        geom = box(*bbox[:4]).__geo_interface__ if bbox else None
    if geom is None:
        return None
    try:
        shape = project_lonlat(dict(geom), crs)
        if not shape.is_valid:
            shape = shape.buffer(0)
    except Exception:  # malformed geometry: read the item everywhere
        return None
    return shape


def blocks_touched(
    month: MonthPlan, grid: GridPlan, halo: int = 0
) -> dict[tuple[int, int], list[int]]:
    """For each block, the indices of the month's items whose footprint overlaps it, or the
    ``halo`` pixels around it (the mask cleaning reads them: a cloud of the neighbouring tile that
    reaches the block's halo counts, docs/recipes.md "mask").

    The blocks go into a shapely STRtree once; each footprint is one tree query (decision 0017:
    a pairwise loop over items x blocks is hours at 10^4 cells), refined by ``intersects``, the
    predicate of the pairwise test it replaces, so the result is the same.
    """
    from shapely import STRtree
    from shapely.geometry import box

    a, _, c, _, e, f = grid.transform
    blocks = grid_blocks(grid)
    boxes = [
        box(c + a * (x0 - halo), f + e * (y1 + halo), c + a * (x1 + halo), f + e * (y0 - halo))
        for _r, _c, (y0, y1, x0, x1) in blocks
    ]
    tree = STRtree(boxes)
    hits: dict[int, list[int]] = {}
    for i, p in enumerate(month.items):
        shape = footprint(p, grid.crs)
        found: Sequence[int]
        if shape is None:
            found = range(len(blocks))
        else:
            found = sorted(int(j) for j in tree.query(shape, predicate="intersects"))
        for j in found:
            hits.setdefault(j, []).append(i)
    return {(blocks[j][0], blocks[j][1]): hits[j] for j in sorted(hits)}

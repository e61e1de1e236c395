"""The temporal block (spec 4.1, 4.2, 4.3): encoding against data type, the anchor schedule,
every delta's reference, and the auto selection record."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chronozarr.format import DELTA_DTYPES, RootAttrs, anchor_indices, is_valid_reference
from chronozarr.validate.context import Context

__all__ = ["check_temporal"]


def check_temporal(
    ctx: Context, raw: Mapping[str, Any], attrs: RootAttrs, levels: list[dict[str, Any]]
) -> None:
    tkey = "zarr.json#chronozarr.temporal"
    temporal = attrs.temporal
    rt = raw.get("temporal") or {}
    n_time = len(attrs.times)
    dtype = levels[0]["info"].dtype
    _check_selection(ctx, attrs, levels)
    if temporal.encoding == "none":
        for key in ("anchor_interval", "anchor_indices", "delta_reference"):
            if key in rt:
                ctx.add("temporal.none", f"{key} must be absent when encoding is none", tkey)
        return
    if dtype not in DELTA_DTYPES:
        ctx.add(
            "temporal.dtype",
            f"star-delta is valid only for uint8 and uint16, data is {dtype}",
            tkey,
        )
    k = temporal.anchor_interval or 0
    if k < 1:
        ctx.add("temporal.anchor_interval", f"anchor_interval must be >= 1, got {k}", tkey)
        return
    want = anchor_indices(n_time, k)
    got = list(temporal.anchor_indices)
    if got != want:
        first = next(
            (i for i, (a, b) in enumerate(zip(got, want, strict=False)) if a != b),
            min(len(got), len(want)),
        )
        ctx.add(
            "temporal.anchor_indices",
            f"anchor_indices must be {_short(want)}, got {_short(got)}"
            + (f" (first difference at position {first})" if len(want) > _SHOWN else ""),
            tkey,
        )
    anchors = set(temporal.anchor_indices)
    for t in range(n_time):
        if t in anchors:
            if t in temporal.delta_reference:
                ctx.add(
                    "temporal.delta_reference",
                    f"anchor {t} must not have a delta_reference entry",
                    tkey,
                )
            continue
        ref = temporal.delta_reference.get(t)
        if ref is None:
            ctx.add(
                "temporal.delta_reference",
                f"timestep {t} has no delta_reference entry",
                tkey,
            )
        elif not is_valid_reference(t, ref, anchors, k):
            ctx.add(
                "temporal.delta_reference",
                f"timestep {t} references {ref}: not an anchor at distance 0 < d < {k}",
                tkey,
            )
    for t in temporal.delta_reference:
        if not 0 <= t < n_time:
            ctx.add(
                "temporal.delta_reference",
                f"delta_reference names timestep {t} outside 0..{n_time - 1}",
                tkey,
            )


_SHOWN = 12  # list items a message shows: a root listing 10^6 times made a 1.3 MB line


def _short(values: list[int]) -> str:
    """A list for a message: whole when short, else its first items and its length."""
    if len(values) <= _SHOWN:
        return str(values)
    head = ", ".join(str(v) for v in values[:_SHOWN])
    return f"[{head}, ... ({len(values):,} in all)]"


def _check_selection(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    """The auto selection record (4.3): well formed, a plausible sample, the 0.85 rule applied."""
    tkey = "zarr.json#chronozarr.temporal"
    temporal = attrs.temporal
    dtype = levels[0]["info"].dtype
    sel = temporal.selection
    if sel is not None:
        if not (
            isinstance(sel, Mapping)
            and sel.get("mode") == "auto"
            and isinstance(sel.get("sampled_cells"), int)
            and isinstance(sel.get("ratio"), int | float)
        ):
            ctx.add(
                "temporal.selection",
                f"selection must be {{mode: auto, sampled_cells, ratio}}, got {sel!r}",
                tkey,
            )
        elif levels[0]["path"] == ctx.level_paths[0] and not (
            min(3, levels[0]["grid"][0] * levels[0]["grid"][1])
            <= sel["sampled_cells"]
            <= levels[0]["grid"][0] * levels[0]["grid"][1]
        ):
            n_cells = levels[0]["grid"][0] * levels[0]["grid"][1]
            ctx.add(
                "temporal.selection",
                f"sampled_cells {sel['sampled_cells']}: auto samples at least 3 level-0 cells, or all {n_cells} when fewer",
                tkey,
            )
        elif temporal.encoding == "star-delta" and sel["ratio"] > 0.85 + 1e-9:
            ctx.add(
                "temporal.selection",
                f"auto kept star-delta at ratio {sel['ratio']} > 0.85",
                tkey,
            )
        elif temporal.encoding == "none" and sel["ratio"] <= 0.85 - 1e-9:
            ctx.add(
                "temporal.selection_none",
                f"auto chose none at ratio {sel['ratio']} <= 0.85",
                tkey,
            )
    if sel is not None and dtype not in DELTA_DTYPES:
        ctx.add(
            "temporal.selection_dtype",
            f"auto applies to uint8 and uint16 only; a {dtype} store carries no selection",
            tkey,
        )

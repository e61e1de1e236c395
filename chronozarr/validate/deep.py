"""Deep checks (spec 2.4, 2.5, 5, 6, 10): decode every chunk, recompute the pyramid from the
level below (block means, mask maximum, coverage rounded mean) and the volatility."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from chronozarr.errors import ChronozarrError
from chronozarr.format import (
    RootAttrs,
    abs_diff_sum,
    assemble_region,
    block_mean,
    cell_volatility,
    coverage_reduce,
    mask_reduce,
    schedule,
    validity,
    volatility_value,
)
from chronozarr.read import Reader
from chronozarr.validate.context import Context
from chronozarr.validate.history import check_history_deep

__all__ = ["check_deep"]


def check_deep(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    reader = Reader(ctx.store, ctx.doc("") or {}, cache_bytes=512 << 20)
    n_time = reader.n_time
    temporal = attrs.temporal
    if temporal.encoding == "star-delta":
        vol_anchors, vol_refs = set(temporal.anchor_indices), dict(temporal.delta_reference)
    else:
        nominal_anchors, nominal_refs = schedule(n_time, 6)
        vol_anchors, vol_refs = set(nominal_anchors), nominal_refs
    lv0 = reader.levels[0]
    rows0, cols0 = lv0.grid
    vol = np.zeros((rows0, cols0), dtype=np.float32)
    try:
        for r in range(rows0):
            for c in range(cols0):
                total, count = 0.0, 0
                for t in range(n_time):
                    values = reader.read_cell(t, r, c, 0)
                    ctx.count("chunks decoded")
                    if attrs.mask_variable is not None:
                        m = reader.plane_cell(attrs.mask_variable, t, r, c, 0)
                        if m.size and int(m.max()) > 1:
                            ctx.add(
                                "mask.values",
                                f"mask values must be 0 or 1 (t={t}, cell {r},{c})",
                                f"0/{attrs.mask_variable}",
                            )
                    if t not in vol_anchors and t in vol_refs:
                        total += abs_diff_sum(values, reader.read_cell(vol_refs[t], r, c, 0))
                        count += values.size
                vol[r, c] = volatility_value(total, count)
        stored = reader.volatility()
        if stored is not None and stored.shape == vol.shape:
            bad = ~np.isclose(stored, vol, rtol=1e-5, atol=1e-7)
            if bad.any() and temporal.encoding == "none":
                # the nominal schedule of a none store is the writer's choice (default 6)
                # and is not recorded (spec 5): accept any anchor interval that explains it
                vol, bad = _none_volatility(ctx, reader, stored, vol, bad)
            if bad.any():
                r, c = (int(v) for v in np.argwhere(bad)[0])
                ctx.add(
                    "volatility.value",
                    f"cell ({r}, {c}) stores {stored[r, c]}, recomputed {vol[r, c]} ({int(bad.sum())} cells differ)",
                    "volatility/c/0/0",
                )
        for k in range(1, len(reader.levels)):
            _deep_level(ctx, reader, k)
        check_history_deep(ctx, reader)  # the time-series companion (docs/spec.md C25)
    except ChronozarrError as exc:  # a chunk or index that does not decode: one finding
        ctx.add("deep.decode", f"decoding failed: {exc}", "data")


def _none_volatility(
    ctx: Context, reader: Any, stored: np.ndarray, vol: np.ndarray, bad: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Try every anchor interval on the first differing cell, then the whole grid."""
    r0, c0 = (int(v) for v in np.argwhere(bad)[0])
    for k in range(1, reader.n_time + 1):
        refs = schedule(reader.n_time, k)[1]
        one = _volatility_of(reader, r0, c0, refs)
        if not np.isclose(stored[r0, c0], one, rtol=1e-5, atol=1e-7):
            continue
        cand = np.array(
            [
                [_volatility_of(reader, r, c, refs) for c in range(vol.shape[1])]
                for r in range(vol.shape[0])
            ],
            dtype=np.float32,
        ).reshape(vol.shape)
        cand_bad = ~np.isclose(stored, cand, rtol=1e-5, atol=1e-7)
        if not cand_bad.any():
            return cand, cand_bad
    return vol, bad


def _volatility_of(reader: Any, r: int, c: int, refs: Mapping[int, int]) -> np.float32:
    return cell_volatility(lambda t: reader.read_cell(t, r, c, 0), refs)


def _reads(
    reader: Any, variable: str | None, t: int, level: int
) -> Callable[[int, int], np.ndarray]:
    """read(r, c): cell (r, c) of the data (``variable`` None) or of a plane at t and level."""
    if variable is None:
        return lambda r, c: reader.read_cell(t, r, c, level)
    return lambda r, c: reader.plane_cell(variable, t, r, c, level)


def _deep_level(ctx: Context, reader: Any, k: int) -> None:
    """Recompute level k from level k-1 and compare exactly (spec 6, 2.4, 2.5); one finding per
    array and level."""
    lv, prev = reader.levels[k], reader.levels[k - 1]
    cs = reader.chunk_size(k)
    shape = tuple(prev.shape[-2:])
    mv, cv = reader.attrs.mask_variable, reader.attrs.coverage_variable
    n_band = len(reader.bands)
    reported: set[str] = set()

    def report(what: str, rule_id: str, message: str, key: str) -> None:
        if what not in reported:
            reported.add(what)
            ctx.add(rule_id, message, key)

    rows, cols = lv.grid
    for r in range(rows):
        for c in range(cols):
            for t in range(reader.n_time):
                vals = assemble_region(
                    _reads(reader, None, t, k - 1),
                    r,
                    c,
                    cs,
                    shape,
                    (n_band,),
                    reader.dtype,
                )
                mask = cov = None
                if mv:
                    mask = assemble_region(
                        _reads(reader, mv, t, k - 1),
                        r,
                        c,
                        cs,
                        shape,
                        (),
                        np.uint8,
                    )
                if cv:
                    cov = assemble_region(
                        _reads(reader, cv, t, k - 1),
                        r,
                        c,
                        cs,
                        shape,
                        (),
                        np.uint8,
                    )
                want = block_mean(vals, validity(vals, reader.nodata, mask), reader.nodata)
                got = reader.read_cell(t, r, c, k)
                ctx.count("chunks decoded")
                where = f"level {k} cell ({r}, {c}) t={t}"
                if not np.array_equal(want, got, equal_nan=want.dtype.kind == "f"):
                    report(
                        "data",
                        "pyramid.mean",
                        f"{where} is not the block mean of level {k - 1}",
                        f"{lv.path}/{reader.attrs.variable}",
                    )
                if mask is not None and not np.array_equal(
                    mask_reduce(mask), reader.plane_cell(mv, t, r, c, k)
                ):
                    report(
                        "mask",
                        "pyramid.mask",
                        f"level {k} mask cell ({r}, {c}) t={t} is not the 2x2 maximum of level {k - 1}",
                        f"{lv.path}/{mv}",
                    )
                if cov is not None and not np.array_equal(
                    coverage_reduce(cov), reader.plane_cell(cv, t, r, c, k)
                ):
                    report(
                        "coverage",
                        "pyramid.coverage",
                        f"level {k} coverage cell ({r}, {c}) t={t} is not (sum + 2) // 4 of level {k - 1}",
                        f"{lv.path}/{cv}",
                    )

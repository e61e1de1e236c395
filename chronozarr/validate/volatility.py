"""The volatility array (spec 5): float32, one chunk of level 0's grid shape, values in [0, 1]."""

from __future__ import annotations

from typing import Any

import numpy as np

from chronozarr.format import ChunkCodec, RootAttrs
from chronozarr.validate.arrays import check_array
from chronozarr.validate.context import Context

__all__ = ["check_volatility"]


def check_volatility(ctx: Context, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
    path = attrs.volatility_path
    if not path:
        return
    info = check_array(ctx, path, allowed=("float32",), kind="volatility")
    if info is None:
        return
    key = f"{path}/zarr.json"
    grid = levels[0]["grid"] if levels[0]["path"] == ctx.level_paths[0] else None
    fits_grid = grid is None or list(info.shape) == list(grid)  # else only the shape finding
    if info.chunk_shape == info.shape and not info.sharded and fits_grid:
        raw = ctx.store.get(f"{path}/c/" + "/".join("0" * len(info.shape)))
        try:
            values = (
                None if raw is None else ChunkCodec(info.codecs, "float32", info.shape).decode(raw)
            )
        except Exception as exc:  # any decoding failure of stored bytes is a finding
            ctx.add("volatility.decode", f"cannot decode: {exc}", f"{path}/c/0/0")
            values = None
        if values is not None and not np.all(np.isfinite(values) & (values >= 0) & (values <= 1)):
            ctx.add(
                "volatility.range",
                f"volatility is clipped to [0, 1]; found {values[~(np.isfinite(values) & (values >= 0) & (values <= 1))][:3].tolist()}",
                f"{path}/c/0/0",
            )
    if levels[0]["path"] == ctx.level_paths[0] and list(info.shape) != levels[0]["grid"]:
        ctx.add(
            "volatility.shape",
            f"shape {list(info.shape)} must be level 0's grid {levels[0]['grid']}",
            key,
        )
    if info.chunk_shape != info.shape:
        ctx.add("volatility.chunk", "volatility must be a single chunk", key)
    ctx.volatility_info = info

"""Grid geometry of a chronozarr store (spec 2, 2.1, 3.3, 3.7, 6).

Pure functions: level shapes, cell grids, level transforms, pixel-centre coordinates and chunk
keys. Writer, append, reader, validator and the toolkit's size estimates all use these.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = [
    "cell_slice",
    "chunk_key",
    "grid_shape",
    "level_resolution",
    "level_shapes",
    "level_transform",
    "pixel_centres",
]


def grid_shape(height: int, width: int, cs: int) -> tuple[int, int]:
    """(grid_rows, grid_cols) = (ceil(H / cs), ceil(W / cs)) (spec 2.1)."""
    return (math.ceil(height / cs), math.ceil(width / cs))


def level_shapes(height: int, width: int, cs: int) -> list[tuple[int, int]]:
    """Spatial shape (H_k, W_k) of every level the encoder writes by default (spec 6).

    H_k = ceil(H_{k-1} / 2); the pyramid stops at the first level whose grid is 1 x 1 (included).
    """
    shapes = [(height, width)]
    while grid_shape(*shapes[-1], cs) != (1, 1):
        h, w = shapes[-1]
        shapes.append(((h + 1) // 2, (w + 1) // 2))
    return shapes


def level_resolution(resolution: float, level: int) -> float:
    """Ground sample distance of level k: resolution * 2^k (spec 6)."""
    return float(resolution) * float(2**level)


def level_transform(transform: Sequence[float], level: int) -> list[float]:
    """Affine [a, b, c, d, e, f] of level k: pixel size scaled by 2^k, same outer corner (spec 3.3)."""
    a, b, c, d, e, f = (float(v) for v in transform)
    s = float(2**level)
    return [a * s, b * s, c, d * s, e * s, f]


def pixel_centres(
    transform: Sequence[float], height: int, width: int
) -> tuple[list[float], list[float]]:
    """Projected (y, x) of pixel centres along rows and columns of a north-up grid (spec 2.2)."""
    a, _b, c, _d, e, f = (float(v) for v in transform)
    ys = [f + e * (row + 0.5) for row in range(height)]
    xs = [c + a * (col + 0.5) for col in range(width)]
    return ys, xs


def cell_slice(row: int, col: int, cs: int, height: int, width: int) -> tuple[slice, slice]:
    """Array slices (y, x) of cell (row, col), trimmed to the array shape (spec 2.1)."""
    return (
        slice(row * cs, min((row + 1) * cs, height)),
        slice(col * cs, min((col + 1) * cs, width)),
    )


def chunk_key(variable_path: str, t_index: int, row: int, col: int, *, has_band: bool) -> str:
    """Object key of a chunk (or time shard) under an array path (spec 2, 7.1).

    data: ``{path}/c/{t}/0/{r}/{c}``; mask/coverage: ``{path}/c/{t}/{r}/{c}``. ``t_index`` is the
    timestep for unsharded arrays and the time-shard index for sharded ones.
    """
    if has_band:
        return f"{variable_path}/c/{t_index}/0/{row}/{col}"
    return f"{variable_path}/c/{t_index}/{row}/{col}"

"""Choosing what to look at: bands (common_name first, spec 3.6), timesteps, a level, a pixel.

Pure functions over a :class:`chronozarr.Reader`'s metadata; nothing here reads chunk data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

import chronozarr
from cz.look.errors import LookError

__all__ = [
    "AUTO_MAX_PIXELS",
    "auto_level",
    "band_index",
    "default_rgb",
    "lonlat_to_xy",
    "parse_level",
    "pixel_at",
    "pixel_of",
    "select_times",
]

#: the longer side of a picture `--level auto` aims not to exceed
AUTO_MAX_PIXELS = 1024


def band_index(bands: Sequence[chronozarr.Band], name: str) -> int:
    """Index of the band whose common_name is ``name``, else whose name is ``name`` (spec 3.6)."""
    wanted = name.strip()
    for i, b in enumerate(bands):
        if b.common_name is not None and b.common_name.lower() == wanted.lower():
            return i
    for i, b in enumerate(bands):
        if b.name == wanted:
            return i
    for i, b in enumerate(bands):
        if b.name.lower() == wanted.lower():
            return i
    known = ", ".join(b.name + (f" ({b.common_name})" if b.common_name else "") for b in bands)
    raise LookError(f"no band {name!r} in the store (bands: {known})")


def default_rgb(bands: Sequence[chronozarr.Band]) -> list[int] | None:
    """The red, green, blue bands by common_name, when the store has all three; else None."""
    try:
        return [band_index(bands, n) for n in ("red", "green", "blue")]
    except LookError:  # no red/green/blue bands: no default RGB
        return None


def _parse_moment(text: str, option: str) -> tuple[np.datetime64, np.datetime64]:
    """[start, end) of a year, month, day or instant written in ISO 8601."""
    t = text.strip().rstrip("Z")
    try:
        value = np.datetime64(t)
    except ValueError:  # not a date numpy reads
        raise LookError(f"{option} {text!r}: expected a date like 2024-06 or 2024-06-15") from None
    unit = np.datetime_data(value.dtype)[0]
    start = value.astype("datetime64[ms]")
    end = (value + np.timedelta64(1, unit)).astype("datetime64[ms]")  # type: ignore[call-overload]
    return start, end


def select_times(
    reader: chronozarr.Reader, time: str | None = None, index: int | None = None
) -> list[int]:
    """Timestep indices: ``--index N`` (negative counts from the end), ``--time 2024-06`` (the
    timesteps inside that month), ``--time 2024-03..2024-08`` (a range, both ends included), or
    the latest timestep when neither is given."""
    n = reader.n_time
    if n == 0:
        raise LookError(f"{reader.store.url}: the store has no timesteps")
    if time is not None and index is not None:
        raise LookError("--time and --index: give one of them")
    if index is not None:
        if not -n <= index < n:
            raise LookError(f"--index {index}: out of range (the store has {n} timesteps)")
        return [index % n]
    if time is None:
        return [n - 1]
    times = reader.times
    first, _, last = time.partition("..")
    start, end = _parse_moment(first, "--time")
    if last:
        _, end = _parse_moment(last, "--time")
    hits = [int(i) for i in np.nonzero((times >= start) & (times < end))[0]]
    if not hits:
        raise LookError(
            f"--time {time!r}: no timestep there (the store covers "
            f"{reader.attrs.times[0]} .. {reader.attrs.times[-1]}, {n} timesteps)"
        )
    return hits if last else hits[:1]


def auto_level(
    reader: chronozarr.Reader, max_pixels: int = AUTO_MAX_PIXELS, frames: int = 1
) -> int:
    """The finest level whose longer side is at most ``max_pixels`` (the coarsest if none is).

    For an animation of many frames the side shrinks with sqrt(8 / frames), down to 256 px, so
    that a decade of months stays a file (and a memory footprint) of about 8 full frames."""
    if frames > 8:
        max_pixels = max(256, int(max_pixels * math.sqrt(8 / frames)))
    for k, lv in enumerate(reader.levels):
        if max(lv.shape[-2:]) <= max_pixels:
            return k
    return len(reader.levels) - 1


def parse_level(reader: chronozarr.Reader, text: str, frames: int = 1) -> int:
    """``auto`` (see :func:`auto_level`) or a level number valid for the store."""
    if text == "auto":
        return auto_level(reader, frames=frames)
    try:
        level = int(text)
    except ValueError:  # neither auto nor a number
        raise LookError(f"--level {text!r}: expected auto or a level number") from None
    if not 0 <= level < len(reader.levels):
        raise LookError(f"--level {level}: the store has levels 0..{len(reader.levels) - 1}")
    return level


def pixel_of(transform: Sequence[float], x: float, y: float) -> tuple[int, int]:
    """(row, col) of the pixel containing CRS point (x, y) under an affine ``transform``
    [a, b, c, d, e, f] (spec 3.3: x = a*col + b*row + c, y = d*col + e*row + f, origin at the
    outer corner of pixel (0, 0)). Raises LookError when the transform is not invertible."""
    a, b, c, d, e, f = (float(v) for v in transform)
    det = a * e - b * d
    if det == 0 or not all(math.isfinite(v) for v in (a, b, c, d, e, f)):
        raise LookError(f"the store's transform {[a, b, c, d, e, f]} is not invertible")
    col_f = (e * (x - c) - b * (y - f)) / det
    row_f = (a * (y - f) - d * (x - c)) / det
    return math.floor(row_f), math.floor(col_f)


def pixel_at(reader: chronozarr.Reader, x: float, y: float, level: int) -> tuple[int, int]:
    """(row, col) of the level-``level`` pixel containing CRS point (x, y); LookError outside."""
    transform = reader.levels[level].transform
    row, col = pixel_of(transform, x, y)
    h, w = reader.levels[level].shape[-2:]
    if not (0 <= row < h and 0 <= col < w):
        a, b, c, d, e, f = transform
        xs = (c, a * w + c, b * h + c, a * w + b * h + c)
        ys = (f, d * w + f, e * h + f, d * w + e * h + f)
        raise LookError(
            f"point x={x:g}, y={y:g} ({reader.attrs.crs}) is outside the store "
            f"(x {min(xs):g} .. {max(xs):g}, y {min(ys):g} .. {max(ys):g})"
        )
    return row, col


def lonlat_to_xy(reader: chronozarr.Reader, lon: float, lat: float) -> tuple[float, float]:
    """A WGS 84 longitude/latitude in the store's CRS (pyproj, always_xy)."""
    from pyproj import Transformer
    from pyproj.exceptions import CRSError

    if not (-180 <= lon <= 180 and -90 <= lat <= 90):
        raise LookError(f"--lon {lon:g} --lat {lat:g}: not a longitude/latitude")
    try:
        tr = Transformer.from_crs("EPSG:4326", reader.attrs.crs, always_xy=True)
    except CRSError as exc:  # PROJ does not know the store's CRS
        raise LookError(f"the store's crs {reader.attrs.crs!r} is unknown to PROJ: {exc}") from None
    x, y = tr.transform(lon, lat)
    if not (math.isfinite(x) and math.isfinite(y)):
        raise LookError(f"--lon {lon:g} --lat {lat:g}: not representable in {reader.attrs.crs}")
    return float(x), float(y)

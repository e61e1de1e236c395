"""``cz quicklook``: a picture of one timestep (RGB, one band or an index), an animation or tiled
overview of several, or the volatility map (spec 5) over the level-0 footprint.

Values are physical (stored * scale + offset, spec 3.6), invalid pixels (spec 2.3: mask when
present, else per band value == nodata) are transparent, bands are found by common_name first.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr
from chronozarr.format import validity
from cz.look import expr as band_math
from cz.look.errors import LookError
from cz.look.picture import Colorbar, Frame, colormap_lut, compose, save_frames, tile
from cz.look.select import band_index, default_rgb
from cz.look.stretch import Stretch, StretchSpec, apply_stretch, compute_stretch

__all__ = ["View", "quicklook", "render_values", "resolve_view", "store_name"]

DEFAULT_STRETCH = StretchSpec("percentile", 2.0, 98.0)
#: at most this many values per channel feed the percentiles of a multi-frame stretch
STRETCH_SAMPLE = 4_000_000


@dataclass(frozen=True)
class View:
    """What a picture shows: ``kind`` is ``rgb``, ``band``, ``expr`` or ``volatility``."""

    kind: str
    bands: tuple[int, ...]  # band indices read (rgb: r, g, b; expr: every band named)
    label: str  # for the title: "B04, B03, B02 (red, green, blue)", "nir (B08)", the expression
    units: str  # for the colour bar
    colormap: str | None  # None for rgb
    expression: str | None = None
    names: tuple[str, ...] = ()  # expr: the names as written, matched to ``bands``


def _band_label(band: chronozarr.Band) -> str:
    return band.name + (f" ({band.common_name})" if band.common_name else "")


def resolve_view(
    reader: chronozarr.Reader,
    *,
    rgb: str | None = None,
    band: str | None = None,
    expression: str | None = None,
    volatility: bool = False,
    colormap: str | None = None,
) -> View:
    """The view the options ask for; the default is red, green, blue by common_name when the
    store has them, else its first band."""
    chosen = [o for o, v in (("--rgb", rgb), ("--band", band), ("--expr", expression)) if v]
    if volatility:
        chosen.append("--volatility")
    if len(chosen) > 1:
        raise LookError(f"{' and '.join(chosen)}: give one of them")
    bands = reader.bands
    if volatility:
        if reader.attrs.volatility_path is None:
            raise LookError(f"{reader.store.url}: the store has no volatility array (spec 5)")
        return View(
            "volatility", (), "volatility", "mean |change| / 10000 (spec 5)", colormap or "magma"
        )
    if expression:
        return _expr_view(bands, expression, colormap)
    if band:
        return _band_view(bands, band_index(bands, band), colormap)
    if rgb:
        parts = [p.strip() for p in rgb.split(",")]
        if len(parts) != 3 or not all(parts):
            raise LookError(f"--rgb {rgb!r}: expected three bands, e.g. red,green,blue")
        return _rgb_view(bands, tuple(band_index(bands, p) for p in parts), colormap)
    found = default_rgb(bands)
    if found is None:
        return _band_view(bands, 0, colormap)
    return _rgb_view(bands, tuple(found), colormap)


def _expr_view(bands: Sequence[chronozarr.Band], expression: str, colormap: str | None) -> View:
    names = band_math.names_in(expression)
    if not names:
        raise LookError(f"--expr {expression!r}: names no band")
    idx = tuple(band_index(bands, n) for n in names)
    return View("expr", idx, expression, expression, colormap or "RdYlGn", expression, tuple(names))


def _band_view(bands: Sequence[chronozarr.Band], i: int, colormap: str | None) -> View:
    units = bands[i].units or "no units"
    return View(
        "band", (i,), _band_label(bands[i]), f"{bands[i].name} [{units}]", colormap or "viridis"
    )


def _rgb_view(bands: Sequence[chronozarr.Band], idx: tuple[int, ...], colormap: str | None) -> View:
    listed = ", ".join(bands[i].name for i in idx)
    commons = [bands[i].common_name for i in idx]
    shown = [c for c, i in zip(commons, idx, strict=True) if c and c != bands[i].name]
    label = listed + (f" ({', '.join(c or '?' for c in commons)})" if shown else "")
    if colormap is not None:
        raise LookError(
            f"--colormap {colormap}: only for one band, --expr or --volatility (not RGB)"
        )
    return View("rgb", idx, label, "", None)


def _physical_planes(reader: chronozarr.Reader, view: View, t: int, level: int) -> np.ndarray:
    """(channels, H, W) float64 physical values of the view at timestep t, NaN where invalid."""
    values = reader.read(t, level)
    mask = reader.read_mask(t, level)
    valid = validity(values, reader.nodata, mask)
    phys = reader.physical(values, valid)
    if view.kind == "expr":
        assert view.expression is not None
        named = {name: phys[i] for name, i in zip(view.names, view.bands, strict=True)}
        result = band_math.evaluate(view.expression, named)
        return np.where(np.isfinite(result), result, np.nan)[None]
    planes = phys[list(view.bands)]
    if view.kind == "rgb":  # a pixel is drawn only where all three bands are valid
        planes = np.where(np.isfinite(planes).all(axis=0), planes, np.nan)
    return planes


def _volatility_plane(reader: chronozarr.Reader, level: int) -> np.ndarray:
    """(1, H_k, W_k): each level-k pixel shows the volatility of the level-0 cell it lies in."""
    vol = reader.volatility()
    if vol is None:
        raise LookError(f"{reader.store.url}: the volatility array is missing")
    cs0 = reader.chunk_size(0)
    h, w = reader.levels[level].shape[-2:]
    rows = np.minimum((np.arange(h) << level) // cs0, vol.shape[0] - 1)
    cols = np.minimum((np.arange(w) << level) // cs0, vol.shape[1] - 1)
    return vol.astype(np.float64)[np.ix_(rows, cols)][None]


def render_values(
    planes: np.ndarray, stretches: Sequence[Stretch], lut: np.ndarray | None
) -> np.ndarray:
    """(H, W, 4) uint8: three planes as RGB, or one plane through ``lut``; alpha 0 where NaN."""
    levels = np.stack([apply_stretch(p, s) for p, s in zip(planes, stretches, strict=True)])
    valid = np.isfinite(levels).all(axis=0)
    idx = np.where(np.isfinite(levels), levels, 0).astype(np.uint8)
    h, w = planes.shape[1:]
    out = np.zeros((h, w, 4), dtype=np.uint8)
    if lut is None:
        out[..., :3] = np.moveaxis(idx, 0, -1)
        out[..., 3] = 255
    else:
        out[:] = lut[idx[0]]
    out[~valid] = 0
    return out


def store_name(url: str) -> str:
    return os.path.basename(url.rstrip("/")) or url


def quicklook(
    reader: chronozarr.Reader,
    view: View,
    *,
    times: Sequence[int],
    level: int,
    out: Path,
    stretch: StretchSpec = DEFAULT_STRETCH,
    tiled: bool = False,
    duration_ms: int = 700,
) -> dict[str, Any]:
    """Draw the picture(s) and write ``out``; returns the numbers (for ``--json``).

    Memory stays bounded for long ranges: the values of one frame at a time are kept (a first
    pass gathers a strided sample of at most ``STRETCH_SAMPLE`` values per channel for the
    percentiles when there are several frames), and only the rendered RGBA frames accumulate.
    """
    if view.kind == "volatility":
        times = []

        def planes_of(i: int) -> np.ndarray:
            return _volatility_plane(reader, level)
    else:

        def planes_of(i: int) -> np.ndarray:
            return _physical_planes(reader, view, times[i], level)

    n_frames = max(1, len(times))
    first = planes_of(0)
    stretches = _stretches(planes_of, first, n_frames, stretch)
    lut = None if view.colormap is None else colormap_lut(view.colormap)
    name = store_name(reader.store.url)
    lv = reader.levels[level]
    stretch_text = (
        f"{stretches[0].lo:.4g}..{stretches[0].hi:.4g}" if len(stretches) == 1 else "per band"
    )
    subtitle = f"level {level}, resolution {lv.resolution:g} · stretch {stretch} = {stretch_text}"
    bar = (
        None
        if view.colormap is None
        else Colorbar(view.colormap, stretches[0].lo, stretches[0].hi, view.units)
    )
    frames: list[Frame] = []
    n_valid = n_total = 0
    for i in range(n_frames):
        planes = first if i == 0 else planes_of(i)
        when = "level-0 cells" if view.kind == "volatility" else reader.attrs.times[times[i]][:10]
        valid = np.isfinite(planes).all(axis=0)
        n_valid, n_total = n_valid + int(valid.sum()), n_total + valid.size
        rgba = render_values(planes, stretches, lut)
        frames.append(
            compose(rgba, title=f"{name} · {when} · {view.label}", subtitle=subtitle, colorbar=bar)
        )
        del planes
    data_shape = list(first.shape[-2:])
    del first
    many = n_frames > 1
    if tiled and many:
        frames = [tile(frames)]
    written = save_frames(frames, out, duration_ms=duration_ms)
    return {
        **written,
        **_numbers(reader, view, times, level, stretch, stretches),
        "tiled": bool(tiled and many),
        "image_box": None if tiled and many else frames[0].box.to_json(),
        "data_shape": data_shape,
        "valid_fraction": n_valid / n_total if n_total else 0.0,
    }


def _stretches(
    planes_of: Any, first: np.ndarray, n_frames: int, stretch: StretchSpec
) -> list[Stretch]:
    """One stretch for every frame (per channel), so colours compare across an animation:
    from the first frame, or a strided sample of every frame (at most ``STRETCH_SAMPLE``
    values per channel)."""
    if n_frames == 1 or stretch.kind == "limits":
        sample = first
    else:
        step = max(1, math.ceil(math.sqrt(n_frames * first[0].size / STRETCH_SAMPLE)))
        sample = np.concatenate(
            [first[:, ::step, ::step]]
            + [planes_of(i)[:, ::step, ::step] for i in range(1, n_frames)],
            axis=1,
        )
    return [compute_stretch(sample[ch], stretch) for ch in range(sample.shape[0])]


def _numbers(
    reader: chronozarr.Reader,
    view: View,
    times: Sequence[int],
    level: int,
    stretch: StretchSpec,
    stretches: Sequence[Stretch],
) -> dict[str, Any]:
    """What a quicklook shows, for ``--json``: the view, the timesteps, the stretch."""
    channel_names = (
        [reader.bands[i].name for i in view.bands] if view.kind in ("rgb", "band") else [view.label]
    )
    return {
        "store": reader.store.url,
        "view": view.kind,
        "bands": [reader.bands[i].name for i in view.bands],
        "expression": view.expression,
        "level": level,
        "resolution": reader.levels[level].resolution,
        "times": [reader.attrs.times[t] for t in times],
        "indices": list(times),
        "stretch": {
            "spec": str(stretch),
            "channels": [
                {"name": n, **s.to_json()} for n, s in zip(channel_names, stretches, strict=True)
            ],
        },
        "colormap": view.colormap,
        "units": view.units or None,
    }

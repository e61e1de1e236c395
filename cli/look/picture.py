"""Drawing pictures: matplotlib (Agg, no pyplot state) for titles, colour bars and charts,
Pillow (matplotlib's own image dependency) for PNG, APNG and GIF files.

Why matplotlib (docs/decisions/0011-pictures-with-matplotlib.md): colour bars with sensible
ticks, named colormaps users know (viridis, RdYlGn, ...) and time-series charts are what it does
best; hand-drawing them with Pillow would re-implement it. The data pixels themselves are not
resampled by matplotlib: the frame (title, colour bar) is drawn around an empty box and the exact
RGBA pixels are pasted into it with numpy (nearest-neighbour upscaling by an integer factor), so
a pixel's colour is exactly the stretch of its value and invalid pixels keep alpha 0.

Everything heavy is imported inside the functions: ``import cz.look.picture`` is cheap.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from cz.look.errors import LookError

__all__ = [
    "Colorbar",
    "Frame",
    "ImageBox",
    "colormap_lut",
    "compose",
    "plain_text",
    "save_frames",
    "tile",
    "upscale_factor",
]

#: a small picture is enlarged (nearest neighbour, integer factor) until its longer side reaches this
MIN_LONG_SIDE = 512
_MARGIN = 16
_TITLE_H = 56
_CBAR_W = 18
_CBAR_GAP = 14
_CBAR_LABELS = 92


@dataclass(frozen=True)
class Colorbar:
    """A colour bar: a matplotlib colormap name over [lo, hi], labelled with ``label``."""

    cmap: str
    lo: float
    hi: float
    label: str


@dataclass(frozen=True)
class ImageBox:
    """Where the data pixels are in the picture: data pixel (r, c) covers rows
    ``top + r*scale .. top + (r+1)*scale - 1`` and the matching columns."""

    left: int
    top: int
    width: int
    height: int
    scale: int

    def to_json(self) -> dict[str, int]:
        return {
            "left": self.left,
            "top": self.top,
            "width": self.width,
            "height": self.height,
            "scale": self.scale,
        }


@dataclass
class Frame:
    """One rendered picture (RGBA uint8, rows x cols x 4) and where its data pixels are."""

    rgba: np.ndarray
    box: ImageBox


def plain_text(text: str) -> str:
    """``text`` for a matplotlib label that cannot take ``parse_math`` (legend entries): every
    ``$`` escaped, so store text never turns into mathtext (or a mathtext parse error)."""
    return text.replace("$", r"\$")


def colormap_lut(name: str) -> np.ndarray:
    """(256, 4) uint8 colours of a matplotlib colormap; level L is drawn as ``lut[L]``."""
    import matplotlib

    try:
        cmap = matplotlib.colormaps[name].resampled(256)
    except KeyError:  # matplotlib has no such colormap
        some = ", ".join(sorted(n for n in matplotlib.colormaps if not n.endswith("_r"))[:12])
        raise LookError(
            f"--colormap {name!r}: not a matplotlib colormap (e.g. {some}, ...)"
        ) from None
    return np.asarray(cmap(np.arange(256), bytes=True), dtype=np.uint8)


def upscale_factor(height: int, width: int, minimum: int = MIN_LONG_SIDE) -> int:
    """The integer enlargement that brings the longer side to at least ``minimum`` pixels."""
    return max(1, math.ceil(minimum / max(height, width, 1)))


def compose(
    rgba: np.ndarray, *, title: str, subtitle: str, colorbar: Colorbar | None = None
) -> Frame:
    """A picture: ``title`` and ``subtitle`` above the data, a colour bar right of it."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    h, w = rgba.shape[:2]
    s = upscale_factor(h, w)
    img_h, img_w = h * s, w * s
    cbar_w = _CBAR_GAP + _CBAR_W + _CBAR_LABELS if colorbar else 0
    fig_w = max(img_w + 2 * _MARGIN + cbar_w, 420)
    fig_h = _TITLE_H + img_h + _MARGIN
    fig = Figure(figsize=(fig_w / 100, fig_h / 100), dpi=100, facecolor="white")
    FigureCanvasAgg(fig)
    # store and user text is never mathtext: parse_math=False (a "$" in a path stays a "$")
    fig.text(
        _MARGIN / fig_w,
        1 - 10 / fig_h,
        title,
        va="top",
        fontsize=11,
        weight="bold",
        parse_math=False,
    )
    fig.text(
        _MARGIN / fig_w,
        1 - 32 / fig_h,
        subtitle,
        va="top",
        fontsize=8.5,
        color="#555555",
        parse_math=False,
    )
    if colorbar is not None:
        import matplotlib

        x0 = _MARGIN + img_w + _CBAR_GAP
        cax = fig.add_axes(
            (x0 / fig_w, _MARGIN / fig_h, _CBAR_W / fig_w, img_h / fig_h),
        )
        mappable = ScalarMappable(
            norm=Normalize(colorbar.lo, colorbar.hi),
            cmap=matplotlib.colormaps[colorbar.cmap].resampled(256),
        )
        bar = fig.colorbar(mappable, cax=cax)
        bar.set_label(colorbar.label, fontsize=8.5, parse_math=False)
        bar.ax.tick_params(labelsize=8)
    fig.canvas.draw()
    buf = np.array(fig.canvas.buffer_rgba(), dtype=np.uint8)  # type: ignore[attr-defined]
    if buf.shape[:2] != (fig_h, fig_w):  # Agg rounds the figure size; keep our geometry exact
        fixed = np.full((fig_h, fig_w, 4), 255, dtype=np.uint8)
        rows, cols = min(fig_h, buf.shape[0]), min(fig_w, buf.shape[1])
        fixed[:rows, :cols] = buf[:rows, :cols]
        buf = fixed
    box = ImageBox(left=_MARGIN, top=_TITLE_H, width=img_w, height=img_h, scale=s)
    big = np.repeat(np.repeat(rgba, s, axis=0), s, axis=1)
    buf[box.top : box.top + img_h, box.left : box.left + img_w] = big
    return Frame(buf, box)


def tile(frames: list[Frame]) -> Frame:
    """Frames side by side in a near-square grid (white between them); the box is the first's."""
    n = len(frames)
    cols = math.ceil(math.sqrt(n))
    rows = math.ceil(n / cols)
    fh = max(f.rgba.shape[0] for f in frames)
    fw = max(f.rgba.shape[1] for f in frames)
    out = np.full((rows * fh, cols * fw, 4), 255, dtype=np.uint8)
    for i, f in enumerate(frames):
        r, c = divmod(i, cols)
        h, w = f.rgba.shape[:2]
        out[r * fh : r * fh + h, c * fw : c * fw + w] = f.rgba
    return Frame(out, frames[0].box)


_GIF_CLEAR = 255  # the palette index of transparent pixels in a GIF


def _gif_frame(image: Any) -> Any:
    """A palette frame: 255 colours quantized from the RGB, index 255 where alpha is 0 (GIF has
    one-bit transparency; Pillow's own RGBA conversion drops it)."""
    from PIL import Image

    alpha = np.asarray(image)[..., 3]
    quant = image.convert("RGB").quantize(
        colors=255, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE
    )
    index = np.asarray(quant).copy()
    index[alpha < 128] = _GIF_CLEAR
    palette = (quant.getpalette() or [])[: 3 * 255]
    palette += [0] * (3 * 256 - len(palette))
    frame = Image.fromarray(index, mode="P")
    frame.putpalette(palette)
    frame.info["transparency"] = _GIF_CLEAR
    return frame


def save_frames(frames: list[Frame], out: Path, *, duration_ms: int = 700) -> dict[str, Any]:
    """Write one PNG, or an animation (APNG for ``.png``/``.apng``, GIF for ``.gif``).

    Written to a temporary name beside ``out`` and renamed, so a failure leaves no half file.
    """
    from PIL import Image

    suffix = out.suffix.lower()
    if suffix not in (".png", ".apng", ".gif"):
        raise LookError(f"--out {out}: expected a .png, .apng or .gif file name")
    if not out.parent.is_dir():
        raise LookError(f"--out {out}: the folder {out.parent} does not exist")
    # frames of one animation share a size (same store, level and layout): pad to be safe
    h = max(f.rgba.shape[0] for f in frames)
    w = max(f.rgba.shape[1] for f in frames)
    images = []
    for f in frames:
        canvas = np.full((h, w, 4), 255, dtype=np.uint8)
        canvas[: f.rgba.shape[0], : f.rgba.shape[1]] = f.rgba
        images.append(Image.fromarray(canvas, mode="RGBA"))
    fmt = "GIF" if suffix == ".gif" else "PNG"
    if fmt == "GIF":
        images = [_gif_frame(im) for im in images]
    tmp = out.with_name(f".{out.name}.partial")
    try:
        if len(images) == 1:
            single: dict[str, Any] = {"transparency": _GIF_CLEAR} if fmt == "GIF" else {}
            images[0].save(tmp, format=fmt, **single)
        else:
            extra: dict[str, Any] = (
                {"disposal": 2, "transparency": _GIF_CLEAR, "optimize": False}
                if fmt == "GIF"
                else {}
            )
            images[0].save(
                tmp,
                format=fmt,
                save_all=True,
                append_images=images[1:],
                duration=duration_ms,
                loop=0,
                **extra,
            )
        tmp.replace(out)
    except OSError as exc:  # disk full, read-only: nothing half-written
        tmp.unlink(missing_ok=True)
        raise LookError(f"--out {out}: cannot write ({exc})") from None
    except BaseException:  # Ctrl-C too: no temporary left behind
        tmp.unlink(missing_ok=True)
        raise
    return {"file": str(out), "width": w, "height": h, "frames": len(images), "format": fmt}

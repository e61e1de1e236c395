"""``cz series``: one pixel's history, from the store's time-series companion when it has one
(docs/spec.md C25: a few small objects), else from that pixel's cell only (spec 10.4: per timestep
one chunk read, or two for a delta and its anchor; mask and coverage from the same cell), those
reads in parallel.

Stored values, physical values (stored * scale + offset, spec 3.6), validity per band (spec 2.3)
and coverage (spec 2.5: 0 means gap-filled or never observed), as a table, CSV, JSON or chart.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr
from cz.look.errors import LookError
from cz.look.picture import plain_text

__all__ = ["PixelSeries", "read_series", "series_chart", "series_csv", "write_series"]

#: chart colours of bands known by common_name (others take matplotlib's cycle)
_COMMON_COLOURS = {"blue": "#1f77b4", "green": "#2ca02c", "red": "#d62728", "nir": "#8c564b"}


@dataclass
class PixelSeries:
    """The history of level-``level`` pixel (row, col): arrays over time, bands first."""

    store: str
    level: int
    row: int
    col: int
    x: float  # CRS coordinates of the pixel centre
    y: float
    bands: tuple[chronozarr.Band, ...]
    times: list[str]
    stored: np.ndarray  # (time, band) in the stored dtype
    valid: np.ndarray  # (time, band) bool
    physical: np.ndarray  # (time, band) float64, NaN where invalid
    mask: np.ndarray | None  # (time,) uint8
    coverage: np.ndarray | None  # (time,) uint8

    @property
    def gap_filled(self) -> np.ndarray:
        """(time,) bool: valid data with coverage 0 (spec 2.5), False without coverage."""
        if self.coverage is None:
            return np.zeros(len(self.times), dtype=bool)
        return (self.coverage == 0) & self.valid.any(axis=1)

    def to_json(self) -> dict[str, Any]:
        gap = self.gap_filled
        steps = []
        for t, when in enumerate(self.times):
            steps.append(
                {
                    "time": when,
                    "index": t,
                    "mask": None if self.mask is None else int(self.mask[t]),
                    "coverage": None if self.coverage is None else int(self.coverage[t]),
                    "gap_filled": bool(gap[t]),
                    "values": {
                        b.name: {
                            "stored": self.stored[t, i].item(),
                            "physical": None
                            if not self.valid[t, i]
                            else float(self.physical[t, i]),
                            "valid": bool(self.valid[t, i]),
                        }
                        for i, b in enumerate(self.bands)
                    },
                }
            )
        return {
            "store": self.store,
            "level": self.level,
            "row": self.row,
            "col": self.col,
            "x": self.x,
            "y": self.y,
            "bands": [b.to_json() for b in self.bands],
            "timesteps": steps,
        }


def read_series(
    reader: chronozarr.Reader,
    row: int,
    col: int,
    level: int = 0,
    *,
    use_history: bool | None = None,
) -> PixelSeries:
    """Read pixel (row, col) of a level through time: from the time-series companion when the
    level carries one (a few small objects, docs/spec.md C25), else from that pixel's cell only,
    every timestep's chunks in parallel (spec 10.4). ``use_history`` False reads the chunks."""
    lv = reader.levels[level]
    h, w = lv.shape[-2:]
    if not (0 <= row < h and 0 <= col < w):
        raise LookError(f"pixel row {row}, col {col} is outside level {level} ({h} x {w})")
    history = reader.pixel_series(row, col, level, use_history=use_history)
    return PixelSeries(
        reader.store.url,
        level,
        row,
        col,
        history.x,
        history.y,
        reader.bands,
        list(reader.attrs.times),
        history.stored,
        np.ascontiguousarray(history.valid()),
        np.ascontiguousarray(history.physical()),
        history.mask,
        history.coverage,
    )


def series_csv(s: PixelSeries) -> str:
    """One row per timestep: time, index, mask, coverage, gap_filled, then per band stored,
    physical (empty when invalid) and valid."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    header = ["time", "index", "mask", "coverage", "gap_filled"]
    for b in s.bands:
        header += [f"{b.name}_stored", f"{b.name}_physical", f"{b.name}_valid"]
    writer.writerow(header)
    gap = s.gap_filled
    for t, when in enumerate(s.times):
        row: list[Any] = [
            when,
            t,
            "" if s.mask is None else int(s.mask[t]),
            "" if s.coverage is None else int(s.coverage[t]),
            int(gap[t]),
        ]
        for i in range(len(s.bands)):
            row += [
                s.stored[t, i].item(),
                repr(float(s.physical[t, i])) if s.valid[t, i] else "",
                int(s.valid[t, i]),
            ]
        writer.writerow(row)
    return buf.getvalue()


def series_chart(s: PixelSeries, out: Path) -> None:
    """A chart: physical value per band through time (invalid timesteps left out), gap-filled
    timesteps shaded and drawn hollow, coverage as grey bars on a second axis."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    when = np.array([np.datetime64(t.rstrip("Z"), "D") for t in s.times])
    fig = Figure(figsize=(9, 4.2), dpi=100, facecolor="white", layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    gap = s.gap_filled
    step = np.timedelta64(15, "D")
    for t in np.nonzero(gap)[0]:
        ax.axvspan(when[t] - step, when[t] + step, color="#f2c94c", alpha=0.35, lw=0)
    if s.coverage is not None:
        ax2 = ax.twinx()
        ax2.bar(when, s.coverage, width=20, color="#999999", alpha=0.25, zorder=0)
        ax2.set_ylabel("coverage (observations)", fontsize=8.5, color="#777777")
        ax2.set_ylim(0, max(1, int(s.coverage.max())) * 4)
        ax2.tick_params(labelsize=8, colors="#777777")
    for i, b in enumerate(s.bands):
        y = np.where(s.valid[:, i], s.physical[:, i], np.nan)
        colour = _COMMON_COLOURS.get((b.common_name or "").lower())
        (line,) = ax.plot(
            when,
            y,
            marker="o",
            ms=4,
            lw=1.4,
            color=colour,
            label=plain_text(
                b.name + (f" ({b.common_name})" if b.common_name not in (None, b.name) else "")
            ),
        )
        filled = gap & s.valid[:, i]
        ax.plot(
            when[filled], y[filled], ls="none", marker="o", ms=7, mfc="white", mec=line.get_color()
        )
    ax.set_zorder(2)
    ax.patch.set_visible(False)
    units = {b.units for b in s.bands}
    ax.set_ylabel(
        f"physical value [{units.pop() if len(units) == 1 and None not in units else 'per band'}]",
        fontsize=9,
        parse_math=False,
    )
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left", ncols=min(4, len(s.bands)))
    title = f"{Path(s.store).name} · pixel row {s.row}, col {s.col} (level {s.level}) · x {s.x:.1f}, y {s.y:.1f}"
    ax.set_title(title, fontsize=10, loc="left", parse_math=False)
    if gap.any():
        ax.text(
            0.99,
            0.02,
            "shaded, hollow: gap-filled (coverage 0)",
            transform=ax.transAxes,
            ha="right",
            fontsize=7.5,
            color="#8a6d00",
        )
    tmp = out.with_name(f".{out.name}.partial")
    try:
        fig.savefig(tmp, format="png")
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)


def write_series(s: PixelSeries, out: Path) -> dict[str, Any]:
    """Write ``.png``, ``.csv`` or ``.json`` (by suffix), atomically; returns what was written."""
    suffix = out.suffix.lower()
    if suffix not in (".png", ".csv", ".json"):
        raise LookError(f"--out {out}: expected a .png, .csv or .json file name")
    if not out.parent.is_dir():
        raise LookError(f"--out {out}: the folder {out.parent} does not exist")
    try:
        if suffix == ".png":
            series_chart(s, out)
        else:
            text = series_csv(s) if suffix == ".csv" else json.dumps(s.to_json(), indent=2) + "\n"
            tmp = out.with_name(f".{out.name}.partial")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(out)
    except OSError as exc:  # disk full, read-only, no such folder
        raise LookError(f"--out {out}: cannot write ({exc})") from None
    return {"file": str(out), "format": suffix[1:], "timesteps": len(s.times)}

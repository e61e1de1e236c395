"""Value -> display arithmetic: stretch limits and their application (pure numpy, no I/O).

A stretch is either percentiles of the valid values (``p2,p98``) or explicit limits
(``min,max`` in physical units, e.g. ``0,0.3``). Applying it maps ``lo`` to 0 and ``hi`` to 255,
clipping outside, rounding half to even (numpy's ``rint``); NaN (invalid) stays NaN so the
caller can make it transparent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Stretch", "StretchSpec", "apply_stretch", "compute_stretch", "parse_stretch"]


@dataclass(frozen=True)
class StretchSpec:
    """What the user asked for: ``kind`` is ``"percentile"`` or ``"limits"``."""

    kind: str
    a: float
    b: float

    def __str__(self) -> str:
        if self.kind == "percentile":
            return f"p{self.a:g},p{self.b:g}"
        return f"{self.a:g},{self.b:g}"


@dataclass(frozen=True)
class Stretch:
    """The limits actually used, in physical units."""

    lo: float
    hi: float

    def to_json(self) -> dict[str, float]:
        return {"min": self.lo, "max": self.hi}


def parse_stretch(text: str) -> StretchSpec:
    """``"p2,p98"`` -> percentiles; ``"0,0.3"`` -> limits. Raises ValueError with the reason."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise ValueError(f"--stretch {text!r}: expected two values, e.g. p2,p98 or 0,0.3")
    pct = [p.lower().startswith("p") for p in parts]
    if any(pct) and not all(pct):
        raise ValueError(f"--stretch {text!r}: mix of percentile and value limits")
    try:
        a, b = (float(p[1:] if is_p else p) for p, is_p in zip(parts, pct, strict=True))
    except ValueError:  # not numbers: a usage error
        raise ValueError(f"--stretch {text!r}: not numbers") from None
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"--stretch {text!r}: limits must be finite")
    if all(pct):
        if not 0 <= a < b <= 100:
            raise ValueError(f"--stretch {text!r}: percentiles need 0 <= low < high <= 100")
        return StretchSpec("percentile", a, b)
    if not a < b:
        raise ValueError(f"--stretch {text!r}: the low limit must be below the high limit")
    return StretchSpec("limits", a, b)


def compute_stretch(values: np.ndarray, spec: StretchSpec) -> Stretch:
    """The limits of ``spec`` over the finite entries of ``values``.

    Percentiles of no finite value, or of a constant image, give a usable (lo < hi) range:
    a constant ``v`` becomes ``[v - 0.5, v + 0.5]`` so it maps to mid-grey, not to a division by 0.
    """
    if spec.kind == "limits":
        return Stretch(spec.a, spec.b)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        return Stretch(0.0, 1.0)
    lo, hi = (float(v) for v in np.percentile(finite, [spec.a, spec.b]))
    if not hi > lo:
        return Stretch(lo - 0.5, lo + 0.5)
    return Stretch(lo, hi)


def apply_stretch(values: np.ndarray, stretch: Stretch) -> np.ndarray:
    """float64 levels in [0, 255] (integers), NaN where ``values`` is not finite."""
    v = np.asarray(values, dtype=np.float64)
    # a subnormal range (hi - lo ~ 5e-324) overflows to inf, which the clip maps to 255:
    # still monotone, so the overflow is expected, not an error
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = (v - stretch.lo) / (stretch.hi - stretch.lo)
        levels = np.rint(np.clip(scaled, 0.0, 1.0) * 255.0)
    return np.where(np.isfinite(v), levels, np.nan)

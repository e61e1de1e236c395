"""Derived bands (docs/recipes.md, "bands", ``expression``): a band defined by band math over the
other bands (NDVI ``(nir - red) / (nir + red)``, NBR, NDWI), in the language of
``cz quicklook --expr`` (:mod:`cz.look.expr`: numbers, band names, ``+ - * / **``, parentheses).

The expression is evaluated on physical values (``stored x scale + offset`` of each input band,
spec 3.6; a common name wins over a band name, as in the quicklook) and stored with the derived
band's own scale and offset: ``stored = (value - offset) / scale``, rounded half to even and
clipped to the store's valid range in an integer store, the float32 of it in a float32 store.

When. By default per observation, before the reduction: each solar day's value, then the
composite method reduces it like any band (the median of the daily NDVI). With ``when:
composite`` it is computed once from the composite's values of its inputs, after the reduction.

Validity follows the inputs: a derived value exists where its inputs do (one mask for every
band, spec 2.3). A value that is not finite (a division by zero: both inputs 0) makes that
observation, or with ``when: composite`` that composite pixel, no observation for any band, so
the mask never says valid over a number that means nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from cz.composite.methods import BandTerms, index_names

__all__ = ["DerivedBand", "derived_values", "physical_inputs"]


@dataclass(frozen=True)
class DerivedBand:
    """One derived band: its expression, its own scale and offset, and whether it is computed
    from the composite (``after``) rather than per observation."""

    name: str
    expression: str
    scale: float
    offset: float
    after: bool = False


def physical_inputs(
    stored: np.ndarray, bands: Sequence[BandTerms], names: Sequence[str] | None = None
) -> Mapping[str, np.ndarray]:
    """Name (and common name) -> the physical float64 values of ``stored`` (nb, h, w); only
    ``names`` when given (the ones an expression uses)."""
    return {
        name: stored[i].astype(np.float64) * bands[i].scale + bands[i].offset
        for name, i in index_names(bands).items()
        if names is None or name in names
    }


def derived_values(
    band: DerivedBand,
    stored: np.ndarray,
    bands: Sequence[BandTerms],
    wdtype: np.dtype,
    bounds: tuple[float, float],
) -> tuple[np.ndarray, np.ndarray]:
    """``(numbers (h, w) in wdtype, finite (h, w))``: the band's stored numbers from the input
    bands' stored numbers ``stored`` (nb, h, w) described by ``bands``. Integer work dtypes get
    the number rounded half to even and clipped to ``bounds``; where the value is not finite the
    number is 0 and ``finite`` is False."""
    from cz.look.expr import evaluate, names_in

    used = names_in(band.expression)
    value = evaluate(band.expression, physical_inputs(stored, bands, used))
    with np.errstate(invalid="ignore", over="ignore"):
        number = (value - band.offset) / band.scale
    finite = np.isfinite(number)
    if wdtype.kind == "f":
        out = np.where(finite, number, 0.0).astype(wdtype)
        return out, finite
    low, high = bounds
    safe = np.clip(np.rint(np.where(finite, number, 0.0)), low, high)
    return safe.astype(wdtype), finite

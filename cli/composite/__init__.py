"""Monthly composites of one block, in pure numpy (reference: ``docs/recipes.md``, "mask" and
"composite").

No I/O here: :mod:`cz.load` reads the pixels, :mod:`cz.build` moves blocks around. Each function
is one rule of the recipe reference, so the rules are tested exhaustively on small arrays:

1. Validity of an observation (:func:`observation_validity`, :mod:`cz.composite.masks`): *every*
   band differs from its source nodata and the mask rules do not reject the pixel (the SCL class
   is in the recipe's keep-set, the cloud probability is at most its maximum). One rule for all
   bands, so one coverage plane describes every band and the mask alone decides validity (spec
   2.3, 2.5). The cloud the rules reject (``mask.clean``, a probability above the maximum) is
   opened and dilated on each solar day's mosaic (``mask.open``, ``mask.dilate``); nothing
   else rejected is ever re-admitted (decision 0043).
2. Digital-number correction per item (:func:`correct_values`): the plan's ``correction`` is
   added to the harmonised bands of valid pixels, and every valid number is clipped to the
   store's valid range (:func:`value_bounds`), so a valid pixel never becomes nodata.
3. One observation per solar day (:func:`mosaic_solar_days`): items of one solar day
   (overlapping MGRS tiles of one overpass) give the first valid pixel in plan order (with a
   cleaning: the first clear, else the first cloudy one), so an overlap never counts twice.
4. The composite of valid observations, by ``composite.method`` (:func:`reduce_observations`):
   the per-pixel median (:func:`median_composite`, the default: with an even count the mean of
   the two middle values, rounded half to even in an integer store, exact integer arithmetic;
   the float32 of the mean in a float32 store), or one of :mod:`cz.composite.methods` (mean,
   min, max, percentile, medoid, geomedian, best; each module says its rounding rule). The
   count of valid observations saturates at 255 as coverage (spec 2.5), whatever the method.
5. Gap-fill carry-forward (:func:`carry_forward_source`, :func:`assemble_filled`): a pixel
   without a valid observation takes the value of the last month *with* observations within
   ``max_age`` months; it is valid with coverage 0. Otherwise it holds the fill value, mask 0.
   Because a carried value always comes from a month that was observed, month t depends only on
   the raw composites of months t - max_age .. t: no state runs through the whole series.
"""

from __future__ import annotations

from cz.composite.block import (
    METHODS,
    ROUNDING,
    CompositeRules,
    composite_block,
    grow_window,
    reduce_observations,
)
from cz.composite.gapfill import assemble_filled, carry_forward_source, mask_from_source
from cz.composite.median import median_composite
from cz.composite.methods import BandTerms
from cz.composite.observations import (
    MAX_COVERAGE,
    correct_values,
    fill_value,
    mosaic_solar_days,
    observation_validity,
    saturating_coverage,
    value_bounds,
    work_dtype,
)

__all__ = [
    "MAX_COVERAGE",
    "METHODS",
    "ROUNDING",
    "BandTerms",
    "CompositeRules",
    "assemble_filled",
    "carry_forward_source",
    "composite_block",
    "correct_values",
    "fill_value",
    "grow_window",
    "mask_from_source",
    "median_composite",
    "mosaic_solar_days",
    "observation_validity",
    "reduce_observations",
    "saturating_coverage",
    "value_bounds",
    "work_dtype",
]

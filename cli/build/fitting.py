"""Whether a recipe's new months fit a store (spec 14; decision 0018), checked before the catalog
is searched: the months right after the store's last one, the grid, bands and store layout, and
the recipe fingerprint the store recorded. A local and a cluster append ask the same questions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from cz.build.errors import AppendRefusedError, RecipeMismatchError
from cz.build.options import Progress
from cz.build.store_args import compare_with_store, store_bands
from cz.periods import PeriodRule, label_of_time
from cz.plan import GridPlan, grid_for
from cz.recipe import Recipe, TimeSpec

__all__ = ["fitting_recipe", "store_labels"]


def fitting_recipe(
    recipe: Recipe, months: list[str], reader: Any, where: str, progress: Progress
) -> Recipe:
    """``recipe`` limited to ``months`` (period labels), once the recipe and they fit the store
    ``reader`` reads (at ``where``): :class:`RecipeMismatchError` naming every difference of the
    grid, bands, layout or fingerprint, then :class:`AppendRefusedError` for periods that do not
    continue the store. The grid compared is the recipe's alone (no catalog search)."""
    # the recipe first, so a recipe of another period says so before its periods are checked
    diffs = _compare_recipe(recipe, reader, grid_for(recipe))
    diffs += _compare_fingerprint(recipe, reader, progress)
    if diffs:
        raise RecipeMismatchError(
            f"the recipe does not fit the store at {where}: " + "; ".join(diffs)
        )
    _check_months(months, store_labels(recipe, reader.attrs.times), recipe.composite.period.rule())
    return recipe.model_copy(update={"time": TimeSpec(start=months[0], end=months[-1])})


def _compare_recipe(recipe: Recipe, reader: Any, grid: GridPlan) -> list[str]:
    """Where the recipe differs from the store's grid, bands and store options (empty: fits)."""
    return (
        _grid_diffs(recipe, reader, grid)
        + _band_diffs(recipe, reader)
        + _store_diffs(recipe, reader)
    )


def _grid_diffs(recipe: Recipe, reader: Any, grid: GridPlan) -> list[str]:
    diffs: list[str] = []
    attrs, lv0 = reader.attrs, reader.levels[0]
    if attrs.crs != grid.crs:
        diffs.append(f"grid CRS: recipe {grid.crs}, store {attrs.crs}")
    if [round(v, 9) for v in lv0.transform] != [round(float(v), 9) for v in grid.transform]:
        diffs.append(f"grid transform: recipe {list(grid.transform)}, store {list(lv0.transform)}")
    if list(lv0.shape[-2:]) != list(grid.shape):
        diffs.append(f"grid shape: recipe {list(grid.shape)}, store {list(lv0.shape[-2:])}")
    if reader.chunk_size(0) != recipe.store.chunk_size:
        diffs.append(
            f"store.chunk_size: recipe {recipe.store.chunk_size}, store {reader.chunk_size(0)}"
        )
    return diffs


def _same(a: Any, b: Any) -> bool:
    """Equal, floats to 12 digits (a recipe's 0.0001 and a store's JSON float)."""
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)
    return bool(a == b)


def _band_diffs(recipe: Recipe, reader: Any) -> list[str]:
    want, have = store_bands(recipe), list(reader.attrs.bands)
    if [b.name for b in want] != [b.name for b in have]:
        return [f"bands: recipe {[b.name for b in want]}, store {[b.name for b in have]}"]
    return [
        f"bands[{w.name}].{key}: recipe {getattr(w, key)!r}, store {getattr(h, key)!r}"
        for w, h in zip(want, have, strict=True)
        for key in ("scale", "offset", "common_name", "units")
        if not _same(getattr(w, key), getattr(h, key))
    ]


def _store_diffs(recipe: Recipe, reader: Any) -> list[str]:
    diffs: list[str] = []
    attrs, store = reader.attrs, recipe.store
    if reader.dtype.name != store.dtype:
        diffs.append(f"store.dtype: recipe {store.dtype}, store {reader.dtype.name}")
    if attrs.nodata != store.effective_nodata:
        diffs.append(f"store.nodata: recipe {store.effective_nodata}, store {attrs.nodata}")
    enc = attrs.temporal.encoding
    if store.encoding != "auto" and store.encoding != enc:
        diffs.append(f"store.encoding: recipe {store.encoding}, store {enc}")
    if enc == "star-delta" and attrs.temporal.anchor_interval != store.anchor_interval:
        diffs.append(
            f"store.anchor_interval: recipe {store.anchor_interval}, "
            f"store {attrs.temporal.anchor_interval}"
        )
    diffs += _chunk_diffs(recipe, reader)
    if not reader.has_mask or not reader.has_coverage:
        diffs.append("the store has no mask/coverage (cz build always writes both)")
    return diffs


def _chunk_diffs(recipe: Recipe, reader: Any) -> list[str]:
    """Sharding, the compressor of the data chunks (spec 7, 8) and the time-series companion."""
    diffs: list[str] = []
    info, store = reader.array(0).info, recipe.store
    if bool(info.sharded) != bool(store.shard):
        diffs.append(f"store.shard: recipe {store.shard}, store {bool(info.sharded)}")
    elif info.sharded and store.shard_time is not None and info.shard_time != store.shard_time:
        diffs.append(f"store.shard_time: recipe {store.shard_time}, store {info.shard_time}")
    has_history = reader.attrs.history is not None  # the companion (docs/spec.md C25)
    if bool(store.history) != has_history:
        diffs.append(
            f"store.history: recipe {store.history}, store {has_history} (an append keeps the "
            "time-series companion a store has and cannot add one)"
        )
    want_comp = store.layout.codec.compressor(reader.dtype.name)
    have_comp = [c for c in info.codecs if c.get("name") != "bytes"]
    if not have_comp or have_comp[-1] != want_comp:
        diffs.append(
            f"store.codec: recipe {want_comp}, store {have_comp[-1] if have_comp else None}"
        )
    return diffs


def _compare_fingerprint(recipe: Recipe, reader: Any, progress: Progress) -> list[str]:
    """Where the recipe's fingerprint (what a month means: collection, filters, mask, composite,
    gap-fill, harmonisation, bands, grid, dtype) differs from the store's recorded one, one line
    per field. A store built before the fingerprint was recorded is compared on what it did
    record, and a warning (once) names what could not be compared."""
    check = compare_with_store(recipe, reader.attrs.provenance)
    lines = []
    for key, value, recorded in check.differences[:50]:  # a hostile store: bounded message
        if recorded == check.NOT_RECORDED:
            lines.append(
                f"{_short(key, as_repr=False)}: recipe {_short(value)}, the store recorded "
                "nothing (it was built before this field existed, so with its default)"
            )
        else:
            lines.append(
                f"{_short(key, as_repr=False)}: recipe {_short(value)}, "
                f"store built with {_short(recorded)}"
            )
    if len(check.differences) > 50:
        lines.append(f"... {len(check.differences) - 50} more differing fields")
    if check.legacy and check.unchecked:
        progress.note(
            "the store records no recipe fingerprint (built before cz recorded one): only its "
            "collection, composite, gap-fill, mask classes, harmonisation and resampling were "
            "compared; make sure the recipe's filters, mask assets, bands and grid are the ones "
            "it was built with"
        )
    return lines


def _short(value: Any, limit: int = 200, *, as_repr: bool = True) -> str:
    """``repr(value)`` (or the text itself), cut to ``limit`` characters: a store's recorded
    fingerprint is store text and can be anything."""
    plain = not as_repr and isinstance(value, str) and value.isprintable()
    text = value if plain else repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _check_months(months: list[str], have: list[str], rule: PeriodRule | None = None) -> None:
    """A store grows by the periods right after its last one, in order (spec 14); ``months``
    and ``have`` are period labels (``YYYY-MM`` for months, start dates otherwise)."""
    rule = rule or PeriodRule()
    unit = "month" if rule.kind == "month" else f"{rule.describe()} period"
    inside = [m for m in months if m in set(have)]
    if inside:
        raise AppendRefusedError(
            f"{unit}(s) {', '.join(inside)} are already in the store ({have[0]}..{have[-1]}); "
            f"append only adds {unit}s after the last one"
        )
    if months[0] <= have[-1]:
        raise AppendRefusedError(
            f"{months[0]} is before the store's last {unit} {have[-1]}; append only adds "
            f"{unit}s after it"
        )
    following = rule.following(rule.label_day(have[-1]))
    if following is None:
        raise AppendRefusedError(
            f"the store ends at {have[-1]}, the recipe's last window: add windows to "
            "composite.period to append"
        )
    expected = rule.period(following).label
    if months[0] != expected:
        every = (
            "a monthly store has every month"
            if rule.kind == "month"
            else f"a store has every {unit}"
        )
        raise AppendRefusedError(
            f"the store ends at {have[-1]}: the next {unit} is {expected}, not {months[0]} "
            f"({every}; append {expected}..{months[-1]})"
        )


def store_labels(recipe: Recipe, times: Sequence[str]) -> list[str]:
    """The period labels of a store's times, read with the recipe's period."""
    rule = recipe.composite.period.rule()
    return [label_of_time(t, rule) for t in times]

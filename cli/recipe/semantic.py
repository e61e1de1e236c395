"""Checks across fields, after each field is valid on its own."""

from __future__ import annotations

import math

from cz.recipe.collections import collection_facts
from cz.recipe.sections import NODATA_RANGE, Recipe

Found = list[tuple[tuple[str | int, ...], str]]


def semantic_problems(recipe: Recipe) -> Found:
    """Rules that involve more than one field; each returns the path it is best reported at."""
    return (
        _source_problems(recipe)
        + _band_problems(recipe)
        + _store_problems(recipe)
        + _gap_fill_and_mask_problems(recipe)
        + _composite_problems(recipe)
        + _derived_problems(recipe)
    )


def _source_problems(recipe: Recipe) -> Found:
    """One catalog, one AOI form, an ordered time range."""
    found: Found = []
    cat = recipe.catalog
    if (cat.url is None) == (cat.path is None):
        found.append(
            (("catalog",), "expected exactly one of 'url' (a STAC API) or 'path' (a local file)")
        )
    aoi = recipe.aoi
    given = [k for k in ("bbox", "geometry", "file") if getattr(aoi, k) is not None]
    if len(given) != 1:
        which = f"got {', '.join(given)}" if given else "got none"
        found.append((("aoi",), f"expected exactly one of 'bbox', 'geometry' or 'file'; {which}"))
    return found + _time_problems(recipe)


def _time_problems(recipe: Recipe) -> Found:
    """Months for a monthly store; an ordered range holding at least one period."""
    time = recipe.time
    rule = recipe.composite.period.rule()
    if rule.kind == "month":
        for key in ("start", "end"):
            value = getattr(time, key)
            if len(value) == 10:
                return [
                    (
                        ("time", key),
                        f"expected a month as YYYY-MM (e.g. {value[:7]}), got the date {value}; "
                        "the time range is whole calendar months (days go with a period "
                        "shorter than a month, composite.period)",
                    )
                ]
    if time.first_day > time.last_day:
        return [(("time", "end"), f"end {time.end} is before start {time.start}")]
    if not recipe.periods():
        return [
            (
                ("time",),
                f"no {rule.describe()} period starts between {time.first_day} and {time.last_day}",
            )
        ]
    return []


def _band_problems(recipe: Recipe) -> Found:
    """Unique band names; harmonised bands share one whole digital-number offset."""
    found: Found = []
    names: dict[str, int] = {}
    for i, band in enumerate(recipe.bands):
        if band.name in names:
            found.append(
                (
                    (("bands", i, "name")),
                    f"band name {band.name!r} is also used by bands[{names[band.name]}]",
                )
            )
        names.setdefault(band.name, i)
    facts = collection_facts(recipe.catalog.collection)
    if facts is not None and not facts.sentinel2_offset:
        for i, band in enumerate(recipe.bands):
            if band.harmonize and "harmonize" in band.model_fields_set:
                found.append(
                    (
                        ("bands", i, "harmonize"),
                        f"collection {recipe.catalog.collection} is {facts.title}: its numbers "
                        "carry no Sentinel-2 processing-baseline offset, so there is nothing to "
                        f"harmonise; store them as they are with their scale ({facts.scale:g}) "
                        f"and offset ({facts.offset:g}) and leave harmonize unset",
                    )
                )
        return found
    harmonised = [(i, b) for i, b in enumerate(recipe.bands) if b.harmonize]
    first_offset: tuple[int, float] | None = None
    for i, band in harmonised:
        dn = band.store_dn_offset
        if abs(dn - round(dn)) > 1e-6 * max(1.0, abs(dn)):
            found.append(
                (
                    ("bands", i, "offset" if band.offset is not None else "scale"),
                    f"offset / scale must be a whole number of digital numbers for a harmonised "
                    f"band (offset {band.physical_offset} / scale {band.scale} = {-dn:g})",
                )
            )
            continue
        if first_offset is None:
            first_offset = (i, dn)
        elif round(dn) != round(first_offset[1]):
            found.append(
                (
                    ("bands", i, "offset" if band.offset is not None else "scale"),
                    f"harmonised bands must share one digital-number convention: this band stores "
                    f"numbers with offset {round(dn)}, bands[{first_offset[0]}] with "
                    f"{round(first_offset[1])}",
                )
            )
    return found


def _store_problems(recipe: Recipe) -> Found:
    """Encoding for the dtype (spec 4.1), sharding options, nodata in range, codec levels."""
    found: Found = []
    store = recipe.store
    if store.encoding == "star-delta" and store.dtype not in ("uint8", "uint16"):
        found.append(
            (
                ("store", "encoding"),
                f"star-delta is only valid for uint8 and uint16 (spec 4.1), not {store.dtype}",
            )
        )
    if store.shard_time is not None and not store.shard:
        found.append((("store", "shard_time"), "shard_time is only used with shard: true"))
    if store.nodata is not None:
        low_high = NODATA_RANGE.get(store.dtype)
        if not math.isfinite(store.nodata):  # before int(): .nan/.inf are YAML floats
            found.append((("store", "nodata"), "NaN and infinity are not valid nodata (spec 2.3)"))
        elif low_high is not None:
            low, high = low_high
            if store.nodata != int(store.nodata) or not low <= store.nodata <= high:
                found.append(
                    (
                        ("store", "nodata"),
                        f"expected a whole number in [{low}, {high}] for {store.dtype}; "
                        f"got {store.nodata:g}",
                    )
                )
    codec = store.codec
    level_range = {"zstd": (-7, 22), "gzip": (0, 9), "blosc": (0, 9)}[codec.name]
    if codec.level is not None and not level_range[0] <= codec.level <= level_range[1]:
        found.append(
            (
                ("store", "codec", "level"),
                f"expected a {codec.name} level in [{level_range[0]}, {level_range[1]}]; "
                f"got {codec.level}",
            )
        )
    if codec.name != "blosc":
        for opt in ("cname", "shuffle"):
            if getattr(codec, opt) is not None:
                found.append(
                    (("store", "codec", opt), f"{opt} is a blosc option; the codec is {codec.name}")
                )
    return found


def _gap_fill_and_mask_problems(recipe: Recipe) -> Found:
    """carry-forward needs max_age and only it uses one; the mask asset is not a band's."""
    found: Found = []
    gap = recipe.gap_fill
    if gap.method != "none" and gap.max_age is None:
        found.append(
            (("gap_fill", "max_age"), f"{gap.method} needs max_age (periods), e.g. max_age: 2")
        )
    if gap.method == "none" and gap.max_age is not None:
        found.append(
            (("gap_fill", "max_age"), "max_age is only used with method: carry-forward or linear")
        )
    if recipe.mask is not None:
        for i, band in enumerate(recipe.bands):
            if band.name == "mask":  # the plan keys each item's mask asset by this name
                found.append(
                    (
                        ("bands", i, "name"),
                        "'mask' is reserved for the mask's asset when a mask is set; "
                        "name the band otherwise",
                    )
                )
            if band.name == "cloud" and recipe.mask.cloud_probability_max is not None:
                found.append(  # ... and its cloud-probability asset by this one
                    (
                        ("bands", i, "name"),
                        "'cloud' is reserved for the cloud probability asset when "
                        "mask.cloud_probability_max is set; name the band otherwise",
                    )
                )
        band_assets = {a for b in recipe.bands for a in b.asset or ()}
        clash = band_assets & set(recipe.mask.asset)
        if clash:
            found.append(
                (("mask", "asset"), f"asset {sorted(clash)[0]!r} is both a band and the mask")
            )
        clash = (band_assets | set(recipe.mask.asset)) & set(recipe.mask.cloud_probability_asset)
        if recipe.mask.cloud_probability_max is not None and clash:
            found.append(
                (
                    ("mask", "cloud_probability_asset"),
                    f"asset {sorted(clash)[0]!r} is both the cloud probability and a band or the "
                    "SCL mask",
                )
            )
    return found


def _derived_problems(recipe: Recipe) -> Found:
    """A derived band names bands read from assets, is stored in the store's dtype, and is
    computed per observation only when the method keeps observations."""
    from cz.look.expr import names_in

    found: Found = []
    read = [b for b in recipe.bands if not b.derived]
    known = {b.name for b in read} | {b.common_name for b in read if b.common_name}
    for i, band in enumerate(recipe.bands):
        if band.expression is None:
            continue
        unknown = [n for n in names_in(band.expression) if n not in known]
        if unknown:
            found.append(
                (
                    ("bands", i, "expression"),
                    f"{band.expression!r} names {', '.join(repr(u) for u in unknown)}, which is "
                    f"no band read from an asset (known: {', '.join(sorted(known)) or 'none'})",
                )
            )
        if band.dtype is not None and band.dtype != recipe.store.dtype:
            found.append(
                (
                    ("bands", i, "dtype"),
                    f"the store holds one dtype, {recipe.store.dtype}; store the band in it (with "
                    "a scale and offset its values fit, e.g. offset -1 for NDVI in uint16)",
                )
            )
        if recipe.composite.method == "geomedian" and band.when != "composite":
            found.append(
                (
                    ("bands", i, "when"),
                    "the geometric median is no observation: compute derived bands from the "
                    "composite (when: composite)",
                )
            )
    return found


def _composite_problems(recipe: Recipe) -> Found:
    """``best``'s index names bands (by name or common name) it can rank observations by: those
    read from assets and those derived per observation."""
    found: Found = []
    index = recipe.composite.index
    if index is None:
        return found
    from cz.look.expr import names_in

    ranked = [b for b in recipe.bands if b.when != "composite"]
    known = {b.name for b in ranked} | {b.common_name for b in ranked if b.common_name}
    unknown = [name for name in names_in(index) if name not in known]
    if unknown:
        found.append(
            (
                ("composite", "index"),
                f"index {index!r} names {', '.join(repr(u) for u in unknown)}, which is no band "
                f"name or common name (known: {', '.join(sorted(known))})",
            )
        )
    return found

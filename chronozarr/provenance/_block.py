"""The root's ``chronozarr.provenance`` block (spec 3.8): sources, composite and mask fields,
skipped items (bounded), and the recipe *fingerprint* an append must repeat.

The block stays small whatever the number of source items; the item ids behind each month live
in the ``provenance_items`` array (:mod:`chronozarr.provenance._items`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from chronozarr.errors import ChronozarrError

__all__ = [
    "FINGERPRINT_VERSION",
    "ITEMS_FORMAT",
    "OPTIONAL_FINGERPRINT",
    "PROVENANCE_ITEMS",
    "SKIPPED_LIMIT",
    "FingerprintCheck",
    "Skipped",
    "compare_fingerprint",
    "composite_fields",
    "fingerprint_differences",
    "fingerprint_entry",
    "flatten_fingerprint",
    "items_reference",
    "mask_fields",
    "period_fields",
    "skipped_entries",
    "with_periods",
    "with_skipped_items",
]

#: The root-level array holding one JSON document per month (the items behind it).
PROVENANCE_ITEMS = "provenance_items"
#: What one document of that array holds (recorded in ``provenance.items.format``).
ITEMS_FORMAT = "one JSON document per month: items, solar_days, corrections, skipped"
#: The layout of ``provenance.fingerprint``: ``{"version": 1, "fields": {dotted key: value}}``.
FINGERPRINT_VERSION = 1
#: At most this many skipped (item, asset) pairs in the root (the rest per month in the array).
SKIPPED_LIMIT = 50


class Skipped(Protocol):
    """An (item, asset) left out of a composite because it could not be read."""

    @property
    def item(self) -> str: ...
    @property
    def asset(self) -> str: ...
    @property
    def month(self) -> str: ...
    @property
    def error(self) -> str: ...


# --- the root block ---------------------------------------------------------------------------


def items_reference() -> dict[str, str]:
    """``provenance.items``: where the per-month item documents are and what they hold."""
    return {"array": PROVENANCE_ITEMS, "format": ITEMS_FORMAT}


def composite_fields(
    method: str, parameters: Mapping[str, Any] | None = None, *, period: str = "monthly"
) -> dict[str, Any]:
    """The composite entries of the provenance block: ``composite`` (``"monthly <method>"``, the
    spec 3.8 example's form; ``"dekadal median"``, ``"16-day median"`` for other periods) and,
    when the method has parameters (a percentile's ``q``, the index of ``best``, the geometric
    median's library and tolerance), ``composite_parameters``.

    The median has none, so its block is what it was before other methods existed."""
    if not method or not isinstance(method, str):
        raise ChronozarrError(
            f"provenance: composite method must be a non-empty string, not {method!r}"
        )
    out: dict[str, Any] = {"composite": f"{period} {method}"}
    if parameters:
        out["composite_parameters"] = dict(parameters)
    return out


def mask_fields(
    *,
    open_radius: int = 0,
    dilate_radius: int = 0,
    cloud_probability_max: float | None = None,
    cleaned: Sequence[int | str] = (),
) -> dict[str, Any]:
    """``mask_cleaning`` of the provenance block: the observation-mask rules beyond the class
    keep-set (opening and dilation radii in pixels and the mask classes or flags they apply to,
    the cloud-probability ceiling in percent), only those in use; empty when none is (the block
    stays as it was)."""
    rules: dict[str, Any] = {}
    if open_radius:
        rules["open_pixels"] = int(open_radius)
    if dilate_radius:
        rules["dilate_pixels"] = int(dilate_radius)
    if cloud_probability_max is not None:
        rules["cloud_probability_max"] = cloud_probability_max
    if rules and (open_radius or dilate_radius):
        rules["cleaned"] = list(cleaned)
        rules["order"] = (
            "opening, then dilation, of each solar day's cloud (the cleaned classes and a cloud "
            "probability above the maximum); Euclidean disk"
        )
    return {"mask_cleaning": rules} if rules else {}


def period_fields(
    period: Mapping[str, Any] | None, bounds: Sequence[Sequence[str]]
) -> dict[str, Any]:
    """``period`` and ``periods`` of the provenance block (a spec 3.8 addition, docs/spec.md):
    the kind of period each timestep stands for (``{"kind": "dekad"}``, ``{"kind": "days",
    "days": 5}``, ...) and, per timestep in order, its ``[start, end)`` as ISO times (the start
    is the timestep's time). Empty for calendar months, whose bounds follow from the times: a
    monthly store's block is what it was before periods existed."""
    if not period or period.get("kind", "month") == "month":
        return {}
    return {"period": dict(period), "periods": [[str(a), str(b)] for a, b in bounds]}


def with_periods(
    provenance: Mapping[str, Any] | None, bounds: Sequence[Sequence[str]], first: int
) -> dict[str, Any]:
    """The provenance block with ``periods[first:]`` set to ``bounds`` (an append's new
    timesteps; idempotent, so a re-run of an interrupted append writes the same block). A block
    without ``periods`` (a monthly store) is returned as it is."""
    prov = dict(provenance or {})
    known = prov.get("periods")
    if isinstance(known, list):
        prov["periods"] = list(known[:first]) + [[str(a), str(b)] for a, b in bounds]
    return prov


def skipped_entries(skipped: Iterable[Skipped], limit: int = SKIPPED_LIMIT) -> list[dict[str, str]]:
    """One entry per skipped (item, asset), first occurrence kept, at most ``limit``."""
    seen: dict[tuple[str, str], Skipped] = {}
    for s in skipped:
        seen.setdefault((s.item, s.asset), s)
    return [
        {"item": s.item, "asset": s.asset, "month": s.month, "error": s.error}
        for s in list(seen.values())[:limit]
    ]


#: Fingerprint keys recorded only when they differ from their default (so stores built with the
#: defaults keep their bytes); a fingerprint or a store without one of them holds the default.
OPTIONAL_FINGERPRINT: dict[str, Any] = {"composite_parameters": {}, "mask_cleaning": {}}


def fingerprint_differences(
    provenance: Mapping[str, Any] | None, fingerprint: Mapping[str, Any]
) -> list[tuple[str, Any, Any]]:
    """(key, given, recorded) for every key of ``fingerprint`` that the store's legacy
    ``provenance.build`` holds with another value; empty when the store recorded none. The keys
    of :data:`OPTIONAL_FINGERPRINT` are compared also when one side lacks them (absent means
    their default: a store built with a mask dilation refuses a recipe without one).

    Stores written before :data:`FINGERPRINT_VERSION` 1 recorded only this short fingerprint;
    :func:`compare_fingerprint` falls back on it."""
    recorded = provenance.get("build") if isinstance(provenance, Mapping) else None
    if not isinstance(recorded, Mapping):
        return []
    out = []
    keys = list(fingerprint) + [k for k in OPTIONAL_FINGERPRINT if k not in fingerprint]
    for key in keys:
        value = fingerprint.get(key, OPTIONAL_FINGERPRINT.get(key))
        if key in recorded:
            was = recorded[key]
        elif key in OPTIONAL_FINGERPRINT:  # recorded only when used: absent is the default
            was = OPTIONAL_FINGERPRINT[key]
        else:  # a store from before this key existed: nothing to compare
            continue
        if was != value:
            out.append((key, value, was))
    return out


# --- the recipe fingerprint (what a month means; spec 3.8, 14) --------------------------------


def flatten_fingerprint(sections: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested recipe sections as ``{dotted key: JSON value}``, one entry per field.

    Mappings recurse (``filters.max_cloud_cover``); a list of mappings that all have a ``name``
    is keyed by it (``bands[red].scale``), so reordering is a difference of ``bands`` only;
    other values, lists included (``mask.keep``), are leaves. ``None`` is kept: an explicit
    "not set" differs from a field the store never recorded. Keys are sorted."""
    out: dict[str, Any] = {}
    for key, value in sections.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            out.update(flatten_fingerprint(value, path))
        elif (
            isinstance(value, list)
            and value
            and all(isinstance(v, Mapping) and isinstance(v.get("name"), str) for v in value)
        ):
            out[path] = [v["name"] for v in value]
            for v in value:
                rest = {k: x for k, x in v.items() if k != "name"}
                out.update(flatten_fingerprint(rest, f"{path}[{v['name']}]"))
        else:
            out[path] = _json_value(value)
    return dict(sorted(out.items()))


def _json_value(value: Any) -> Any:
    """The value as it reads back from JSON (tuples become lists, empty mappings ``{}``)."""
    return json.loads(json.dumps(value))


def fingerprint_entry(fields: Mapping[str, Any]) -> dict[str, Any]:
    """``provenance.fingerprint``: the flattened fields (:func:`flatten_fingerprint`)."""
    return {"version": FINGERPRINT_VERSION, "fields": dict(sorted(fields.items()))}


class FingerprintCheck:
    """The outcome of :func:`compare_fingerprint`.

    ``differences``: ``(key, given, recorded)``, ``recorded`` being :data:`NOT_RECORDED` for a
    field the store has no entry for (it was built before the field existed) whose given value
    is not the field's default. ``unchecked``: the given keys that could not be compared at all
    (a store without a recorded fingerprint); ``legacy``: the store had only the old one.
    """

    NOT_RECORDED = "<not recorded>"

    def __init__(
        self,
        differences: list[tuple[str, Any, Any]],
        unchecked: list[str],
        legacy: bool,
    ) -> None:
        self.differences = differences
        self.unchecked = unchecked
        self.legacy = legacy

    @property
    def ok(self) -> bool:
        return not self.differences


def compare_fingerprint(
    provenance: Mapping[str, Any] | None,
    fields: Mapping[str, Any],
    *,
    defaults: Mapping[str, Any] | None = None,
    legacy: Mapping[str, Any] | None = None,
) -> FingerprintCheck:
    """Compare a recipe's flattened fingerprint ``fields`` with the one the store recorded.

    A key the store recorded and the recipe lacks counts as ``None`` in the recipe. A key the
    recipe has and the store did not record (a field added since the store was built) is a
    difference only when its value is not the field's default (``defaults``): the store was built
    when the default behaviour was the only one. A store without ``provenance.fingerprint`` is
    compared on its legacy ``build`` entries (``legacy``: the same recipe in that older form),
    every key of ``fields`` then being ``unchecked``.
    """
    prov = provenance if isinstance(provenance, Mapping) else {}
    entry = prov.get("fingerprint")
    recorded = entry.get("fields") if isinstance(entry, Mapping) else None
    if not isinstance(recorded, Mapping):
        return FingerprintCheck(
            fingerprint_differences(prov, legacy or {}), sorted(fields), legacy=True
        )
    defaults = defaults or {}
    diffs: list[tuple[str, Any, Any]] = []
    for key in sorted(set(fields) | set(recorded)):
        given = _json_value(fields.get(key))
        if key not in recorded:
            if given != _json_value(defaults.get(key)):
                diffs.append((key, given, FingerprintCheck.NOT_RECORDED))
            continue
        if given != recorded[key]:
            diffs.append((key, given, recorded[key]))
    return FingerprintCheck(diffs, [], legacy=False)


def with_skipped_items(
    provenance: Mapping[str, Any] | None, skipped: Sequence[Skipped]
) -> dict[str, Any]:
    """The provenance block with ``skipped`` added to its ``skipped_items`` (kept to
    :data:`SKIPPED_LIMIT`)."""
    prov = dict(provenance or {})
    known = list(prov.get("skipped_items") or [])
    prov["skipped_items"] = (known + skipped_entries(skipped))[:SKIPPED_LIMIT]
    return prov

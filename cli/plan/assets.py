"""Which asset of an item holds a band (pure): asset keys first, then the item's band metadata.

Resolution order for one band (or the mask) and its list of aliases (docs/recipes.md, "Asset
resolution"):

1. The first alias that is an asset key of the item, in the order the recipe lists them.
2. Else, as odc-stac does (``odc.stac._mdtools.alias_map_from_eo``), the first alias that is the
   ``name`` or the ``common_name`` of a band that an asset describes: STAC 1.0 ``eo:bands``, or
   STAC 1.1 ``bands`` (whose common name is ``eo:common_name``). An alias that is itself an asset
   key of the item is never read as a band name (odc-stac's block list). Only single-band assets
   count (we read an asset's first band; a three-band ``visual`` asset is not ``red``); when
   several single-band assets carry the alias, the smallest asset key wins, as in odc-stac.

An item none of whose assets the aliases find is dropped for that reason (rule 1); when no
candidate item at all has it, the plan fails (:func:`missing_asset_problems`).
"""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "AssetCensus",
    "Resolved",
    "band_names_of_assets",
    "did_you_mean",
    "resolve_asset",
]


#: Needs that are not bands (cz.plan.rules.asset_needs), as messages name them.
_WHAT = {"mask": "the mask", "cloud": "the cloud probability"}


@dataclass(frozen=True)
class Resolved:
    """The asset key found for a list of aliases, and how (``key``, ``name``, ``common_name``)."""

    key: str
    via: str
    alias: str


def _asset_bands(asset: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The band objects an asset describes: STAC 1.0 ``eo:bands``, else STAC 1.1 ``bands``."""
    for field_name in ("eo:bands", "bands"):
        bands = asset.get(field_name)
        if isinstance(bands, list) and bands:
            return [b for b in bands if isinstance(b, Mapping)]
    return []


def band_names_of_assets(assets: Mapping[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """``{alias: [(via, asset key), ...]}`` from the single-band assets' band metadata.

    ``via`` is ``name`` or ``common_name``; an alias equal to an asset key is left out (it names
    that asset, not a band). Lists are sorted by asset key (odc-stac's tie break).
    """
    out: dict[str, list[tuple[str, str]]] = {}
    for key, asset in assets.items():
        if not isinstance(asset, Mapping):
            continue
        bands = _asset_bands(asset)
        if len(bands) != 1:
            continue
        band = bands[0]
        for via, value in (
            ("name", band.get("name")),
            ("common_name", band.get("common_name", band.get("eo:common_name"))),
        ):
            if isinstance(value, str) and value and value not in assets:
                entry = out.setdefault(value, [])
                if (via, key) not in entry:
                    entry.append((via, key))
    for entry in out.values():
        entry.sort(key=lambda pair: pair[1])
    return out


def resolve_asset(assets: Mapping[str, Any], aliases: Sequence[str]) -> Resolved | None:
    """The asset of ``assets`` the ``aliases`` find (the module docstring's order), or None."""
    for alias in aliases:
        if alias in assets:
            return Resolved(alias, "key", alias)
    named = band_names_of_assets(assets)
    for alias in aliases:
        found = named.get(alias)
        if found:
            via, key = found[0]
            return Resolved(key, via, alias)
    return None


def did_you_mean(aliases: Iterable[str], keys: Iterable[str]) -> list[str]:
    """Asset keys (or band names) close to one of the aliases (difflib), at most three."""
    keys = sorted(set(keys))
    lowered = {k.lower(): k for k in keys}
    out: list[str] = []
    for alias in aliases:
        for match in difflib.get_close_matches(alias.lower(), list(lowered), n=3, cutoff=0.6):
            if lowered[match] not in out:
                out.append(lowered[match])
    return out[:3]


@dataclass
class AssetCensus:
    """What the candidate items that reached the asset check hold (for rule 1's summary).

    ``items``: how many reached it; ``keys``: how many items have each asset key; ``found``:
    per need (a band name or ``mask``), how many items resolve it and through which key and
    route; ``band_aliases``: the eo:bands names and common names seen; ``missing``: per need, the ids of the items that do not.
    """

    items: int = 0
    keys: Counter[str] = field(default_factory=Counter)
    band_aliases: Counter[str] = field(default_factory=Counter)
    found: dict[str, Counter[tuple[str, str, str]]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)

    def record(
        self, item_id: str, assets: Mapping[str, Any], needs: Mapping[str, Sequence[str]]
    ) -> dict[str, Resolved | None]:
        """Resolve every need of one item; returns ``{need: Resolved | None}``."""
        self.items += 1
        self.keys.update(str(k) for k in assets)
        self.band_aliases.update(band_names_of_assets(assets))
        out: dict[str, Resolved | None] = {}
        for need, aliases in needs.items():
            resolved = resolve_asset(assets, aliases)
            out[need] = resolved
            if resolved is None:
                self.missing.setdefault(need, []).append(item_id)
            else:
                self.found.setdefault(need, Counter())[
                    (resolved.key, resolved.via, resolved.alias)
                ] += 1
        return out

    def absent(self, need: str) -> bool:
        """True when items reached the check and none of them has ``need``."""
        return self.items > 0 and not self.found.get(need)

    def describe_absent(self, need: str, aliases: Sequence[str]) -> str:
        """The message of a need no candidate item has: the aliases tried, the keys there are."""
        what = _WHAT.get(need, f"band {need!r}")
        keys = sorted(self.keys)
        shown = ", ".join(keys[:40]) + (f", ... ({len(keys)} keys)" if len(keys) > 40 else "")
        text = (
            f"no candidate item has an asset for {what}: tried {', '.join(map(repr, aliases))} "
            "as asset keys and as eo:bands / bands name or common_name; the "
            f"{self.items} candidate item(s) have the assets {shown or '(none)'}"
        )
        hints = did_you_mean(aliases, [*keys, *self.band_aliases])
        if hints:
            text += f"; did you mean {' or '.join(map(repr, hints))}?"
        return text

    def summaries(self, names: Mapping[str, Sequence[str]]) -> list[str]:
        """Plan warnings: needs some items lack (a drop each) and needs found by band metadata."""
        lines: list[str] = []
        for need, aliases in names.items():
            what = _WHAT.get(need, f"band {need}")
            missing = self.missing.get(need, [])
            if missing and not self.absent(need):
                lines.append(
                    f"{len(missing)} of {self.items} candidate item(s) have no asset for {what} "
                    f"(tried {', '.join(aliases)}) and are dropped (first: {missing[0]})"
                )
            for (key, via, alias), count in sorted((self.found.get(need) or {}).items()):
                if via != "key":
                    lines.append(
                        f"{what}: found in {count} item(s) as asset {key!r}, whose eo:bands {via} "
                        f"is {alias!r} (no alias is an asset key there)"
                    )
        return lines

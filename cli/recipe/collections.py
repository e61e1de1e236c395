"""What the collections we know offer (docs/recipes.md, "Collections"): which numbers carry the
Sentinel-2 processing-baseline offset, the mask kind, the reflectance scale and offset.

The digital-number harmonisation of ``bands[].harmonize`` (docs/decisions/0003) is a Sentinel-2
L2A matter: since processing baseline 04.00 those numbers carry +1000. Landsat Collection 2
Level-2 surface reflectance (scale 2.75e-05, offset -0.2) and HLS v2 (scale 0.0001, no offset)
carry no such offset, so their bands are stored exactly as the items give them, with their own
scale and offset. ``harmonize`` defaults to whether the collection is Sentinel-2 L2A.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KNOWN_COLLECTIONS", "CollectionFacts", "collection_facts", "harmonised_by_default"]


@dataclass(frozen=True)
class CollectionFacts:
    """One kind of collection: its ids, mask, reflectance numbers and harmonisation."""

    title: str
    ids: tuple[str, ...]
    sentinel2_offset: bool
    mask: str
    scale: float
    offset: float


KNOWN_COLLECTIONS: tuple[CollectionFacts, ...] = (
    CollectionFacts(
        "Sentinel-2 L2A",
        ("sentinel-2-l2a", "sentinel-2-c1-l2a"),
        sentinel2_offset=True,
        mask="SCL classes (`keep`, `clean`); cloud probability on Earth Search C1",
        scale=0.0001,
        offset=-0.1,
    ),
    CollectionFacts(
        "Landsat Collection 2 Level-2",
        ("landsat-c2-l2",),
        sentinel2_offset=False,
        mask="`qa_pixel` bit flags (`bits`, declared in classification:bitfields)",
        scale=2.75e-05,
        offset=-0.2,
    ),
    CollectionFacts(
        "HLS v2 (Harmonized Landsat Sentinel-2)",
        ("hls2-s30", "hls2-l30", "HLSS30_2.0", "HLSL30_2.0", "HLSS30.v2.0", "HLSL30.v2.0"),
        sentinel2_offset=False,
        mask="`Fmask` bit flags (`bits` by position)",
        scale=0.0001,
        offset=0.0,
    ),
)

#: Collection ids we do not list that still hold Sentinel-2 L2A numbers (e.g. sentinel-2-l2a-cogs).
_SENTINEL2_L2A = re.compile(r"sentinel-?2.*l2a", re.IGNORECASE)


def collection_facts(collection: str) -> CollectionFacts | None:
    """The facts of a known collection id (case-insensitive), else ``None``."""
    lowered = collection.lower()
    for facts in KNOWN_COLLECTIONS:
        if lowered in (i.lower() for i in facts.ids):
            return facts
    return None


def harmonised_by_default(collection: str) -> bool:
    """Whether a band's numbers get the Sentinel-2 correction unless the recipe says: yes for
    Sentinel-2 L2A collections (known, or named so), no otherwise."""
    facts = collection_facts(collection)
    if facts is not None:
        return facts.sentinel2_offset
    return _SENTINEL2_L2A.search(collection) is not None

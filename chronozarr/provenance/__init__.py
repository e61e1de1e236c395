"""Provenance (spec 3.8): the root's ``chronozarr.provenance`` block and the
``provenance_items`` array.

The root block stays small whatever the number of source items: the sources, the composite,
the gap-fill, the recipe choices an append must repeat (its *fingerprint*, under
``fingerprint``; stores written before it hold a shorter one under ``build``) and a bounded list
of skipped items (:mod:`~chronozarr.provenance._block`). The item ids behind each month live in
the root-level array ``provenance_items`` (Zarr v3 ``string``, dims ``["time"]``, one chunk per
month holding one JSON document), so the root zarr.json a browser loads first stays small
(:mod:`~chronozarr.provenance._items`).

The toolkit calls these functions; it never reads or writes the JSON itself.
"""

from chronozarr.provenance._block import (
    FINGERPRINT_VERSION,
    ITEMS_FORMAT,
    OPTIONAL_FINGERPRINT,
    PROVENANCE_ITEMS,
    SKIPPED_LIMIT,
    FingerprintCheck,
    Skipped,
    compare_fingerprint,
    composite_fields,
    fingerprint_differences,
    fingerprint_entry,
    flatten_fingerprint,
    items_reference,
    mask_fields,
    period_fields,
    skipped_entries,
    with_periods,
    with_skipped_items,
)
from chronozarr.provenance._items import (
    grown_items_objects,
    items_array_objects,
    items_document,
    read_provenance_items,
    record_periods,
    record_skipped_items,
    write_provenance_items,
)

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
    "grown_items_objects",
    "items_array_objects",
    "items_document",
    "items_reference",
    "mask_fields",
    "period_fields",
    "read_provenance_items",
    "record_periods",
    "record_skipped_items",
    "skipped_entries",
    "with_periods",
    "with_skipped_items",
    "write_provenance_items",
]

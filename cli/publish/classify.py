"""The local store's objects, their upload phases and cache classes (spec 9, 14), and the
re-encode rule. The classes are the format library's (:mod:`chronozarr.io._objects`,
:mod:`chronozarr.format._growth`); this module adds the HTTP headers each class gets."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from chronozarr.errors import ChronozarrError
from chronozarr.format import append_differences
from chronozarr.io import StoreObject, classify_objects
from cz.publish.errors import PublishRefusedError

__all__ = [
    "LONG_CACHE_CONTROL",
    "SHORT_CACHE_CONTROL",
    "cache_control",
    "classify_store",
    "content_type",
    "reencode_differences",
]

#: Objects that an append rewrites in place: a reader or CDN must see the new version soon.
SHORT_CACHE_CONTROL = "public, max-age=60"
#: Every other chunk and shard object: its bytes never change under its key (spec 9, 14).
LONG_CACHE_CONTROL = "public, max-age=31536000, immutable"


def cache_control(obj: StoreObject) -> str:
    """The Cache-Control of an object: short when an append may rewrite it (spec 14)."""
    return SHORT_CACHE_CONTROL if obj.in_place else LONG_CACHE_CONTROL


def content_type(obj: StoreObject) -> str:
    return "application/json" if obj.is_metadata else "application/octet-stream"


def classify_store(source: str | os.PathLike[str]) -> tuple[list[StoreObject], list[str]]:
    """Every object of the local store at ``source`` with its phase and cache class, and the keys
    of files that are not part of the store (skipped: neither metadata nor a chunk of an array).
    The classes are the format library's (:func:`chronozarr.io.classify_objects`)."""
    try:
        return classify_objects(source)
    except ChronozarrError as exc:  # no root, or a zarr.json that does not parse
        raise PublishRefusedError(str(exc)) from exc


def reencode_differences(old_root: Mapping[str, Any], new_root: Mapping[str, Any]) -> list[str]:
    """What in ``new_root`` an append of ``old_root`` could not have produced (spec 14, "What
    stays byte-identical"); empty when ``new_root`` is ``old_root`` grown by zero or more appends.
    Both are root zarr.json documents (:func:`chronozarr.format.append_differences`)."""
    return append_differences(old_root, new_root)

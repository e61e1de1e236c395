"""Constants of the format and the one serializer of a zarr.json document (spec 2.3, 4.1, 8)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = [
    "BLOSC_CNAMES",
    "BLOSC_SHUFFLES",
    "CODEC_NAMES",
    "DELTA_DTYPES",
    "DTYPES",
    "EPSG_RE",
    "SPEC_VERSION",
    "TIME_UNITS",
    "default_nodata",
    "dumps",
]

SPEC_VERSION = "0.2.0"
DTYPES = ("uint8", "uint16", "int16", "float32")  # spec 2.3
DELTA_DTYPES = ("uint8", "uint16")  # spec 4.1: star-delta only for these
CODEC_NAMES = ("zstd", "gzip", "blosc")  # spec 8
BLOSC_CNAMES = ("zstd", "lz4")
BLOSC_SHUFFLES = ("shuffle", "noshuffle")
TIME_UNITS = "milliseconds since 1970-01-01T00:00:00"

EPSG_RE = re.compile(r"^EPSG:(\d+)$", re.IGNORECASE)


def dumps(doc: Mapping[str, Any]) -> bytes:
    """Serialize a zarr.json document (indented, UTF-8, NaN refused)."""
    return json.dumps(doc, indent=2, allow_nan=False).encode("utf-8")


def default_nodata(dtype: str) -> float | int | None:
    """Writer default nodata (spec 2.3): 0 for uint8 and uint16, null for int16 and float32."""
    return 0 if dtype in ("uint8", "uint16") else None

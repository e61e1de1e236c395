"""Parse a store's JSON metadata with limits: every malformed document is a typed error.

``json.loads`` alone lets hostile metadata through as untyped exceptions: nesting deeper than
the interpreter's recursion limit raises ``RecursionError``, an integer of more than 4,300
digits ``ValueError``, ``1e999`` becomes ``inf`` and then ``OverflowError`` where a size is
taken from it, and the non-standard literals ``NaN``/``Infinity`` pass although the writer
refuses them (``metadata.dumps``, allow_nan=False). Here all of them raise
:class:`~chronozarr.errors.CorruptStoreError` naming the document, before any value is used.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError

__all__ = ["MAX_DOCUMENT_BYTES", "MAX_NESTING", "load_json"]

#: Larger than any zarr.json a store writes (a decade of monthly shard_bytes is ~1 MB).
MAX_DOCUMENT_BYTES = 64 << 20
#: Deeper than any metadata the spec describes (provenance included), far below the C limit.
MAX_NESTING = 64


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (RFC 8259 6)")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:20]} is out of range")
    return value


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _depth_ok(raw: bytes | str) -> bool:
    """True when brackets nest at most MAX_NESTING deep (strings removed first): a vectorised
    pre-scan, so the decoder never recurses deeply and later code never meets a deep value."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if data.count(b"[") + data.count(b"{") <= MAX_NESTING:
        return True
    codes = np.frombuffer(_STRING.sub(b"", data), dtype=np.uint8)
    step = (codes == 0x5B).astype(np.int32) + (codes == 0x7B) - (codes == 0x5D) - (codes == 0x7D)
    return codes.size == 0 or int(np.cumsum(step).max()) <= MAX_NESTING


def load_json(raw: bytes | str, where: str, *, allow_nan: bool = False) -> Any:
    """The JSON value of ``raw`` (a zarr.json), or CorruptStoreError naming ``where``.

    ``allow_nan`` passes ``NaN``/``Infinity`` and out-of-range floats through (the validator
    reads them to report the rule they break); readers keep the default and refuse them.
    """
    if len(raw) > MAX_DOCUMENT_BYTES:
        raise CorruptStoreError(f"{where}: {len(raw)} bytes is larger than any metadata document")
    if not _depth_ok(raw):
        raise CorruptStoreError(f"{where}: JSON nested deeper than {MAX_NESTING} levels")
    try:
        if allow_nan:
            return json.loads(raw)
        return json.loads(raw, parse_constant=_no_constant, parse_float=_finite)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, digit limit, NaN, 1e999
        raise CorruptStoreError(f"{where}: invalid JSON ({exc})") from exc

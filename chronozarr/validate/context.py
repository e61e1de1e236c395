"""The state one validation run shares between its checks: the store, the metadata documents
read so far, the report being filled, and small predicates on JSON values.

Checks are functions of a :class:`Context` (one module per spec section). ``add`` takes a rule
id of the catalogue (:mod:`chronozarr.validate.rules`); the finding's section and severity come
from there.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError
from chronozarr.format import ArrayInfo, RootAttrs, load_json
from chronozarr.io import Store
from chronozarr.validate.report import Finding, Report
from chronozarr.validate.rules import rule

__all__ = ["FINDINGS_PER_RULE", "Context", "Stop", "fits", "is_count", "is_transform"]

#: Findings of one rule listed in a report; the rest are counted (``Report.omitted``).
FINDINGS_PER_RULE = 10


class Stop(Exception):
    """Raised when a finding makes further checks meaningless."""


class Context:
    """One validation run: ``store``, ``report``, the documents read and what checks learnt."""

    def __init__(self, store: Store, deep: bool) -> None:
        self.store = store
        self.report = Report(store=store.url, deep=deep)
        self.docs: dict[str, Any] = {}
        self.consolidated: Mapping[str, Any] = {}
        self.where = "zarr.json"  # the metadata document being checked, for findings
        self.attrs: RootAttrs | None = None
        self.levels_from_ms: list[str] | None = None  # level paths of multiscales (3.4)
        self.level_paths: list[str] = []  # level paths the store declares (3.7)
        self.volatility_info: ArrayInfo | None = None
        self._objects: dict[str, int] | None = None
        self._listed = False
        self._per_rule: dict[str, int] = {}

    def add(self, rule_id: str, message: str, key: str) -> None:
        """Record a finding of catalogued rule ``rule_id`` about ``key``: listed for the first
        :data:`FINDINGS_PER_RULE` of a rule, counted in ``report.omitted`` after that (a root
        listing a million bad timesteps is one rule broken a million times, not a million
        lines to read; decision 0013)."""
        r = rule(rule_id)
        shown = self._per_rule.get(r.id, 0)
        if shown >= FINDINGS_PER_RULE:
            self.report.omitted[r.id] = self.report.omitted.get(r.id, 0) + 1
            return
        self._per_rule[r.id] = shown + 1
        self.report.findings.append(Finding(r.id, r.section, r.severity, message, key))

    def count(self, what: str, n: int = 1) -> None:
        self.report.checked[what] = self.report.checked.get(what, 0) + n

    def doc(self, path: str) -> Any:
        """The metadata of ``path`` as the root describes it: its consolidated copy when the root
        has one (spec 3.1, readers' primary source), else its zarr.json. None when absent."""
        self.where = f"{path}/zarr.json" if path else "zarr.json"
        if path and isinstance(self.consolidated.get(path), Mapping):
            entry = self.consolidated[path]
            return {k: v for k, v in entry.items() if k != "consolidated_metadata"}
        return self.disk_doc(path)

    def disk_doc(self, path: str) -> Any:
        """The zarr.json of ``path`` as stored; None when absent."""
        if path in self.docs:
            return self.docs[path]
        key = f"{path}/zarr.json" if path else "zarr.json"
        raw = self.store.get(key)
        value = None
        if raw is not None:
            try:
                value = load_json(raw, key, allow_nan=True)
            except CorruptStoreError as exc:  # bad JSON, too deep, NaN, huge numbers: a finding;
                self.add("json.invalid", str(exc), key)  # the document then reads as absent
                value = None
        self.docs[path] = value
        return value

    def listing(self) -> dict[str, int] | None:
        """Every object and its size, or None when the host cannot list (HTTP)."""
        if not self._listed:
            self._listed = True
            try:
                self._objects = dict(self.store.list(""))
            except Exception:  # any listing failure (UnsupportedError on HTTP): HEAD instead
                self._objects = None
        return self._objects


def is_count(value: Any) -> bool:
    """A JSON non-negative integer that fits uint64 (shapes, lengths)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def fits(value: Any, dtype: str) -> bool:
    """True when ``value`` is a value of the Zarr data type (a valid fill_value, spec 2.3)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if dtype == "float32":  # Zarr rounds a JSON number to the nearest float32
        return math.isfinite(value) and abs(value) <= float(np.finfo(np.float32).max)
    try:
        info = np.iinfo(dtype)
    except ValueError:  # not an integer type: any number is a value
        return True
    return float(value).is_integer() and info.min <= value <= info.max


def is_transform(value: Any) -> bool:
    """Six JSON numbers [a, b, c, d, e, f] (spec 3.3)."""
    return (
        isinstance(value, list | tuple)
        and len(value) == 6
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )

"""What :func:`chronozarr.validate` returns: a :class:`Report` of :class:`Finding` objects."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Finding", "Report"]


@dataclass(frozen=True)
class Finding:
    """One problem: ``rule`` id, spec ``section``, ``severity`` (error|warning), message, key."""

    rule: str
    section: str
    severity: str
    message: str
    key: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class Report:
    """Result of :func:`validate`. ``ok`` is True when there is no error-severity finding.

    ``findings`` lists the first few findings of each rule; ``omitted`` counts, per rule id,
    the findings of that rule that are not listed (``error_count``/``warning_count`` include
    them)."""

    store: str
    deep: bool
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)
    omitted: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def _count(self, severity: str) -> int:
        listed = [f for f in self.findings if f.severity == severity]
        rules = {f.rule for f in listed}
        return len(listed) + sum(n for r, n in self.omitted.items() if r in rules)

    @property
    def error_count(self) -> int:
        """Errors found, listed or not."""
        return self._count("error")

    @property
    def warning_count(self) -> int:
        """Warnings found, listed or not."""
        return self._count("warning")

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "ok": self.ok,
            "deep": self.deep,
            "errors": self.error_count,
            "warnings": self.warning_count,
            "checked": dict(self.checked),
            "findings": [f.to_json() for f in self.findings],
            "omitted": dict(self.omitted),
        }

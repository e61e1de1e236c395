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
    """Result of :func:`validate`. ``ok`` is True when there is no error-severity finding."""

    store: str
    deep: bool
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "ok": self.ok,
            "deep": self.deep,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "checked": dict(self.checked),
            "findings": [f.to_json() for f in self.findings],
        }

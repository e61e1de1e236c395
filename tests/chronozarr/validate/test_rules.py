"""The validator's rule catalogue: unique ids, sections of the spec, the table in docs/spec.md
is current, and every rule has a negative test that triggers it."""

from __future__ import annotations

import ast
import re

from chronozarr.validate.rules import RULES, markdown_table
from tests.conftest import REPO

SPEC_MD = REPO / "docs" / "spec.md"
TESTS = REPO / "tests"


def test_sections_are_sections_of_the_spec() -> None:
    """Every rule cites a section heading of docs/spec.md (e.g. '### 2.4' or '## 5.')."""
    text = SPEC_MD.read_text()
    headings = set(re.findall(r"^#{2,4} (\d+(?:\.\d+)*)\.? ", text, flags=re.M))
    missing = sorted({r.section for r in RULES.values()} - headings)
    assert not missing, f"sections without a heading in docs/spec.md: {missing}"
    assert all(r.severity in ("error", "warning") for r in RULES.values())
    assert all(r.summary and "\n" not in r.summary for r in RULES.values())


def test_docs_table_is_current() -> None:
    text = SPEC_MD.read_text()
    m = re.search(r"<!-- rules:begin -->\n(.*?)<!-- rules:end -->", text, flags=re.S)
    assert m, "docs/spec.md has no <!-- rules:begin --> ... <!-- rules:end --> block"
    assert m.group(1) == markdown_table(), (
        "docs/spec.md's rule table is stale: regenerate it with python scripts/rules_table.py"
    )


def _declared_in_tests() -> dict[str, list[str]]:
    """rule id -> the test files that declare a negative test for it.

    A declaration is a rule id given to ``_assert_finding(report, RULE, ...)``, the rule entry of
    a broken-store case tuple (``(id, base, breaker, RULE, section, key)`` or the malformed-metadata
    form ``(id, breaker, RULE, section)``), or a comparison ``finding.rule == RULE``.
    """
    out: dict[str, list[str]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            ids: list[ast.AST] = []
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "_assert_finding":
                ids = node.args[1:2]
            elif isinstance(node, ast.Tuple) and len(node.elts) == 6:
                ids = node.elts[3:4]
            elif isinstance(node, ast.Tuple) and len(node.elts) == 4:
                ids = node.elts[2:3]
            elif isinstance(node, ast.Compare) and getattr(node.left, "attr", None) == "rule":
                ids = list(node.comparators)
            for c in ids:
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    out.setdefault(c.value, []).append(path.name)
    return out


def test_every_rule_has_a_negative_test() -> None:
    declared = _declared_in_tests()
    untested = sorted(set(RULES) - set(declared))
    assert not untested, f"rules no test triggers: {untested}"


def _looks_like_a_rule(text: str) -> bool:
    """Rule ids are ``area.what`` (every id of the catalogue has this form; a recipe field path
    such as ``bands[2].dtype`` in another suite's 4-tuples has not)."""
    assert all(re.fullmatch(r"[a-z_]+\.[a-z_]+", r) for r in RULES)
    return re.fullmatch(r"[a-z_]+\.[a-z_]+", text) is not None


def test_tests_name_only_catalogued_rules() -> None:
    """A test expecting a rule id the catalogue lacks would pass vacuously: refuse it."""
    declared = _declared_in_tests()
    unknown = sorted(
        rid
        for rid in declared
        if _looks_like_a_rule(rid) and not rid.startswith(("test", "tests")) and rid not in RULES
    )
    assert not unknown, f"tests name rules the catalogue lacks: {unknown}"

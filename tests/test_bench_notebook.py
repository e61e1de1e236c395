"""The benchmark scripts write their sections into the notebook (docs/benchmarks-archive.md), and
the headline table (docs/benchmarks.md) links to sections that exist there.

``bench.common.update_section`` is run on a copy of the notebook: the section of its title is
replaced in place and every other section is kept, byte for byte; a new title is appended. The
scripts' own titles are read from their source, so a renamed section shows here, not after the
next benchmark run has appended a duplicate.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bench import common
from tests.conftest import REPO

NOTEBOOK = REPO / "docs" / "benchmarks-archive.md"
SUMMARY = REPO / "docs" / "benchmarks.md"


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"(?m)^(?=## )", text)
    return {p.splitlines()[0][3:]: p for p in parts if p.startswith("## ")}


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_update_section_replaces_its_section_and_keeps_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = tmp_path / "benchmarks-archive.md"
    doc.write_text(NOTEBOOK.read_text())
    monkeypatch.setattr(common, "BENCH_DOC", doc)
    monkeypatch.setattr(common, "ROOT", tmp_path)
    monkeypatch.setattr(common, "SUMMARY_DOC", tmp_path / "benchmarks.md")
    before = _sections(doc.read_text())
    common.update_section("Composite methods", "| a | b |\n|---|---|\n| 1 | 2 |")
    common.update_section("A section no script wrote before", "new body")
    after = _sections(doc.read_text())
    assert list(after) == [*before, "A section no script wrote before"]
    assert "| 1 | 2 |" in after["Composite methods"] and "_Last run " in after["Composite methods"]
    assert "geomedian" not in after["Composite methods"]  # the old body is gone
    for title, text in before.items():
        if title != "Composite methods":
            assert after[title].rstrip() == text.rstrip(), title
    assert "new body" in after["A section no script wrote before"]


def test_every_script_title_is_a_section_of_the_notebook() -> None:
    titles = set(_sections(NOTEBOOK.read_text()))
    written = set()
    for script in sorted((REPO / "bench").glob("*.py")):
        written |= set(re.findall(r"update_section\(\s*(['\"])(.+?)\1", script.read_text()))
    names = {t for _, t in written}
    assert len(names) >= 10  # the scan found the scripts' calls
    assert not names - titles, f"scripts write sections the notebook lacks: {names - titles}"


def test_the_headline_table_links_to_sections_that_exist() -> None:
    anchors = {_slug(t) for t in _sections(NOTEBOOK.read_text())}
    links = re.findall(r"\(benchmarks-archive\.md#([^)]+)\)", SUMMARY.read_text())
    assert len(links) >= 20  # the table holds its rows
    missing = sorted(set(links) - anchors)
    assert not missing, f"docs/benchmarks.md links to sections the notebook lacks: {missing}"


def test_the_cluster_bench_reports_each_order_apart() -> None:
    """bench_cluster's repeats run 1-2, 2-1, 1-2, ... workers (1-2-2-1 with the default two);
    each order's speed-ups are reported apart, and ``both`` weighs the two orders equally
    (the geometric mean of each order's geometric mean), whatever the number of repeats."""
    from bench.bench_cluster import by_order, run_order

    assert [run_order(r) for r in range(4)] == ["1-2", "2-1", "1-2", "2-1"]
    got = by_order([10.0, 12.0, 9.0], [5.0, 8.0, 5.0])  # repeats: 1-2, 2-1, 1-2
    assert got["1-2"] == [2.0, 1.8] and got["2-1"] == [1.5]
    assert got["both"] == pytest.approx(((2.0 * 1.8) ** 0.5 * 1.5) ** 0.5)
    assert by_order([10.0], [5.0])["both"] is None  # one order only: no mean of both

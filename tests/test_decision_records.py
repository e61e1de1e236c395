"""The decision records say which of them are current, and their index agrees with them.

docs/decisions/README.md defines the vocabulary: one ``- Status:`` line per record, "Accepted",
"Amended by NNNN[, NNNN]" or "Superseded by NNNN"; the later record names what it changes in a
``- Supersedes:`` or ``- Amends:`` line. A reader who opens an old record must be able to trust
its status, and the index must list every record under its own title and status.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

DECISIONS = REPO / "docs" / "decisions"
FILE_NAME = re.compile(r"^(\d{4})-[a-z0-9-]+\.md$")
TITLE = re.compile(r"^# (\d{4}): (\S.*)$")
STATUS = re.compile(
    r"^- Status: (?P<head>Accepted|(?P<kind>Superseded|Amended) by (?P<nums>\d{4}(?:, \d{4})*))"
    r"(?P<rest>\b.*)?$"
)
INDEX_ROW = re.compile(r"^\| (\d{4}) \| \[(.+)\]\(([^)]+)\) \| (.+?) \|$")


@dataclass(frozen=True)
class Record:
    number: str
    path: Path
    title: str
    status: str  # the head: "Accepted", "Amended by 0023, 0027", ...
    names: tuple[str, ...]  # the records the status names
    text: str


def _status_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("- Status:")]


def _parse(path: Path) -> Record:
    text = path.read_text()
    m_file = FILE_NAME.match(path.name)
    assert m_file, f"{path.name}: a record file is NNNN-words-with-hyphens.md"
    first = text.splitlines()[0]
    m_title = TITLE.match(first)
    assert m_title, f"{path.name}: the first line must be '# NNNN: Title', not {first!r}"
    assert m_title.group(1) == m_file.group(1), f"{path.name}: title number {m_title.group(1)}"
    lines = _status_lines(text)
    assert len(lines) == 1, f"{path.name}: one '- Status:' line expected, found {lines}"
    m_status = STATUS.match(lines[0])
    assert m_status, (
        f"{path.name}: {lines[0]!r} is not 'Accepted', 'Amended by NNNN' or 'Superseded by NNNN'"
    )
    nums = tuple(m_status.group("nums").split(", ")) if m_status.group("nums") else ()
    return Record(m_file.group(1), path, m_title.group(2), m_status.group("head"), nums, text)


def _records() -> dict[str, Record]:
    records: dict[str, Record] = {}
    for path in sorted(DECISIONS.glob("*.md")):
        if path.name == "README.md":
            continue
        rec = _parse(path)
        assert rec.number not in records, f"two records numbered {rec.number}"
        records[rec.number] = rec
    return records


def _changes(rec: Record) -> str:
    """The text of a record's ``- Supersedes:`` and ``- Amends:`` lines (with continuations)."""
    out: list[str] = []
    taking = False
    for line in rec.text.splitlines():
        if line.startswith(("- Supersedes:", "- Amends:")):
            taking = True
        elif not line.startswith("  "):
            taking = False
        if taking:
            out.append(line)
    return "\n".join(out)


def test_every_record_has_a_title_and_one_status() -> None:
    records = _records()
    assert len(records) >= 31  # the walk found the records


def test_a_status_names_records_that_exist_and_say_so() -> None:
    records = _records()
    problems: list[str] = []
    for rec in records.values():
        for other in rec.names:
            if other not in records:
                problems.append(f"{rec.number}: '{rec.status}' names {other}, which does not exist")
                continue
            if int(other) <= int(rec.number):
                problems.append(f"{rec.number}: '{rec.status}' names an earlier record, {other}")
            if rec.number not in _changes(records[other]):
                problems.append(
                    f"{rec.number} is '{rec.status}', but {other} has no '- Supersedes:' or "
                    f"'- Amends:' line naming {rec.number}"
                )
    assert not problems, "\n".join(problems)


def test_a_record_that_changes_another_is_in_that_records_status() -> None:
    records = _records()
    problems: list[str] = []
    for rec in records.values():
        for other in sorted(set(re.findall(r"\b(\d{4})\b", _changes(rec)))):
            if other in records and rec.number not in records[other].names:
                problems.append(
                    f"{rec.number} supersedes or amends {other}, whose status is "
                    f"'{records[other].status}' (expected 'Amended by {rec.number}' or "
                    f"'Superseded by {rec.number}')"
                )
    assert not problems, "\n".join(problems)


def test_the_index_lists_every_record_with_its_title_and_status() -> None:
    records = _records()
    rows = [
        INDEX_ROW.match(line)
        for line in (DECISIONS / "README.md").read_text().splitlines()
        if INDEX_ROW.match(line)
    ]
    indexed = {m.group(1): m for m in rows if m}
    assert len(indexed) == len(rows), "a record is listed twice in the index"
    assert sorted(indexed) == sorted(records), (
        f"index and files differ: only in the index {sorted(set(indexed) - set(records))}, "
        f"only as files {sorted(set(records) - set(indexed))}"
    )
    problems: list[str] = []
    for number, m in indexed.items():
        rec = records[number]
        if m.group(3) != rec.path.name:
            problems.append(f"{number}: the index links {m.group(3)}, the file is {rec.path.name}")
        if m.group(2) != rec.title:
            problems.append(f"{number}: the index says {m.group(2)!r}, the record {rec.title!r}")
        if m.group(4) != rec.status:
            problems.append(f"{number}: the index says {m.group(4)!r}, the record {rec.status!r}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(
    ("line", "head"),
    [
        ("- Status: Accepted", "Accepted"),
        ("- Status: Accepted (the JS reader's side of 0013)", "Accepted"),
        ("- Status: Amended by 0023, 0027 (MapLibre moved)", "Amended by 0023, 0027"),
        ("- Status: Superseded by 0015", "Superseded by 0015"),
    ],
)
def test_the_status_pattern_reads_the_vocabulary(line: str, head: str) -> None:
    m = STATUS.match(line)
    assert m is not None and m.group("head") == head


@pytest.mark.parametrize(
    "line",
    ["- Status: accepted", "Status: Accepted", "- Status: Superseded", "- Status: Amended by 23"],
)
def test_the_status_pattern_refuses_other_forms(line: str) -> None:
    assert STATUS.match(line) is None

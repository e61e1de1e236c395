"""No tracked file cites a tracker issue number ("issue 10", "(issue 13)", "Issue 14's",
"issue #14", "(#14)", a file named ``...-issue-10-...``).

The tracker is not part of the repository: a reader of a comment, a docstring, a decision record
or a changelog entry cannot follow "issue 14". A rule cites the decision record
(``docs/decisions/NNNN-*.md``) or the spec section it comes from, or says what it means in words
(CONTRIBUTING.md, the house rules). A link to another project's tracker is a URL
(``.../issues/123``), which the pattern leaves alone.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import REPO
from tests.repository import tracked_files

# "issue 10", "Issues 10", "issue #10", "issue-10" (a file name), "(#10)"
TRACKER = re.compile(r"\b[Ii]ssues?[ -]?#?\d+|\(#\d+\)")

# Generated or third-party files that a person does not edit. cli/_viewer/ is built by
# scripts/vendor-viewer.sh from examples/viewer and js/ (both checked here, so the copy follows
# them); its bundles carry MapLibre's and numcodecs' code, whose text is not ours to change.
SKIP_PREFIXES = ("cli/_viewer/",)
SKIP_NAMES = ("package-lock.json",)
# this module: its docstring and its cases show the forms the pattern finds
SELF = "tests/test_repository_hygiene.py"


def _tracked_files() -> list[str]:
    return tracked_files()


@pytest.mark.parametrize(
    "text",
    [
        "(issue 14)",
        "Issue 10's first frame",
        "issues 10 and 13",
        "see issue #14",
        "0031-issue-10-targets.md",
        "fixed in (#27)",
    ],
)
def test_the_pattern_finds_a_tracker_number(text: str) -> None:
    assert TRACKER.search(text), text


@pytest.mark.parametrize(
    "text",
    [
        "a tissue 3 mm thick",
        "https://github.com/zarr-developers/zarr-python/issues/1234",
        "the issue is the first frame",
        "background: #000;",
        "docs/decisions/0013-hostile-input.md",
    ],
)
def test_the_pattern_leaves_other_text_alone(text: str) -> None:
    assert not TRACKER.search(text), text


def test_no_tracked_file_cites_a_tracker_number() -> None:
    files = _tracked_files()
    assert len(files) > 200, "git ls-files listed too few files for this repository"
    found: list[str] = []
    for rel in files:
        if rel == SELF or rel.startswith(SKIP_PREFIXES) or rel.rsplit("/", 1)[-1] in SKIP_NAMES:
            continue
        if TRACKER.search(rel):
            found.append(f"{rel}: the file name")
        path = REPO / rel
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:  # binary (pictures, fixtures)
            continue
        text = data.decode("utf-8", errors="replace")
        for n, line in enumerate(text.splitlines(), start=1):
            m = TRACKER.search(line)
            if m:
                found.append(f"{rel}:{n}: {m.group(0)!r} in {line.strip()[:120]!r}")
    assert not found, (
        "tracker issue numbers in tracked files (cite the decision record or spec section, or "
        "say what is meant):\n" + "\n".join(found)
    )


# a file a contributor cannot open: the design guide lives in docs/architecture.md
OUTSIDE = re.compile(r"\bDESIGN\.md\b")
# folders the setup creates (`npm ci`, scripts/bootstrap.sh): named, never tracked
GENERATED = {"js/node_modules", ".venv", "js/dist", "out"}
# a placeholder in a path: chronozarr/x.py, tests/cz/test_x.py, docs/decisions/NNNN-*.md
PLACEHOLDER = re.compile(r"(^|/)(test_)?x\.py$|NNNN")


def test_no_tracked_file_sends_the_reader_outside_the_repository() -> None:
    found: list[str] = []
    for rel in _tracked_files():
        if rel == SELF or rel.startswith(SKIP_PREFIXES) or rel.rsplit("/", 1)[-1] in SKIP_NAMES:
            continue
        path = REPO / rel
        if not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue
        for n, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if OUTSIDE.search(line):
                found.append(f"{rel}:{n}: {line.strip()[:120]!r}")
    assert not found, "references to DESIGN.md (now docs/architecture.md):\n" + "\n".join(found)


def test_contributing_names_only_paths_in_the_repository() -> None:
    text = (REPO / "CONTRIBUTING.md").read_text()
    tokens = set(re.findall(r"`([^`\s]+/[^`\s]*)`", text))
    tokens |= {t.split("#")[0] for t in re.findall(r"\]\(([^)]+)\)", text)}
    missing = []
    for token in sorted(tokens):
        if token.startswith(("http://", "https://")) or not token or PLACEHOLDER.search(token):
            continue
        if token.startswith(("tcp://", "s3://", "file://")) or "(" in token:
            continue
        # made by the setup steps CONTRIBUTING describes (npm ci, bootstrap), not tracked
        if token.rstrip("/") in GENERATED:
            continue
        if not ((REPO / token).exists() or any(REPO.glob(token))):
            missing.append(token)
    assert len(tokens) > 50  # the walk found the paths
    assert not missing, f"CONTRIBUTING.md names paths that are not in the repository: {missing}"

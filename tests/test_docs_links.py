"""Every relative link in the repository's Markdown reaches a file, and every ``#anchor`` a heading.

Docs move (a section into the benchmark notebook, a record renamed): a link that no longer
resolves is a dead end for the reader. Anchors follow GitHub's rule: the heading in lower case,
punctuation other than ``-`` and ``_`` dropped, spaces to ``-``, a repeated heading suffixed
``-1``, ``-2``, ...
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO
from tests.repository import tracked_files

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6} (.+?)\s*#*\s*$")
FENCE = re.compile(r"^(```|~~~)")


def slug(heading: str) -> str:
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    fenced = False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        m = None if fenced else HEADING.match(line)
        if m:
            base = slug(m.group(1))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def _markdown_files() -> list[Path]:
    return [REPO / p for p in tracked_files("*.md") if (REPO / p).is_file()]


def test_the_slug_follows_github() -> None:
    assert slug("Choices the spec leaves open (project decisions)") == (
        "choices-the-spec-leaves-open-project-decisions"
    )
    assert slug('xarray backend (engine="chronozarr") vs Reader') == (
        "xarray-backend-enginechronozarr-vs-reader"
    )
    assert (
        slug("Build on a dask cluster: the 1.7x target") == "build-on-a-dask-cluster-the-17x-target"
    )
    assert slug("The `cz` command") == "the-cz-command"


def test_every_relative_link_resolves() -> None:
    files = _markdown_files()
    assert len(files) > 20
    cache: dict[Path, set[str]] = {}
    dead: list[str] = []
    for md in files:
        fenced = False
        for n, line in enumerate(md.read_text().splitlines(), start=1):
            if FENCE.match(line):
                fenced = not fenced
            if fenced:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                    continue
                path_part, _, anchor = target.partition("#")
                dest = (md.parent / path_part).resolve() if path_part else md
                where = f"{md.relative_to(REPO)}:{n}: {target}"
                if not dest.exists():
                    dead.append(f"{where} (no such file)")
                    continue
                if anchor and dest.suffix == ".md":
                    if dest not in cache:
                        cache[dest] = anchors(dest)
                    if anchor not in cache[dest]:
                        dead.append(f"{where} (no heading with that anchor)")
    assert not dead, "links that do not resolve:\n" + "\n".join(dead)

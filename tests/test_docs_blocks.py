"""Docs that run as written: every fenced Python and shell block of README.md and docs/*.md runs
here, or says before itself why it cannot.

A page's blocks run in order in one temporary folder: Python blocks in one namespace (in this
process, the development venv: the ``all`` and ``test`` extras), shell blocks with ``bash -euo
pipefail`` and this venv's ``bin`` first on PATH (so ``cz`` is the checkout's). A block that
raises or exits non-zero fails its page's test, naming the page, the line and the output.
What each extra alone installs is tested by tests/packaging/test_install.py, which runs the
documented commands of each extra in a venv of its own.

Markers, an HTML comment right before the fence (blank lines between are allowed):

- ``<!-- doc-test: not-run REASON -->``: not run offline, and why (a real bucket, the network,
  a server that runs until stopped, the whole suite);
- ``<!-- doc-test: fragment REASON -->``: a piece of a larger program, or pseudo-code;
- ``<!-- doc-test: setup`` + code + ``-->``: code (in the block's language) run just before the
  block, for what the page assumes exists (a store, some GeoTIFFs); hidden from the reader.

Every fence names its language (``text`` for a synopsis), so no shell block escapes as an
unlabelled one. JavaScript and HTML blocks (docs/js.md) are the JS suite's.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MARK = re.compile(
    r"<!--\s*doc-test:\s*(?P<kind>not-run|fragment|setup)\b(?P<rest>.*?)-->\s*\Z", re.S
)
KINDS = {"python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell"}

#: What a page's Python blocks print, as its comments say (checked after the page ran).
PRINTS = {
    "docs/python.md": [
        "times | times: expected 12 times (data axis 0), got 3",
        "None PROJCRS[",
        "('time', 'band', 'y', 'x') float32",
        "32631 (10.0, 0.0, 600000.0, 0.0, -10.0, 5100000.0)",
        "['0', '1', '2']",
        "\n14\n",
        "uint16 0 spatial_ref",
        "0.0001 -0.1",
        "milliseconds since 1970-01-01T00:00:00 1704067200000",
        "['data', 'mask', 'spatial_ref', 'time_bnds']",
        "['red', 'nir', 'mask', 'coverage'] ('time', 'y', 'x')",
        "EPSG:4326 ('time', 'y', 'x')",
        "2024-06-01 2024-06-01",
    ],
}


@dataclass(frozen=True)
class Block:
    page: str  # relative to the repository
    line: int  # of the opening fence
    lang: str
    body: str
    mark: str | None  # not-run, fragment, setup or None
    note: str  # the reason, or the setup code

    @property
    def kind(self) -> str | None:
        return KINDS.get(self.lang)

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


def blocks(text: str, page: str) -> list[Block]:
    """The fenced blocks of a page, each with the marker comment right before it."""
    out: list[Block] = []
    last = 0
    for m in FENCE.finditer(text):
        mark = MARK.search(text, last, m.start())
        kind = note = None
        if mark:
            kind, rest = mark["kind"], mark["rest"]
            setup = kind == "setup"  # code keeps its lines; a reason is one line of words
            note = textwrap.dedent(rest.strip("\n")) if setup else " ".join(rest.split())
        line = text.count("\n", 0, m.start()) + 1
        out.append(Block(page, line, m["lang"].strip(), m["body"], kind, note or ""))
        last = m.end()
    return out


def _page_blocks(path: Path) -> list[Block]:
    return blocks(path.read_text(encoding="utf-8"), path.relative_to(REPO).as_posix())


ALL = [b for page in PAGES for b in _page_blocks(page)]


def run_page(page_blocks: list[Block], folder: Path) -> str:
    """Run a page's blocks in ``folder``; the Python blocks' stdout. Raises AssertionError
    naming the block that failed."""
    namespace: dict[str, object] = {"__name__": "docs_block"}
    printed = io.StringIO()
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env.pop("CZ_DEBUG", None)
    for block in page_blocks:
        if block.kind is None or block.mark in ("not-run", "fragment"):
            continue
        setup = block.note if block.mark == "setup" else ""
        if block.kind == "python":
            code = f"{setup}\n{block.body}" if setup else block.body
            old = Path.cwd()
            os.chdir(folder)
            try:
                with contextlib.redirect_stdout(printed):
                    exec(compile(code, block.where, "exec"), namespace)
            except Exception as exc:
                raise AssertionError(f"{block.where} failed: {exc!r}\n{block.body}") from exc
            finally:
                os.chdir(old)
        else:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", f"{setup}\n{block.body}"],
                cwd=folder,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, (
                f"{block.where} exited {done.returncode}\n{block.body}\n"
                f"stdout: {done.stdout[-2000:]}\nstderr: {done.stderr[-3000:]}"
            )
    return printed.getvalue()


def test_every_fence_names_its_language() -> None:
    bare = [b.where for b in ALL if not b.lang]
    assert not bare, f"fences without a language (use text for a synopsis): {bare}"


def test_a_block_not_run_says_why() -> None:
    """Every Python or shell block runs, or its marker gives a reason of a few words."""
    skipped = [b for b in ALL if b.kind and b.mark in ("not-run", "fragment")]
    short = [b.where for b in skipped if len(b.note.split()) < 3]
    assert not short, f"not-run/fragment markers without a reason: {short}"
    for b in skipped:
        print(f"{b.where} [{b.lang}] {b.mark}: {b.note}")
    ran = [b for b in ALL if b.kind and b.mark not in ("not-run", "fragment")]
    assert len(ran) >= 15, f"only {len(ran)} blocks run"  # the pages' examples, not a few


RUN_PAGES = sorted({b.page for b in ALL if b.kind and b.mark not in ("not-run", "fragment")})


# rioxarray 0.19 (the last for Python 3.11) builds its transform with `*`, which affine 3 deprecates
@pytest.mark.filterwarnings("ignore:Use `@` matmul instead of `\\*` mul:PendingDeprecationWarning")
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs(page: str, tmp_path: Path) -> None:
    printed = run_page([b for b in ALL if b.page == page], tmp_path)
    for text in PRINTS.get(page, []):
        assert text in printed, f"{page} no longer prints {text!r}:\n{printed}"


def test_the_runner_fails_when_a_block_breaks(tmp_path: Path) -> None:
    """The oracle of the runner itself: a raising Python block, a failing shell line in the
    middle of a block, and a setup that is not run without its marker."""
    python = "```python\nx = 1\n```\n\n```python\nassert x == 2, 'x is 1'\n```\n"
    with pytest.raises(AssertionError, match=r"page\.md:5 failed: AssertionError\('x is 1'\)"):
        run_page(blocks(python, "page.md"), tmp_path)
    shell = "<!-- doc-test: setup\ntouch made\n-->\n```bash\nfalse\necho after\n```\n"
    with pytest.raises(AssertionError, match=r"page\.md:4 exited 1"):
        run_page(blocks(shell, "page.md"), tmp_path)
    assert (tmp_path / "made").exists()  # the setup ran first
    skipped = "<!-- doc-test: not-run a real bucket -->\n```bash\nfalse\n```\n"
    run_page(blocks(skipped, "page.md"), tmp_path)  # not run: no error
    (b,) = blocks(skipped, "page.md")
    assert (b.mark, b.note) == ("not-run", "a real bucket")

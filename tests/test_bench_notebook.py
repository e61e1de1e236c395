"""The benchmark scripts write their sections into the notebook (docs/benchmarks-archive.md), and
the headline table (docs/benchmarks.md) links to sections that exist there.

``bench.common.update_section`` is run on a copy of the notebook: the generated block of its
section is replaced in place, the hand-written text around it and every other section are kept,
byte for byte; a new title is appended. bench/js/report.mjs's writer is held to the same rule. The
scripts' own titles are read from their source, so a renamed section shows here, not after the
next benchmark run has appended a duplicate.
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
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


def _notebook_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    doc = tmp_path / "benchmarks-archive.md"
    doc.write_text(NOTEBOOK.read_text())
    monkeypatch.setattr(common, "BENCH_DOC", doc)
    monkeypatch.setattr(common, "ROOT", tmp_path)
    monkeypatch.setattr(common, "SUMMARY_DOC", tmp_path / "benchmarks.md")
    return doc


def _between_markers(section: str) -> str:
    begin, end = section.index(common.GENERATED_BEGIN), section.index(common.GENERATED_END)
    return section[begin:end]


def test_update_section_replaces_only_its_generated_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A script's run replaces the block between its section's markers; the hand-written
    analysis of that section and every other section are kept byte for byte."""
    doc = _notebook_copy(tmp_path, monkeypatch)
    title = "Encode and read (format library)"
    before = _sections(doc.read_text())
    hand = before[title][before[title].index(common.GENERATED_END) :]
    assert "### " in hand  # the section holds hand-written analysis after its block
    common.update_section(title, "| first | run |")
    common.update_section(title, "| second | run |")
    common.update_section("A section no script wrote before", "new body")
    after = _sections(doc.read_text())
    assert list(after) == [*before, "A section no script wrote before"]
    block = _between_markers(after[title])
    assert "| second | run |" in block and "_Last run " in block
    assert "| first | run |" not in after[title]  # the earlier run's block is gone
    assert after[title].endswith(hand) and after[title].count(common.GENERATED_BEGIN) == 1
    for other, text in before.items():
        if other != title:
            assert after[other].rstrip() == text.rstrip(), other
    assert "new body" in _between_markers(after["A section no script wrote before"])


def test_update_section_keeps_a_section_written_before_the_markers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A section without markers (written by hand or before they existed) keeps all its old text
    below the new block: a benchmark run never loses what a person wrote."""
    doc = _notebook_copy(tmp_path, monkeypatch)
    title = "Composite methods"
    old = _sections(doc.read_text())[title]
    assert common.GENERATED_BEGIN not in old
    common.update_section(title, "| a | b |\n|---|---|\n| 1 | 2 |")
    common.update_section(title, "| a | b |\n|---|---|\n| 3 | 4 |")
    new = _sections(doc.read_text())[title]
    assert "| 3 | 4 |" in _between_markers(new) and "| 1 | 2 |" not in new
    assert new.rstrip().endswith(old[old.index("\n") + 1 :].strip())


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_browser_benches_writer_keeps_hand_written_text(tmp_path: Path) -> None:
    """bench/js/report.mjs's writeSection follows the same rule as update_section."""
    doc = tmp_path / "notebook.md"
    doc.write_text("# N\n\n## A\n\nold figures\n\n### analysis\n\nhand\n\n## C\n\nc body\n")
    script = (
        f"import {{ writeSection }} from {json.dumps((REPO / 'bench/js/report.mjs').as_uri())};"
        f"const f = {json.dumps(str(doc))};"
        'writeSection(f, "## A\\n\\nrun 1\\n"); writeSection(f, "## A\\n\\nrun 2\\n");'
        'writeSection(f, "## D\\n\\nd\\n", { after: "## A" });'
    )
    subprocess.run(["node", "--input-type=module", "-e", script], check=True, capture_output=True)
    got = _sections(doc.read_text())
    assert list(got) == ["A", "D", "C"]
    assert "run 2" in _between_markers(got["A"]) and "run 1" not in got["A"]
    assert "old figures" in got["A"] and got["A"].rstrip().endswith("### analysis\n\nhand")
    assert got["C"] == "## C\n\nc body\n"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_ratio_interval_is_the_percentile_bootstrap_of_the_medians() -> None:
    """report.mjs ratioInterval against numpy's own percentile bootstrap of the same runs: the
    viewer's median over the smallest peer median, each library resampled apart."""
    rng = np.random.default_rng(5)
    viewer = rng.normal(610, 40, 60).round().tolist()
    peers = [rng.normal(1000, 70, 60).round().tolist(), rng.normal(1300, 90, 60).round().tolist()]
    same = [600.0] * 9
    script = (
        f"import {{ ratioInterval }} from {json.dumps((REPO / 'bench/js/report.mjs').as_uri())};"
        f"console.log(JSON.stringify([ratioInterval({json.dumps(viewer)}, {json.dumps(peers)}),"
        f" ratioInterval({json.dumps(same)}, [[1000, 1000], [1200]])]));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], check=True, capture_output=True, text=True
    )
    (lo, hi), constant = json.loads(out.stdout)
    assert constant == [0.6, 0.6]  # no spread: the ratio itself
    draws = 20000
    med = lambda v: np.median(rng.choice(np.asarray(v), size=(draws, len(v))), axis=1)  # noqa: E731
    ratios = med(viewer) / np.minimum(*(med(p) for p in peers))
    np_lo, np_hi = np.percentile(ratios, [2.5, 97.5])
    assert abs(lo - np_lo) < 0.01 and abs(hi - np_hi) < 0.01, (lo, hi, np_lo, np_hi)
    assert lo < np.median(viewer) / min(np.median(p) for p in peers) < hi


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_the_paired_interval_is_the_bootstrap_of_the_run_by_run_differences() -> None:
    """report.mjs pairedInterval: the median of ys[i] - xs[i] and its percentile bootstrap
    interval over resampled pairs, against numpy's; a drift shared by both arms cancels."""
    rng = np.random.default_rng(9)
    drift = np.linspace(0, 60, 80)  # the machine slowing down over the A/B
    xs = 600 + drift + rng.normal(0, 25, 80)
    ys = 590 + drift + rng.normal(0, 25, 80)
    script = (
        f"import {{ pairedInterval }} from {json.dumps((REPO / 'bench/js/report.mjs').as_uri())};"
        f"console.log(JSON.stringify(pairedInterval({json.dumps(xs.tolist())}, {json.dumps(ys.tolist())})));"
    )
    out = subprocess.run(
        ["node", "--input-type=module", "-e", script], check=True, capture_output=True, text=True
    )
    got = json.loads(out.stdout)
    diffs = ys - xs
    assert got["median"] == float(np.median(diffs))
    meds = np.median(rng.choice(diffs, size=(20000, diffs.size)), axis=1)
    np_lo, np_hi = np.percentile(meds, [2.5, 97.5])
    assert abs(got["lo"] - np_lo) <= 2.5 and abs(got["hi"] - np_hi) <= 2.5, (got, np_lo, np_hi)
    # The drift falls on both arms of a pair: the arms resampled apart give a wider interval.
    apart = np.median(rng.choice(ys, size=(20000, ys.size)), axis=1) - np.median(
        rng.choice(xs, size=(20000, xs.size)), axis=1
    )
    assert got["hi"] - got["lo"] < np.subtract(*np.percentile(apart, [97.5, 2.5]))


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


CHROMIUM = Path("/usr/bin/chromium")


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="no /usr/bin/chromium (the browser benches' browser)"
)
@pytest.mark.skipif(
    not (REPO / "js" / "node_modules" / "playwright-core").is_dir(),
    reason="js/node_modules has no playwright-core (run npm ci in js/)",
)
def test_a_bare_load_is_read_after_the_page_loaded_on_its_own(tmp_path: Path) -> None:
    """bench/js/bare_browser.mjs loadBare (decision 0028's method, used by peers.mjs and
    first_frame_nodevtools.mjs): the driver page follows its link by itself, the page has loaded
    before anything attaches (no DevTools client during the load), what ``inspect`` reads comes
    back, and no process of that browser is left."""
    site = tmp_path / "site"
    site.mkdir()
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0),
        lambda *a: http.server.SimpleHTTPRequestHandler(*a, directory=str(site)),
    )
    port = server.server_address[1]
    page = f"http://127.0.0.1:{port}/page.html"
    (site / "driver.html").write_text(
        f'<!doctype html><script>setTimeout(() => {{ location.href = "{page}"; }}, 300);</script>'
    )
    (site / "page.html").write_text(
        "<!doctype html><script>window.loadedAt = Date.now();</script><p>page</p>"
    )
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    script = (
        f"import {{ loadBare }} from {json.dumps((REPO / 'bench/js/bare_browser.mjs').as_uri())};"
        "const out = await loadBare({"
        ' args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],'
        f" driverUrl: {json.dumps(f'http://localhost:{port}/driver.html')},"
        f" profileRoot: {json.dumps(str(profiles))}, attachMs: 2500,"
        " inspect: async (browser) => {"
        "  const attachedAt = Date.now();"
        f"  const p = browser.contexts()[0].pages().find((q) => q.url() === {json.dumps(page)});"
        "  return { attachedAt, ...(await p.evaluate(() => ({ loadedAt: window.loadedAt,"
        " referrer: document.referrer }))) };"
        " } });"
        "console.log(JSON.stringify(out));"
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = subprocess.run(
            ["node", "--input-type=module", "-e", script],
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        )
    finally:
        server.shutdown()
        server.server_close()
    got = json.loads(out.stdout)
    assert got["referrer"] == f"http://localhost:{port}/", got  # the driver's own navigation
    assert got["loadedAt"] < got["attachedAt"] - 1000, got  # loaded long before the attach
    left = subprocess.run(["pgrep", "-f", str(profiles)], capture_output=True, text=True)
    assert left.stdout.strip() == "", f"browser processes left: {left.stdout}"

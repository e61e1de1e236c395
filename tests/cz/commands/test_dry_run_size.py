"""``cz build --dry-run`` prints the build's size before anything starts (decision 0050): cells,
tasks, bytes, PUT requests and CPU-hours, as text and under ``"size"`` in ``--json``.

The oracle is independent of cz.plan: the cells of every level from spec 6's rule
(``H_k = ceil(H_0 / 2^k)``, ``ceil(H_k / cs)`` cells, down to the first 1 x 1 level) on the
grid's level-0 shape and the recipe's chunk size, the months counted from the recipe's start
and end, the tasks from decision 0017's plan of a build (one per cell and level, one per cell
the ``auto`` choice samples, spec 4.3), the PUTs from the objects a real build leaves on disk,
and the CPU-hours from the cost model's published constants (docs/scale.md).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from cz.app import app
from cz.conventions import run
from cz.plan import costs
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items

pytestmark = LOADER_WARNINGS


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("size-catalog")
    scenes, _c, _d = scenario()
    write_items(folder, scenes)
    return folder


def _months(start: str, end: str) -> int:
    """Calendar months from ``start`` to ``end`` (``YYYY-MM``), both included."""
    (y0, m0), (y1, m1) = (map(int, start.split("-")), map(int, end.split("-")))
    return (y1 - y0) * 12 + (m1 - m0) + 1


def _cells_per_level(height: int, width: int, cs: int) -> list[int]:
    """Spec 6: levels halve with ceil until the first whose grid is 1 x 1 (included)."""
    out = []
    k = 0
    while True:
        h, w = math.ceil(height / 2**k), math.ceil(width / 2**k)
        rows, cols = math.ceil(h / cs), math.ceil(w / cs)
        out.append(rows * cols)
        if rows == 1 and cols == 1:
            return out
        k += 1


def _dry_run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict, str]:
    assert run(app, ["build", *args, "--dry-run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert run(app, ["build", *args, "--dry-run"]) == 0
    return doc, capsys.readouterr().out


@pytest.mark.parametrize(
    ("start", "end", "chunk", "encoding"),
    [("2024-01", "2024-03", 16, "auto"), ("2023-11", "2024-02", 8, "none")],
)
def test_the_size_is_an_independent_count(
    catalog: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    start: str,
    end: str,
    chunk: int,
    encoding: str,
) -> None:
    path = recipe(catalog, start=start, end=end, chunk=chunk, encoding=encoding, name="r.yaml")
    doc, text = _dry_run(capsys, str(path))
    size = doc["size"]
    height, width = doc["grid"]["shape"]
    months = _months(start, end)
    cells = _cells_per_level(height, width, chunk)
    sample = min(3, cells[0]) if encoding == "auto" else 0
    assert len(cells) > 1  # the case has a pyramid: upper tasks are counted
    assert size["months"] == months
    assert (size["cells"], size["cells_all_levels"]) == (cells[0], sum(cells))
    assert size["cell_months"] == cells[0] * months
    assert (size["level0_tasks"], size["upper_tasks"], size["sample_tasks"]) == (
        cells[0],
        sum(cells[1:]),
        sample,
    )
    assert size["tasks"] == sum(cells) + sample
    # the model: CPU-s per 512 px, 4-band cell-month, per pixel and band, times the items factor
    per_pixel_band = costs.CPU_S_PER_CELL_MONTH / costs.CALIBRATION_CELL_PX**2 / 4
    cpu_s = height * width * months * 2 * per_pixel_band * costs.ITEMS_FACTOR  # 2 bands
    assert size["cpu_hours"] == pytest.approx(cpu_s / 3600, rel=1e-12)
    # the text says the same numbers
    assert f"{cells[0]:,} cells at level 0 ({sum(cells):,} over every level)" in text
    assert f"x {months} months = {cells[0] * months:,} cell-months" in text
    assert f"{size['tasks']:,} tasks ({cells[0]:,} level 0, {sum(cells[1:]):,} upper" in text
    assert f"in {size['puts']:,} PUTs" in text


@pytest.mark.parametrize("shard", [False, True])
def test_the_puts_are_the_objects_a_build_writes(
    catalog: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], shard: bool
) -> None:
    """A local build PUTs each object once: the dry run's count is what lands on disk."""
    encoding = "none\n  shard: true\n  shard_time: 2" if shard else "none"
    path = recipe(catalog, start="2024-01", end="2024-03", encoding=encoding, name="p.yaml")
    store = tmp_path / "s.zarr"
    doc, _text = _dry_run(capsys, str(path), "--out", str(store))
    done = subprocess.run(
        [sys.executable, "-m", "cz", "build", str(path), "--out", str(store), "-q"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    written = sum(1 for p in store.rglob("*") if p.is_file())
    assert doc["size"]["puts"] == written
    assert doc["estimate"]["objects"] == written


def test_a_cluster_build_also_puts_its_work_log(
    catalog: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """With ``--scheduler`` the resumable work log (decision 0017) adds ``started.json``, one
    summary per level-0 and upper task, and the ``auto`` choice. No cluster is contacted."""
    path = recipe(catalog, encoding="auto", name="c.yaml")
    local, _ = _dry_run(capsys, str(path))
    cluster, text = _dry_run(capsys, str(path), "--scheduler", "tcp://127.0.0.1:9")
    size = local["size"]
    extra = 1 + size["level0_tasks"] + size["upper_tasks"] + 1
    assert cluster["size"]["puts"] == local["estimate"]["objects"] + extra
    assert size["puts"] == local["estimate"]["objects"]
    assert "work log" in text

"""Plain progress lines say how fast and how long (decision 0050): a running phase's line carries
its rate and the estimated time left, units a resumed run found done count as done but not in
the rate, and ``CZ_PROGRESS_INTERVAL`` sets how often a running phase writes a line.

The oracle is arithmetic on the figures of the line itself (units left / units per second),
with a clock the test sets; and the lines of a real ``cz build`` in a log (stderr a pipe).
"""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cz import progress as progress_mod
from cz.progress import LineProgress, eta_text, progress_interval
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items

pytestmark = LOADER_WARNINGS

#: ``phase: done/total unit[ (n found done)] in s s (rate unit/s, eta text) so far``
RUNNING = re.compile(
    r"(?P<phase>[a-z]+): (?P<done>[\d,.]+)/(?P<total>[\d,.]+) (?P<unit>[a-z]+)"
    r"(?: \((?P<found>[\d,.]+) found done\))? in (?P<elapsed>[\d.]+) s "
    r"\((?P<rate>[\d.]+) (?P=unit)/s, eta (?P<eta>[\dhmins ]+)\) so far"
)


def _seconds(text: str) -> float:
    """``3 min 5 s`` -> 185 (the inverse of eta_text, written apart)."""
    total = 0.0
    for value, unit in re.findall(r"(\d+) (h|min|s)\b", text):
        total += int(value) * {"h": 3600, "min": 60, "s": 1}[unit]
    return total


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(progress_mod, "clock", fake)
    return fake


def test_a_running_line_has_the_rate_and_the_time_left(clock: Clock) -> None:
    stream = io.StringIO()
    lines = LineProgress(stream, {"cells": "cells"}, interval=0)
    lines.start("cells", 40)
    clock.now += 10
    lines.advance("cells", 4)  # 4 cells in 10 s: 36 left at 0.4 cells/s = 90 s
    clock.now += 10
    lines.advance("cells", 6)  # 10 in 20 s: 30 left at 0.5/s = 60 s
    got = stream.getvalue().splitlines()
    assert got == [
        "cells: 4/40 cells in 10.0 s (0.4 cells/s, eta 1 min 30 s) so far",
        "cells: 10/40 cells in 20.0 s (0.5 cells/s, eta 1 min 0 s) so far",
    ]
    clock.now += 60
    lines.advance("cells", 30)
    lines.finish("cells")  # the last line: no estimate
    assert stream.getvalue().splitlines()[-1] == "cells: 40/40 cells in 80.0 s (0.5 cells/s)"


def test_units_found_done_are_not_in_the_rate(clock: Clock) -> None:
    stream = io.StringIO()
    lines = LineProgress(stream, {"cells": "cells"}, interval=0)
    lines.start("cells", 64)
    lines.skip("cells", 40)  # a resumed run found 40 cells written
    clock.now += 8
    lines.advance("cells", 4)  # this run: 4 in 8 s = 0.5/s; 20 left = 40 s
    clock.now += 40
    lines.advance("cells", 20)
    lines.finish("cells")
    assert stream.getvalue().splitlines() == [
        "cells: 44/64 cells (40 found done) in 8.0 s (0.5 cells/s, eta 40 s) so far",
        "cells: 64/64 cells (40 found done) in 48.0 s (0.5 cells/s, eta 0 s) so far",
        "cells: 64/64 cells (40 found done) in 48.0 s (0.5 cells/s)",
    ]


def test_a_line_every_interval_not_every_unit(clock: Clock) -> None:
    stream = io.StringIO()
    lines = LineProgress(stream, {"months": "months"}, interval=15)
    lines.start("months", 100)
    for _ in range(100):
        clock.now += 1
        lines.advance("months", 1)
    # t = 15, 30, ..., 90 since the start (each line 15 s after the last), then the end
    assert len(stream.getvalue().splitlines()) == 6


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.2, "0 s"), (42.4, "42 s"), (185, "3 min 5 s"), (7800, "2 h 10 min"), (-3, "0 s")],
)
def test_eta_text(seconds: float, text: str) -> None:
    assert eta_text(seconds) == text
    assert _seconds(text) == pytest.approx(max(0, seconds), abs=60 if seconds >= 3600 else 0.5)


@pytest.mark.parametrize(
    ("value", "expected"), [(None, 15.0), ("2.5", 2.5), ("0", 0.0), ("soon", 15.0), ("-1", 15.0)]
)
def test_the_interval_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, value: str | None, expected: float
) -> None:
    if value is None:
        monkeypatch.delenv("CZ_PROGRESS_INTERVAL", raising=False)
    else:
        monkeypatch.setenv("CZ_PROGRESS_INTERVAL", value)
    assert progress_interval() == expected
    assert LineProgress(io.StringIO()).interval == expected


def check_running_lines(stderr: str) -> list[re.Match[str]]:
    """Every running line of a plain-line log, each checked against its own figures: the rate
    is the units this run did over the elapsed time, the estimate the units left at that rate.
    Returns the matches."""
    found = []
    for line in stderr.splitlines():
        m = RUNNING.fullmatch(line)
        if m is None:
            continue
        assert len(line) < 80 and "…" not in line, line
        found.append(m)
        done, total = (float(m[k].replace(",", "")) for k in ("done", "total"))
        skipped = float(m["found"].replace(",", "")) if m["found"] else 0.0
        elapsed, rate = float(m["elapsed"]), float(m["rate"])
        # the printed figures are rounded: counts and elapsed to 0.05, the rate to 2 digits
        ran = (max(done - skipped - 0.05, 0.0), done - skipped + 0.05)
        seconds = (max(elapsed - 0.05, 1e-3), elapsed + 0.05)
        rates = (ran[0] / seconds[1], ran[1] / seconds[0])
        assert rates[0] * 0.94 - 0.05 <= rate <= rates[1] * 1.06 + 0.05, line
        left = (max(total - done - 0.05, 0.0), total - done + 0.05)
        eta = _seconds(m["eta"])
        assert left[0] / rates[1] - 0.5 <= eta <= left[1] / max(rates[0], 1e-9) + 0.5, line
    return found


def test_a_real_build_in_a_log_prints_rates_and_time_left(tmp_path: Path) -> None:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes)
    path = recipe(tmp_path, start="2024-01", end="2024-04", chunk=8)
    done = subprocess.run(
        [sys.executable, "-m", "cz", "build", str(path), "--out", str(tmp_path / "s.zarr")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "CZ_PROGRESS_INTERVAL": "0", "COLUMNS": "80"},
    )
    assert done.returncode == 0, done.stderr
    running = check_running_lines(done.stderr)
    phases = {m["phase"] for m in running}
    assert {"months", "cells"} <= phases, done.stderr
    months = [float(m["done"]) for m in running if m["phase"] == "months"]
    assert months == sorted(months) and months[0] < 4  # lines while it ran, not only at the end
    last = [ln for ln in done.stderr.splitlines() if ln.startswith("months: ")][-1]
    assert re.fullmatch(r"months: 4/4 months in [\d.]+ s \([\d.]+ months/s\)", last), last


def test_the_bars_shrink_to_what_is_left_to_do() -> None:
    """On a terminal, rich computes the rate and ETA from the bar's own completed/total: units
    found done leave the bar (it ends at this run's cells) and are named in its detail."""
    from cz.progress import RichProgress

    bars = RichProgress()
    with bars:
        bars.start("cells", 16, "16 cells x 3 months")
        bars.skip("cells", 4)
        bars.skip("cells", 1)
        bars.advance("cells", 3)
        task = bars.bars.tasks[bars.tasks["cells"]]
        assert (task.total, task.completed) == (11, 3)
        assert task.fields["detail"] == "5 found done; 16 cells x 3 months"
        bars.finish("cells")

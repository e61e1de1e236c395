"""The conventions every ``cz`` command follows (README, "Command line"): --version, -h, completion,
-q/-v and CZ_LOG_LEVEL, JSON errors under --json with the same exit codes, readable non-TTY
progress, no traceback, and ``cz inspect`` saying when a listing failed instead of printing ``?``.

The console script runs as a subprocess where a terminal matters (stderr is then a pipe: the
non-TTY rendering); the rest runs in-process through ``cz.conventions.run``, as the script does.
"""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.app import app
from cz.conventions import run
from tests.conftest import REPO

CZ = [sys.executable, "-m", "cz"]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cv") / "s.zarr"
    rng = np.random.default_rng(1)
    chronozarr.encode(
        rng.integers(1, 3000, size=(6, 2, 40, 36), dtype=np.uint16),
        path,
        times=[f"2024-{m:02d}-01" for m in range(1, 7)],
        bands=["B04", "B08"],
        crs=32631,
        transform=[10, 0, 600000, 0, -10, 5100000],
        chunk_size=16,
        encoding="star-delta",
    )
    return path


def _cz(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [*CZ, *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "80", **(env or {})},
        timeout=300,
    )


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    for flag in ("--version", "-V"):
        assert run(app, [flag]) == 0
        assert capsys.readouterr().out.strip() == f"chronozarr {chronozarr.__version__}"


def test_h_is_help(capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], ["validate"], ["inspect"], ["build"]):
        assert run(app, [*args, "-h"]) == 0
        short = capsys.readouterr().out
        assert run(app, [*args, "--help"]) == 0
        assert capsys.readouterr().out == short
        assert "Usage: cz" in short
        assert "-q/--quiet" in short  # every command's help names the common options
        if not args:
            assert "--install-completion" in short


def test_shell_completion_is_installable() -> None:
    done = _cz("--show-completion", "bash")
    assert done.returncode == 0, done.stderr
    assert "_cz_completion" in done.stdout and "complete " in done.stdout


def test_quiet_and_verbose_anywhere(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(app, ["-v", "validate", str(store)]) == 0
    assert logging.getLogger().level == logging.INFO
    assert run(app, ["validate", str(store), "-vv"]) == 0
    assert logging.getLogger().level == logging.DEBUG
    assert run(app, ["validate", "--deep", str(store), "--quiet"]) == 0
    assert logging.getLogger().level == logging.ERROR
    captured = capsys.readouterr()
    assert captured.out.count("valid:") == 3
    assert "validate:" not in captured.err  # --quiet: no progress


def test_log_level_from_the_environment(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CZ_LOG_LEVEL", "debug")
    assert run(app, ["validate", str(store)]) == 0
    assert logging.getLogger().level == logging.DEBUG
    monkeypatch.setenv("CZ_LOG_LEVEL", "40")
    assert run(app, ["validate", str(store)]) == 0
    assert logging.getLogger().level == 40
    done = _cz("validate", str(store), env={"CZ_LOG_LEVEL": "loud"})
    assert done.returncode == 2 and "CZ_LOG_LEVEL='loud'" in done.stderr
    assert "Traceback" not in done.stderr


def test_info_logs_reach_stderr_with_verbose(tmp_path: Path) -> None:
    code = (
        "import sys, numpy as np, chronozarr\n"
        "from cz.app import app\nfrom cz.conventions import run\n"
        "import logging\n"
        "run(app, ['validate', sys.argv[1], '-v'])\n"
        "logging.getLogger('chronozarr.test').info('an info line')\n"
        "logging.getLogger('chronozarr.test').debug('a debug line')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=REPO
    )
    assert "INFO chronozarr.test: an info line" in done.stderr
    assert "debug line" not in done.stderr


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["validate", "{missing}", "--json"], 1),
        (["inspect", "{missing}", "--json"], 1),
        (["validate", "--json"], 2),  # a usage error: no STORE
        (["validate", "{store}", "--json", "--no-such-option"], 2),
        (["nosuchcommand", "--json"], 2),
    ],
)
def test_json_errors_on_stdout_with_the_same_exit_code(
    store: Path, tmp_path: Path, args: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [a.format(missing=tmp_path / "nothing.zarr", store=store) for a in args]
    assert run(app, args) == code
    done = capsys.readouterr()
    payload = json.loads(done.out)
    assert set(payload) == {"error", "code"} and payload["code"] == code
    assert payload["error"]
    assert run(app, [a for a in args if a != "--json"]) == code
    plain = capsys.readouterr()
    assert plain.out == "" and plain.err.strip()
    assert "Traceback" not in done.err + plain.err


def test_an_invalid_store_is_a_report_not_an_error(store: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken.zarr"
    shutil.copytree(store, broken)
    (broken / "0" / "time" / "zarr.json").unlink()
    root = json.loads((broken / "zarr.json").read_text())
    del root["consolidated_metadata"]["metadata"]["0/time"]
    (broken / "zarr.json").write_text(json.dumps(root))
    done = _cz("validate", str(broken), "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout)["ok"] is False


def test_non_tty_progress_is_one_line_per_phase(store: Path) -> None:
    done = _cz("validate", "--deep", str(store))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    assert re.fullmatch(
        r"validate: [\d.]+ [kMG]?B/[\d.]+ [kMG]?B, [\d,]+ requests in [\d.]+ s \([\d.]+ [kMG]?B/s\)",
        lines[0],
    ), lines[0]
    assert len(lines[0]) < 80 and "…" not in lines[0] and "..." not in lines[0]


def test_convert_in_a_log_prints_plain_lines(tmp_path: Path) -> None:
    """cz convert into a log (stderr not a terminal) prints one plain line per phase, no bar
    glyphs: convert shares the build's progress choice (bars only on a terminal)."""
    import rasterio
    from rasterio.transform import Affine

    folder = tmp_path / "tifs"
    folder.mkdir()
    for month in ("2023-01", "2023-02"):
        with rasterio.open(
            folder / f"red_{month}-01.tif",
            "w",
            driver="GTiff",
            height=32,
            width=32,
            count=1,
            dtype="uint16",
            crs="EPSG:32633",
            transform=Affine(10, 0, 500000, 0, -10, 5000000),
        ) as dst:
            dst.write(np.arange(32 * 32, dtype="uint16").reshape(1, 32, 32))
    done = _cz("convert", str(folder), str(tmp_path / "out.zarr"))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines and all(re.match(r"[a-z ]+: ", line) for line in lines), lines
    assert not re.search("[\u2500-\u259f\u2800-\u28ff]", done.stderr), done.stderr


def test_internal_errors_are_one_line(
    store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ZeroDivisionError("boom")

    monkeypatch.setattr(chronozarr, "validate", boom)
    assert run(app, ["validate", str(store)]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "error: internal error ZeroDivisionError: boom (run with -vv for the traceback)"
    )
    with pytest.raises(ZeroDivisionError):
        run(app, ["validate", str(store), "-vv"])


def test_inspect_over_http_says_the_listing_failed(store: Path) -> None:
    pytest.importorskip("obstore", reason="the remote extra is not installed")
    from tests.chronozarr.helpers import serve_directory

    server, base, _log = serve_directory(store.parent)
    try:
        url = f"{base}/{store.name}"
        done = _cz("inspect", url)
        assert done.returncode == 0, done.stderr
        assert "?" not in done.stdout
        assert "sizes     not listed:" in done.stdout and "cannot list" in done.stdout
        progress = done.stderr.strip().splitlines()
        assert len(progress) == 1 and progress[0].startswith("inspect: "), progress
        as_json = json.loads(_cz("inspect", url, "--json", "-q").stdout)
        assert as_json["listing"]["ok"] is False and "cannot list" in as_json["listing"]["error"]
        assert "objects" not in as_json["levels"][0]
        local = json.loads(_cz("inspect", str(store), "--json").stdout)
        assert local["listing"] == {"ok": True, "error": None}
    finally:
        server.shutdown()
        server.server_close()


def test_line_progress_counts_and_rates() -> None:
    import io

    from cz.progress import LineProgress

    stream = io.StringIO()
    progress = LineProgress(stream, {"cells": "cells", "read": "B"}, interval=3600)
    progress.start("plan")
    progress.finish("plan")
    progress.start("cells", 2)
    for _ in range(6):
        progress.advance("cells", 1 / 3)  # shares of a cell add up to a hair off 2
    progress.finish("cells")
    progress.start("read", 1000)
    progress.advance("read", 1500, requests=3)  # more than the estimate: ends at what was done
    progress.finish("read")
    lines = stream.getvalue().splitlines()
    assert lines[0] == "plan: done in 0.0 s"
    assert re.fullmatch(r"cells: 2/2 cells in [\d.]+ s \([\d.]+ cells/s\)", lines[1]), lines[1]
    assert re.fullmatch(
        r"read: 1\.5 kB/1\.5 kB, 3 requests in [\d.]+ s \([\d.]+ [kMG]?B/s\)", lines[2]
    ), lines[2]
    assert len(lines) == 3


def test_a_broken_recipe_under_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = tmp_path / "r.yaml"
    recipe.write_text("name: [x]\nresolutoin: 10\n")
    assert run(app, ["build", str(recipe), "--dry-run", "--json"]) == 2
    payload = json.loads(capsys.readouterr().out)
    assert payload["code"] == 2 and len(payload["problems"]) >= 2
    assert any("resolutoin" in p for p in payload["problems"])
    assert run(app, ["build", str(recipe), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "unknown key 'resolutoin'" in err and "\\[" not in err  # text, not escaped markup

"""SIGTERM is handled like Ctrl-C by every cz command that writes (decision 0020, cz.signals): a
real ``cz`` subprocess is stopped with ``os.kill(pid, SIGTERM)`` in the middle of its writes; it
exits 143 with one line on stderr and no traceback, and leaves no staging, spill or ``.tmp`` behind.

The child pauses at its first store write (a patched ``LocalStore.put`` or upload), once its
staging and spill exist, and announces it with a file: the signal arrives mid-write by
construction, not by timing luck.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items

pytestmark = LOADER_WARNINGS

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    ready = Path(sys.argv[1])
    where, cls, method = sys.argv[2].split(":")
    import importlib
    owner = getattr(importlib.import_module(where), cls)
    real = getattr(owner, method)
    def paused(*args, **kwargs):
        if not ready.exists():
            ready.write_text("writing")
            time.sleep(4)  # the SIGTERM arrives here (main thread) or while the main thread waits
        return real(*args, **kwargs)
    setattr(owner, method, paused)
    sys.argv = ["cz", *sys.argv[3:]]
    from cz.app import main
    main()
    """
)

PUT = "chronozarr.io:LocalStore:put"


def _terminate(
    tmp_path: Path, patch: str, *args: str, signum: int = signal.SIGTERM
) -> subprocess.CompletedProcess[str]:
    ready = tmp_path / "ready.flag"
    proc = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ready), patch, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    deadline = time.monotonic() + 120
    while not ready.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            out, err = proc.communicate(timeout=5) if proc.poll() is not None else ("", "")
            proc.kill()
            pytest.fail(f"the child never reached its first write: {proc.returncode} {err}")
        time.sleep(0.05)
    os.kill(proc.pid, signum)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _assert_terminated(res: subprocess.CompletedProcess[str]) -> None:
    assert res.returncode == 143, (res.returncode, res.stderr)
    lines = [line for line in res.stderr.splitlines() if line.strip()]
    assert lines[-1] == "terminated (SIGTERM); temporary files removed", res.stderr
    assert not [line for line in lines if line.startswith("error")], res.stderr
    assert "Traceback" not in res.stderr


def _dot_entries(folder: Path) -> list[str]:
    """Hidden names in ``folder`` and ``.tmp`` files below it (what a run may leave)."""
    hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    tmps = [str(p.relative_to(folder)) for p in folder.rglob("*.tmp")]
    return sorted(hidden + tmps)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("sigterm-catalog")
    scenes, _c, _d = scenario()
    write_items(folder, scenes)
    recipe(folder, start="2024-01", end="2024-02")
    return folder


def test_sigterm_during_build_exits_143_and_leaves_nothing(tmp_path: Path, catalog: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    res = _terminate(
        tmp_path, PUT, "build", str(catalog / "recipe.yaml"), "--out", str(out / "s.zarr")
    )
    _assert_terminated(res)
    assert not (out / "s.zarr").exists()
    assert _dot_entries(out) == []


def test_sigterm_during_overwrite_keeps_the_old_store(tmp_path: Path, catalog: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    store = out / "s.zarr"
    rec = str(catalog / "recipe.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "cz", "build", rec, "--out", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    before = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file()}
    res = _terminate(tmp_path, PUT, "build", rec, "--out", str(store), "--overwrite")
    _assert_terminated(res)
    after = {p.relative_to(store): p.read_bytes() for p in store.rglob("*") if p.is_file()}
    assert after == before
    assert _dot_entries(out) == []


def test_sigterm_during_append_leaves_the_store_at_its_old_state(
    tmp_path: Path, catalog: Path
) -> None:
    store = tmp_path / "s.zarr"
    first = recipe(catalog, start="2024-01", end="2024-01", name="first.yaml")
    done = subprocess.run(
        [sys.executable, "-m", "cz", "build", str(first), "--out", str(store)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    res = _terminate(
        tmp_path,
        PUT,
        "append",
        str(catalog / "recipe.yaml"),
        "--store",
        str(store),
        "--month",
        "2024-02",
    )
    _assert_terminated(res)
    assert chronozarr.open_store(store).n_time == 1
    assert chronozarr.validate(store).ok
    assert [p for p in _dot_entries(tmp_path) if p != "ready.flag"] == []


def test_sigterm_during_publish_leaves_no_tmp(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    chronozarr.encode(
        np.arange(2 * 1 * 20 * 20, dtype=np.uint16).reshape(2, 1, 20, 20),
        store,
        times=["2024-01-01", "2024-02-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
    )
    target = tmp_path / "site" / "s.zarr"
    res = _terminate(
        tmp_path,
        "cz.publish.targets:DirectoryTarget:upload",
        "publish",
        str(store),
        str(target),
    )
    _assert_terminated(res)
    assert not (target / "zarr.json").exists()  # the root goes last (spec 9)
    assert list((tmp_path / "site").rglob("*.tmp")) == []


def test_sigterm_during_convert_removes_its_staging(tmp_path: Path) -> None:
    from tests.cz.convert.helpers import write_series

    rng = np.random.default_rng(0)
    write_series(
        tmp_path / "src",
        rng.integers(0, 1000, size=(3, 1, 24, 24)).astype(np.uint16),
        ["2024-01-01", "2024-02-01", "2024-03-01"],
    )
    out = tmp_path / "out"
    out.mkdir()
    res = _terminate(tmp_path, PUT, "convert", str(tmp_path / "src"), str(out / "c.zarr"))
    _assert_terminated(res)
    assert list(out.iterdir()) == []


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_after_the_commit_lets_the_run_finish(tmp_path: Path, signum: int) -> None:
    """Decision 0051: the store is committed (the staging folder renamed into place) and the
    run is releasing its lock when the signal lands: it finishes, exit 0, one line on stderr,
    the store complete and nothing left beside it (a scheduler sees success, no retry)."""
    from tests.cz.convert.helpers import write_series

    rng = np.random.default_rng(0)
    write_series(
        tmp_path / "src",
        rng.integers(0, 1000, size=(2, 1, 16, 16)).astype(np.uint16),
        ["2024-01-01", "2024-02-01"],
    )
    out = tmp_path / "out"
    out.mkdir()
    store = out / "c.zarr"
    res = _terminate(
        tmp_path,
        "cz.build.leftovers:RunLock:release",
        "convert",
        str(tmp_path / "src"),
        str(store),
        signum=signum,
    )
    name = "SIGTERM" if signum == signal.SIGTERM else "SIGINT"
    assert res.returncode == 0, (res.returncode, res.stderr)
    assert "Traceback" not in res.stderr
    assert f"received {name} after the commit; the run finished" in res.stderr
    assert chronozarr.open_store(store).n_time == 2
    assert chronozarr.validate(store).ok
    assert _dot_entries(out) == []

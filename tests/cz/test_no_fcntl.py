"""The command line where ``fcntl`` does not exist (Windows): it imports, runs, and its run locks
fall back to marking a run by its lock file alone (decision 0039).

Each check runs in a child Python whose ``sys.modules["fcntl"]`` is ``None`` (so ``import fcntl``
raises, as on Windows); the child asserts that before it imports anything of ours. This is the
only check of the no-fcntl path: the suite runs on Linux (docs/reliability.md, "Where it is
tested").
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np

import chronozarr
from cz.build import leftovers
from tests.cz.build.test_leftovers import TAG, _dead_run
from tests.cz.convert.helpers import write_series

#: The child's preamble: fcntl is gone before the toolkit is imported.
NO_FCNTL = textwrap.dedent(
    """
    import sys
    sys.modules["fcntl"] = None
    try:
        import fcntl  # noqa: F401
    except ImportError:
        pass
    else:
        raise SystemExit("fcntl is still importable")
    """
)


def _child(code: str, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", NO_FCNTL + textwrap.dedent(code), *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def test_cz_convert_runs_without_fcntl(tmp_path: Path) -> None:
    values = (np.arange(3 * 2 * 12 * 16, dtype=np.uint16).reshape(3, 2, 12, 16) % 500) + 1
    write_series(tmp_path / "src", values, ["20240101", "20240201", "20240301"])
    store = tmp_path / "s.zarr"
    done = _child(
        """
        sys.argv = ["cz", "convert", sys.argv[1], sys.argv[2]]
        from cz._entry import main
        main()
        """,
        str(tmp_path / "src"),
        str(store),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "needs the 'cli' extra" not in done.stderr
    reader = chronozarr.open_store(store)
    assert reader.n_time == 3
    assert (reader.read(2) == values[2]).all()
    # the run removed its lock file (and staging) on the way out, lock or no lock
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_without_fcntl_the_sweep_reports_and_removes_nothing(tmp_path: Path) -> None:
    """With no OS lock a dead run cannot be told from a live one: its files stay. The same
    leftovers are removed where fcntl exists (the control, in this process)."""
    final, work = tmp_path / "site" / "s.zarr", tmp_path / "work"
    _dead_run(final, work)
    before = sorted(p.name for p in final.parent.iterdir())
    assert f".s.zarr.run-{TAG}.lock" in before
    done = _child(
        """
        from pathlib import Path
        from cz.build import leftovers
        found = leftovers.sweep(Path(sys.argv[1]), work_dir=Path(sys.argv[2]))
        print("LIVE", found.live_runs, "DEAD", found.dead_runs, "REMOVED", len(found.paths))
        """,
        str(final),
        str(work),
    )
    assert done.returncode == 0, done.stderr
    assert f"LIVE ['{TAG}'] DEAD [] REMOVED 0" in done.stdout, done.stdout
    assert sorted(p.name for p in final.parent.iterdir()) == before
    swept = leftovers.sweep(final, work_dir=work)  # with fcntl: the run is dead, its files go
    assert swept.dead_runs == [TAG]
    assert [p.name for p in final.parent.iterdir()] == []

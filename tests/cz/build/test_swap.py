"""``--overwrite``'s swap (cz.build.swap) killed at every step, then recovered by the next run's
sweep (cz.build.leftovers): the old store or the new one is at the target at every instant (with
renameat2's exchange), and after the sweep exactly one store is there with nothing left beside
it. The fallback of two renames leaves the target missing for one step, which the sweep repairs.

The kills are real: a child process SIGKILLs itself through ``CZ_FAULT_AT`` (chronozarr.io._faults).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cz.build import leftovers
from cz.build.swap import exchange

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from cz.build import swap
    from cz.build.leftovers import RunLock, tagged_name
    if sys.argv[2] == "fallback":
        swap.exchange = lambda a, b: False
    final = Path(sys.argv[1])
    tag = "0123456789"
    lock = RunLock.acquire(final, tag)
    staging = final.parent / tagged_name(final, "building", tag)
    swap.swap_in(
        staging,
        final,
        final.parent / tagged_name(final, "commit", tag),
        final.parent / tagged_name(final, "replaced", tag),
    )
    lock.release()
    """
)


def _stores(tmp_path: Path) -> Path:
    final = tmp_path / "s.zarr"
    for path, label in ((final, "old"), (tmp_path / ".s.zarr.building-0123456789", "new")):
        (path / "0").mkdir(parents=True)
        (path / "zarr.json").write_text(json.dumps({"zarr_format": 3, "label": label}))
        (path / "0" / "chunk").write_bytes(label.encode() * 100)
    return final


def _label(final: Path) -> str | None:
    try:
        return str(json.loads((final / "zarr.json").read_text())["label"])
    except FileNotFoundError:
        return None


def _run(final: Path, mode: str, fault_at: int | None, trace: Path | None = None) -> int:
    env = dict(os.environ)
    env.pop("CZ_FAULT_AT", None)
    if fault_at is not None:
        env["CZ_FAULT_AT"] = str(fault_at)
    if trace is not None:
        env["CZ_FAULT_TRACE"] = str(trace)
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(final), mode], env=env, capture_output=True, timeout=60
    )
    return proc.returncode


def _kill_points(tmp_path: Path, mode: str) -> int:
    final = _stores(tmp_path / "count")
    trace = tmp_path / "trace.txt"
    assert _run(final, mode, None, trace) == 0
    assert _label(final) == "new"
    return len(trace.read_text().splitlines())


def _can_exchange(tmp_path: Path) -> bool:
    tmp_path.mkdir()
    a, b = tmp_path / "probe-a", tmp_path / "probe-b"
    a.mkdir()
    b.mkdir()
    return exchange(a, b)


@pytest.mark.parametrize("mode", ["exchange", "fallback"])
def test_a_swap_killed_at_every_step_is_recovered(tmp_path: Path, mode: str) -> None:
    if mode == "exchange" and not _can_exchange(tmp_path / "probe"):
        pytest.skip("this system or filesystem has no renameat2(RENAME_EXCHANGE)")
    points = _kill_points(tmp_path, mode)
    assert points == (4 if mode == "exchange" else 5)  # journal, rename(s), two removals
    for n in range(1, points + 1):
        folder = tmp_path / f"kill{n}"
        folder.mkdir()
        final = _stores(folder)
        assert _run(final, mode, n) == -9, f"kill point {n} did not kill"
        during = _label(final)
        if mode == "exchange" or n != 3:  # fallback: between its two renames no store is there
            assert during in ("old", "new"), f"kill point {n}: no store at the target"
        found = leftovers.sweep(final)
        assert found.dead_runs == ["0123456789"]
        after = _label(final)
        assert after in ("old", "new"), f"kill point {n}: nothing at the target after recovery"
        if during == "new":
            assert after == "new"  # never back to the old store once the new one was in place
        assert sorted(p.name for p in folder.iterdir()) == ["s.zarr"], f"kill point {n}"
        assert not leftovers.inspect(final)  # nothing left to report


def test_recovery_restores_the_old_store_when_the_new_one_is_gone(tmp_path: Path) -> None:
    """The fallback's worst case: killed between its renames, then the staging lost (removed by
    hand): the old store comes back from .NAME.replaced-TAG."""
    final = _stores(tmp_path)
    assert _run(final, "fallback", 3) == -9
    assert _label(final) is None
    import shutil

    shutil.rmtree(tmp_path / ".s.zarr.building-0123456789")
    found = leftovers.sweep(final)
    assert _label(final) == "old"
    assert "old one is back" in found.recovered[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]


def test_an_interrupt_during_the_swap_finishes_it_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM between the journal and the exchange: the commit finishes the swap
    before the interrupt goes on (no journal is left for a run that holds no lock any more)."""
    from cz.build import swap
    from cz.build.options import BuildOptions
    from cz.build.target import Target

    final = _stores(tmp_path)
    target = Target.prepare(final, BuildOptions(overwrite=True))
    import shutil

    shutil.rmtree(target.staging)
    shutil.copytree(tmp_path / ".s.zarr.building-0123456789", target.staging)
    shutil.rmtree(tmp_path / ".s.zarr.building-0123456789")
    real = swap.exchange
    calls = []

    def interrupted(a: Path, b: Path) -> bool:
        if not calls:
            calls.append(1)
            raise KeyboardInterrupt
        return real(a, b)

    monkeypatch.setattr(swap, "exchange", interrupted)
    with pytest.raises(KeyboardInterrupt):
        target.commit()
    target.abort()
    target.close()
    assert _label(final) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.zarr"]

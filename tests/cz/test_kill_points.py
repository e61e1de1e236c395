"""The kill-point test (decision 0020): ``cz build``, ``cz build --overwrite``, ``cz append`` and
``cz publish`` SIGKILLed before their N-th durable write step (``CZ_FAULT_AT=N``,
chronozarr.io._faults: the rename of an object's temporary file, a folder rename, a removal), for
sampled N (every N with ``CZ_KILL_POINTS=all``). After each kill:

- the target holds no root describing missing objects: either no store, or a store whose
  objects are exactly those of the old or the new reference run (build, overwrite, publish), or
  (append) a store that validates deep without errors and decodes every old timestep as before;
- the old data decodes (overwrite: the old store or the new one is at the target at every kill
  point; append: every timestep of the old root reads as before);
- a re-run of the same command finishes with exactly the objects of an uninterrupted run, and
  nothing is left beside or inside the target (staging, spill, lock, journal, ``.tmp``).

Everything runs in one folder per scenario, reset between kill points, so paths recorded in
provenance are the same as the reference's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.io import walk
from tests.cz.scenes import LOADER_WARNINGS, recipe, scenario, write_items

#: ``CZ_KILL_POINTS=all``: every kill point; ``CZ_KILL_POINTS=K``: every K-th and the named ones
SWEEP = os.environ.get("CZ_KILL_POINTS", "")
ALL = SWEEP == "all"
STRIDE = int(SWEEP) if SWEEP.isdigit() and int(SWEEP) > 0 else 0

#: a sweep takes minutes per scenario: no per-test timeout then (the CI sample keeps it)
pytestmark = [*LOADER_WARNINGS, *([pytest.mark.timeout(0)] if SWEEP else [])]
#: ``CZ_KILL_REPORT=FILE``: append one JSON line per scenario (points checked, total points)
REPORT = os.environ.get("CZ_KILL_REPORT")


def cz(args: list[str], cwd: Path, fault_at: int | None = None, trace: Path | None = None):
    # no CZ_SWEEP_TMP_AGE: the re-run sweeps the .tmp files a kill just left, whatever their age,
    # because it holds the target's lock (decision 0051)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CZ_FAULT", "CZ_SWEEP_TMP_AGE"))
    }
    if fault_at is not None:
        env["CZ_FAULT_AT"] = str(fault_at)
    if trace is not None:
        env["CZ_FAULT_TRACE"] = str(trace)
    return subprocess.run(
        [sys.executable, "-m", "cz", *args, "-q"],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def objects(store: Path) -> dict[str, str]:
    """Every object of a store (work files excluded) and its sha256."""
    return {k: hashlib.sha256((store / k).read_bytes()).hexdigest() for k, _ in walk(store)}


def litter(folder: Path) -> list[str]:
    """Hidden entries in ``folder`` and temporary/journal files anywhere below it."""
    hidden = [p.name for p in folder.iterdir() if p.name.startswith(".")]
    work = [
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.name.endswith(".tmp") or p.name == ".chronozarr-append.json"
    ]
    return sorted(set(hidden + work))


def kill_points(trace: list[str], *wanted: str, middle: bool = True) -> list[int]:
    """Every kill point with ``CZ_KILL_POINTS=all``; else the CI sample: the steps named in
    ``wanted`` (a prefix of the trace line's ``kind what``), and the middle one."""
    total = len(trace)
    if ALL:
        return list(range(1, total + 1))
    named = {i + 1 for i, line in enumerate(trace) for w in wanted if line.startswith(w)}
    if STRIDE:
        return sorted(named | set(range(1, total + 1, STRIDE)))
    return sorted(named | ({total // 2 + 1} if middle else set()))


def record(name: str, points: list[int], total: int, seconds: float) -> None:
    if REPORT:
        line = {"scenario": name, "checked": len(points), "total": total, "seconds": seconds}
        with open(REPORT, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(line) + "\n")


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("killpoints-catalog")
    scenes, _c, _d = scenario()
    write_items(folder, scenes)
    recipe(folder, start="2024-01", end="2024-03", name="three.yaml")
    recipe(folder, start="2024-01", end="2024-02", name="two.yaml")
    return folder


class Scenario:
    """One command killed at every sampled point: ``setup`` resets the folder, ``args`` is the
    command, ``target`` the path it writes."""

    def __init__(
        self,
        folder: Path,
        setup: Callable[[Path], None],
        args: list[str],
        target: Path,
    ) -> None:
        self.folder, self.setup, self.args, self.target = folder, setup, args, target

    def reset(self) -> None:
        for p in self.folder.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        self.setup(self.folder)

    def reference(self) -> tuple[dict[str, str], list[str]]:
        """(objects of an uninterrupted run, its kill points as ``kind what`` lines)."""
        self.reset()
        trace = self.folder.parent / f"{self.folder.name}.trace"
        trace.unlink(missing_ok=True)
        res = cz(self.args, self.folder, trace=trace)
        assert res.returncode == 0, res.stderr
        points = [line.split(" ", 1)[1] for line in trace.read_text().splitlines()]
        assert points
        return objects(self.target), points

    def kill(self, n: int) -> None:
        self.reset()
        res = cz(self.args, self.folder, fault_at=n)
        assert res.returncode == -9, f"kill point {n} was not reached: {res.stderr}"

    def rerun(self) -> None:
        res = cz(self.args, self.folder)
        assert res.returncode == 0, res.stderr


def _build(catalog: Path, name: str, out: Path) -> None:
    res = cz(["build", str(catalog / name), "--out", str(out)], out.parent)
    assert res.returncode == 0, res.stderr


def assert_recovers_from_kills_before_the_rename(
    sc: Scenario, folder: Path, target: Path, name: str
) -> None:
    """Kill ``sc``'s command at each of its points up to its final rename: before the rename there
    is no store and a re-run writes exactly the uninterrupted run's objects; after it, the whole
    new store; never litter beside the target."""
    new, trace = sc.reference()
    total, started = len(trace), time.monotonic()
    points = kill_points(trace, "rename")
    for n in points:
        sc.kill(n)
        if target.exists():  # only after the final rename: the whole new store
            assert objects(target) == new, f"kill point {n}"
        else:
            sc.rerun()
        assert objects(target) == new, f"kill point {n}"
        assert litter(folder) == [], f"kill point {n}"
    record(name, points, total, time.monotonic() - started)


def test_build_killed_anywhere(catalog: Path, tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    target = folder / "s.zarr"
    sc = Scenario(
        folder, lambda f: None, ["build", str(catalog / "three.yaml"), "--out", str(target)], target
    )
    assert_recovers_from_kills_before_the_rename(sc, folder, target, "build")


def _on_a_built_store(
    catalog: Path, tmp_path: Path, args: Callable[[Path], list[str]]
) -> tuple[Path, Path, Path, Scenario]:
    """(folder, target, seed store, scenario): each run starts from a copy of the store that
    two.yaml builds, at ``folder/s.zarr``; ``args(target)`` is the cz command line."""
    folder = tmp_path / "w"
    folder.mkdir()
    target = folder / "s.zarr"
    seed = tmp_path / "old"
    seed.mkdir()
    _build(catalog, "two.yaml", seed / "s.zarr")
    sc = Scenario(
        folder, lambda f: shutil.copytree(seed / "s.zarr", f / "s.zarr"), args(target), target
    )
    return folder, target, seed / "s.zarr", sc


def test_overwrite_killed_anywhere_keeps_old_or_new(catalog: Path, tmp_path: Path) -> None:
    folder, target, seed_store, sc = _on_a_built_store(
        catalog,
        tmp_path,
        lambda t: ["build", str(catalog / "three.yaml"), "--out", str(t), "--overwrite"],
    )
    old = objects(seed_store)
    new, trace = sc.reference()
    total, started = len(trace), time.monotonic()
    points = kill_points(trace, "journal", "rename", middle=False)
    assert old != new
    for n in points:
        sc.kill(n)
        during = objects(target) if target.exists() else None
        assert during in (old, new), f"kill point {n}: neither store at the target"
        sc.rerun()  # sweeps (finishing the swap), then replaces again
        assert objects(target) == new, f"kill point {n}"
        assert litter(folder) == [], f"kill point {n}"
    record("overwrite", points, total, time.monotonic() - started)


def test_append_killed_anywhere(catalog: Path, tmp_path: Path) -> None:
    folder, target, seed_store, sc = _on_a_built_store(
        catalog,
        tmp_path,
        lambda t: ["append", str(catalog / "three.yaml"), "--store", str(t), "--month", "2024-03"],
    )
    before = chronozarr.open_store(seed_store)
    new, trace = sc.reference()
    total, started = len(trace), time.monotonic()
    points = kill_points(trace, "put volatility", "delete", middle=False)
    for n in points:
        sc.kill(n)
        report = chronozarr.validate(target, deep=True)
        assert report.ok, (n, [f for f in report.findings if f.severity == "error"])
        reader = chronozarr.open_store(target)
        for k in range(len(before.levels)):
            for t in range(before.n_time):
                np.testing.assert_array_equal(reader.read(t, k), before.read(t, k))
        if reader.n_time == before.n_time:
            sc.rerun()
        else:  # killed after the root: the append is complete (its journal is stale)
            assert n >= total - 1, f"kill point {n}: root written before the last step"
            cz(["validate", str(target)], folder)  # read-only: nothing to finish
        assert objects(target) == new, f"kill point {n}"
        if reader.n_time == before.n_time:
            assert litter(folder) == [], f"kill point {n}"
    record("append", points, total, time.monotonic() - started)


def test_publish_to_a_directory_killed_anywhere(catalog: Path, tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    source = tmp_path / "src" / "s.zarr"
    source.parent.mkdir()
    _build(catalog, "three.yaml", source)
    target = folder / "site" / "s.zarr"
    sc = Scenario(folder, lambda f: None, ["publish", str(source), str(target)], target)
    new, trace = sc.reference()
    total, started = len(trace), time.monotonic()
    points = kill_points(trace, "upload zarr.json")
    assert new == objects(source)
    for n in points:
        sc.kill(n)
        if (target / "zarr.json").exists():  # the root goes last: then every object is there
            assert objects(target) == new, f"kill point {n}"
        sc.rerun()
        assert objects(target) == new, f"kill point {n}"
        assert litter(folder / "site") == [] and litter(target) == [], f"kill point {n}"
    record("publish", points, total, time.monotonic() - started)


def _rasters(folder: Path) -> None:
    """Three dated GeoTIFFs (rasterio), 20 x 24 px: the source of a conversion."""
    import numpy as np
    import rasterio
    from rasterio.transform import Affine

    src = folder / "src"
    src.mkdir()
    for i, date in enumerate(["2024-01-01", "2024-02-01", "2024-03-01"]):
        with rasterio.open(
            src / f"r_{date}.tif", "w", driver="GTiff", width=24, height=20, count=1,
            dtype="uint16", crs="EPSG:32631", transform=Affine(10, 0, 600000, 0, -10, 5100000),
        ) as ds:  # fmt: skip
            ds.write((np.arange(480, dtype="uint16").reshape(1, 20, 24) + 7 * i) % 400)


def test_convert_killed_anywhere(tmp_path: Path) -> None:
    """``cz convert`` (its windows reach the writer as a cell source) killed at any durable
    step: no store, or the whole new one; the re-run writes exactly an uninterrupted run's
    objects and leaves nothing beside the target (its dead run's staging is swept)."""
    folder = tmp_path / "w"
    folder.mkdir()
    target = folder / "s.zarr"
    args = ["convert", str(folder / "src"), str(target), "--chunk-size", "8"]
    sc = Scenario(folder, _rasters, args, target)
    assert_recovers_from_kills_before_the_rename(sc, folder, target, "convert")

"""Shared fixtures: where the shared fixtures live, small synthetic series, and the fuzz harness's
base stores (built once per session for the hostile-input tests of both packages)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

from tests.fuzz.stores import BASES, build_base

# No per-example deadline anywhere: the machine is shared (load 4-20 beside other work), so a
# deadline fails a correct example that waited for a core ("Unreliable test timings"), and
# performance is measured in bench/, not asserted in tests (docs/benchmarks.md).
settings.register_profile("shared-machine", deadline=None)
# CI runs the property tests derandomized: the same examples every run, so a landing is never
# decided by a newly drawn example (developers' runs still explore; `.hypothesis/` keeps failures).
settings.register_profile(
    "ci", parent=settings.get_profile("shared-machine"), derandomize=True, print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") == "true" else "shared-machine")

REPO = Path(__file__).resolve().parents[1]
#: the read-only real-world fixtures beside the checkout (``CZ_SHARED_FIXTURES`` names them for a
#: checkout elsewhere, e.g. a git worktree)
SHARED_FIXTURES = Path(os.environ.get("CZ_SHARED_FIXTURES") or REPO.parent / "shared" / "fixtures")


def synthetic_series(
    n_time: int = 7,
    n_band: int = 2,
    height: int = 37,
    width: int = 29,
    dtype: str = "uint16",
    seed: int = 0,
) -> np.ndarray:
    """A (time, band, y, x) series with a seasonal signal and noise, in ``dtype``."""
    rng = np.random.default_rng(seed)
    t = np.arange(n_time)[:, None, None, None]
    base = rng.integers(500, 3000, size=(1, n_band, height, width))
    season = 400 * np.sin(2 * np.pi * t / 12)
    noise = rng.normal(0, 30, size=(n_time, n_band, height, width))
    values = base + season + noise
    if dtype == "uint8":
        values = values / 16
    if dtype == "int16":
        values = values - 1500
    if dtype == "float32":
        return (values / 10000).astype(np.float32)
    info = np.iinfo(dtype)
    return np.clip(np.rint(values), info.min, info.max).astype(dtype)


def monthly(n: int, start_year: int = 2024) -> list[str]:
    return [f"{start_year + m // 12}-{m % 12 + 1:02d}-01T00:00:00Z" for m in range(n)]


@pytest.fixture
def series() -> np.ndarray:
    return synthetic_series()


@pytest.fixture(scope="session")
def fuzz_bases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fuzz-bases")
    return {name: build_base(name, root) for name in BASES}


@pytest.fixture
def store_copy(fuzz_bases: dict[str, Path], tmp_path: Path):
    """copy(name) -> a fresh copy of a base store under tmp_path/case/store."""

    def copy(name: str = "none-zstd") -> Path:
        dest = tmp_path / "case" / "store"
        shutil.copytree(fuzz_bases[name], dest)
        return dest

    return copy


#: session fixtures that start servers or processes a worker would otherwise start for itself
SHARED_SERVERS = frozenset({"dask_procs"})
#: the tests that took 25 s or more under load (``--durations``, docs/benchmarks-archive.md "Test
#: suite"): marked ``slow`` here and handed out first; a test missing from the list only starts
#: later, which costs wall time, never a result
LONG = (
    "tests/test_docs_blocks.py",
    "tests/test_collection.py",
    "tests/cz/test_kill_points.py",
    "tests/cz/test_signals.py",
    "tests/cz/build/test_swap.py",
    "tests/cz/build/test_appending.py",
    "tests/cz/build/test_executor.py::test_cluster_build_equals_local_build",
    "tests/cz/composite/test_methods.py::test_geomedian",
    "tests/cz/test_app.py::test_demo_build_validate_append_from_the_cli",
    "tests/chronozarr/test_temporal.py::test_residual_inverse_all_uint16_pairs",
    "tests/chronozarr/test_writer.py::test_roundtrip_property",
    "tests/fuzz/test_fuzz_slice.py",
    "tests/remote/test_concurrent_writers.py",
    "tests/remote/test_cluster_faults.py",
)
#: modules whose module fixture is costly and whose tests are all slow: one worker builds it once
#: (tests/packaging/test_install.py: the wheel)
ONE_WORKER_MODULES = ("tests/packaging/test_install.py",)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadgroup``, scripts/test.sh):

    - the tests that use the session dask cluster (``dask_procs``: a scheduler and two worker
      processes, tests/remote/) run on one worker, which starts it once; so do the tests of
      ``ONE_WORKER_MODULES``; every other test goes to whichever worker is free;
    - the tests marked ``slow`` are handed out first (the longest jobs first, so the two workers
      end together instead of one finishing a long test alone at the end).

    ``tryfirst``: xdist's own hook turns the ``xdist_group`` mark into the node id's group
    suffix, so the mark must be added before it runs (added after, it groups nothing)."""
    for item in items:
        if SHARED_SERVERS & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("dask-cluster"))
        elif item.nodeid.startswith(ONE_WORKER_MODULES):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
        if item.nodeid.startswith(LONG):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable: order kept

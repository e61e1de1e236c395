"""Shared fixtures: where the shared fixtures live, small synthetic series, and the fuzz harness's
base stores (built once per session for the hostile-input tests of both packages)."""

from __future__ import annotations

import os
import re
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


#: the tests that took 25 s or more under load (``--durations``, docs/benchmarks-archive.md "Test
#: suite"): marked ``slow`` here and handed out first; a test missing from the list only starts
#: later, which costs wall time, never a result
LONG = (
    "tests/test_docs_blocks.py",
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


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The tests of ``LONG`` are marked ``slow`` and handed out first (under pytest-xdist the
    longest jobs first, so the two workers end together instead of one finishing a long test
    alone at the end); the order is otherwise kept."""
    for item in items:
        if item.nodeid.startswith(LONG):
            item.add_marker(pytest.mark.slow)
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # stable


try:
    from xdist.scheduler import LoadGroupScheduling
except ImportError:  # pytest-xdist is in the test extra; without it the suite runs in one process
    LoadGroupScheduling = None


#: the modules that use the session dask cluster (``dask_procs``, tests/remote/conftest.py: a
#: scheduler and two worker processes): one worker runs them all and starts it once
DASK_CLUSTER_MODULES = frozenset(
    path.relative_to(REPO).as_posix()
    for path in (REPO / "tests").rglob("test_*.py")
    if re.search(r"\bdask_procs\s*:", path.read_text(encoding="utf-8"))  # a test's argument
)
#: modules whose module fixture is costly (tests/packaging/test_install.py: the wheel): one
#: worker runs the module and builds it once
ONE_WORKER_MODULES = frozenset({"tests/packaging/test_install.py"})

if LoadGroupScheduling is not None:

    class SharedSetupScheduling(LoadGroupScheduling):  # type: ignore[misc,valid-type]
        """``--dist loadgroup`` with the groups above. pytest-xdist 3.8 groups by a suffix it
        writes into the node id from the ``xdist_group`` mark, which pytest 9 no longer lets it
        write (``Node.nodeid`` reads ``_id``): the mark groups nothing, and both workers started
        a dask cluster. The scheduler groups by module path instead; xdist sorts the groups by
        size, so they are handed out before the single tests."""

        def _split_scope(self, nodeid: str) -> str:
            module = nodeid.split("::", 1)[0]
            if module in DASK_CLUSTER_MODULES:
                return "dask-cluster"
            if module in ONE_WORKER_MODULES:
                return module
            return str(super()._split_scope(nodeid))

    def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
        """The scheduler of ``--dist loadgroup`` (scripts/test.sh); xdist's own otherwise."""
        if config.getvalue("dist") == "loadgroup":
            return SharedSetupScheduling(config, log)
        return None

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

# CI runs the property tests derandomized: the same examples every run, so a landing is never
# decided by a newly drawn example (developers' runs still explore; `.hypothesis/` keeps failures).
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI") == "true":
    settings.load_profile("ci")

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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``-n 2 --dist loadgroup``, scripts/test.sh) the tests of tests/remote/
    run on one worker: they share session servers (moto, a dask scheduler and its workers, the
    served stores), which each worker would otherwise start for itself, on the same 2 cores."""
    for item in items:
        if item.nodeid.startswith("tests/remote/"):
            item.add_marker(pytest.mark.xdist_group("remote"))

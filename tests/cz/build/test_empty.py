"""A build whose every item is unusable fails with exit 1 and one line (decision 0020): before it
exited 0 with a store of fill values. ``--allow-empty`` writes the store anyway."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

import chronozarr
from cz.app import app
from tests.cz.scenes import LOADER_WARNINGS, constant_scene, recipe, write_items

pytestmark = LOADER_WARNINGS


@pytest.fixture
def cloudy(tmp_path: Path) -> Path:
    """Two months of items that are cloud (SCL 9) everywhere: no valid pixel at all."""
    scenes = [
        constant_scene("S2B_31TFJ_20240105_0_L2A", "2024-01-05T10:30:00Z", 900, 2000, scl=9),
        constant_scene("S2B_31TFJ_20240210_0_L2A", "2024-02-10T10:30:00Z", 900, 2000, scl=9),
    ]
    write_items(tmp_path, scenes)
    return recipe(tmp_path, start="2024-01", end="2024-02")


def test_a_build_without_a_valid_pixel_fails_with_one_line(cloudy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    res = CliRunner().invoke(app, ["build", str(cloudy), "--out", str(out / "s.zarr")])
    assert res.exit_code == 1, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "no valid pixel" in errors[0], res.stderr
    assert "2 item(s) of 2 month(s)" in errors[0] and "--allow-empty" in errors[0]
    assert "Traceback" not in res.output
    assert list(out.iterdir()) == []  # no store, no staging, no spill


def test_allow_empty_writes_the_store(cloudy: Path, tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    res = CliRunner().invoke(app, ["build", str(cloudy), "--out", str(store), "--allow-empty"])
    assert res.exit_code == 0, res.output
    reader = chronozarr.open_store(store)
    assert reader.n_time == 2
    assert int(reader.read_coverage(0).max()) == 0

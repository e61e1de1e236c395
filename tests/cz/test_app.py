"""``cz build`` and ``cz append`` from the command line, on the offline demo catalog."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz import output
from cz.app import app
from cz.build import read_provenance_items
from cz.demo_catalog import DemoLayout, generate
from tests.cz.scenes import LOADER_WARNINGS, listing

pytestmark = LOADER_WARNINGS

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of recipes/demo.yaml with the demo catalog generated where it looks for it."""
    root = tmp_path_factory.mktemp("demo")
    (root / "recipes").mkdir()
    shutil.copy(REPO / "recipes" / "demo.yaml", root / "recipes" / "demo.yaml")
    generate(root / "out" / "demo-catalog")
    return root


def run(*args: str) -> object:
    output.out.width = 200
    output.err.width = 200
    return CliRunner().invoke(app, list(args), catch_exceptions=False)


def test_demo_build_validate_append_from_the_cli(demo: Path) -> None:
    recipe = demo / "recipes" / "demo.yaml"
    store = demo / "out" / "demo.zarr"
    result = run("build", str(recipe), "--out", str(store), "--workers", "2")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"built {store} in ")
    assert "12 month(s) (2023-01 .. 2023-12; 1 empty: 2023-03), 4 bands" in lines[1]
    assert "66 items read, 33 solar-day observations" in lines[2]
    for phase in ("months", "cells", "pyramid"):
        assert phase in result.stderr  # progress on stderr
    assert "1 of 12 month(s) have no items: 2023-03" in result.stderr
    assert chronozarr.validate(store, deep=True).ok

    reader = chronozarr.open_store(store)
    assert reader.band_names == ("blue", "green", "red", "nir")
    mask, cov = reader.read_mask(2), reader.read_coverage(2)
    assert (cov == 0).all() and (mask == 1).all()  # March: all carried from February
    assert np.array_equal(reader.read(2), reader.read(1))
    # November: the cloud bank's pixels are unobserved, valid, and hold October's values
    bank = reader.read_coverage(10) == 0
    assert 0.2 < bank.mean() < 0.5
    assert (reader.read_mask(10)[bank] == 1).all()
    assert np.array_equal(reader.read(10)[:, bank], reader.read(9)[:, bank])
    # overlapping tiles counted once: at most three overpasses a month
    assert max(int(reader.read_coverage(t).max()) for t in range(12)) == 3
    # the baseline change in July is corrected: no +1000 jump between June and July
    red_june = reader.read(5)[2].astype(float).mean()
    red_july = reader.read(6)[2].astype(float).mean()
    assert abs(red_july - red_june) < 300
    assert reader.attrs.provenance["gap_fill"] == "carry-forward"
    # the root stays small: it grows with the bands (the recipe fingerprint records each band's
    # fields, ~2 kB for these 4), never with the items, which live in provenance_items
    assert len(json.dumps(reader.attrs.provenance)) < 4096
    assert read_provenance_items(store)[4]["items"][0].startswith("S2B_31TFJ_20230505")

    appended = run("append", str(recipe), "--month", "2024-01", "--store", str(store), "--json")
    assert appended.exit_code == 0, appended.stderr
    summary = json.loads(appended.stdout)
    assert summary["action"] == "append" and summary["months"] == ["2024-01"]
    assert chronozarr.open_store(store).n_time == 13
    assert chronozarr.validate(store, deep=True).ok

    before = listing(store)
    again = run("append", str(recipe), "--month", "2024-01", "--store", str(store))
    assert again.exit_code == 1
    assert "2024-01 are already in the store" in again.stderr
    bad = run("append", str(recipe), "--month", "2024-13", "--store", str(store))
    assert bad.exit_code == 2
    assert "--month: expected a month YYYY-MM or a range" in bad.stderr
    assert listing(store) == before


def test_build_json_summary_and_refusals(demo: Path, tmp_path: Path) -> None:
    recipe = demo / "recipes" / "demo.yaml"
    text = recipe.read_text().replace("end: 2023-12", "end: 2023-02")
    short = demo / "recipes" / "short.yaml"
    short.write_text(text)
    store = tmp_path / "short.zarr"
    result = run("build", str(short), "--out", str(store), "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["months"] == ["2023-01", "2023-02"]
    assert summary["store"] == str(store)
    assert summary["skipped"] == []
    again = run("build", str(short), "--out", str(store))
    assert again.exit_code == 1
    assert "already holds a store" in again.stderr and "--overwrite" in again.stderr
    replaced = run("build", str(short), "--out", str(store), "--overwrite")
    assert replaced.exit_code == 0, replaced.stderr
    broken = demo / "recipes" / "broken.yaml"
    broken.write_text(text.replace("resolution: 10", "resolutoin: 10"))
    usage = run("build", str(broken), "--out", str(tmp_path / "x.zarr"))
    assert usage.exit_code == 2
    assert "did you mean 'resolution'" in usage.stderr


def test_demo_catalog_is_deterministic(tmp_path: Path) -> None:
    layout = DemoLayout(tile_px=32, overlap_px=8, months=2, days=(5, 20))
    a = generate(tmp_path / "a", layout).parent
    b = generate(tmp_path / "b", layout).parent
    files = listing(a)
    assert files == listing(b)
    assert len([k for k in files if k.endswith(".tif")]) == 2 * 2 * 2 * 5
    for key in files:
        assert (a / key).read_bytes() == (b / key).read_bytes(), key

"""``cz build`` and ``cz append`` with a period other than the month (``composite.period``;
docs/recipes.md, "composite"), against numpy: each timestep is the per-pixel median of the
observations whose date falls in that period, computed here from the scenes' own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz import output
from cz.app import app
from cz.build import AppendRefusedError, BuildOptions, RecipeMismatchError, append_months, build
from cz.recipe import load_recipe
from tests.cz.scenes import (
    LOADER_WARNINGS,
    grid_offset,
    random_scene,
    read_all,
    recipe,
    write_items,
)

pytestmark = LOADER_WARNINGS

DATES = ("2024-01-03", "2024-01-08", "2024-01-14", "2024-01-25", "2024-01-28", "2024-02-05")
DEKADS = ("2024-01-01", "2024-01-11", "2024-01-21", "2024-02-01")
KEEP = (4, 5, 6, 7, 11)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("periods")
    scenes = [
        random_scene(f"S2B_31TFJ_{d.replace('-', '')}_0_L2A", f"{d}T10:30:00Z", 40 + i, cloud=0.3)
        for i, d in enumerate(DATES)
    ]
    write_items(root, scenes)
    np.save(root / "values.npy", np.stack([s.values for s in scenes]))
    np.save(root / "scl.npy", np.stack([s.scl for s in scenes]))
    return root


def _recipe(folder: Path, name: str, period: str, start: str, end: str) -> Path:
    path = recipe(folder, start=start, end=end, name=f"{name}.yaml")
    path.write_text(path.read_text() + f"composite:\n  period: {period}\n")
    return path


def reference(folder: Path, dates: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The median and count of the scenes dated ``dates`` (baseline 05.09: no correction)."""
    values = np.load(folder / "values.npy").astype(np.int64)
    scl = np.load(folder / "scl.npy")
    pick = [DATES.index(d) for d in dates]
    valid = np.isin(scl[pick], KEEP) & (values[pick] != 0).all(axis=1)
    out = np.zeros(values.shape[1:], dtype=np.int64)
    for y, x in zip(*np.nonzero(valid.any(axis=0)), strict=True):
        out[:, y, x] = np.rint(np.median(values[pick][valid[:, y, x], :, y, x], axis=0))
    return out, valid.sum(axis=0)


def test_dekads_are_the_medians_of_their_days_and_append_the_next(folder: Path) -> None:
    path = _recipe(folder, "dekad", "dekad", "2024-01-01", "2024-01-31")
    store = folder / "dekad.zarr"
    build(load_recipe(path), out=str(store), options=BuildOptions(workers=2))
    assert chronozarr.validate(store, deep=True).ok
    reader = chronozarr.open_store(store)
    assert list(reader.attrs.times) == [f"{d}T00:00:00Z" for d in DEKADS[:3]]
    prov = reader.attrs.provenance
    assert prov["composite"] == "dekadal median" and prov["period"] == {"kind": "dekad"}
    ends = ["2024-01-11", "2024-01-21", "2024-02-01"]
    assert prov["periods"] == [
        [f"{a}T00:00:00Z", f"{b}T00:00:00Z"] for a, b in zip(DEKADS[:3], ends, strict=True)
    ]
    assert prov["fingerprint"]["fields"]["composite.period.kind"] == "dekad"
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    window = (slice(None), slice(row0, row0 + h), slice(col0, col0 + w))
    for t, dates in enumerate((DATES[0:2], DATES[2:3], DATES[3:5])):
        want, want_cov = reference(folder, dates)
        np.testing.assert_array_equal(data[t], want[window])
        np.testing.assert_array_equal(cov[t], want_cov[window[1:]])

    # the next dekad, by cz append --next 1, is what a build of all four gives
    output.out.width = output.err.width = 200
    whole_path = _recipe(folder, "dekad-whole", "dekad", "2024-01-01", "2024-02-10")
    got = CliRunner().invoke(app, ["append", str(path), "--next", "1", "--store", str(store)])
    assert got.exit_code == 0, got.output
    whole = folder / "dekad-whole.zarr"
    build(load_recipe(whole_path), out=str(whole), options=BuildOptions(workers=2))
    grown, whole_reader = chronozarr.open_store(store), chronozarr.open_store(whole)
    assert list(grown.attrs.times) == list(whole_reader.attrs.times)
    assert list(grown.attrs.times) == [f"{d}T00:00:00Z" for d in DEKADS]
    assert grown.attrs.provenance["periods"] == whole_reader.attrs.provenance["periods"]
    for a, b in zip(read_all(store), read_all(whole), strict=True):
        np.testing.assert_array_equal(a, b)
    want, _ = reference(folder, DATES[5:6])
    np.testing.assert_array_equal(read_all(store)[0][3], want[window])


def test_append_refuses_other_periods_and_a_month(folder: Path) -> None:
    path = _recipe(folder, "dekad-b", "dekad", "2024-01-01", "2024-01-20")
    store = folder / "dekad-b.zarr"
    build(load_recipe(path), out=str(store), options=BuildOptions(workers=1))
    rec = load_recipe(path)
    with pytest.raises(
        AppendRefusedError, match=r"the next dekad period is 2024-01-21, not 2024-02-01"
    ):
        append_months(rec, ["2024-02-01"], store=str(store))
    monthly = load_recipe(recipe(folder, start="2024-01", end="2024-01", name="monthly.yaml"))
    with pytest.raises(
        RecipeMismatchError, match=r"composite\.period\.kind: recipe None, store built with 'dekad'"
    ):
        append_months(monthly, ["2024-02"], store=str(store))
    output.err.width = 200
    got = CliRunner().invoke(
        app, ["append", str(path), "--month", "2024-02", "--store", str(store)]
    )
    assert got.exit_code == 2 and "the recipe's period is dekad" in got.output
    got = CliRunner().invoke(
        app, ["append", str(path), "--period", "2024-01-22", "--store", str(store)]
    )
    assert got.exit_code == 2 and "not the start of a dekad period" in got.output
    got = CliRunner().invoke(
        app, ["append", str(path), "--period", "2024-01-21", "--store", str(store)]
    )
    assert got.exit_code == 0, got.output
    assert chronozarr.open_store(store).attrs.times[-1] == "2024-01-21T00:00:00Z"


def test_explicit_windows_leave_their_gaps_out(folder: Path) -> None:
    """Two windows with a gap between them: the items of the gap are dropped (reason time), each
    window is the median of its own days."""
    period = json.dumps({"windows": [["2024-01-01", "2024-01-10"], ["2024-01-20", "2024-02-01"]]})
    path = _recipe(folder, "windows", period, "2024-01-01", "2024-01-31")
    store = folder / "windows.zarr"
    result = build(load_recipe(path), out=str(store), options=BuildOptions(workers=1))
    assert result.months == ["2024-01-01", "2024-01-20"]
    reader = chronozarr.open_store(store)
    assert reader.attrs.provenance["periods"][1] == ["2024-01-20T00:00:00Z", "2024-02-01T00:00:00Z"]
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    for t, dates in enumerate((DATES[0:2], DATES[3:5])):
        want, want_cov = reference(folder, dates)
        np.testing.assert_array_equal(data[t], want[:, row0 : row0 + h, col0 : col0 + w])
        np.testing.assert_array_equal(cov[t], want_cov[row0 : row0 + h, col0 : col0 + w])

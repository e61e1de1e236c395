"""``cz series``: a pixel's history equals the Reader's values, marks gap-filled months, and is
read from that pixel's cell only (counted on the store's own request log)."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from pyproj import Transformer

import chronozarr
from chronozarr.io import LocalStore
from cz.look.series import read_series
from tests.cz.look.conftest import CS, N_TIME, TRANSFORM, LookStore, W
from tests.cz.look.helpers import read_png, run

ROW, COL = 21, 37  # cell (1, 2) at level 0


def xy(row: int, col: int, level: int = 0) -> tuple[float, float]:
    a, _, c, _, e, f = TRANSFORM
    return c + a * (2**level) * (col + 0.5), f + e * (2**level) * (row + 0.5)


def test_csv_equals_reader_values(tmp_path: Path, look_store: LookStore) -> None:
    x, y = xy(ROW, COL)
    out = tmp_path / "s.csv"
    result = run("series", look_store.path, "--x", x, "--y", y, "--out", out)
    assert result.exit_code == 0, result.stderr
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    reader = chronozarr.open_store(look_store.path)
    assert len(rows) == N_TIME
    for t, row in enumerate(rows):
        values = reader.read(t)[:, ROW, COL]
        mask = reader.read_mask(t)[ROW, COL]
        cov = reader.read_coverage(t)[ROW, COL]
        assert row["time"] == reader.attrs.times[t] and int(row["index"]) == t
        assert (int(row["mask"]), int(row["coverage"])) == (mask, cov)
        phys = reader.physical(values[:, None, None])[:, 0, 0]
        for i, b in enumerate(reader.bands):
            assert int(row[f"{b.name}_stored"]) == values[i] == look_store.data[t, i, ROW, COL]
            assert float(row[f"{b.name}_physical"]) == phys[i]
            assert row[f"{b.name}_valid"] == "1"
        assert row["gap_filled"] == str(int(cov == 0))


def test_gap_filled_and_masked_months_are_visible(look_store: LookStore) -> None:
    reader = chronozarr.open_store(look_store.path)
    s = read_series(reader, 12, 22)  # inside the masked rectangle at t = 2, left half (t = 3)
    assert list(s.gap_filled) == [False, False, False, True, False, False]
    assert list(s.valid[:, 0]) == [True, True, False, True, True, True]
    assert np.isnan(s.physical[2]).all()
    doc = s.to_json()
    assert doc["timesteps"][2]["values"]["B04"] == {"stored": 0, "physical": None, "valid": False}
    assert doc["timesteps"][3]["gap_filled"] and doc["timesteps"][3]["coverage"] == 0
    right = read_series(reader, 12, W - 1)
    assert not right.gap_filled.any()


@pytest.mark.parametrize("kind", ["unsharded", "sharded"])
def test_reads_only_that_cells_chunks(
    look_store: LookStore, sharded_store: LookStore, kind: str
) -> None:
    ls = look_store if kind == "unsharded" else sharded_store
    store = LocalStore(ls.path)
    reader = chronozarr.open_store(store)
    store.stats.reset()
    s = read_series(reader, ROW, COL)
    cell = (ROW // CS, COL // CS)
    keys = [key for _, key in store.stats.keys]
    assert keys, "nothing was read"
    for key in keys:
        parts = key.split("/")
        array, coords = parts[1], parts[3:]
        r, c = int(coords[-2]), int(coords[-1])
        assert parts[0] == "0" and array in ("data", "mask", "coverage"), key
        assert (r, c) == cell, f"{key} is not of cell {cell}"
    data_reads = [k for k in keys if k.split("/")[1] == "data"]
    if kind == "unsharded":  # every timestep once (anchors cached), plus nothing else
        assert sorted({k.split("/")[3] for k in data_reads}) == [str(t) for t in range(N_TIME)]
        assert len(data_reads) == N_TIME
    np.testing.assert_array_equal(s.stored, ls.data[:, :, ROW, COL])


def test_lon_lat_pick_the_pixel_pyproj_says(tmp_path: Path, look_store: LookStore) -> None:
    x, y = xy(ROW, COL)
    lon, lat = Transformer.from_crs("EPSG:32631", "EPSG:4326", always_xy=True).transform(x, y)
    result = run("series", look_store.path, "--lon", lon, "--lat", lat, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["row"], doc["col"]) == (ROW, COL)
    assert (doc["x"], doc["y"]) == pytest.approx((x, y))
    assert [t["values"]["B08"]["stored"] for t in doc["timesteps"]] == list(
        look_store.data[:, 3, ROW, COL]
    )


def test_level_k_series(look_store: LookStore) -> None:
    x, y = xy(5, 9, level=1)
    result = run("series", look_store.path, "--x", x, "--y", y, "--level", "1", "--json")
    doc = json.loads(result.stdout)
    reader = chronozarr.open_store(look_store.path)
    assert (doc["row"], doc["col"], doc["level"]) == (5, 9, 1)
    assert [t["values"]["B02"]["stored"] for t in doc["timesteps"]] == [
        int(reader.read(t, level=1)[0, 5, 9]) for t in range(N_TIME)
    ]


def test_chart_and_table(tmp_path: Path, look_store: LookStore) -> None:
    x, y = xy(12, 5)
    out = tmp_path / "chart.png"
    result = run("series", look_store.path, "--x", x, "--y", y, "--out", out)
    assert result.exit_code == 0 and "wrote" in result.stdout
    img = read_png(out)
    assert img.shape == (420, 900, 4) and len(np.unique(img.reshape(-1, 4), axis=0)) > 50
    table = run("series", look_store.path, "--x", x, "--y", y)
    lines = table.stdout.splitlines()
    assert any(line.strip().startswith("2024-04-01 *") for line in lines)  # gap-filled marked
    first = next(line for line in lines if line.strip().startswith("2024-01-01"))
    assert f"{look_store.data[0, 0, 12, 5]} " in first


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "give --lon and --lat, or --x and --y"),
        (["--lon", "2"], "give --lon and --lat"),
        (["--x", "1", "--y", "2", "--lon", "3", "--lat", "4"], "give --lon and --lat"),
        (["--x", "0", "--y", "0"], "outside the store"),
        (["--lon", "400", "--lat", "0"], "not a longitude/latitude"),
        (["--x", "600001", "--y", "5099999", "--level", "5"], "levels 0..2"),
        (["--x", "600001", "--y", "5099999", "--out", "s.txt"], "expected a .png, .csv or .json"),
    ],
)
def test_bad_points_are_usage_errors(look_store: LookStore, args: list[str], message: str) -> None:
    result = run("series", look_store.path, *args)
    assert result.exit_code == 2, result.stdout
    assert message in result.stderr and "Traceback" not in result.stderr


def test_a_store_with_the_companion_is_read_from_it(tmp_path: Path) -> None:
    """docs/spec.md C25: one object per time block of 4, the same table as every chunk gives."""
    from tests.cz.look.conftest import make_store

    ls = make_store(tmp_path / "h.zarr", history=True)
    x, y = xy(ROW, COL)
    outs = {}
    for flag in ([], ["--no-history"]):
        out = tmp_path / f"s{len(flag)}.csv"
        result = run("series", ls.path, "--x", x, "--y", y, "--out", out, *flag)
        assert result.exit_code == 0, result.stderr
        outs[bool(flag)] = out.read_text()
    assert outs[True] == outs[False]
    store = LocalStore(ls.path)
    reader = chronozarr.open_store(store)
    store.stats.reset()
    read_series(reader, ROW, COL)
    by, bx = ROW // 16, COL // 16  # the default block: 16 pixels, here a whole cell
    keys = sorted(key for _, key in store.stats.keys)
    assert keys == [f"0/history/values/c/{tb}/0/{by}/{bx}" for tb in range(-(-N_TIME // 4))]

"""cz convert --append: later dates of a growing folder go through chronozarr.append."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

import chronozarr
from tests.cz.convert.helpers import cz, read_tif, series, write_series, write_tif

DATES = ["2024-01-01", "2024-02-01", "2024-03-01", "2024-04-01", "2024-05-01"]


def test_append_later_dates_and_skip_the_ones_already_in(tmp_path: Path) -> None:
    values = series(5, 2, 20, 18, "uint16", seed=41)
    files = write_series(tmp_path / "src", values[:3], DATES[:3], nodata=0)
    store = tmp_path / "s.zarr"
    first = cz(
        "convert",
        tmp_path / "src",
        store,
        "--chunk-size",
        "8",
        "--encoding",
        "star-delta",
        "--anchor-interval",
        "2",
    )
    assert first.exit_code == 0, first.output
    files += write_series(tmp_path / "src", values[3:], DATES[3:], nodata=0)
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    dry = cz("convert", tmp_path / "src", store, "--append", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.output
    check = json.loads(dry.stdout)["plan"]["checks"][-1]
    assert check == {
        "check": "append",
        "result": "2 new timestep(s) after the store's last 2024-03-01T00:00:00Z "
        "(2024-04-01T00:00:00Z .. 2024-05-01T00:00:00Z), 3 already in the store (skipped)",
    }
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before
    result = cz("convert", tmp_path / "src", store, "--append", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["timesteps"] == 2 and len(summary["skipped_times"]) == 3
    reader = chronozarr.open_store(store)
    assert [str(t)[:10] for t in reader.times] == DATES
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))
    assert reader.attrs.provenance["source_files"] == [str(f) for f in files]
    assert chronozarr.validate(str(store), deep=True).ok
    # nothing new: a no-op
    again = cz("convert", tmp_path / "src", store, "--append", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["timesteps"] == 0


def test_append_refusals(tmp_path: Path) -> None:
    values = series(3, 1, 8, 8, "uint16", seed=42)
    write_series(tmp_path / "src", values[[0, 2]], [DATES[0], DATES[2]])
    store = tmp_path / "s.zarr"
    assert cz("convert", tmp_path / "src", store).exit_code == 0
    before = sorted(p.relative_to(store) for p in store.rglob("*"))
    gap = write_tif(tmp_path / "src" / f"scene_{DATES[1]}.tif", values[1, 0])
    result = cz("convert", tmp_path / "src", store, "--append")
    assert result.exit_code == 1
    assert f"error: {gap}: dated 2024-02-01" in " ".join(result.output.split())
    gap.unlink()
    write_tif(tmp_path / "src" / f"scene_{DATES[3]}.tif", values[1, 0].astype(np.uint8))
    result = cz("convert", tmp_path / "src", store, "--append")
    assert result.exit_code == 1 and "uint8" in result.output
    assert sorted(p.relative_to(store) for p in store.rglob("*")) == before


def test_convert_with_history_then_append_keeps_the_companion_exact(tmp_path: Path) -> None:
    """`cz convert --history` writes the time-series companion (docs/spec.md C25) and
    `--append` grows it (its open time block rewritten: tests/chronozarr/test_history_append.py
    covers block boundaries); the oracle is the GeoTIFFs, read through zarr-python from the
    companion's plain array."""
    import zarr

    values = series(5, 2, 20, 18, "uint16", seed=43)
    files = write_series(tmp_path / "src", values[:3], DATES[:3], nodata=0)
    store = tmp_path / "s.zarr"
    first = cz("convert", tmp_path / "src", store, "--chunk-size", "8", "--history")
    assert first.exit_code == 0, first.output
    arr = zarr.open_group(store, mode="r")["0/history/values"]
    assert arr.shape == (3, 2, 20, 18) and arr.metadata.dimension_names[0] == "time"
    files += write_series(tmp_path / "src", values[3:], DATES[3:], nodata=0)
    result = cz("convert", tmp_path / "src", store, "--append", "--json")
    assert result.exit_code == 0, result.output
    got = zarr.open_group(store, mode="r")["0/history/values"][:]
    want = np.stack([read_tif(f) for f in files])
    assert got.shape == (5, 2, 20, 18) and (got == want).all()
    reader = chronozarr.open_store(store)
    fast, slow = reader.pixel_series(11, 7, use_history=True), reader.pixel_series(11, 7)
    assert fast.source == "history" and (fast.stored == values[:, :, 11, 7]).all()
    assert (slow.stored == fast.stored).all()
    assert chronozarr.validate(str(store), deep=True).ok

"""The commands' surface: --dry-run prints the checks and writes nothing; --json is parseable."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cz.convert.helpers import cz, series, write_series


def test_dry_run_prints_every_check_and_writes_nothing(tmp_path: Path) -> None:
    write_series(
        tmp_path / "src",
        series(3, 2, 10, 12, "float64"),
        ["20240101", "20240201", "20240301"],
        nodata=-1.0,
        descriptions=["a", "b"],
    )
    store = tmp_path / "s.zarr"
    text = cz("convert", tmp_path / "src", store, "--dry-run", "--dtype", "float32")
    assert text.exit_code == 0, text.output
    for line in (
        "files readable",
        "times unique, increasing",
        "band names",
        "one grid",
        "dtype",
        "nodata",
    ):
        assert f"ok {line}" in text.stdout
    assert "float64 -> float32" in text.stdout
    as_json = cz(
        "convert",
        tmp_path / "src",
        store,
        "--dry-run",
        "--json",
        "--dtype",
        "float32",
        "--shard",
        "--codec",
        "gzip",
    )
    assert as_json.exit_code == 0, as_json.output
    doc = json.loads(as_json.stdout)
    assert doc["plan"]["timesteps"] == 3 and doc["plan"]["dtype"] == "float32"
    assert [b["name"] for b in doc["plan"]["bands"]] == ["a", "b"]
    assert doc["plan"]["nodata"] == -1.0 and doc["plan"]["grid"]["shape"] == [10, 12]
    assert doc["store"]["shard"] is True and doc["store"]["codec"]["name"] == "gzip"
    assert not store.exists()


def test_store_option_errors_are_usage_messages(tmp_path: Path) -> None:
    write_series(tmp_path / "src", series(2, 1, 4, 4, "uint16"), ["20240101", "20240201"])
    for args, message in [
        (["--chunk-size", "7"], "--chunk-size: Value error, expected an even number"),
        (["--codec", "lz5"], "--codec-name"),
        (["--shard-time", "2"], "--shard-time: shard_time is only used with --shard"),
        (["--codec-level", "40"], "--codec-level: expected a zstd level in [-7, 22]"),
        (["--resampling", "fancy"], "--resampling: expected one of"),
    ]:
        result = cz("convert", tmp_path / "src", tmp_path / "s.zarr", "--dry-run", *args)
        assert result.exit_code == 1 and message in " ".join(result.output.split()), result.output


def test_both_commands_are_listed() -> None:
    result = cz("--help")
    assert result.exit_code == 0
    assert "convert" in result.stdout and "export" in result.stdout

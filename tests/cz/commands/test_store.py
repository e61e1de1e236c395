"""`cz validate` and `cz inspect`: exit codes, JSON output, clear errors (README)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz.app import app
from tests.conftest import monthly, synthetic_series

runner = CliRunner()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli") / "s.zarr"
    data = synthetic_series(5, 2, 40, 30)
    mask = np.ones((5, 40, 30), dtype=np.uint8)
    mask[2, :10, :10] = 0
    chronozarr.encode(
        data,
        path,
        times=monthly(5),
        bands=[
            {
                "name": "B04",
                "common_name": "red",
                "scale": 1e-4,
                "offset": 0.0,
                "units": "reflectance",
            },
            "B08",
        ],
        crs="EPSG:32631",
        transform=[10, 0, 500000, 0, -10, 4000000],
        mask=mask,
        chunk_size=16,
        encoding="star-delta",
        anchor_interval=2,
        shard_time=4,
    )
    return path


def test_validate_valid_store_exit_0(store: Path) -> None:
    res = runner.invoke(app, ["validate", str(store), "--deep"])
    assert res.exit_code == 0, res.output
    assert "valid" in res.output


def test_validate_json(store: Path) -> None:
    res = runner.invoke(app, ["validate", str(store), "--json"])
    assert res.exit_code == 0
    report = json.loads(res.stdout)
    assert report["ok"] is True and report["errors"] == 0 and report["checked"]["arrays"] > 0


def test_validate_invalid_store_exit_3(store: Path, tmp_path: Path) -> None:
    import shutil

    broken = tmp_path / "broken.zarr"
    shutil.copytree(store, broken)
    root = json.loads((broken / "zarr.json").read_text())
    root["attributes"]["chronozarr"]["temporal"]["anchor_indices"] = [0, 3]
    (broken / "zarr.json").write_text(json.dumps(root))
    res = runner.invoke(app, ["validate", str(broken), "--json"])
    assert res.exit_code == 3
    findings = json.loads(res.stdout)["findings"]
    assert any(f["rule"] == "temporal.anchor_indices" and f["section"] == "4.2" for f in findings)


def test_validate_missing_store_exit_1(tmp_path: Path) -> None:
    res = runner.invoke(app, ["validate", str(tmp_path / "nope.zarr")])
    assert res.exit_code == 1
    assert "zarr.json not found" in res.output
    assert "Traceback" not in res.output


def test_usage_error_exit_2() -> None:
    assert runner.invoke(app, ["validate"]).exit_code == 2
    assert runner.invoke(app, ["inspect", "a", "--bogus"]).exit_code == 2


def test_inspect_json_summary(store: Path) -> None:
    res = runner.invoke(app, ["inspect", str(store), "--json"])
    assert res.exit_code == 0, res.output
    s = json.loads(res.stdout)
    assert s["times"] == {
        "count": 5,
        "first": "2024-01-01T00:00:00Z",
        "last": "2024-05-01T00:00:00Z",
    }
    assert s["encoding"] == "star-delta" and s["anchor_interval"] == 2 and s["anchors"] == 3
    assert [lv["shape"] for lv in s["levels"]] == [[5, 2, 40, 30], [5, 2, 20, 15], [5, 2, 10, 8]]
    assert [lv["grid"] for lv in s["levels"]] == [[3, 2], [2, 1], [1, 1]]
    assert s["bands"][0]["common_name"] == "red" and s["bands"][1]["scale"] == 1.0
    assert s["mask"] is True and s["coverage"] is False and s["shard_time"] == 4
    on_disk = [p for p in store.rglob("*") if p.is_file()]
    assert s["total"]["objects"] == len(on_disk)
    assert s["total"]["bytes"] == sum(p.stat().st_size for p in on_disk)
    assert 0 <= s["volatility"]["min"] <= s["volatility"]["max"] <= 1


def test_inspect_human(store: Path) -> None:
    res = runner.invoke(app, ["inspect", str(store)])
    assert res.exit_code == 0
    for text in ("star-delta", "sharded, shard_time 4", "B04", "levels"):
        assert text in res.output


def test_inspect_unsupported_version_is_a_clear_error(store: Path, tmp_path: Path) -> None:
    import shutil

    other = tmp_path / "v3.zarr"
    shutil.copytree(store, other)
    root = json.loads((other / "zarr.json").read_text())
    root["attributes"]["chronozarr"]["spec_version"] = "0.3.0"
    (other / "zarr.json").write_text(json.dumps(root))
    res = runner.invoke(app, ["inspect", str(other)])
    assert res.exit_code == 1
    assert "spec_version" in res.output and "0.3.0" in res.output


def test_console_scripts_are_the_same_app(store: Path) -> None:
    for script in ("cz", "chronozarr"):
        exe = Path(sys.executable).with_name(script)
        res = subprocess.run(
            [str(exe), "inspect", str(store), "--json"], capture_output=True, text=True
        )
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["times"]["count"] == 5


def test_validate_lists_a_rule_a_few_times_then_counts(tmp_path: Path) -> None:
    """A root listing 3,000 timesteps its arrays lack: 10 lines of the rule and a count."""
    from chronozarr.validate.context import FINDINGS_PER_RULE
    from tests.chronozarr.validate.test_report import EXTRA, many_times_store

    res = CliRunner().invoke(
        app, ["validate", "--deep", str(many_times_store(tmp_path / "s.zarr"))]
    )
    assert res.exit_code == 3, res.output
    lines = res.output.splitlines()
    rule_lines = [line for line in lines if "temporal.delta_reference" in line]
    assert len(rule_lines) == FINDINGS_PER_RULE + 1, res.output
    assert rule_lines[-1].endswith(f"... and {EXTRA - FINDINGS_PER_RULE:,} more"), rule_lines[-1]
    assert len(lines) < 40, res.output

"""The bytes of what ``cz build`` and ``cz append`` write, pinned object by object (decision 0007).

A restructure of the toolkit must not change one byte of a store. Two small synthetic stores
(chunked star-delta with carry-forward and zstd; sharded ``none`` with blosc), each with an unreadable item
skipped, are built from the command line and grown by one month with ``cz append``; the sha256 of every object written is
compared with ``data/pinned_store_bytes.json``. Run with ``CZ_REPIN=1`` to rewrite that file,
only when a change of bytes is intended (and say so in the commit).
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cz import output
from cz.app import app
from tests.cz.scenes import LOADER_WARNINGS, random_scene, recipe, write_items

pytestmark = LOADER_WARNINGS

PINNED = Path(__file__).with_name("data") / "pinned_store_bytes.json"
MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]

#: case -> (encoding, extra store options appended to the recipe)
CASES = {
    "star-delta-zstd": ("star-delta", "  anchor_interval: 2\n"),
    "sharded-none-blosc": (
        "none",
        "  shard: true\n  shard_time: 2\n  codec:\n    name: blosc\n    cname: lz4\n",
    ),
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pinned")
    scenes = []
    for i, month in enumerate(MONTHS):
        year, mon = month.split("-")
        for day in (6, 21):
            cloud = 0.9 if month == "2024-04" else 0.4  # April: mostly carried forward
            scenes.append(
                random_scene(
                    f"S2B_31TFJ_{year}{mon}{day:02d}_0_L2A",
                    f"{month}-{day:02d}T10:30:00Z",
                    7 + 3 * i + day,
                    cloud=cloud,
                )
            )
    # one item of February and one of April whose files are missing (at a fixed absolute path,
    # so the error recorded in the provenance is the same in every checkout): skipped, recorded
    broken = {"S2B_31TFJ_20240214_0_L2A", "S2B_31TFJ_20240414_0_L2A"}
    for scene_id in sorted(broken):
        when = f"{scene_id[10:14]}-{scene_id[14:16]}-{scene_id[16:18]}T10:30:00Z"
        scenes.append(random_scene(scene_id, when, 1, files="missing"))
    items = write_items(folder, scenes)
    doc = json.loads(items.read_text())
    for item in doc["features"]:
        if item["id"] in broken:
            for asset in item["assets"].values():
                asset["href"] = "/nonexistent-cz-pinned/" + asset["href"].rsplit("/", 1)[-1]
    items.write_text(json.dumps(doc))
    return folder


def digests(store: Path) -> dict[str, str]:
    return {
        str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(store.rglob("*"))
        if p.is_file()
    }


def run(*args: str) -> None:
    output.out.width = 200
    output.err.width = 200
    result = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.stderr


def built_and_appended(folder: Path, case: str) -> dict[str, dict[str, str]]:
    encoding, extra = CASES[case]
    path = recipe(
        folder, start="2024-01", end="2024-03", max_age=2, encoding=encoding, name=f"{case}.yaml"
    )
    path.write_text(path.read_text() + extra)
    store = folder / f"{case}.zarr"
    run("build", str(path), "--out", str(store), "--workers", "2", "--skip-failed-items")
    after_build = digests(store)
    run(
        "append",
        str(path),
        "--month",
        "2024-04",
        "--store",
        str(store),
        "--workers",
        "2",
        "--skip-failed-items",
    )
    return {"build": after_build, "append": digests(store)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_build_and_append_write_the_pinned_bytes(folder: Path, case: str) -> None:
    got = built_and_appended(folder, case)
    pinned = json.loads(PINNED.read_text()) if PINNED.exists() else {}
    if os.environ.get("CZ_REPIN") == "1":
        pinned[case] = got
        PINNED.write_text(json.dumps(pinned, indent=1, sort_keys=True) + "\n")
        pytest.skip(f"CZ_REPIN=1: rewrote the pinned digests of {case} in {PINNED}")
    assert case in pinned, f"no pinned digests for {case}: run once with CZ_REPIN=1"
    for stage in ("build", "append"):
        want, have = pinned[case][stage], got[stage]
        assert sorted(have) == sorted(want), f"{stage}: the objects written differ"
        changed = [key for key in want if have[key] != want[key]]
        assert not changed, f"{stage}: bytes changed in {changed}"

"""Failure paths of ``cz build``: unreadable assets (retried, then named or skipped), a STAC API
that dies mid-pagination, targets that cannot be written, a crash while writing. In every case
the error says what and where, and nothing is left at the target (or beside it)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz.build import BuildError, BuildOptions, build, read_provenance_items
from cz.errors import StacError
from cz.load import AssetReadError
from cz.recipe import load_recipe
from tests.cz.helpers import ScriptedAPI, landing_page
from tests.cz.scenes import LOADER_WARNINGS, listing, read_all, recipe, scenario, write_items
from tests.cz.servers import RangeServer

pytestmark = LOADER_WARNINGS

FAST = {"GDAL_HTTP_MAX_RETRY": "1", "GDAL_HTTP_RETRY_DELAY": "0.05"}
VICTIM = "S2B_31TFJ_20240115_0_L2A"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, RangeServer]]:
    """The synthetic scenario's scenes over HTTP: items.json holds http:// hrefs."""
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes)
    with RangeServer(tmp_path) as server:
        doc = json.loads((tmp_path / "items.json").read_text())
        for feature in doc["features"]:
            for asset in feature["assets"].values():
                asset["href"] = f"{server.url}/{asset['href']}"
        (tmp_path / "items.json").write_text(json.dumps(doc))
        yield tmp_path, server


def leftovers(folder: Path) -> list[str]:
    """Staging, spill or replaced folders a build may have left next to its target."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_transient_http_errors_are_retried(served: tuple[Path, RangeServer]) -> None:
    folder, server = served
    server.fail(f"scenes/{VICTIM}/B04.tif", 503, times=2)
    rec = load_recipe(recipe(folder, start="2024-01", end="2024-01"))
    opts = BuildOptions(
        workers=2, gdal={"GDAL_HTTP_MAX_RETRY": "3", "GDAL_HTTP_RETRY_DELAY": "0.05"}
    )
    build(rec, out=str(folder / "ok.zarr"), options=opts)
    assert server.requests[f"/scenes/{VICTIM}/B04.tif"] > 2
    assert chronozarr.open_store(folder / "ok.zarr").n_time == 1


def test_an_unreadable_asset_stops_the_build_naming_item_and_asset(
    served: tuple[Path, RangeServer],
) -> None:
    folder, server = served
    server.fail(f"scenes/{VICTIM}/B04.tif", 503)  # for ever
    rec = load_recipe(recipe(folder, start="2024-01", end="2024-02"))
    out = folder / "store.zarr"
    started = time.monotonic()
    opts = BuildOptions(workers=2, gdal=FAST, read_attempts=2, retry_delay=0.05)
    with pytest.raises(AssetReadError) as info:
        build(rec, out=str(out), options=opts)
    assert time.monotonic() - started < 20  # bounded retries
    err = info.value
    assert (err.item, err.asset) == (VICTIM, "red")
    assert err.href.endswith(f"/scenes/{VICTIM}/B04.tif")
    assert "503" in str(err) and "--skip-failed-items" in str(err)
    assert not out.exists()
    assert leftovers(folder) == []


def test_skip_failed_items_builds_without_it_and_records_it(
    served: tuple[Path, RangeServer],
) -> None:
    folder, server = served
    server.fail(f"scenes/{VICTIM}/B04.tif", 404)
    rec = load_recipe(recipe(folder, start="2024-01", end="2024-02"))
    out = folder / "skipped.zarr"
    opts = BuildOptions(workers=2, gdal=FAST, skip_failed=True, read_attempts=2, retry_delay=0.05)
    result = build(rec, out=str(out), options=opts)
    assert {s.item for s in result.skipped} == {VICTIM}
    assert all(s.asset == "red" and "404" in s.error for s in result.skipped)
    prov = chronozarr.open_store(out).attrs.provenance
    assert prov["skipped_items"][0]["item"] == VICTIM
    assert prov["skipped_items"][0]["asset"] == "red"
    docs = read_provenance_items(out)
    assert [s["item"] for s in docs[0]["skipped"]] == [VICTIM] * len(docs[0]["skipped"])
    assert docs[1]["skipped"] == []
    # the same as a build from a catalog without that item (nor the older duplicate of its
    # scene, which the plan dropped: a skip does not bring a dropped duplicate back)
    doc = json.loads((folder / "items.json").read_text())
    gone = {VICTIM, VICTIM.replace("_0_L2A", "_1_L2A")}
    doc["features"] = [f for f in doc["features"] if f["id"] not in gone]
    (folder / "items.json").write_text(json.dumps(doc))
    reference = folder / "without.zarr"
    build(rec, out=str(reference), options=BuildOptions(workers=2))
    for a, b in zip(read_all(out), read_all(reference), strict=True):
        assert np.array_equal(a, b)


def test_a_stac_api_that_dies_mid_pagination(tmp_path: Path) -> None:
    from cz.demo_catalog import s2_item
    from tests.cz.scenes import when

    with ScriptedAPI() as api:
        item = s2_item(
            "S2B_31TFJ_20240105_0_L2A",
            when("2024-01-05T10:30:00Z"),
            tile="31TFJ",
            x0=500000.0,
            y1=5100000.0,
            size_px=32,
            assets={k: f"{api.url}/never/{k}.tif" for k in ("red", "nir", "scl")},
            baseline="05.09",
            cloud_cover=1.0,
        )
        page1 = {
            "type": "FeatureCollection",
            "features": [item],
            "links": [
                {
                    "rel": "next",
                    "href": f"{api.url}/search",
                    "method": "POST",
                    "body": {"token": "page-2"},
                    "merge": True,
                }
            ],
        }
        api.script[("GET", "/")] = [(200, {}, landing_page(api.url))]
        api.script[("POST", "/search")] = [
            (200, {}, page1),
            (500, {}, {"code": "InternalError", "description": "the database went away"}),
        ]
        text = recipe(tmp_path, start="2024-01", end="2024-01").read_text()
        text = text.replace(
            "  path: items.json\n",
            f"  url: {api.url}\n  max_retries: 2\n  backoff_factor: 0.01\n  timeout: 5\n",
        )
        path = tmp_path / "api.yaml"
        path.write_text(text)
        out = tmp_path / "never.zarr"
        with pytest.raises(
            StacError, match=r"searching .*/search failed after 3 attempts: HTTP 500"
        ):
            build(load_recipe(path), out=str(out))
        assert api.count("POST", "/search") == 4  # page 1, then page 2 three times
    assert not out.exists()
    assert leftovers(tmp_path) == []


def test_targets_that_cannot_be_written(tmp_path: Path) -> None:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes[:1])
    rec = load_recipe(recipe(tmp_path, start="2024-01", end="2024-01"))
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    with pytest.raises(BuildError, match=r"cannot create the folder .*a-file"):
        build(rec, out=str(blocker / "store.zarr"))
    with pytest.raises(BuildError, match="exists and is not a folder"):
        build(rec, out=str(blocker))
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(BuildError, match="not empty and holds no store"):
        build(rec, out=str(busy))
    assert listing(busy) == {"notes.txt": 4}
    empty = tmp_path / "empty"
    empty.mkdir()
    build(rec, out=str(empty))  # an empty folder is a fine target
    assert chronozarr.validate(empty).ok
    with pytest.raises(BuildError, match="already holds a store; a rebuild goes to a new path"):
        build(rec, out=str(empty))
    assert leftovers(tmp_path) == []


def test_a_crash_while_writing_leaves_the_old_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scenes, _c, _d = scenario()
    write_items(tmp_path, scenes[:2])
    rec = load_recipe(recipe(tmp_path, start="2024-01", end="2024-01"))
    out = tmp_path / "store.zarr"
    build(rec, out=str(out))
    before = {k: (out / k).read_bytes() for k in listing(out)}
    real_encode = chronozarr.encode

    def crashing(data: Any, store: Any, **kwargs: Any) -> None:
        real_encode(data, store, **kwargs)  # everything written, root included...
        raise OSError("power cut (injected)")  # ...and then the process dies

    monkeypatch.setattr(chronozarr, "encode", crashing)
    with pytest.raises(OSError, match="injected"):
        build(rec, out=str(out), options=BuildOptions(overwrite=True))
    assert {k: (out / k).read_bytes() for k in listing(out)} == before
    fresh = tmp_path / "fresh.zarr"
    with pytest.raises(OSError, match="injected"):
        build(rec, out=str(fresh))
    assert not fresh.exists()
    assert leftovers(tmp_path) == []
    monkeypatch.setattr(chronozarr, "encode", real_encode)
    build(rec, out=str(out), options=BuildOptions(overwrite=True))  # replaced when complete
    assert chronozarr.validate(out, deep=True).ok
    assert leftovers(tmp_path) == []


def test_cli_reports_a_failed_build_on_stderr(served: tuple[Path, RangeServer]) -> None:
    from cz.app import app

    folder, server = served
    server.fail(f"scenes/{VICTIM}/B04.tif", 404)
    path = recipe(folder, start="2024-01", end="2024-01")
    result = CliRunner().invoke(app, ["build", str(path), "--out", str(folder / "cli.zarr")])
    assert result.exit_code == 1
    assert result.stdout == ""
    assert f"cannot read asset 'red' of item '{VICTIM}'" in result.stderr
    assert "HTTP response code: 404" in result.stderr
    assert not (folder / "cli.zarr").exists()

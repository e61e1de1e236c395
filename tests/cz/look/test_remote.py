"""The look commands on a store served over HTTP (the tests' Range server): the same picture as
from the local folder, and a pixel history whose requests all fall in the pixel's cell."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.cz.look.conftest import CS, TRANSFORM, LookStore
from tests.cz.look.helpers import data_pixels, read_png, run
from tests.remote.rangeserver import RangeServer


def test_quicklook_of_an_http_store_equals_the_local_one(
    tmp_path: Path, sharded_store: LookStore
) -> None:
    local = run(
        "quicklook", sharded_store.path, "--index", "2", "--out", tmp_path / "l.png", "--json"
    )
    with RangeServer(sharded_store.path.parent) as server:
        url = f"{server.url}/{sharded_store.path.name}/"
        remote = run("quicklook", url, "--index", "2", "--out", tmp_path / "r.png", "--json")
    assert remote.exit_code == 0, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert a["stretch"] == b["stretch"] and a["image_box"] == b["image_box"]
    h, w = a["data_shape"]
    np.testing.assert_array_equal(
        data_pixels(read_png(tmp_path / "l.png"), a["image_box"], h, w),
        data_pixels(read_png(tmp_path / "r.png"), b["image_box"], h, w),
    )


def test_series_over_http_requests_only_the_cells_objects(sharded_store: LookStore) -> None:
    row, col = 21, 37
    x = TRANSFORM[2] + TRANSFORM[0] * (col + 0.5)
    y = TRANSFORM[5] + TRANSFORM[4] * (row + 0.5)
    with RangeServer(sharded_store.path.parent) as server:
        url = f"{server.url}/{sharded_store.path.name}/"
        result = run("series", url, "--x", x, "--y", y, "--json")
        log = server.log
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert [t["values"]["B04"]["stored"] for t in doc["timesteps"]] == list(
        sharded_store.data[:, 2, row, col]
    )
    prefix = f"/{sharded_store.path.name}/"
    chunks = [e.path[len(prefix) :] for e in log if "/c/" in e.path]
    assert chunks, "no chunk was requested"
    for key in chunks:
        parts = key.split("/")
        assert parts[0] == "0" and (int(parts[-2]), int(parts[-1])) == (row // CS, col // CS), key

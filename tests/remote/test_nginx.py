"""nginx from Debian with the exact server block of docs/hosting.md, on 127.0.0.1:
the Python and JavaScript readers read stores through it, and its headers match the checklist."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

import chronozarr
from cz.app import app
from tests.conftest import REPO
from tests.remote.conftest import T0, assert_reads_equal, files
from tests.remote.nginxserver import (
    HOSTING,
    NGINX,
    NginxServer,
    fenced_block_after,
    render,
    server_block,
)

DECODER = REPO / "js" / "chronozarr" / "decoder.js"
SHORT = "public, max-age=60"
LONG = "public, max-age=31536000, immutable"

runner = CliRunner()


@pytest.fixture(scope="module")
def nginx(served_root: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NginxServer]:
    """nginx serving ``served_root`` on 127.0.0.1 with the documented server block."""
    if not NGINX.exists():
        reason = f"{NGINX} is absent: install Debian's nginx (scripts/apt-packages.txt) to run this"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    with NginxServer(served_root, tmp_path_factory.mktemp("nginx")) as server:
        yield server


# --- the documented configuration ------------------------------------------------------------------


def test_documented_block_is_what_runs(nginx: NginxServer) -> None:
    running = (nginx.prefix / "chronozarr.conf").read_text()
    documented = server_block()
    assert running == render(
        documented, nginx.port, Path(running.split("root ", 1)[1].split(";")[0])
    )
    for needle in ("gzip off;", "Access-Control-Expose-Headers", "try_files $uri =404;"):
        assert needle in documented


# --- the Python reader ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_python_reader_through_nginx(
    name: str, nginx: NginxServer, stores: dict[str, Path]
) -> None:
    before = len(nginx.log())
    remote = chronozarr.open_store(f"{nginx.url}/{name}")
    local = chronozarr.open_store(stores[name])
    for k in range(len(local.levels)):  # data first: shard indexes need no HEAD
        for t in range(local.n_time):
            np.testing.assert_array_equal(remote.read(t, k), local.read(t, k))
    data_requests = nginx.log()[before:]
    assert not [r for r in data_requests if r.method == "HEAD"], "a HEAD for a data shard index"
    assert_reads_equal(remote, local)
    log = nginx.log()[before:]
    assert all(r.method in ("GET", "HEAD") and r.status in (200, 206) for r in log)
    ranges = [r.range for r in log if r.range]
    assert all(re.fullmatch(r"bytes=\d+-\d+", v) for v in ranges), "an unbounded range"
    if name == "sharded":
        assert len(ranges) > 20
    else:
        assert ranges == [] and len(log) > 20
    # one pool of keep-alive connections: far fewer connections than requests
    assert len({r.connection for r in log}) <= 4 < len(log) / 10


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_at_most_two_chunk_reads_per_cell_timestep(name: str, nginx: NginxServer) -> None:
    reader = chronozarr.open_store(f"{nginx.url}/{name}")
    delta_t = next(t for t in range(T0) if reader.attrs.temporal.reference(t) is not None)
    anchor = reader.attrs.temporal.reference(delta_t)
    before = len(nginx.log())
    reader.read_cell(delta_t, 0, 0)
    log = [r for r in nginx.log()[before:] if "/data/" in r.path]
    if name == "unsharded":  # the anchor chunk and the delta chunk, two whole objects
        assert sorted(r.path for r in log) == sorted(
            f"/{name}/0/data/c/{t}/0/0/0" for t in (anchor, delta_t)
        )
    else:  # one bounded index read of the shard, then one range per chunk
        assert all(r.method == "GET" and r.range for r in log)
        assert len(log) == 3
    before = len(nginx.log())
    reader.read_cell(delta_t, 0, 0)  # the anchor is cached: one read
    assert len([r for r in nginx.log()[before:] if "/data/" in r.path]) == 1


# --- the header checklist ---------------------------------------------------------------------------


def _common(h: dict[str, str]) -> None:
    assert h.get("access-control-allow-origin") == "*"
    expose = {v.strip().lower() for v in h.get("access-control-expose-headers", "").split(",")}
    assert {"content-range", "content-length"} <= expose
    assert h.get("timing-allow-origin") == "*"


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_headers_match_the_checklist(
    name: str, nginx: NginxServer, stores: dict[str, Path]
) -> None:
    local = files(stores[name])
    gz = {"Accept-Encoding": "gzip, deflate, br", "Origin": "https://viewer.example"}
    chunk = "0/data/c/0/0/0/0"

    status, h, body = nginx.request("GET", f"/{name}/zarr.json", gz)
    assert status == 200 and body == local["zarr.json"]
    assert h["content-type"] == "application/json"
    assert h.get("cache-control") == SHORT
    assert "content-encoding" not in h
    _common(h)

    status, h, body = nginx.request("GET", f"/{name}/{chunk}", {**gz, "Range": "bytes=0-9"})
    assert status == 206 and body == local[chunk][:10]
    assert h["content-range"] == f"bytes 0-9/{len(local[chunk])}"
    assert h["content-length"] == "10"
    assert "content-encoding" not in h
    assert h.get("cache-control") == LONG
    _common(h)

    status, h, body = nginx.request("GET", f"/{name}/{chunk}", gz)
    assert status == 200 and body == local[chunk] and "content-encoding" not in h
    assert h.get("accept-ranges") == "bytes"

    status, h, body = nginx.request("GET", f"/{name}/{chunk}", {"Range": "bytes=-5"})
    assert status == 206 and body == local[chunk][-5:]

    for key in ("0/time/c/0", "1/time/c/0", "volatility/c/0/0", "0/data/zarr.json"):
        status, h, body = nginx.request("GET", f"/{name}/{key}", gz)
        assert status == 200 and body == local[key], key
        assert h.get("cache-control") == SHORT, key
        assert "content-encoding" not in h, key
    status, h, _ = nginx.request("GET", f"/{name}/0/band/c/0", gz)
    assert status == 200 and h.get("cache-control") == LONG

    for absent in (f"/{name}/0/data/c/99/0/0/0", f"/{name}/0/", f"/{name}", "/nothing/zarr.json"):
        status, h, _ = nginx.request("GET", absent, gz)
        assert status == 404, absent
        assert h.get("access-control-allow-origin") == "*"
        assert "immutable" not in h.get("cache-control", ""), "a 404 cached for a year"

    status, h, _ = nginx.request(
        "OPTIONS",
        f"/{name}/{chunk}",
        {
            "Origin": "https://viewer.example",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "range",
        },
    )
    assert status == 204
    assert "range" in h.get("access-control-allow-headers", "").lower()
    assert "GET" in h.get("access-control-allow-methods", "")
    _common(h)

    status, h, _ = nginx.request("HEAD", f"/{name}/{chunk}")
    assert status == 200 and int(h["content-length"]) == len(local[chunk])


# --- validate and inspect over HTTP -----------------------------------------------------------------


def test_validate_and_inspect_over_http(nginx: NginxServer) -> None:
    before = len(nginx.log())
    res = runner.invoke(app, ["validate", f"{nginx.url}/sharded", "--json"])
    assert res.exit_code == 0, res.output
    report = json.loads(res.stdout)
    assert report["ok"] and report["checked"]["shards"] > 0
    heads = [r for r in nginx.log()[before:] if r.method == "HEAD" and "/data/c/" in r.path]
    assert len(heads) == report["checked"]["shards"]  # HEAD per expected shard: HTTP cannot list

    res = runner.invoke(app, ["validate", f"{nginx.url}/broken", "--json"])
    assert res.exit_code == 3, res.output
    rules = {f["rule"] for f in json.loads(res.stdout)["findings"]}
    assert "shard_bytes.exists" in rules

    res = runner.invoke(app, ["validate", f"{nginx.url}/unsharded"])
    assert res.exit_code == 0 and "valid" in res.stdout

    res = runner.invoke(app, ["inspect", f"{nginx.url}/unsharded", "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["times"]["count"] == T0 and "total" not in summary  # HTTP cannot list

    res = runner.invoke(app, ["inspect", f"{nginx.url}/nothing-here"])
    assert res.exit_code == 1 and "zarr.json not found" in res.stderr


# --- the JavaScript reader in Node -----------------------------------------------------------------

NODE_SCRIPT = """\
import {{ openStore }} from {decoder};
const store = await openStore(process.argv[2]);
const out = {{ nTime: store.nTime, levels: [] }};
for (let k = 0; k < store.levels.length; k++) {{
  const L = store.level(k);
  const cells = [];
  for (let t = 0; t < store.nTime; t++) {{
    for (let row = 0; row < L.grid[0]; row++) {{
      for (let col = 0; col < L.grid[1]; col++) {{
        const cell = await store.readCell({{ t, level: k, row, col }});
        const mask = store.hasMask ? await store.readPlane("mask", {{ t, level: k, row, col }}) : null;
        cells.push({{ t, row, col, h: cell.height, w: cell.width,
                      data: Array.from(cell.data), mask: mask && Array.from(mask) }});
      }}
    }}
  }}
  out.levels.push(cells);
}}
out.stats = store.stats;
process.stdout.write(JSON.stringify(out));
"""


def _js_skip_reason() -> str | None:
    if not DECODER.exists():
        return f"{DECODER.relative_to(REPO)} does not exist yet (the JS reader is being built)"
    if "openStore" not in DECODER.read_text():
        return f"{DECODER.relative_to(REPO)} has no openStore export yet"
    if not (REPO / "js" / "node_modules" / "zarrita").is_dir():
        return "js/node_modules is not installed (cd js && npm ci)"
    if shutil.which("node") is None:
        return "node is not on PATH"
    return None


@pytest.mark.parametrize("name", ["unsharded", "sharded"])
def test_js_reader_in_node_through_nginx(
    name: str, nginx: NginxServer, stores: dict[str, Path], tmp_path: Path
) -> None:
    reason = _js_skip_reason()
    if reason:
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    script = tmp_path / "read_all.mjs"
    script.write_text(NODE_SCRIPT.format(decoder=json.dumps(DECODER.as_uri())))
    before = len(nginx.log())
    proc = subprocess.run(
        ["node", str(script), f"{nginx.url}/{name}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO / "js",
    )
    assert proc.returncode == 0, proc.stderr
    got: dict[str, Any] = json.loads(proc.stdout)
    local = chronozarr.open_store(stores[name])
    assert got["nTime"] == local.n_time
    for k, cells in enumerate(got["levels"]):
        assert len(cells) == local.n_time * local.levels[k].grid[0] * local.levels[k].grid[1]
        for c in cells:
            want = local.read_cell(c["t"], c["row"], c["col"], k)
            assert (c["h"], c["w"]) == want.shape[1:]
            np.testing.assert_array_equal(
                np.asarray(c["data"], dtype=want.dtype).reshape(want.shape), want
            )
            mask = local.plane_cell("mask", c["t"], c["row"], c["col"], k)
            np.testing.assert_array_equal(
                np.asarray(c["mask"], dtype=np.uint8).reshape(mask.shape), mask
            )
    log = nginx.log()[before:]
    assert all(r.status in (200, 206) for r in log)
    assert not [r for r in log if r.method == "HEAD" and "/data/" in r.path]


# --- the S3 bucket CORS configuration of the hosting guide -----------------------------------------


def test_s3_cors_configuration_from_the_guide_is_accepted(s3: Any, bucket: str) -> None:
    cors = json.loads(fenced_block_after("<!-- s3-cors-json", HOSTING.read_text()))
    s3.put_bucket_cors(Bucket=bucket, CORSConfiguration=cors)
    (rule,) = s3.get_bucket_cors(Bucket=bucket)["CORSRules"]
    assert "Range" in rule["AllowedHeaders"]
    assert {"Content-Range", "Content-Length"} <= set(rule["ExposeHeaders"])

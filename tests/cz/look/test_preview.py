"""``cz preview``: a real process serving a store and a viewer on 127.0.0.1, answering Range
requests from real clients (requests, and obstore through chronozarr.open_store), stopped by
SIGTERM and Ctrl-C (SIGINT) with exit code 0."""

from __future__ import annotations

import http.client
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import requests

import chronozarr
from cz.look.httpserve import StaticServer
from tests.cz.look.conftest import LookStore
from tests.cz.look.helpers import stand_in_bundle


def start(store: Path, viewer: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, "CZ_VIEWER_DIR": str(viewer)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "cz", "preview", str(store), "--no-browser", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url:
        proc.kill()
        raise AssertionError(f"cz preview printed no URL: {proc.communicate()[1]}")
    return proc, url


def stop(proc: subprocess.Popen[str], sig: int) -> tuple[int, str]:
    proc.send_signal(sig)
    try:
        _, stderr = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError("cz preview did not stop") from None
    return proc.returncode, stderr


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_preview_serves_store_and_viewer_with_range_and_cors(
    tmp_path: Path, sharded_store: LookStore, sig: int
) -> None:
    viewer = stand_in_bundle(tmp_path / "viewer")
    proc, url = start(sharded_store.path, viewer)
    try:
        base = url.split("/index.html")[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith(
            "/index.html?store=" + base + "/store/"
        )
        page = requests.get(url, timeout=10)
        assert page.status_code == 200 and "stand-in" in page.text
        assert page.headers["Content-Type"].startswith("text/html")
        wasm = requests.get(f"{base}/codec.wasm", timeout=10)
        assert wasm.headers["Content-Type"] == "application/wasm"
        # a shard, read by ranges: bytes=a-b, a-, -n
        shard = next(p for p in (sharded_store.path / "0" / "data" / "c").rglob("*") if p.is_file())
        key = shard.relative_to(sharded_store.path).as_posix()
        body = shard.read_bytes()
        for header, want in (
            ("bytes=3-17", body[3:18]),
            (f"bytes={len(body) - 5}-", body[-5:]),
            ("bytes=-20", body[-20:]),
        ):
            r = requests.get(f"{base}/store/{key}", headers={"Range": header}, timeout=10)
            assert r.status_code == 206 and r.content == want, header
            assert r.headers["Access-Control-Allow-Origin"] == "*"
            assert "Content-Range" in r.headers["Access-Control-Expose-Headers"]
        past = requests.get(
            f"{base}/store/{key}", headers={"Range": f"bytes={len(body)}-"}, timeout=10
        )
        assert past.status_code == 416
        head = requests.head(f"{base}/store/{key}", timeout=10)
        assert head.status_code == 200 and int(head.headers["Content-Length"]) == len(body)
        pre = requests.options(
            f"{base}/store/zarr.json",
            headers={"Origin": "http://elsewhere", "Access-Control-Request-Headers": "range"},
            timeout=10,
        )
        assert pre.status_code == 204 and "Range" in pre.headers["Access-Control-Allow-Headers"]
        assert requests.get(f"{base}/store/0/data/c/9/9/9/9", timeout=10).status_code == 404
        # obstore (through chronozarr) reads the sharded store over the preview server
        remote = chronozarr.open_store(f"{base}/store/")
        local = chronozarr.open_store(sharded_store.path)
        for t in (0, 4):
            np.testing.assert_array_equal(remote.read(t, level=1), local.read(t, level=1))
    finally:
        code, stderr = stop(proc, sig)
    assert code == 0, stderr
    assert "stopped" in stderr and "Traceback" not in stderr


def test_preview_of_a_folder_that_is_not_a_store_fails_before_serving(tmp_path: Path) -> None:
    viewer = stand_in_bundle(tmp_path / "viewer")
    env = {**os.environ, "CZ_VIEWER_DIR": str(viewer)}
    result = subprocess.run(
        [sys.executable, "-m", "cz", "preview", str(tmp_path), "--no-browser"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1 and "no chronozarr store" in result.stderr
    assert result.stdout == ""


def test_preview_on_a_busy_port_is_a_clear_error(tmp_path: Path, look_store: LookStore) -> None:
    viewer = stand_in_bundle(tmp_path / "viewer")
    with StaticServer({"/": viewer}) as busy:
        port = busy.url.rsplit(":", 1)[1]
        env = {**os.environ, "CZ_VIEWER_DIR": str(viewer)}
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "cz",
                "preview",
                str(look_store.path),
                "--no-browser",
                "--port",
                port,
            ],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
    assert result.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_static_server_refuses_paths_out_of_its_mounts(tmp_path: Path) -> None:
    site = tmp_path / "site"
    (site / "sub").mkdir(parents=True)
    (site / "sub" / "a.txt").write_text("a")
    (tmp_path / "secret.txt").write_text("secret")
    (site / "link.txt").symlink_to(tmp_path / "secret.txt")
    bad_paths = [
        "/s/../secret.txt",
        "/s/%2e%2e/secret.txt",
        "/s/sub/../../secret.txt",
        "/s/link.txt",
        "/s/sub",
        "/s//sub/a.txt",
        "/secret.txt",
        "/s/sub/",
    ]
    with StaticServer({"/s/": site}) as server:
        ok = requests.get(f"{server.url}/s/sub/a.txt", timeout=10)
        assert ok.status_code == 200 and ok.text == "a"
        host, port = server.url.removeprefix("http://").split(":")
        for path in bad_paths:  # sent raw (http.client normalises nothing)
            conn = http.client.HTTPConnection(host, int(port), timeout=10)
            conn.request("GET", path)
            r = conn.getresponse()
            body = r.read()
            conn.close()
            assert r.status == 404 and b"secret" not in body, path


def test_a_store_url_is_named_not_served(tmp_path: Path) -> None:
    from cz.look.preview import start_preview
    from cz.look.viewer import Viewer

    bundle = stand_in_bundle(tmp_path / "viewer")
    preview = start_preview(
        "https://data.example/s2.zarr/", Viewer("bundle", "index.html", {"/": bundle})
    )
    try:
        assert (
            preview.page_url
            == f"{preview.server.url}/index.html?store=https://data.example/s2.zarr/"
        )
        assert preview.to_json()["store"] == "https://data.example/s2.zarr/"
        assert requests.get(f"{preview.server.url}/store/zarr.json", timeout=10).status_code == 404
        assert requests.get(preview.page_url, timeout=10).status_code == 200
    finally:
        preview.server.stop()

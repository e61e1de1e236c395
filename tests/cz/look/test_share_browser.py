"""``cz share``'s folder, uploaded next to its store on a plain static nginx (stock MIME types), opens in
headless Chromium and shows the first frame: the page reads the store by its default (no
``?store=`` in the link), requests timestep 0's chunks, and paints something that is not blank.

The bundle is the built one (``js/dist/viewer/`` or the package's ``_viewer/``) when it exists;
otherwise the test builds it into a temporary folder with the viewer's build script
(``js/tools/build-viewer.mjs``, what ``npm run build:viewer`` runs), so it runs on a fresh checkout.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from cz.look.viewer import find_bundle
from tests.conftest import REPO
from tests.cz.look.conftest import LookStore
from tests.cz.look.helpers import read_png, run
from tests.remote.nginxserver import NGINX, _free_port, _wait_for

CHROMIUM = Path("/usr/bin/chromium")
# a plain static nginx: Debian's stock MIME types, Range as nginx always does, nothing else
PLAIN_NGINX = """\
daemon off;
worker_processes 1;
{user}pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 64; }}
http {{
    include /etc/nginx/mime.types;
    log_format plain '$request_method $uri $status';
    access_log {prefix}/access.log plain;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        location / {{ try_files $uri $uri/index.html =404; }}
    }}
}}
"""


@contextlib.contextmanager
def plain_nginx(root: Path, prefix: Path) -> Iterator[tuple[str, Path]]:
    """nginx serving ``root`` on a free port: ``(url, access_log)``; stopped on exit."""
    prefix.mkdir(parents=True)
    port = _free_port()
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = prefix / "nginx.conf"
    conf.write_text(PLAIN_NGINX.format(user=user, prefix=prefix, port=port, root=root))
    proc = subprocess.Popen(
        [NGINX, "-c", conf, "-p", prefix, "-e", prefix / "error.log"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        if not _wait_for("127.0.0.1", port, proc):
            raise RuntimeError(f"nginx did not start: {(prefix / 'error.log').read_text()}")
        yield f"http://127.0.0.1:{port}", prefix / "access.log"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


NODE_MODULES = REPO / "js" / "node_modules"


def _requirements() -> str | None:
    if not NGINX.exists():
        return f"{NGINX} is not installed (apt-get install nginx)"
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is not installed (apt-get install chromium)"
    if shutil.which("node") is None:
        return "node is not installed"
    if not (NODE_MODULES / "playwright-core").is_dir():
        return "js/node_modules is missing (cd js && npm ci)"
    return None


def stand_in_from_examples(folder: Path) -> Path:
    """The viewer bundle built into ``folder`` by the viewer's own build script (what
    ``npm run build:viewer`` runs: one bundle, MapLibre's worker, CSS and the offline style)."""
    subprocess.run(
        ["node", str(REPO / "js" / "tools" / "build-viewer.mjs"), str(folder)],
        check=True,
        timeout=300,
    )
    return folder


@pytest.mark.timeout(300)
def test_shared_folder_shows_the_first_frame_in_chromium(
    tmp_path: Path, look_store: LookStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = _requirements()
    if missing:
        print(f"SKIP: {missing}")
        pytest.skip(missing)
    bundle = find_bundle()
    kind = "real bundle"
    if bundle is None:
        bundle = stand_in_from_examples(tmp_path / "stand-in")
        kind = "stand-in bundled from examples/viewer (js/dist/viewer/ not built)"
        monkeypatch.setenv("CZ_VIEWER_DIR", str(bundle))
    print(f"viewer: {kind}: {bundle}")
    site = tmp_path / "site"
    shutil.copytree(look_store.path, site / "look.zarr")
    result = run("share", site / "look.zarr", site / "viewer")
    assert result.exit_code == 0, result.stderr
    shot = tmp_path / "share.png"
    with plain_nginx(site, tmp_path / "nginx") as (url, access_log):
        out = subprocess.run(
            [
                "node",
                str(Path(__file__).with_name("browser.mjs")),
                str(REPO),
                f"{url}/viewer/index.html",
                str(shot),
            ],
            capture_output=True,
            text=True,
            timeout=240,
        )
        time.sleep(0.3)  # nginx logs a request after answering it
        log = [line.split() for line in access_log.read_text().splitlines()]
    assert out.returncode == 0, out.stderr
    page = json.loads(out.stdout.strip().splitlines()[-1])
    assert page["errors"] == [], page
    # the link has no ?store=: the page's default names the store (config block or ?store=)
    assert page["configStore"] == "../look.zarr/" or "store=..%2Flook.zarr%2F" in page["search"]
    assert page["state"] == "ready", page  # the viewer's own signal: first frame drawn
    paths = [path for _, path, status in log if status in ("200", "206")]
    assert "/look.zarr/zarr.json" in paths
    first_frame = [p for p in paths if re.fullmatch(r"/look\.zarr/\d+/data/c/0/.*", p)]
    assert first_frame, f"no chunk of timestep 0 was read: {paths}"
    img = read_png(shot)
    colours = np.unique(img[..., :3].reshape(-1, 3), axis=0)
    assert len(colours) > 200, f"the page looks blank ({len(colours)} colours)"


@pytest.mark.timeout(300)
def test_preview_page_shows_the_first_frame_in_chromium(
    tmp_path: Path, look_store: LookStore
) -> None:
    """``cz preview`` (a real process) serves whatever viewer the locator finds, bundle or the
    checkout's module page, and the store; Chromium opens the printed URL and draws timestep 0."""
    missing = _requirements()
    if missing:
        print(f"SKIP: {missing}")
        pytest.skip(missing)
    from cz.look.viewer import ViewerNotFoundError, locate_viewer

    try:
        kind = locate_viewer(allow_source=True).kind
    except ViewerNotFoundError as exc:
        print(f"SKIP: {exc}")
        pytest.skip(str(exc))
    print(f"viewer: {kind}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "cz", "preview", str(look_store.path), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), proc.stderr.read() if proc.stderr else ""
        shot = tmp_path / "preview.png"
        out = subprocess.run(
            ["node", str(Path(__file__).with_name("browser.mjs")), str(REPO), url, str(shot)],
            capture_output=True,
            text=True,
            timeout=240,
        )
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=15)
    assert out.returncode == 0, out.stderr
    page = json.loads(out.stdout.strip().splitlines()[-1])
    assert page["errors"] == [] and page["state"] == "ready", page
    assert proc.returncode == 0 and "stopped (" in stderr
    served = int(stderr.rsplit("stopped (", 1)[1].split()[0])
    assert served > 5  # page, modules, the store's metadata and chunks
    colours = np.unique(read_png(shot)[..., :3].reshape(-1, 3), axis=0)
    assert len(colours) > 200, f"the page looks blank ({len(colours)} colours)"

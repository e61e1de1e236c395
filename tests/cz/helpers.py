"""Helpers of the toolkit tests: fixture paths, recipe files, local servers on 127.0.0.1.

Imported as ``tests.cz.helpers``; ``conftest.py`` turns the servers into fixtures.

Real-world fixtures live outside the repository (``<X>/shared/fixtures`` beside ``<X>/main``);
tests that need them skip, with the reason printed, when the folder is absent.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SHARED_FIXTURES

FIXTURES = SHARED_FIXTURES
STAC = FIXTURES / "stac"
PC_35MNM = STAC / "odc-stac" / "site2-2020_jun_jul-35MNM.geojson"
PC_COLLECTION = STAC / "odc-stac" / "sentinel-2-l2a.collection.json"
ES_C1_ITEMS = STAC / "rustac" / "sentinel-2-c1-l2a" / "item-collection.json"
CASSETTES = STAC / "pystac-client"
OWN_CASSETTES = Path(__file__).resolve().parent / "cassettes"
RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def need(path: Path) -> Path:
    """Skip the test (reason printed) when a shared fixture is absent."""
    if not path.exists():
        reason = f"shared fixture not found: {path}"
        print(reason)
        pytest.skip(reason)
    return path


#: the cassette that holds a real Earth Search ``landsat-c2-l2`` item (with an S2 one)
ES_MULTI_CASSETTE = CASSETTES / "test_multiple_collections.yaml"


def cassette_items(cassette: Path, collection: str) -> list[dict[str, Any]]:
    """The items of ``collection`` in the responses recorded in a vcrpy ``cassette`` (skips, with
    the reason printed, when the shared fixture is absent)."""
    import yaml

    doc = yaml.safe_load(need(cassette).read_text())
    found = []
    for interaction in doc.get("interactions") or []:
        body = ((interaction.get("response") or {}).get("body") or {}).get("string")
        try:
            page = json.loads(body) if isinstance(body, str) else None
        except ValueError:  # a response that is no JSON document: no items in it
            continue
        for feature in (page or {}).get("features") or []:
            if feature.get("collection") == collection:
                found.append(feature)
    return found


def write_recipe(tmp_path: Path, text: str, name: str = "recipe.yaml") -> Path:
    """Write a recipe (dedented) into ``tmp_path`` and return its path."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


#: The smallest valid recipe (two bands over the 35MNM fixture's bbox); tests edit it to break it.
MINIMAL_RECIPE = """\
catalog:
  path: items.json
  collection: sentinel-2-l2a
aoi:
  bbox: [27.0, -8.2, 27.3, -7.9]
grid:
  crs: utm
  resolution: 20
time:
  start: 2020-05
  end: 2020-08
bands:
  - name: red
    asset: [red, B04]
  - name: nir
    asset: [nir, B08]
"""


#: A recipe over the 35MNM fixture file, June-July 2020 with an empty month on each side.
RECIPE_35MNM = """
name: pc-35mnm
catalog:
  {catalog}
  collection: sentinel-2-l2a
aoi:
  bbox: [27.0, -8.2, 27.3, -7.9]
grid:
  crs: utm
  resolution: 20
time:
  start: 2020-05
  end: 2020-08
bands:
  - name: red
    asset: [red, B04]
    common_name: red
  - name: nir
    asset: [nir, B08]
    common_name: nir
filters:
  max_cloud_cover: 10
"""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 at the time of the call."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rustac_binary() -> str:
    """The ``rustac`` command of this venv (the PyPI package), or skip."""
    candidate = Path(sys.executable).parent / "rustac"
    found = str(candidate) if candidate.exists() else shutil.which("rustac")
    if not found:
        reason = "rustac (PyPI package) is not installed"
        print(reason)
        pytest.skip(reason)
    return found


def _wait_http(url: str, deadline: float, proc: subprocess.Popen[bytes]) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=0.5) as resp:
                if resp.status == 200:
                    return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{url} did not answer in time")


def rustac_api_factory() -> Iterator[Callable[..., str]]:
    """Yield ``start(*hrefs) -> url``: runs ``rustac serve`` on 127.0.0.1 with those files.

    Every server started is stopped when the generator is closed.
    """
    procs: list[subprocess.Popen[bytes]] = []

    def start(*hrefs: Path) -> str:
        binary = rustac_binary()
        port = free_port()
        addr = f"127.0.0.1:{port}"
        proc = subprocess.Popen(
            [binary, "serve", "--addr", addr, *[str(h) for h in hrefs]],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proc)
        _wait_http(f"http://{addr}/", time.monotonic() + 15, proc)
        return f"http://{addr}"

    try:
        yield start
    finally:
        for proc in procs:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


# ---------------------------------------------------------------------------------------------
# a scripted STAC API for retry tests


def landing_page(base: str, conforms: list[str] | None = None) -> dict[str, Any]:
    """A minimal STAC API landing page declaring item search (and ``conforms``)."""
    return {
        "type": "Catalog",
        "stac_version": "1.0.0",
        "id": "scripted",
        "description": "scripted test API",
        "conformsTo": [
            "https://api.stacspec.org/v1.0.0/core",
            "https://api.stacspec.org/v1.0.0/item-search",
            *(conforms or []),
        ],
        "links": [
            {"rel": "self", "href": f"{base}/", "type": "application/json"},
            {"rel": "root", "href": f"{base}/", "type": "application/json"},
            {
                "rel": "search",
                "href": f"{base}/search",
                "type": "application/geo+json",
                "method": "POST",
            },
        ],
    }


class ScriptedAPI:
    """An HTTP server on 127.0.0.1 answering from scripts; records every request.

    ``script[(method, path)]`` is a list of ``(status, headers, body)``; the last entry repeats.
    ``delay`` seconds are slept before each answer (to trigger read timeouts).
    """

    def __init__(self) -> None:
        self.script: dict[tuple[str, str], list[tuple[int, dict[str, str], Any]]] = {}
        self.requests: list[tuple[str, str, bytes]] = []
        self.delay = 0.0
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                path = self.path.split("?", 1)[0].rstrip("/") or "/"
                api.requests.append((self.command, path, body))
                if api.delay:
                    time.sleep(api.delay)
                entries = api.script.get((self.command, path)) or [(404, {}, {"error": "nf"})]
                status, headers, payload = entries.pop(0) if len(entries) > 1 else entries[0]
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = _answer
            do_POST = _answer

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def count(self, method: str, path: str) -> int:
        return sum(1 for m, p, _ in self.requests if m == method and p == path)

    def __enter__(self) -> ScriptedAPI:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)


# ---------------------------------------------------------------------------------------------
# synthetic items

AOI = (27.0, -8.2, 27.3, -7.9)


def s2_item(
    item_id: str,
    when: str,
    *,
    tile: str = "35MNM",
    platform: str = "Sentinel-2A",
    baseline: str | None = "05.09",
    cloud: float | None = 5.0,
    nodata: float | None = 0.0,
    orbit: int = 78,
    footprint: tuple[float, float, float, float] = AOI,
    collection: str = "sentinel-2-l2a",
    assets: tuple[str, ...] = ("B04", "B08", "SCL"),
    **props: Any,
) -> dict[str, Any]:
    """A Sentinel-2 L2A item dict (Planetary Computer style keys by default)."""
    w, s, e, n = footprint
    properties: dict[str, Any] = {
        "datetime": when,
        "platform": platform,
        "s2:mgrs_tile": tile,
        "sat:relative_orbit": orbit,
    }
    if baseline is not None:
        properties["s2:processing_baseline"] = baseline
    if cloud is not None:
        properties["eo:cloud_cover"] = cloud
    if nodata is not None:
        properties["s2:nodata_pixel_percentage"] = nodata
    properties.update(props)
    return {
        "type": "Feature",
        "stac_version": "1.0.0",
        "id": item_id,
        "collection": collection,
        "bbox": [w, s, e, n],
        "geometry": {
            "type": "Polygon",
            "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]],
        },
        "properties": properties,
        "links": [],
        "assets": {k: {"href": f"https://data.test/{item_id}/{k}.tif"} for k in assets},
    }

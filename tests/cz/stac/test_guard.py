"""A misbehaving STAC server on 127.0.0.1 cannot hold a search forever (decision 0013).

Regressions of main: endless ``next`` links were followed without end (6,003 pages, memory
growing) and a truncated search page escaped as a ``JSONDecodeError`` traceback.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from cz.errors import StacError
from cz.stac import RetryPolicy, make_stac_io, search_endpoint
from cz.stac.guard import guarded_pages

FEATURE = {"type": "Feature", "id": "x", "properties": {}, "assets": {}, "links": []}


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # keep the test output clean
        pass

    def do_GET(self) -> None:
        url = urlparse(self.path)
        page = int(parse_qs(url.query).get("page", ["1"])[0])
        base = f"http://127.0.0.1:{self.server.server_port}{url.path}"
        body: bytes
        if url.path == "/same":  # every page links to the same next page
            doc = {
                "type": "FeatureCollection",
                "features": [FEATURE],
                "links": [{"rel": "next", "href": f"{base}?page=2"}],
            }
            body = json.dumps(doc).encode()
        elif url.path == "/endless":  # a new next page every time
            doc = {
                "type": "FeatureCollection",
                "features": [FEATURE],
                "links": [{"rel": "next", "href": f"{base}?page={page + 1}"}],
            }
            body = json.dumps(doc).encode()
        elif url.path == "/truncated":  # the second page is cut in the middle
            doc = {
                "type": "FeatureCollection",
                "features": [FEATURE],
                "links": [{"rel": "next", "href": f"{base}?page={page + 1}"}],
            }
            body = json.dumps(doc).encode()
            if page == 2:
                body = body[: len(body) // 2]
        elif url.path == "/drip":  # headers at once, then one byte every 0.5 s
            body = json.dumps({"type": "FeatureCollection", "features": [FEATURE]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/geo+json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            try:
                for byte in body:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(0.5)
            except OSError:  # the client gave up: what the test wants
                pass
            return
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/geo+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}"
    httpd.shutdown()
    httpd.server_close()


def _search(url: str) -> tuple[list[dict[str, Any]], int]:
    io = make_stac_io(RetryPolicy(max_retries=0, timeout=5))
    return search_endpoint(url, {}, io, method="GET")


def test_a_repeated_next_link_stops_the_search(server: str) -> None:
    with pytest.raises(StacError, match="already read") as info:
        _search(f"{server}/same")
    assert "\n" not in str(info.value)


def test_a_truncated_page_is_one_line(server: str) -> None:
    with pytest.raises(StacError, match="page 2 is not valid JSON") as info:
        _search(f"{server}/truncated")
    assert "\n" not in str(info.value)


def test_endless_pages_stop_at_the_cap(server: str) -> None:
    io = make_stac_io(RetryPolicy(max_retries=0, timeout=5))
    from pystac_client.item_search import ItemSearch

    search = ItemSearch(url=f"{server}/endless", stac_io=io, method="GET")
    with pytest.raises(StacError, match="stopped after 25 pages"):
        for _ in guarded_pages(search.pages_as_dicts(), f"{server}/endless", max_pages=25):
            pass


def test_the_search_deadline() -> None:
    def slow() -> Iterator[dict[str, Any]]:
        import time

        for i in range(100):
            time.sleep(0.02)
            yield {"features": [FEATURE], "links": [{"rel": "next", "href": f"p{i}"}]}

    with pytest.raises(StacError, match=r"search deadline is 0\.1 s"):
        list(guarded_pages(slow(), "http://x/search", deadline_s=0.1))


def test_a_dripping_server_is_cut_at_the_request_deadline(server: str) -> None:
    """The body takes ~50 s at one byte per 0.5 s; each read returns within the read timeout."""
    policy = RetryPolicy(max_retries=0, timeout=1.0)  # bound() = 1 x (1 + 1) = 2 s
    io = make_stac_io(policy)
    t0 = time.monotonic()
    with pytest.raises(Exception, match="request deadline") as info:
        search_endpoint(f"{server}/drip", {}, io, method="GET")
    assert time.monotonic() - t0 < policy.bound() + 3
    assert "\n" not in str(info.value)

"""Local servers of the toolkit tests, on 127.0.0.1 only, stopped by the test that started them.

``RangeServer`` serves files of one folder over HTTP with byte ranges, as object stores and
nginx do: ``http.server`` ignores ``Range`` (GDAL would then download every COG whole, and a
sharded read fails), so this one answers ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n`` with 206
and ``Content-Range`` (several ranges at once get the whole object, as RFC 9110 allows). Faults are scripted per path: a status to answer (404, 500, 503) for the
next N requests or for ever, to test retries and unreadable assets.
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ["RangeServer"]

_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


class RangeServer:
    """Serve ``root`` on ``http://127.0.0.1:PORT/`` with HTTP byte ranges; a context manager.

    ``fail(path, status, times=None)`` makes the next ``times`` requests of ``path`` (every one
    when ``None``) answer ``status``. ``requests`` counts requests per path; ``ranged`` counts the
    ones answered 206.
    """

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self.faults: dict[str, list[Any]] = {}
        self.requests: Counter[str] = Counter()
        self.ranged: Counter[str] = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep the test output clean
                pass

            def _fault(self, path: str) -> int | None:
                with server._lock:
                    server.requests[path] += 1
                    fault = server.faults.get(path)
                    if fault is None:
                        return None
                    status, remaining = fault
                    if remaining is not None:
                        if remaining <= 0:
                            return None
                        fault[1] = remaining - 1
                    return int(status)

            def _send(self, status: int, body: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                status = self._fault(path)
                if status is not None:
                    self._send(status, b"scripted failure", {"Content-Type": "text/plain"})
                    return
                file = (server.root / path.lstrip("/")).resolve()
                if server.root not in file.parents or not file.is_file():
                    self._send(404, b"not found", {"Content-Type": "text/plain"})
                    return
                data = file.read_bytes()
                size = len(data)
                header = self.headers.get("Range")
                base = {"Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
                if not header or "," in header:  # several ranges: the whole object (RFC 9110)
                    self._send(200, data, base)
                    return
                match = _RANGE.match(header.strip())
                if match is None or match.groups() == ("", ""):
                    self._send(416, b"", {**base, "Content-Range": f"bytes */{size}"})
                    return
                first, last = match.groups()
                if first == "":  # suffix: the last n bytes
                    start, end = max(0, size - int(last)), size - 1
                else:
                    start = int(first)
                    end = min(int(last), size - 1) if last else size - 1
                if start >= size or start > end:
                    self._send(416, b"", {**base, "Content-Range": f"bytes */{size}"})
                    return
                with server._lock:
                    server.ranged[path] += 1
                self._send(
                    206,
                    data[start : end + 1],
                    {**base, "Content-Range": f"bytes {start}-{end}/{size}"},
                )

            do_HEAD = do_GET

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def fail(self, path: str, status: int, times: int | None = None) -> None:
        """Answer ``status`` to the next ``times`` requests of ``path`` (all when ``None``)."""
        with self._lock:
            self.faults["/" + path.lstrip("/")] = [status, times]

    def __enter__(self) -> RangeServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self._thread.join(timeout=5)

"""A small static file server with HTTP Range support, for tests and the benchmark.

``python -m http.server`` ignores Range, so sharded reads fail through it (docs/architecture.md).
This one honours ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n`` (one range; several ranges are
answered with the whole object, which RFC 9110 allows), answers HEAD, returns 404 for absent keys
and for directories, keeps connections alive (HTTP/1.1), sets the CORS headers of docs/hosting.md,
and logs every request (method, path, Range header, status, connection number) so a test can count
what a reader asked for. It does not merge doubled slashes: ``/a//b`` is absent, as on S3.
"""

from __future__ import annotations

import itertools
import os
import socket
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["LoggedRequest", "RangeServer"]


@dataclass(frozen=True)
class LoggedRequest:
    method: str
    path: str
    range: str | None
    status: int
    connection: int
    nbytes: int


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK hold every keep-alive response back by ~40 ms
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.connection_id = next(self.server.connections)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _headers(self, status: int, length: int, extra: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag")
        for k, v in (extra or {}).items():
            self.send_header(k, v)
        self.end_headers()

    def _log(self, status: int, nbytes: int) -> None:
        path = unquote(urlsplit(self.path).path)
        entry = LoggedRequest(
            self.command, path, self.headers.get("Range"), status, self.connection_id, nbytes
        )
        with self.server.lock:
            self.server.log.append(entry)

    def _serve(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        parts = path.lstrip("/").split("/")
        file = (
            self.server.root.joinpath(*parts)
            if all(p not in ("", ".", "..") for p in parts)
            else None
        )
        if file is None or not file.is_file():
            msg = b"not found"
            self._log(404, len(msg) if body else 0)
            self._headers(404, len(msg), {"Content-Type": "text/plain"})
            if body:
                self.wfile.write(msg)
            return
        size = file.stat().st_size
        start, end = 0, size - 1
        status = 200
        header = self.headers.get("Range")
        extra = {"Content-Type": "application/octet-stream"}
        if header and header.startswith("bytes=") and "," not in header:
            first, _, last = header[6:].strip().partition("-")
            if first == "" and last.isdigit():
                start, end = max(0, size - int(last)), size - 1
            elif first.isdigit():
                start = int(first)
                end = min(int(last), size - 1) if last.isdigit() else size - 1
            if start >= size or end < start:
                self._log(416, 0)
                self._headers(416, 0, {"Content-Range": f"bytes */{size}"})
                return
            status = 206
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        length = end - start + 1
        # logged before the response is sent: once a client has its answer, the log has it
        self._log(status, length if body else 0)
        self._headers(status, length, extra)
        if body:
            with open(file, "rb") as fh:
                fh.seek(start)
                self.wfile.write(fh.read(length))

    def do_GET(self) -> None:
        self._serve(True)

    def do_HEAD(self) -> None:
        self._serve(False)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    root: Path
    log: list[LoggedRequest]
    lock: threading.Lock
    connections: itertools.count[int]


class RangeServer:
    """Serve ``root`` on 127.0.0.1 (a free port) in a thread: ``with RangeServer(d) as s: s.url``."""

    def __init__(self, root: str | os.PathLike[str]):
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.root = Path(root)
        self.server.log = []
        self.server.lock = threading.Lock()
        self.server.connections = itertools.count(1)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def log(self) -> list[LoggedRequest]:
        with self.server.lock:
            return list(self.server.log)

    def clear(self) -> None:
        with self.server.lock:
            self.server.log.clear()

    def start(self) -> RangeServer:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(timeout=5)

    def __enter__(self) -> RangeServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

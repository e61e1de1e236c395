"""A small static server for ``cz preview``: folders mounted under URL prefixes, HTTP Range,
HEAD, CORS, on 127.0.0.1.

``python -m http.server`` ignores Range, and sharded stores need it (spec 7.2; docs/hosting.md).
This answers ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n`` with 206 (several ranges get the
whole object, which RFC 9110 allows), 416 for a range past the end, 404 for absent keys (a
missing chunk reads as fill, spec 7.2), serves ``index.html`` for a folder, refuses paths that
leave their mount, sends ``Cache-Control: no-store`` (a rebuilt store shows at once) and the
CORS headers of docs/hosting.md, so a viewer on another origin can read the store too.
"""

from __future__ import annotations

import mimetypes
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["StaticServer"]

_TYPES = {
    ".js": "text/javascript",
    ".mjs": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".css": "text/css",
    ".html": "text/html; charset=utf-8",
    ".map": "application/json",
}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        self.server.log_request_line(self.command, self.path)

    def log_error(self, format: str, *args: Any) -> None:  # no stderr noise per request
        pass

    def _cors(self) -> None:
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS")
        self.send_header("Access-Control-Allow-Headers", "Range, If-None-Match")
        self.send_header("Access-Control-Expose-Headers", "Content-Length, Content-Range, ETag")

    def _send(self, status: int, length: int, extra: dict[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Cache-Control", "no-store")
        self._cors()
        for k, v in extra.items():
            self.send_header(k, v)
        self.end_headers()

    def _resolve(self) -> Path | None:
        path = unquote(urlsplit(self.path).path)
        for prefix, root in self.server.mounts:
            if path == prefix.rstrip("/") and prefix != "/":
                return None  # /store without the slash: a folder, not a key
            if path.startswith(prefix):
                rest = path[len(prefix) :]
                parts = rest.split("/") if rest else []
                if any(p in (".", "..") or "\\" in p or "\x00" in p for p in parts):
                    return None
                if any(p == "" for p in parts[:-1]):
                    return None  # doubled slashes: absent, as on S3
                file = root.joinpath(*[p for p in parts if p])
                if file.is_dir():
                    file = file / "index.html"
                try:
                    file.resolve().relative_to(root)
                except ValueError:
                    return None  # a symlink out of the mount
                return file if file.is_file() else None
        return None

    def _serve(self, body: bool) -> None:
        file = self._resolve()
        if file is None:
            msg = b"not found"
            self._send(404, len(msg), {"Content-Type": "text/plain"})
            if body:
                self.wfile.write(msg)
            return
        size = file.stat().st_size
        start, end, status = 0, size - 1, 200
        ctype = _TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0]
        extra = {"Content-Type": ctype or "application/octet-stream"}
        header = self.headers.get("Range")
        if header and header.startswith("bytes=") and "," not in header:
            first, _, last = header[6:].strip().partition("-")
            if first == "" and last.isdigit():
                start = max(0, size - int(last))
            elif first.isdigit():
                start = int(first)
                end = min(int(last), size - 1) if last.isdigit() else size - 1
            else:
                start, end = 0, -1  # malformed: 416 below
            if start >= size or end < start:
                self._send(416, 0, {"Content-Range": f"bytes */{size}"})
                return
            status = 206
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        length = end - start + 1
        self._send(status, length, extra)
        if body:
            with open(file, "rb") as fh:
                fh.seek(start)
                remaining = length
                while remaining:
                    block = fh.read(min(remaining, 1 << 20))
                    if not block:
                        break
                    self.wfile.write(block)
                    remaining -= len(block)

    def do_GET(self) -> None:
        self._serve(True)

    def do_HEAD(self) -> None:
        self._serve(False)

    def do_OPTIONS(self) -> None:
        self.send_response(204)
        self._cors()
        self.send_header("Content-Length", "0")
        self.end_headers()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mounts: list[tuple[str, Path]]
    requests: int
    lock: threading.Lock

    def log_request_line(self, method: str, path: str) -> None:
        with self.lock:
            self.requests += 1


class StaticServer:
    """Serve ``mounts`` (URL prefix ending in ``/`` -> folder) on 127.0.0.1:``port`` (0: free).

    ``serve_forever()`` blocks (the CLI); ``start()``/``stop()`` run it in a thread (tests).
    """

    def __init__(self, mounts: dict[str, Path], port: int = 0):
        for prefix in mounts:
            if not (prefix.startswith("/") and prefix.endswith("/")):
                raise ValueError(f"mount prefix {prefix!r} must start and end with '/'")
        self.server = _Server(("127.0.0.1", port), _Handler)
        # longest prefix first, so /store/ wins over /
        self.server.mounts = sorted(
            ((p, Path(d).resolve()) for p, d in mounts.items()), key=lambda m: -len(m[0])
        )
        self.server.requests = 0
        self.server.lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else host  # typeshed allows bytes
        return f"http://{name}:{port}"

    @property
    def requests(self) -> int:
        with self.server.lock:
            return self.server.requests

    def serve_forever(self) -> None:
        self.server.serve_forever(poll_interval=0.2)

    def shutdown(self) -> None:
        """Stop ``serve_forever`` (from another thread) and close the socket."""
        self.server.shutdown()
        self.server.server_close()

    def start(self) -> StaticServer:
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> StaticServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

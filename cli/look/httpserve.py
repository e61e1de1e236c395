"""A small static server for ``cz preview``: folders mounted under URL prefixes, HTTP Range,
HEAD, CORS, on 127.0.0.1.

``python -m http.server`` ignores Range, and sharded stores need it (spec 7.2; docs/hosting.md).
This answers ``bytes=a-b``, ``bytes=a-`` and ``bytes=-n`` with 206 (several ranges get the
whole object, which RFC 9110 allows), 416 for a range past the end, 404 for absent keys (a
missing chunk reads as fill, spec 7.2), serves ``index.html`` for a folder, refuses paths that
leave their mount, sends ``Cache-Control: no-store`` (a rebuilt store shows at once) and the
CORS headers of docs/hosting.md, so a viewer on another origin can read the store too.

Malformed requests get a 4xx, never a traceback: a request line over 64 KiB (414), a
Range that is not ASCII digits (``bytes=\xb2-``: 416), a name the filesystem refuses (a segment
over 255 bytes: 404). Connections are bounded: an idle or half-sent request is dropped after
``IDLE_SECONDS``, and at most ``MAX_CONNECTIONS`` are served at once; one more is answered 503
at once and closed (so 1,500 idle sockets cannot take 1,500 threads).
"""

from __future__ import annotations

import mimetypes
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["StaticServer"]

IDLE_SECONDS = 15.0  # a connection that sends nothing for this long is closed
MAX_CONNECTIONS = 64  # served at once (a viewer opens a few); more are answered 503
_RANGE = re.compile(r"bytes=([0-9]{0,19})-([0-9]{0,19})", re.ASCII)  # 19 digits: below 2^63
_BUSY = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nRetry-After: 1\r\n"
    b"Connection: close\r\n\r\n"
)

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
    timeout = IDLE_SECONDS  # socket timeout: an idle or half-sent request ends the connection
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        # also called for a request refused before it was parsed (414, 400): no path then
        self.server.log_request_line(getattr(self, "command", ""), getattr(self, "path", ""))

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
        try:
            return self._lookup()
        except (OSError, ValueError):  # ENAMETOOLONG, a name the filesystem refuses: absent
            return None

    def _lookup(self) -> Path | None:
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
        try:
            size = file.stat().st_size
        except OSError:  # removed since it was found
            self._send(404, 0, {})
            return
        start, end, status = 0, size - 1, 200
        ctype = _TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0]
        extra = {"Content-Type": ctype or "application/octet-stream"}
        header = self.headers.get("Range")
        if header and header.startswith("bytes=") and "," not in header:
            match = _RANGE.fullmatch(header.replace(" ", ""))
            first, last = match.groups() if match else ("", "")
            if first == "" and last != "":
                start = max(0, size - int(last))
            elif first != "":
                start = int(first)
                end = min(int(last), size - 1) if last != "" else size - 1
            else:
                start, end = 0, -1  # malformed (not ASCII digits, too long, bytes=-): 416 below
            if start >= size or end < start:
                self._send(416, 0, {"Content-Range": f"bytes */{size}"})
                return
            status = 206
            extra["Content-Range"] = f"bytes {start}-{end}/{size}"
        length = end - start + 1
        self._send(status, length, extra)
        if body:
            self._copy(file, start, length)

    def _copy(self, file: Path, start: int, length: int) -> None:
        try:
            with open(file, "rb") as fh:
                fh.seek(start)
                remaining = length
                while remaining:
                    block = fh.read(min(remaining, 1 << 20))
                    if not block:
                        break
                    self.wfile.write(block)
                    remaining -= len(block)
        except OSError:  # the file went away mid-body, or the client hung up: end this one
            self.close_connection = True

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
    request_queue_size = 128
    mounts: list[tuple[str, Path]]
    requests: int
    refused: int
    lock: threading.Lock
    slots: threading.BoundedSemaphore

    def log_request_line(self, method: str, path: str) -> None:
        with self.lock:
            self.requests += 1

    def process_request(self, request: Any, client_address: Any) -> None:
        """A thread per connection while fewer than MAX_CONNECTIONS are open; else 503."""
        if not self.slots.acquire(blocking=False):
            with self.lock:
                self.refused += 1
            try:
                request.settimeout(1.0)
                request.sendall(_BUSY)
            except OSError:
                pass
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self.slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self.slots.release()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A connection's failure (reset, timeout) ends that connection, silently: never a
        traceback on the user's terminal."""


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
        self.server.refused = 0
        self.server.lock = threading.Lock()
        self.server.slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
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

"""nginx on 127.0.0.1 with the exact server block of docs/hosting.md (tests and benchmark).

:class:`NginxServer` renders the documented block with a port and a root (nothing else changes),
wraps it in a private main configuration (its own prefix, pid, logs and temporary paths, an
access log that numbers connections, and a deliberately hostile ``gzip on`` for every type that
the block's ``gzip off`` must override) and runs ``/usr/sbin/nginx`` in the foreground as a child
process, stopped by :meth:`NginxServer.stop`.
"""

from __future__ import annotations

import http.client
import os
import re
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NGINX = Path("/usr/sbin/nginx")
HOSTING = REPO / "docs" / "hosting.md"

__all__ = [
    "HOSTING",
    "NGINX",
    "Logged",
    "NginxServer",
    "fenced_block_after",
    "render",
    "server_block",
]


def fenced_block_after(marker: str, text: str) -> str:
    """The first fenced code block after the line holding ``marker`` (its content only)."""
    at = text.index(marker)
    m = re.compile(r"^[ \t]*```[a-z]*\n(.*?)^[ \t]*```", re.S | re.M).search(text, at)
    assert m is not None, f"no code block after {marker!r} in {HOSTING}"
    return m.group(1)


def server_block() -> str:
    return fenced_block_after("<!-- nginx-server-block", HOSTING.read_text())


def render(block: str, port: int, root: Path) -> str:
    """The documented server block with its listen address and root changed, nothing else."""
    assert block.count("listen 8080;") == 1 and block.count("root /srv/chronozarr;") == 1
    return block.replace("listen 8080;", f"listen 127.0.0.1:{port};").replace(
        "root /srv/chronozarr;", f"root {root};"
    )


# the main configuration around the documented block: a private prefix, a request log that
# numbers connections, and a deliberately hostile "gzip on" for every type, which the
# server block's "gzip off" must override (as it must under Debian's default nginx.conf)
MAIN_CONF = """\
daemon off;
worker_processes 1;
{user}pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 128; }}
http {{
    log_format chronozarr '$request_method $uri "$http_range" $status $connection';
    access_log {prefix}/access.log chronozarr;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    sendfile on;
    keepalive_requests 10000;
    gzip on;
    gzip_min_length 1;
    gzip_types *;
    include {prefix}/chronozarr.conf;
}}
"""

_LOG = re.compile(r'^(\S+) (\S+) "([^"]*)" (\d+) (\d+)$')


@dataclass(frozen=True)
class Logged:
    method: str
    path: str
    range: str | None
    status: int
    connection: int


class NginxServer:
    """``with NginxServer(root, prefix) as n: n.url``: nginx serving ``root`` on a free port."""

    def __init__(self, root: Path, prefix: Path):
        self.root = Path(root)
        self.prefix = Path(prefix)
        self.host = "127.0.0.1"
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> NginxServer:
        """Start nginx (three tries at a free port); RuntimeError with its log if it fails."""
        if not NGINX.exists():
            raise FileNotFoundError(f"{NGINX} is absent (apt-get install nginx)")
        self.prefix.mkdir(parents=True, exist_ok=True)
        # as root, nginx's workers would run as "nobody", who cannot enter private temporary
        # directories (pytest's): keep them as the current user
        user = "user root;\n" if os.geteuid() == 0 else ""
        (self.prefix / "nginx.conf").write_text(MAIN_CONF.format(prefix=self.prefix, user=user))
        for _attempt in range(3):
            self.port = _free_port()
            (self.prefix / "chronozarr.conf").write_text(
                render(server_block(), self.port, self.root)
            )
            with open(self.prefix / "stdout.log", "wb") as console:
                self.proc = subprocess.Popen(
                    [
                        NGINX,
                        "-c",
                        self.prefix / "nginx.conf",
                        "-p",
                        self.prefix,
                        "-e",
                        self.prefix / "error.log",
                    ],
                    stdout=console,
                    stderr=subprocess.STDOUT,
                )
            if _wait_for(self.host, self.port, self.proc):
                return self
            self.stop()
        log = (self.prefix / "stdout.log").read_text(errors="replace")
        raise RuntimeError(f"nginx did not start: {log}")

    def stop(self) -> None:
        """Stop the nginx master this object started (SIGTERM: fast shutdown, workers too)."""
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> NginxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log(self) -> list[Logged]:
        """Every request so far. nginx writes a log line after it has sent the response, so a
        client can be ahead of the log: a marker request (one worker handles requests in order)
        is sent first, and the log is read once the marker is in it. Markers are left out."""
        marker = f"/.sync/{uuid.uuid4().hex}"
        self.request("GET", marker)
        deadline = time.monotonic() + 5
        while True:
            lines = (self.prefix / "access.log").read_text().splitlines()
            if any(f" {marker} " in line for line in lines) or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        out = []
        for line in lines:
            m = _LOG.match(line)
            assert m, line
            if m.group(2).startswith("/.sync/"):
                continue
            rng = None if m.group(3) == "-" else m.group(3)
            out.append(Logged(m.group(1), m.group(2), rng, int(m.group(4)), int(m.group(5))))
        return out

    def request(
        self, method: str, path: str, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=10)
        try:
            conn.request(method, path, headers=headers or {})
            res = conn.getresponse()
            body = res.read()
            return res.status, {k.lower(): v for k, v in res.getheaders()}, body
        finally:
            conn.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for(host: str, port: int, proc: subprocess.Popen[bytes]) -> bool:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False

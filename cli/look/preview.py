"""``cz preview``: serve a local store and the viewer on 127.0.0.1 until Ctrl-C or SIGTERM.

The store is mounted at ``/store/`` and the viewer at ``/`` (the bundle) or at
``/examples/viewer/`` + ``/js/`` (a source checkout without a bundle). A store given as an
http(s) URL is not served, only named in ``?store=`` (its host must send CORS headers).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from cz.look.httpserve import StaticServer
from cz.look.viewer import Viewer

__all__ = ["Preview", "start_preview", "wait_for_stop"]


@dataclass
class Preview:
    server: StaticServer
    viewer: Viewer
    page_url: str
    store_url: str

    def to_json(self) -> dict[str, Any]:
        return {"url": self.page_url, "store": self.store_url, "viewer": self.viewer.kind}


def start_preview(store: str, viewer: Viewer, *, port: int = 0) -> Preview:
    """Start the server in a thread; ``store`` is a local folder or an http(s) URL."""
    remote = urlsplit(store).scheme in ("http", "https")
    mounts = dict(viewer.mounts)
    if not remote:
        mounts["/store/"] = Path(store).resolve()
    server = StaticServer(mounts, port=port).start()
    store_url = store if remote else f"{server.url}/store/"
    page_url = f"{server.url}/{viewer.page}?store={quote(store_url, safe=':/')}"
    return Preview(server, viewer, page_url, store_url)


def wait_for_stop(
    stop: threading.Event | None = None, on_signal: Callable[[], None] | None = None
) -> None:
    """Block until Ctrl-C (SIGINT) or SIGTERM (or ``stop`` is set), restoring the handlers."""
    done = stop or threading.Event()

    def handler(signum: int, frame: Any) -> None:
        done.set()
        if on_signal is not None:
            on_signal()

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not done.wait(0.5):
            pass
    finally:
        for s, h in previous.items():
            signal.signal(s, h)

"""Bounds on a STAC search: a deadline per request, and on paging a cap, repeated-``next``
detection and a search deadline.

pystac-client follows ``next`` links for as long as a server sends them, so a server (or a
proxy) that answers every page with the same ``next`` link, or with an endless series, holds a
search forever while memory grows (6,003 pages measured on main); a truncated page escaped as a
``JSONDecodeError`` traceback. :func:`guarded_pages` wraps the page iterator: each page must be
a JSON object, a ``next`` link seen before is an error (the search would loop), at most
``max_pages`` pages are read and the whole search must finish within ``deadline_s``. Every
refusal is one :class:`~cz.errors.StacError` line naming the URL and the page.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import re
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from cz.errors import StacError

__all__ = [
    "ANNOUNCE_WAIT_S",
    "MAX_PAGES",
    "SEARCH_DEADLINE_S",
    "CountingRetry",
    "DeadlineAdapter",
    "RetryAfterTooLong",
    "attempts_made",
    "guarded_pages",
]

log = logging.getLogger(__name__)
_LOCAL = threading.local()  # the box of the request the current (worker) thread sends


class RetryAfterTooLong(requests.exceptions.RequestException):
    """The server asked (``Retry-After``) for a longer wait than the policy's cap: waiting the
    cap and asking again would be refused again, so the request ends at once (decision 0046)."""


#: A wait shorter than this is not announced on stderr.
ANNOUNCE_WAIT_S = 1.0


def _retry_after_seconds(raw: str) -> float | None:
    """Seconds a ``Retry-After`` value asks for (delay-seconds or an HTTP date), uncapped; None
    for a value that is neither (then the backoff applies)."""
    raw = raw.strip()
    if re.fullmatch(r"[0-9]{1,12}", raw, re.ASCII):
        return float(int(raw))
    parsed = email.utils.parsedate_tz(raw)
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


class CountingRetry(Retry):
    """urllib3's ``Retry`` that counts the attempts a request really made (decision 0013: messages
    said "after N attempts" with N the policy's maximum whatever happened). Each retry urllib3
    schedules is one more attempt; the last one raises instead of scheduling.

    Its waits are said on stderr (a warning naming the URL, the reason and the seconds), and a
    ``Retry-After`` beyond ``retry_after_max`` ends the request at once with
    :class:`RetryAfterTooLong` instead of waiting the cap again and again (decision 0046: a 429
    asking for 3600 s waited 151 s silently on main, then failed anyway)."""

    def increment(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        new = super().increment(*args, **kwargs)  # raises MaxRetryError when none is left
        box = getattr(_LOCAL, "box", None)
        if box is not None:
            box["attempts"] = box.get("attempts", 1) + 1
        return new

    def sleep(self, response: Any = None) -> None:
        last = self.history[-1] if self.history else None
        box = getattr(_LOCAL, "box", None) or {}
        url = box.get("url") or getattr(last, "url", None) or "the STAC API"
        attempt = len(self.history) + 1
        asked = None
        if self.respect_retry_after_header and response is not None:
            raw = response.headers.get("Retry-After")
            asked = _retry_after_seconds(raw) if isinstance(raw, str) else None
        status = getattr(response, "status", None)
        if asked is not None and asked > float(self.retry_after_max):
            if "attempts" in box:  # increment() counted the attempt this refusal never makes
                box["attempts"] -= 1
            raise RetryAfterTooLong(
                f"the server answered HTTP {status} asking to wait {asked:.0f} s (Retry-After),"
                f" more than the cap of {float(self.retry_after_max):g} s"
                " (catalog.backoff_max): try again later, or raise backoff_max"
            )
        wait = asked if asked is not None else self.get_backoff_time()
        if wait >= ANNOUNCE_WAIT_S:
            why = f"HTTP {status}" if status is not None else _reason(last)
            source = "as its Retry-After asks" if asked is not None else "backoff"
            log.warning(
                "%s: %s; waiting %.0f s (%s) before attempt %d", url, why, wait, source, attempt
            )
        if wait > 0:
            time.sleep(wait)


def _reason(last: Any) -> str:
    error = getattr(last, "error", None)
    if error is None:
        return "no answer"
    name = type(error).__name__
    return "no answer within the read timeout" if "Timeout" in name else f"failed ({name})"


def attempts_made(session: Any, url: str) -> int | None:
    """Attempts of the last request ``session`` sent to ``url``'s adapter (None: not counted)."""
    try:
        adapter = session.get_adapter(url)
    except Exception:  # no adapter for that scheme: nothing counted
        return None
    return getattr(adapter, "last_attempts", None)


#: Pages of one search: 2,000 pages of the usual 100-1,000 items is far beyond any recipe.
MAX_PAGES = 2000
#: Wall-clock bound of one whole search (every page, every retry), in seconds.
SEARCH_DEADLINE_S = 900.0


def _next_key(page: dict[str, Any]) -> str | None:
    links = page.get("links")
    if not isinstance(links, list):
        return None
    for link in links:
        if isinstance(link, dict) and link.get("rel") == "next":
            return json.dumps(
                [link.get("href"), link.get("method"), link.get("body")],
                sort_keys=True,
                default=str,
            )
    return None


def guarded_pages(
    pages: Iterable[dict[str, Any]],
    url: str,
    *,
    max_pages: int = MAX_PAGES,
    deadline_s: float = SEARCH_DEADLINE_S,
) -> Iterator[dict[str, Any]]:
    """Yield the pages of a search at ``url``, refusing loops, too many pages and slowness."""
    start = time.monotonic()
    seen: set[str] = set()
    iterator = iter(pages)
    count = 0
    while True:
        try:
            page = next(iterator)
        except StopIteration:
            return
        except ValueError as exc:  # JSONDecodeError: a truncated or non-JSON page
            raise StacError(
                f"searching {url}: page {count + 1} is not valid JSON ({exc}); the server sent"
                " a truncated or malformed response"
            ) from None
        except (KeyError, TypeError, AttributeError) as exc:  # links without rel/href, ...
            raise StacError(
                f"searching {url}: page {count + 1} is malformed ({type(exc).__name__}: {exc})"
            ) from None
        count += 1
        if not isinstance(page, dict):
            raise StacError(f"searching {url}: page {count} is not a JSON object")
        if count > max_pages:
            raise StacError(
                f"searching {url}: stopped after {max_pages} pages (the server keeps sending"
                " 'next' links); narrow the recipe's time range or area"
            )
        elapsed = time.monotonic() - start
        if elapsed > deadline_s:
            raise StacError(
                f"searching {url}: no end after {elapsed:.0f} s and {count} pages (the search"
                f" deadline is {deadline_s:g} s)"
            )
        key = _next_key(page)
        if key is not None:
            if key in seen:
                raise StacError(
                    f"searching {url}: page {count} links to a 'next' page already read (the"
                    " server's paging loops)"
                )
            seen.add(key)
        yield page


class DeadlineAdapter(HTTPAdapter):
    """A requests adapter with a total deadline per request, retries and body included.

    Connect and read timeouts bound each socket operation, not a request: a server that drips
    one byte a second never trips them (304 s measured on main against a documented 22 s bound).
    Here the request (with urllib3's retries) and the reading of its whole body run in a worker
    thread that must finish within ``deadline_s``; past it the connection's socket is shut down
    (close() would wait for the worker's buffered read), which ends the worker's read, and
    ``requests.Timeout`` is raised (pystac-client reports it as an
    APIError, the caller as one StacError line).
    """

    def __init__(self, *, deadline_s: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.deadline_s = float(deadline_s)

    def send(self, request: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        kwargs["stream"] = True
        box: dict[str, Any] = {"attempts": 1, "url": request.url}
        self.last_attempts = 1

        def work() -> None:
            _LOCAL.box = box  # CountingRetry counts this request's retries here
            try:
                response = HTTPAdapter.send(self, request, **kwargs)
                box["response"] = response
                _ = response.content  # the whole body, under the deadline
            except BaseException as exc:  # handed to the caller's thread below
                box["error"] = exc

        worker = threading.Thread(target=work, name="cz-stac-request", daemon=True)
        worker.start()
        worker.join(self.deadline_s)
        self.last_attempts = int(box["attempts"])
        if worker.is_alive():
            _abort(box.get("response"))
            raise requests.exceptions.Timeout(
                f"{request.method} {request.url}: no complete response within"
                f" {self.deadline_s:g} s (the request deadline, retries included)"
            )
        if "error" in box:
            raise box["error"]
        return box["response"]


def _abort(response: Any) -> None:
    """Shut down the socket under a response being read by another thread (best effort: with
    no response yet, the daemon worker ends when the server gives up)."""
    import socket

    conn = getattr(getattr(response, "raw", None), "_connection", None)
    sock = getattr(conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):  # already closed by the server or the worker
            sock.shutdown(socket.SHUT_RDWR)

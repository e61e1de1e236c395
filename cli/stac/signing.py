"""Planetary Computer signing: SAS tokens with enough lifetime, requested within a bound.

Planetary Computer asset hrefs (Azure Blob Storage) are read with a SAS token appended to the
URL; a token is issued per (storage account, container) by the SAS endpoint
(``planetary_computer.settings.Settings.get().sas_url``, ``PC_SDK_SAS_URL``) and expires (about
an hour). What ``planetary_computer.sign`` does not guarantee and we need:

- A month's work never starts with a token about to expire. ``planetary_computer`` refreshes a
  cached token only when less than 60 s are left, so a month of a build (minutes of reads) could
  start with a token that dies half-way. Here a token is reused only while it has at least
  :data:`MIN_TOKEN_LIFETIME_S` left, and requested again otherwise.
- The token request is bounded by the recipe's retry policy (``catalog.max_retries``,
  ``backoff_*``, ``timeout``). ``planetary_computer.sas.get_token`` retries 10 times with no
  timeout: an unreachable or silent endpoint held a build for minutes with no output. Here the
  request goes through the same session as a STAC search (:func:`cz.stac.make_stac_io`:
  urllib3 retries on 429/5xx, connect/read timeouts, a total deadline) and fails as one
  :class:`~cz.errors.SigningError` line naming the endpoint.
- A 403 from the endpoint is retried once (an authorisation edge, e.g. a subscription key being
  rotated); a second 403 is an error.

The URL rules (which hosts are signed, how the account and container are read from a URL) and
the token model are ``planetary_computer``'s (``parse_blob_url``, ``SASToken``).
"""

from __future__ import annotations

import logging
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlparse

from cz.errors import SigningError

__all__ = [
    "MIN_TOKEN_LIFETIME_S",
    "TokenSource",
    "import_planetary_computer",
    "resign_item_dict",
    "sign_item_dicts",
    "token_source",
]

log = logging.getLogger(__name__)

#: A token is (re)used for a month's work only with at least this many seconds left.
MIN_TOKEN_LIFETIME_S = 20 * 60.0
#: A token request still running after this many seconds is reported (log warning).
WAIT_NOTICE_S = 5.0
#: The Azure Blob Storage domain (planetary_computer signs hrefs on it only).
BLOB_DOMAIN = ".blob.core.windows.net"


def import_planetary_computer() -> Any:
    """The ``planetary_computer`` module (ImportError when it is not installed).

    planetary-computer 1.0 declares its pydantic models with a class-based ``Config``, which
    pydantic 2 reports with a deprecation warning at import; it says nothing to our users (and
    the test suite turns warnings into errors), so that one warning is silenced for the import.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="Support for class-based `config` is deprecated", category=Warning
        )
        import planetary_computer

    return planetary_computer


@dataclass(frozen=True)
class Token:
    """A SAS token (query string), when it expires (UTC) and the lifetime it had when issued."""

    token: str
    expiry: datetime
    issued_ttl: float = float("inf")

    def ttl(self, now: float) -> float:
        """Seconds left at ``now`` (a ``time.time()`` value)."""
        return self.expiry.timestamp() - now


class TokenSource:
    """Tokens per (account, container): cached while they have ``min_lifetime`` seconds left,
    requested with ``session`` (bounded by ``policy``) otherwise. Thread-safe."""

    def __init__(
        self,
        sas_url: str,
        policy: Any,
        *,
        subscription_key: str | None = None,
        min_lifetime: float = MIN_TOKEN_LIFETIME_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        from cz.stac import make_stac_io

        self.sas_url = sas_url.rstrip("/")
        self.policy = policy
        self.subscription_key = subscription_key
        self.min_lifetime = min_lifetime
        self.clock = clock
        self.session = make_stac_io(policy).session
        self.requests = 0
        self._tokens: dict[tuple[str, str], Token] = {}
        self._lock = threading.Lock()

    def token(self, account: str, container: str) -> Token:
        """A token for the container with at least ``min_lifetime`` left (when the endpoint
        issues one that long; a shorter fresh token is used with a warning)."""
        with self._lock:
            cached = self._tokens.get((account, container))
            # enough left for a month of work; an endpoint that issues shorter tokens gets one
            # request a minute at most, not one per href
            if cached is not None and cached.ttl(self.clock()) >= min(
                self.min_lifetime, cached.issued_ttl - 60.0
            ):
                return cached
            fresh = self._request(account, container)
            left = fresh.ttl(self.clock())
            fresh = Token(fresh.token, fresh.expiry, issued_ttl=left)
            if left <= 0:
                raise SigningError(
                    f"the SAS endpoint {self.sas_url} issued a token for {account}/{container} "
                    f"that expired {-left:.0f} s ago (expiry {fresh.expiry.isoformat()}); "
                    "check the machine's clock"
                )
            if left < self.min_lifetime:
                log.warning(
                    "the SAS token for %s/%s expires in %.0f s (less than the %.0f s a month "
                    "of work should have)",
                    account,
                    container,
                    left,
                    self.min_lifetime,
                )
            self._tokens[(account, container)] = fresh
            return fresh

    def renew(self, account: str, container: str, stale: str) -> Token:
        """A token other than ``stale`` (refused by the storage): the cached one when another
        thread already renewed it, else a new request."""
        with self._lock:
            cached = self._tokens.get((account, container))
            if cached is not None and cached.token != stale and cached.ttl(self.clock()) > 0:
                return cached
            self._tokens.pop((account, container), None)
        return self.token(account, container)

    def _request(self, account: str, container: str) -> Token:
        import requests

        url = f"{self.sas_url}/{account}/{container}"
        key = self.subscription_key
        headers = {"Ocp-Apim-Subscription-Key": key} if key else {}
        bound = self.policy.bound()
        log.info("requesting a SAS token from %s (at most %.0f s)", url, bound)
        for attempt in (1, 2):  # a 403 is asked once more
            self.requests += 1
            # a slow endpoint says so (on stderr at the default log level) instead of silence
            waiting = threading.Timer(
                WAIT_NOTICE_S,
                log.warning,
                (
                    "still waiting for a SAS token from %s (giving up after at most %.0f s: "
                    "catalog.max_retries, catalog.timeout)",
                    url,
                    bound,
                ),
            )
            waiting.daemon = True
            waiting.start()
            try:
                response = self.session.get(
                    url, headers=headers, timeout=(self.policy.connect_timeout, self.policy.timeout)
                )
            except requests.RequestException as exc:  # unreachable, timed out, retries spent
                raise SigningError(
                    f"requesting a Planetary Computer SAS token from {url} failed after "
                    f"{self.policy.max_retries + 1} attempt(s) (bounded by catalog.max_retries "
                    f"and catalog.timeout, at most {bound:.0f} s): {_short(exc)}"
                ) from None
            finally:
                waiting.cancel()
            if response.status_code == 403 and attempt == 1:
                log.info("the SAS endpoint answered 403; asking once more")
                continue
            break
        if response.status_code != 200:
            raise SigningError(
                f"requesting a Planetary Computer SAS token from {url} failed: HTTP "
                f"{response.status_code}: {_short(response.text)}"
            )
        return _parse_token(url, response)


def _parse_token(url: str, response: Any) -> Token:
    SASToken = import_planetary_computer().sas.SASToken

    try:
        parsed = SASToken(**response.json())
    except Exception as exc:  # not JSON, or no token / msft:expiry: the endpoint is wrong
        raise SigningError(
            f"the SAS endpoint {url} answered without a usable token: {_short(exc)}"
        ) from None
    expiry = parsed.expiry if parsed.expiry.tzinfo else parsed.expiry.replace(tzinfo=UTC)
    return Token(parsed.token, expiry)


def _short(value: Any) -> str:
    text = str(value).strip().replace("\n", " ")
    return text if len(text) <= 300 else text[:297] + "..."


_SOURCES: dict[tuple[str, Any, str | None], TokenSource] = {}
_SOURCES_LOCK = threading.Lock()


def token_source(policy: Any) -> TokenSource:
    """The process's token source for the endpoint of ``planetary_computer``'s settings and
    ``policy`` (one per combination, so tokens are shared by the months of a build)."""
    settings = import_planetary_computer().settings.Settings.get()
    sas_url = str(settings.sas_url)
    key = (sas_url, policy, settings.subscription_key)
    with _SOURCES_LOCK:
        source = _SOURCES.get(key)
        if source is None:
            source = TokenSource(sas_url, policy, subscription_key=settings.subscription_key)
            _SOURCES[key] = source
        return source


def _sign_href(href: str, source: TokenSource) -> str:
    parse_blob_url = import_planetary_computer().utils.parse_blob_url
    parsed = urlparse(href.rstrip("/"))
    if not parsed.netloc.endswith(BLOB_DOMAIN):
        return href
    if set(parse_qs(parsed.query)) & {"st", "se", "sp"}:  # already signed
        return href
    try:
        account, container = parse_blob_url(parsed)
    except ValueError as exc:  # not a blob URL after all
        raise SigningError(f"cannot sign {href}: {exc}") from None
    return f"{href}?{source.token(account, container).token}"


def sign_item_dicts(items: Iterable[dict[str, Any]], source: TokenSource) -> list[dict[str, Any]]:
    """Copies of STAC item dicts whose asset hrefs on Azure Blob Storage carry a token (each
    with at least the source's ``min_lifetime`` left); other hrefs are kept as they are."""
    out = []
    for item in items:
        signed = dict(item)
        assets = {}
        for key, asset in (item.get("assets") or {}).items():
            href = asset.get("href") if isinstance(asset, dict) else None
            assets[key] = {**asset, "href": _sign_href(href, source)} if href else asset
        signed["assets"] = assets
        out.append(signed)
    return out


def resign_item_dict(item: dict[str, Any], policy_fields: tuple[int, float, float, float]) -> Any:
    """A copy of a signed item dict whose blob hrefs carry a fresh token (after an HTTP 403):
    the old query is dropped and the token renewed unless another read already renewed it."""
    from cz.stac import RetryPolicy

    source = token_source(RetryPolicy(*policy_fields))
    out = dict(item)
    assets = {}
    for key, asset in (item.get("assets") or {}).items():
        href = asset.get("href") if isinstance(asset, dict) else None
        if not href or "?" not in href or not urlparse(href).netloc.endswith(BLOB_DOMAIN):
            assets[key] = asset
            continue
        base, stale = href.split("?", 1)
        parse_blob_url = import_planetary_computer().utils.parse_blob_url
        account, container = parse_blob_url(urlparse(base))
        assets[key] = {**asset, "href": f"{base}?{source.renew(account, container, stale).token}"}
    out["assets"] = assets
    return out

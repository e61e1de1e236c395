"""Resolving a recipe's items: STAC API searches (pystac-client) and local files (pystac).

What this module guarantees:

- Retries that cover what a STAC search really does. pystac-client's default retry (an integer
  handed to ``urllib3.Retry``) neither retries POST, which is how item search is sent, nor any
  HTTP status. We mount a ``urllib3.Retry`` with ``allowed_methods=None`` (every method; a search
  is idempotent) and ``status_forcelist`` 429/500/502/503/504 on the session of
  ``pystac_client.StacApiIO``, with bounded exponential backoff, a capped ``Retry-After`` and
  connect/read timeouts. The total time a request can take is bounded by :meth:`RetryPolicy.bound`.
- Server-side filtering that follows what the API declares: the cql2 ``filter`` extension when
  the landing page conforms to it, else the ``query`` extension, else nothing. The caller
  (:mod:`cz.plan`) checks every condition again on the client, whatever the server did: Earth
  Search, for one, ignores ``filter`` and returns items it should not.
- Local files (a static catalog, an ItemCollection / FeatureCollection, a single item) read with
  pystac, no server needed; relative asset hrefs become absolute against the file's folder.
- No signing here. Signed URLs expire; :func:`sign_items` signs late, per month of work.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pystac
from pystac_client import Client
from pystac_client.conformance import ConformanceClasses
from pystac_client.exceptions import APIError
from pystac_client.item_search import ItemSearch
from pystac_client.stac_api_io import StacApiIO
from pystac_client.warnings import PystacClientWarning
from urllib3 import Retry

from chronozarr.io import is_url
from cz.errors import RecipeError, SigningError, StacError
from cz.months import month_datetime_range
from cz.recipe import Recipe
from cz.stac.guard import CountingRetry, DeadlineAdapter, attempts_made, guarded_pages

__all__ = [
    "RETRY_STATUSES",
    "Resolution",
    "RetryPolicy",
    "iter_local_items",
    "make_stac_io",
    "month_datetime_range",
    "read_local_items",
    "resolve_items",
    "search_api",
    "search_endpoint",
    "search_parameters",
    "sign_items",
    "signing_available",
]

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying: rate limiting and transient server/gateway failures.
RETRY_STATUSES = (429, 500, 502, 503, 504)

#: Retries of a request that got no answer within ``timeout`` (decision 0046): a silent server
#: rarely answers the third time, and each try costs the whole timeout (main: ~390 s).
READ_RETRIES = 1

#: Called after each page: (page number, items so far).
PageCallback = Callable[[int, int], None]


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try a STAC API: retries, exponential backoff (bounded) and timeouts."""

    max_retries: int = 5
    backoff_factor: float = 0.5
    backoff_max: float = 30.0
    timeout: float = 30.0

    @classmethod
    def from_recipe(cls, recipe: Recipe) -> RetryPolicy:
        """The policy of ``recipe.catalog`` (``max_retries``, ``backoff_*``, ``timeout``)."""
        cat = recipe.catalog
        return cls(cat.max_retries, cat.backoff_factor, cat.backoff_max, cat.timeout)

    @property
    def connect_timeout(self) -> float:
        """Time allowed to open a connection (at most 10 s: a dead host should fail fast)."""
        return min(10.0, self.timeout)

    def urllib3_retry(self) -> Retry:
        """The ``urllib3.Retry`` mounted on the session; retries POST too."""
        n = self.max_retries
        return CountingRetry(  # a Retry that counts attempts made, for the messages
            total=n,
            connect=n,
            read=min(n, READ_RETRIES),  # a server that hangs is asked twice, not n + 1 times
            status=n,
            other=n,
            redirect=5,
            allowed_methods=None,  # every method: a STAC search POST is idempotent
            status_forcelist=RETRY_STATUSES,
            backoff_factor=self.backoff_factor,
            backoff_max=self.backoff_max,
            respect_retry_after_header=True,
            # urllib3 annotates an int but compares numbers: keep the cap exact
            retry_after_max=self.backoff_max,  # type: ignore[arg-type]
            raise_on_status=False,  # hand back the last response so the error shows its status
        )

    def bound(self) -> float:
        """Upper bound, in seconds, of one request including every retry (for error messages).

        Each attempt may wait for the connect and read timeouts; each retry sleeps at most
        ``backoff_max`` (the exponential backoff and any ``Retry-After`` are both capped by it).
        """
        attempts = self.max_retries + 1
        return (
            attempts * (self.connect_timeout + self.timeout) + self.max_retries * self.backoff_max
        )


def make_stac_io(policy: RetryPolicy, headers: dict[str, str] | None = None) -> StacApiIO:
    """A ``StacApiIO`` whose session retries per ``policy`` (POST included) with timeouts."""
    io = StacApiIO(
        headers=headers,
        timeout=(policy.connect_timeout, policy.timeout),
        max_retries=policy.urllib3_retry(),
    )
    # a total deadline per request (retries included): RetryPolicy.bound() (decision 0013)
    adapter = DeadlineAdapter(deadline_s=policy.bound(), max_retries=policy.urllib3_retry())
    io.session.mount("http://", adapter)
    io.session.mount("https://", adapter)
    return io


@dataclass
class Resolution:
    """Candidate items of a recipe, as the catalog returned them, and how they were found.

    ``items`` are STAC item dicts as the catalog wrote them (asset hrefs absolute, never signed):
    a list, or with ``resolve_items(..., stream=True)`` an iterator to consume once.
    ``source`` describes the catalog and the request for the plan; ``warnings`` are for people.
    """

    items: Iterable[dict[str, Any]]
    source: dict[str, Any]
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------------------------
# request parameters


_CQL2_OPS = {"eq": "=", "neq": "<>", "lt": "<", "lte": "<=", "gt": ">", "gte": ">="}


def _conditions(recipe: Recipe) -> dict[str, dict[str, Any]]:
    """Every property condition of the recipe, cloud cover included, as ``{prop: {op: value}}``."""
    conditions: dict[str, dict[str, Any]] = {}
    if recipe.filters.max_cloud_cover is not None:
        conditions["eo:cloud_cover"] = {"lte": recipe.filters.max_cloud_cover}
    for name, condition in recipe.filters.properties.items():
        conditions.setdefault(name, {}).update(condition.operators())
    return conditions


def _cql2(conditions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """cql2-json for the conditions: an ``and`` of comparisons."""
    args: list[dict[str, Any]] = []
    for prop, ops in conditions.items():
        for op, value in ops.items():
            if op == "in":
                args.append({"op": "in", "args": [{"property": prop}, list(value)]})
            else:
                args.append({"op": _CQL2_OPS[op], "args": [{"property": prop}, value]})
    return args[0] if len(args) == 1 else {"op": "and", "args": args}


def search_interval(recipe: Recipe) -> str:
    """The RFC 3339 interval of the search: from the first period's start to the last one's end
    (for months: the first month's first instant to the instant after the last month)."""
    periods = recipe.periods()
    if not periods:  # no period starts in the range (refused when the recipe is loaded)
        return month_datetime_range(recipe.time.start[:7], recipe.time.end[:7])
    return f"{periods[0].bounds[0]}/{periods[-1].bounds[1]}"


def search_parameters(
    recipe: Recipe, *, conforms_filter: bool, conforms_query: bool
) -> tuple[dict[str, Any], str]:
    """Keyword arguments for ``Client.search`` and which server-side filter they use.

    Returns ``(params, server_filter)`` with ``server_filter`` one of ``filter`` (cql2-json),
    ``query`` or ``none``. The cql2 filter is preferred when declared: it is the OGC standard
    the query extension is being replaced by.
    """
    params: dict[str, Any] = {
        "collections": [recipe.catalog.collection],
        "datetime": search_interval(recipe),
        "limit": recipe.catalog.page_size,
    }
    if recipe.aoi.bbox is not None:
        params["bbox"] = list(recipe.aoi.bbox)
    else:
        params["intersects"] = recipe.aoi.geojson()
    if recipe.catalog.max_items is not None:
        params["max_items"] = recipe.catalog.max_items
    conditions = _conditions(recipe)
    server_filter = "none"
    if conditions and conforms_filter:
        params["filter"] = _cql2(conditions)
        params["filter_lang"] = "cql2-json"
        server_filter = "filter"
    elif conditions and conforms_query:
        params["query"] = conditions
        server_filter = "query"
    return params, server_filter


# --------------------------------------------------------------------------------------------
# STAC APIs


def _api_error(
    what: str, url: str, exc: Exception, policy: RetryPolicy, stac_io: Any = None
) -> StacError:
    """One line for a failed request, with the attempts it really made (the adapter counts
    them, cz.stac.guard.CountingRetry); the policy's maximum only when nothing was counted."""
    status = getattr(exc, "status_code", None)
    text = str(exc).strip().replace("\n", " ")
    if len(text) > 300:
        text = text[:297] + "..."
    session = getattr(stac_io, "session", None)
    made = attempts_made(session, url) if session is not None else None
    n = made if made is not None else policy.max_retries + 1
    tries = f"after {n} attempt{'s' if n != 1 else ''}"
    if status is not None:
        return StacError(f"{what} {url} failed {tries}: HTTP {status}: {text}")
    return StacError(f"{what} {url} failed {tries}: {text}")


def _stac_item_dict(raw: Any, base: str | None, *, owned: bool = False) -> dict[str, Any]:
    """A copy of a STAC item dict as the catalog wrote it, asset hrefs made absolute
    (``owned``: ``raw`` itself, changed in place, when nothing else holds it).

    Relative hrefs resolve against ``base`` (the folder of a local file). Items are not passed
    through pystac's migration: it rewrites fields (and warns or reaches the network while
    doing so) that the plan reads as the catalog wrote them.
    """
    if not isinstance(raw, dict) or raw.get("type") != "Feature":
        what = raw.get("id", "?") if isinstance(raw, dict) else type(raw).__name__
        raise StacError(f"malformed STAC item {what!r}: not a GeoJSON Feature")
    if not isinstance(raw.get("properties"), dict) or not isinstance(raw.get("assets", {}), dict):
        raise StacError(f"malformed STAC item {raw.get('id', '?')!r}: no properties or assets")
    out = raw if owned else copy.deepcopy(raw)
    if base is not None:
        for asset in (out.get("assets") or {}).values():
            href = asset.get("href") if isinstance(asset, dict) else None
            if isinstance(href, str) and not is_url(href) and not Path(href).is_absolute():
                asset["href"] = str((Path(base) / href).resolve())
    return out


def search_endpoint(
    search_url: str,
    params: dict[str, Any],
    stac_io: StacApiIO,
    *,
    method: str = "POST",
    client: Client | None = None,
    on_page: PageCallback | None = None,
) -> tuple[list[dict[str, Any]], int]:
    """Run one item search against ``search_url``, following every ``next`` page.

    Returns the item dicts and the number of pages read. pystac-client follows the ``next`` links
    (GET or POST with a body, as the server writes them); each request retries per ``stac_io``.
    """
    search = ItemSearch(url=search_url, stac_io=stac_io, client=client, method=method, **params)
    items: list[dict[str, Any]] = []
    pages = 0
    for page in guarded_pages(search.pages_as_dicts(), search_url):  # loops, caps (decision 0013)
        pages += 1
        items.extend(page.get("features", []))
        if on_page is not None:
            on_page(pages, len(items))
    return items, pages


def _open_client(url: str, stac_io: Any, policy: RetryPolicy) -> tuple[Any, list[str]]:
    """The pystac-client ``Client`` of the landing page, and its warnings as plan notes."""
    notes: list[str] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            # timeout again: Client.open(stac_io=...) calls stac_io.update(timeout=None) otherwise
            client = Client.open(url, stac_io=stac_io, timeout=stac_io.timeout)
        except APIError as exc:  # HTTP error of the API, after retries
            raise _api_error("opening the STAC API", url, exc, policy, stac_io) from None
        except (
            pystac.STACError,
            json.JSONDecodeError,
            KeyError,
            ValueError,
        ) as exc:  # not a landing page
            raise StacError(f"{url} is not a STAC API landing page: {exc}") from None
    for caught_warning in caught:  # pystac-client's own warnings become plan notes
        if issubclass(caught_warning.category, PystacClientWarning):
            notes.append(f"{url}: {caught_warning.message}")
        else:
            warnings.warn_explicit(
                caught_warning.message,
                caught_warning.category,
                caught_warning.filename,
                caught_warning.lineno,
            )
    return client, notes


def search_api(
    recipe: Recipe,
    *,
    policy: RetryPolicy | None = None,
    on_page: PageCallback | None = None,
) -> Resolution:
    """Search the STAC API of ``recipe.catalog.url`` for the recipe's candidate items."""
    url = recipe.catalog.url
    assert url is not None
    policy = policy or RetryPolicy.from_recipe(recipe)
    stac_io = make_stac_io(policy)
    client, notes = _open_client(url, stac_io, policy)
    if not client.conforms_to(ConformanceClasses.ITEM_SEARCH):
        raise StacError(
            f"{url} does not declare STAC API item search "
            "(https://api.stacspec.org/v1.0.0/item-search), so it cannot be searched; "
            "for a static catalog file use catalog.path"
        )
    conforms_filter = client.conforms_to(ConformanceClasses.FILTER)
    conforms_query = client.conforms_to(ConformanceClasses.QUERY)
    params, server_filter = search_parameters(
        recipe, conforms_filter=conforms_filter, conforms_query=conforms_query
    )
    link = client.get_search_link()
    if link is None:
        raise StacError(f"{url} declares item search but has no 'search' link")
    methods = {
        (lnk.extra_fields.get("method") or "GET").upper()
        for lnk in client.links
        if lnk.rel == "search"
    }
    method = "POST" if "POST" in methods else "GET"
    search_url = link.get_absolute_href() or link.href
    log.info("searching %s by %s (server-side filter: %s)", search_url, method, server_filter)
    try:
        raw, pages = search_endpoint(
            search_url, params, stac_io, method=method, client=client, on_page=on_page
        )
    except APIError as exc:  # HTTP error of the API, after retries
        raise _api_error("searching", search_url, exc, policy, stac_io) from None
    items = [_stac_item_dict(r, None) for r in raw]
    max_items = recipe.catalog.max_items
    truncated = max_items is not None and len(items) >= max_items
    if truncated:
        notes.append(
            f"the search stopped at catalog.max_items = {max_items}; the plan may miss items"
        )
    if server_filter == "none" and _conditions(recipe):
        notes.append(
            f"{url} declares neither the filter nor the query extension: "
            "item conditions are checked on the client only"
        )
    request = {k: v for k, v in params.items() if k not in ("intersects",)}
    if "intersects" in params:
        request["intersects"] = "<aoi geometry>"
    source = {
        "kind": "api",
        "url": url,
        "search_url": search_url,
        "method": method,
        "conforms": {"query": conforms_query, "filter": conforms_filter},
        "server_filter": server_filter,
        "request": request,
        "pages": pages,
        "max_items": max_items,
        "truncated": truncated,
    }
    return Resolution(items=items, source=source, warnings=notes)


# --------------------------------------------------------------------------------------------
# local files


def read_local_items(path: Path) -> list[dict[str, Any]]:
    """Items of a local STAC file: catalog/collection (recursively), ItemCollection or item.

    Raises :class:`StacError` naming the file when it is not one of these.
    """
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:  # not JSON
        raise StacError(f"{path}: not JSON ({exc})") from None
    except OSError as exc:  # missing or unreadable file
        raise StacError(f"{path}: cannot read ({exc})") from None
    if not isinstance(doc, dict):
        raise StacError(f"{path}: expected a STAC object, got a JSON {type(doc).__name__}")
    kind = doc.get("type")
    base = str(path.parent)
    if kind == "FeatureCollection":
        features = doc.get("features")
        if not isinstance(features, list):
            raise StacError(f"{path}: FeatureCollection without a 'features' list")
        return [_stac_item_dict(f, base) for f in features]
    if kind == "Feature":
        return [_stac_item_dict(doc, base)]
    if kind in ("Catalog", "Collection"):
        try:
            catalog = pystac.read_file(str(path))
            if not isinstance(catalog, pystac.Catalog):  # a Collection is a Catalog
                raise StacError(f"{path}: a {kind} file that pystac reads as {type(catalog)}")
            out = []
            for item in catalog.get_items(recursive=True):
                raw = item.to_dict(include_self_link=False, transform_hrefs=False)
                for key, asset in item.assets.items():
                    raw["assets"][key]["href"] = asset.get_absolute_href() or asset.href
                out.append(_stac_item_dict(raw, None))
        except (
            pystac.STACError,
            OSError,
            json.JSONDecodeError,
            KeyError,
        ) as exc:  # a broken static catalog
            raise StacError(f"{path}: cannot read the static catalog: {exc}") from None
        return out
    raise StacError(
        f"{path}: expected a STAC Catalog, Collection, ItemCollection/FeatureCollection or Item; "
        f"got type {kind!r}"
    )


def iter_local_items(path: Path) -> Iterator[dict[str, Any]]:
    """The items of a local STAC file one at a time: a FeatureCollection streamed
    (:mod:`cz.stac.stream`, decision 0060), any other file read whole (:func:`read_local_items`)."""
    from cz.stac.stream import is_streamable, stream_features

    if not is_streamable(path):
        yield from read_local_items(path)
        return
    base = str(path.parent)
    for raw in stream_features(path):
        yield _stac_item_dict(raw, base, owned=True)


def resolve_items(
    recipe: Recipe,
    *,
    policy: RetryPolicy | None = None,
    on_page: PageCallback | None = None,
    stream: bool = False,
) -> Resolution:
    """The candidate items of a recipe, from its STAC API or its local file.

    Nothing is filtered here beyond what the server does; :func:`cz.plan.make_plan` decides.
    ``stream``: a local file's items come as they are read (an iterator, consumed once; a
    malformed file fails while it is consumed), ``on_page`` and the ``max_items`` note when the
    last is read (decision 0060); else a list.
    """
    if recipe.catalog.url is not None:
        return search_api(recipe, policy=policy, on_page=on_page)
    path = recipe.catalog.path
    assert path is not None
    if not path.is_file():
        raise RecipeError([recipe.problem(("catalog", "path"), f"file not found: {path}")])
    source = {
        "kind": "file",
        "path": str(path),
        "server_filter": "none",
        "max_items": recipe.catalog.max_items,
        "truncated": False,
    }
    notes: list[str] = []
    items = _capped(iter_local_items(path), recipe.catalog.max_items, source, notes, on_page)
    return Resolution(items=items if stream else list(items), source=source, warnings=notes)


def _capped(
    items: Iterator[dict[str, Any]],
    cap: int | None,
    source: dict[str, Any],
    notes: list[str],
    on_page: PageCallback | None,
) -> Iterator[dict[str, Any]]:
    """At most ``cap`` of ``items``; a file holding more is noted as truncated, and
    ``on_page(1, count)`` is called once the items are read."""
    count = 0
    for item in items:
        if cap is not None and count >= cap:
            source["truncated"] = True
            notes.append(f"only the first catalog.max_items = {cap} items read")
            break
        count += 1
        yield item
    if on_page is not None:
        on_page(1, count)


# --------------------------------------------------------------------------------------------
# signing, late


def signing_available(recipe: Recipe) -> str | None:
    """``None`` when the recipe's signing can be done here, else why not (for a dry run)."""
    if recipe.catalog.sign == "none":
        return None
    from cz.stac.signing import import_planetary_computer

    try:
        import_planetary_computer()
    except ImportError:  # the optional planetary-computer package
        return (
            "catalog.sign is planetary-computer but the 'planetary-computer' package is not "
            "installed (pip install planetary-computer); a build would fail"
        )
    return None


def sign_items(items: Iterable[pystac.Item], recipe: Recipe) -> list[pystac.Item]:
    """Signed copies of ``items`` per ``recipe.catalog.sign``; the inputs are not modified.

    Call it per month, right before reading pixels: Planetary Computer SAS tokens expire (about
    an hour), so a plan never stores signed URLs, and each token used has at least
    :data:`cz.stac.signing.MIN_TOKEN_LIFETIME_S` left; the token request is bounded by the recipe's
    retry policy (:mod:`cz.stac.signing`). With ``sign: none`` the items are returned as they are.
    Raises :class:`SigningError` when signing is asked for and cannot be done.
    """
    items = list(items)
    if recipe.catalog.sign == "none":
        return items
    from cz.stac.signing import import_planetary_computer, sign_item_dicts, token_source

    try:
        import_planetary_computer()
    except ImportError:  # the optional planetary-computer package
        raise SigningError(
            "catalog.sign is planetary-computer but the 'planetary-computer' package is not "
            "installed: pip install planetary-computer"
        ) from None
    source = token_source(RetryPolicy.from_recipe(recipe))
    dicts = [item.to_dict(include_self_link=False, transform_hrefs=False) for item in items]
    return [
        pystac.Item.from_dict(d, preserve_dict=False, migrate=False)
        for d in sign_item_dicts(dicts, source)
    ]

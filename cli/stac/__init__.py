"""STAC: resolving a recipe's items (API searches and local files), the bounds on a search, and
signing (decision 0034).

Modules: :mod:`~cz.stac.resolve` (the retry policy and session, API search, local files,
``resolve_items``, ``sign_items``), :mod:`~cz.stac.guard` (deadlines, paging caps, attempts
counted per request), :mod:`~cz.stac.stream` (a local FeatureCollection read item by item),
:mod:`~cz.stac.signing` (Planetary Computer tokens: one source per process,
re-signing an expired item). The names below are the package's public surface, so
``from cz.stac import resolve_items`` works whatever module holds it.
"""

from cz.stac.resolve import (
    RETRY_STATUSES,
    PageCallback,
    Resolution,
    RetryPolicy,
    iter_local_items,
    make_stac_io,
    month_datetime_range,
    read_local_items,
    resolve_items,
    search_api,
    search_endpoint,
    search_parameters,
    sign_items,
    signing_available,
)

__all__ = [
    "RETRY_STATUSES",
    "PageCallback",
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

"""Reading the pixels of one block of one month with odc-stac, with bounded retries.

A build cuts the recipe's grid (odc-geo ``GeoBox``) into blocks aligned to the store's cells and
asks, per (month, block), for every item of that month whose footprint touches the block
(:func:`load_block`). odc-stac reads each asset onto the block's ``GeoBox``: the SCL asset with
nearest resampling, each band with its recipe resampling, one time slice per item (in plan
order), so :mod:`cz.composite` can correct each item's digital numbers and then mosaic the items
of one solar day into one observation.

Reading failures. GDAL retries HTTP 429 and 5xx itself (``GDAL_HTTP_MAX_RETRY``,
``GDAL_HTTP_RETRY_DELAY``; set them in the environment to change our defaults). A read that still
fails is retried here a bounded number of times with exponential backoff, unless the error says
the object is missing or forbidden (404, 403: retrying cannot help). When a block still cannot be
read, its items are read one by one and the failing one asset by asset, so the error names the
item, the asset and its href (:class:`AssetReadError`). With ``skip_failed`` the failing item is
left out of that block instead, and reported (:class:`SkippedAsset`) so the build records it in
the store's provenance. An item whose signed hrefs are refused with HTTP 403 (a Planetary
Computer token that expired while the month was read) is signed again with a fresh token and
read once more before it counts as failed (:mod:`cz.stac.signing`).

Everything here is picklable and free of global state, so the same function runs in a local
thread or on a dask.distributed worker.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import re
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cz.errors import CzError

__all__ = [
    "GDAL_DEFAULTS",
    "AssetReadError",
    "BandLoad",
    "ItemRef",
    "LoadSpec",
    "LoadedBlock",
    "SkippedAsset",
    "block_geobox",
    "gdal_options",
    "load_block",
    "with_retries",
]

log = logging.getLogger(__name__)
# odc-loader logs every failed read at ERROR before raising; we raise a better error ourselves
logging.getLogger("odc.loader").addHandler(logging.NullHandler())
# rasterio.warp.reproject builds its in-memory destination inside warnings.catch_warnings() with
# this warning ignored; catch_warnings swaps the process-wide filters and is not thread-safe, so
# with reads on several threads the harmless warning escapes. A filter installed once, before
# any thread starts, survives every save/restore of those blocks.
warnings.filterwarnings(
    "ignore", message="Dataset has no geotransform, gcps, or rpcs", module=r"rasterio\."
)

#: GDAL options for reading COGs over HTTP (an environment variable of the same name wins).
GDAL_DEFAULTS: dict[str, str] = {
    "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",  # no directory listing per open
    "GDAL_HTTP_MAX_RETRY": "4",  # GDAL itself retries HTTP 429 / 5xx ...
    "GDAL_HTTP_RETRY_DELAY": "0.5",  # ... waiting this long, doubling each time
    "GDAL_HTTP_TIMEOUT": "60",
    "GDAL_HTTP_CONNECTTIMEOUT": "15",
    "GDAL_HTTP_MULTIRANGE": "YES",
    "GDAL_HTTP_MERGE_CONSECUTIVE_RANGES": "YES",
    "VSI_CACHE": "TRUE",
    "CPL_VSIL_CURL_ALLOWED_EXTENSIONS": ".tif,.tiff,.TIF,.TIFF,.jp2,.vrt",
}

#: Errors whose text says retrying cannot help.
_PERMANENT = re.compile(
    r"HTTP response code: 40[134]\b|No such file|does not exist|not recognized as"
    r"|not a supported file format",
    re.IGNORECASE,
)


def gdal_options(overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """GDAL options for a read: our defaults, then environment variables, then ``overrides``."""
    opts = {k: os.environ.get(k, v) for k, v in GDAL_DEFAULTS.items()}
    opts.update(overrides or {})
    return opts


class AssetReadError(CzError):
    """An asset of an item could not be read after the retries; names the item and the asset."""

    def __init__(self, item: str, asset: str, href: str, reason: str) -> None:
        self.item = item
        self.asset = asset
        self.href = href
        self.reason = reason
        super().__init__(
            f"cannot read asset {asset!r} of item {item!r} ({href}): {reason}; "
            "use --skip-failed-items to build without it (the skip is recorded in the store's "
            "provenance)"
        )

    def __reduce__(self) -> tuple[Any, ...]:  # picklable across dask.distributed workers
        return (AssetReadError, (self.item, self.asset, self.href, self.reason))


@dataclass(frozen=True)
class SkippedAsset:
    """An item left out of a block because one of its assets could not be read."""

    item: str
    asset: str
    href: str
    error: str
    month: str = ""

    def to_json(self) -> dict[str, str]:
        return {
            "item": self.item,
            "asset": self.asset,
            "href": self.href,
            "error": self.error,
            "month": self.month,
        }


@dataclass(frozen=True)
class BandLoad:
    """How one store band is read: its name, resampling and whether it is harmonised."""

    name: str
    resampling: str
    harmonize: bool


@dataclass(frozen=True)
class ItemRef:
    """One item of a month as a block load needs it (picklable, small).

    ``stac`` is the item dict with only the assets read (hrefs signed when the catalog needs it)
    and no links; ``assets`` maps a band name (and ``"mask"``) to the item's asset key.
    """

    id: str
    stac: dict[str, Any]
    assets: dict[str, str]
    correction: int
    solar_day: str
    #: the token request bounds (``RetryPolicy`` fields) when the hrefs are signed, so a read
    #: refused with HTTP 403 (an expired token) can be signed again once (cz.stac.signing)
    signing: tuple[int, float, float, float] | None = None


@dataclass(frozen=True)
class LoadSpec:
    """Everything a block load needs besides the items: grid, bands, mask, retries."""

    crs: str
    transform: tuple[float, float, float, float, float, float]
    bands: tuple[BandLoad, ...]
    #: the mask's kept classes; ``()`` for a mask of bit flags alone, ``None`` without a mask
    #: (only whether it is ``None`` matters here: the mask asset is read unless it is)
    mask_keep: tuple[int, ...] | None
    attempts: int = 3
    retry_delay: float = 0.5
    skip_failed: bool = False
    gdal: dict[str, str] = field(default_factory=gdal_options)
    #: read each item's cloud-probability asset (``ItemRef.assets["cloud"]``) too
    cloud: bool = False


@dataclass
class LoadedBlock:
    """The pixels of one block: one time slice per item read, in plan order.

    ``values`` (n, nb, h, w) as odc-stac returns them (the assets' dtype, or float32 with NaN
    where the item says nothing about its data type); ``scl`` (n, h, w) the mask asset in its
    integer dtype (SCL uint8, a QA band uint16) or ``None`` without a mask; ``src_nodata[i][b]`` the nodata of band b of item i (``None``: the item declares none,
    NaN marks its missing pixels); ``items`` the items read; ``cloud`` (n, h, w) float32 the
    cloud probability (NaN where its file says nodata) when ``LoadSpec.cloud``, else ``None``.
    """

    values: np.ndarray
    scl: np.ndarray | None
    src_nodata: list[list[float | None]]
    items: list[ItemRef]
    skipped: list[SkippedAsset]
    cloud: np.ndarray | None = None


def block_geobox(crs: str, transform: Sequence[float], window: tuple[int, int, int, int]) -> Any:
    """The ``GeoBox`` of level-0 pixels ``[y0:y1, x0:x1]`` of the grid (``window``)."""
    from affine import Affine
    from odc.geo.geobox import GeoBox

    y0, y1, x0, x1 = window
    a, b, c, d, e, f = (float(v) for v in transform)
    return GeoBox((y1 - y0, x1 - x0), Affine(a, b, c + a * x0, d, e, f + e * y0), crs)


def _is_permanent(exc: BaseException) -> bool:
    return bool(_PERMANENT.search(str(exc)))


def with_retries(
    fn: Callable[[], Any],
    *,
    attempts: int,
    delay: float,
    retry_on: tuple[type[BaseException], ...] = (OSError, RuntimeError),
    sleep: Callable[[float], None] = time.sleep,
) -> Any:
    """``fn()``, tried up to ``attempts`` times on ``retry_on`` errors, waiting ``delay``,
    ``2 delay``, ``4 delay``... between tries. Errors that say the object is missing or
    forbidden are raised at once; the last error is raised when every attempt failed."""
    attempts = max(1, attempts)
    for attempt in range(attempts):
        try:
            return fn()
        except retry_on as exc:  # the read errors worth another attempt
            if _is_permanent(exc) or attempt + 1 == attempts:
                raise
            log.info("read failed (%s); retry %d of %d", exc, attempt + 1, attempts - 1)
            sleep(delay * (2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def _read_errors() -> tuple[type[BaseException], ...]:
    from rasterio.errors import RasterioError

    return (RasterioError, OSError, RuntimeError, ValueError)


def _pystac_item(ref: ItemRef, keys: Sequence[str]) -> Any:
    import pystac

    stac = dict(ref.stac)
    stac["assets"] = {k: ref.stac["assets"][k] for k in keys}
    stac["links"] = []  # a self link would resolve local asset paths against its URL
    return pystac.Item.from_dict(stac, preserve_dict=False, migrate=False)


def _passes(spec: LoadSpec, ref: ItemRef) -> list[dict[str, tuple[str, list[int]]]]:
    """Load passes for one item: in each pass an asset key is read once, with one resampling.

    Returns a list of ``{asset_key: (resampling, [band indices])}``; band index -1 is the mask,
    -2 the cloud probability.
    Two bands reading the same asset with different resampling go to different passes.
    """
    wanted: list[tuple[int, str, str]] = [
        (i, ref.assets[b.name], b.resampling) for i, b in enumerate(spec.bands)
    ]
    if spec.mask_keep is not None:
        wanted.append((-1, ref.assets["mask"], "nearest"))
    if spec.cloud:
        wanted.append((-2, ref.assets["cloud"], "nearest"))
    passes: list[dict[str, tuple[str, list[int]]]] = []
    for index, key, resampling in wanted:
        for p in passes:
            if key not in p or p[key][0] == resampling:
                entry = p.setdefault(key, (resampling, []))
                entry[1].append(index)
                break
        else:
            passes.append({key: (resampling, [index])})
    return passes


def _odc_load(refs: Sequence[ItemRef], keys: Sequence[str], geobox: Any, resampling: dict) -> Any:
    import odc.stac

    items = [_pystac_item(r, keys) for r in refs]
    return odc.stac.load(
        items,
        bands=list(keys),
        geobox=geobox,
        groupby=lambda _item, _parsed, index: index,  # one time slice per item, in our order
        resampling=resampling,
        fail_on_error=True,
        chunks=None,
    )


def _load_group(
    refs: Sequence[ItemRef], spec: LoadSpec, geobox: Any
) -> tuple[np.ndarray, np.ndarray | None, list[float | None], np.ndarray | None]:
    """Read items that share their asset keys: (values, scl, src_nodata, cloud). Raises read
    errors."""
    import rasterio

    n, nb = len(refs), len(spec.bands)
    h, w = geobox.shape
    values: np.ndarray | None = None
    scl: np.ndarray | None = None
    cloud: np.ndarray | None = None
    nodata: list[float | None] = [None] * nb
    with rasterio.Env(**spec.gdal):
        for load_pass in _passes(spec, refs[0]):
            keys = list(load_pass)
            resampling = {k: load_pass[k][0] for k in keys}
            ds = with_retries(
                functools.partial(_odc_load, refs, keys, geobox, resampling),
                attempts=spec.attempts,
                delay=spec.retry_delay,
                retry_on=_read_errors(),
            )
            for key in keys:
                arr = ds[key]
                data = arr.values  # (time, y, x)
                if data.shape != (n, h, w):
                    raise RuntimeError(f"odc-stac returned {data.shape} for {key}, not {(n, h, w)}")
                src_nd = arr.attrs.get("nodata")
                for index in load_pass[key][1]:
                    if index == -2:  # cloud probability: NaN where the file says nodata
                        cloud = data.astype(np.float32)
                        if src_nd is not None and not np.isnan(float(src_nd)):
                            cloud[data == src_nd] = np.nan
                        continue
                    if index < 0:  # the mask: SCL classes (uint8) or QA bits (uint16 ...)
                        scl = data if data.dtype.kind in "ui" else None
                        if scl is None:  # a mask without a declared type: NaN is "no data"
                            scl = np.where(np.isnan(data), 0, data).astype(np.uint16)
                        continue
                    if values is None:
                        values = np.empty((n, nb, h, w), dtype=data.dtype)
                    elif values.dtype != data.dtype:
                        values = values.astype(np.promote_types(values.dtype, data.dtype))
                    values[:, index] = data
                    nodata[index] = None if src_nd is None else float(src_nd)
    assert values is not None
    return values, scl, nodata, cloud


def _find_failure(
    ref: ItemRef, spec: LoadSpec, geobox: Any, error: BaseException
) -> tuple[str, str, str]:
    """Which asset of ``ref`` cannot be read: (asset key, href, reason), trying them one by one.

    When every asset reads on its own, the item's own ``error`` is reported for all its assets.
    """
    import rasterio

    keys = [ref.assets[b.name] for b in spec.bands]
    if spec.mask_keep is not None:
        keys.append(ref.assets["mask"])
    if spec.cloud:
        keys.append(ref.assets["cloud"])
    keys = list(dict.fromkeys(keys))
    with rasterio.Env(**spec.gdal):
        for key in keys:
            try:
                with_retries(
                    functools.partial(_odc_load, [ref], [key], geobox, {key: "nearest"}),
                    attempts=spec.attempts,
                    delay=spec.retry_delay,
                    retry_on=_read_errors(),
                )
            except _read_errors() as exc:  # this asset is the one that fails
                return key, str(ref.stac["assets"][key].get("href")), _reason(exc)
    return ", ".join(keys), "", _reason(error)


_FORBIDDEN = re.compile(r"HTTP (response code|status)?:? ?403\b|\b403 Forbidden", re.IGNORECASE)


def _signed_again(ref: ItemRef, error: BaseException) -> ItemRef | None:
    """``ref`` with its hrefs signed with a fresh token when ``error`` is an HTTP 403 and the
    hrefs were signed (a token that expired during the month's work); else ``None``."""
    if ref.signing is None or not _FORBIDDEN.search(str(error)):
        return None
    from cz.stac.signing import resign_item_dict

    log.info("item %s: HTTP 403 on signed hrefs; signing again with a fresh token", ref.id)
    return dataclasses.replace(ref, stac=resign_item_dict(ref.stac, ref.signing))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().replace("\n", " ")
    text = text if len(text) <= 300 else text[:297] + "..."
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


#: one item read: its values, SCL (or None), nodata per band, cloud probability (or None)
Row = tuple[np.ndarray, np.ndarray | None, list[float | None], np.ndarray | None]


def load_block(
    items: Sequence[ItemRef],
    spec: LoadSpec,
    window: tuple[int, int, int, int],
    *,
    month: str = "",
) -> LoadedBlock:
    """Read ``items`` onto level-0 pixels ``window = (y0, y1, x0, x1)`` of the grid.

    Items are read in groups that share their asset keys (one odc-stac call each, retried);
    the slices keep the order of ``items``. A group that keeps failing is read item by item to
    find the culprit: :class:`AssetReadError`, or with ``spec.skip_failed`` the item is left out
    and listed in ``skipped``.
    """
    geobox = block_geobox(spec.crs, spec.transform, window)
    groups: dict[tuple[tuple[str, str], ...], list[int]] = {}
    for i, ref in enumerate(items):
        groups.setdefault(tuple(sorted(ref.assets.items())), []).append(i)
    read: dict[int, Row] = {}
    skipped: list[SkippedAsset] = []
    for members in groups.values():
        try:
            whole = _load_group([items[i] for i in members], spec, geobox)
        except _read_errors():  # the group failed: find the culprit item by item
            for i in members:
                row = _read_alone(items[i], spec, geobox, month, skipped)
                if row is not None:
                    read[i] = row
            continue
        vals, scl, nd, cld = whole
        if len(groups) == 1:  # the common case, one group read at once: no re-stacking
            return LoadedBlock(vals, scl, [nd] * len(items), list(items), skipped, cld)
        for k, i in enumerate(members):
            read[i] = _row(whole, k)
    return _stacked(read, items, spec, geobox.shape, skipped)


def _row(group: Any, k: int) -> Row:
    """Item ``k`` of a group read (values, SCL, nodata, cloud)."""
    vals, scl, nd, cld = group
    return vals[k], None if scl is None else scl[k], nd, None if cld is None else cld[k]


def _read_alone(
    item: ItemRef, spec: LoadSpec, geobox: Any, month: str, skipped: list[SkippedAsset]
) -> Row | None:
    """One item of a group that failed: its row, or None when it is skipped (``skipped``
    gets it); HTTP 403 on signed hrefs is read once more with a fresh token."""
    ref = item
    try:
        return _row(_load_group([ref], spec, geobox), 0)
    except _read_errors() as exc:  # this asset is the one that fails
        fresh = _signed_again(ref, exc)
        if fresh is not None:  # HTTP 403 on signed hrefs: a fresh token, once
            try:
                return _row(_load_group([fresh], spec, geobox), 0)
            except _read_errors() as again:  # still refused: report this error
                ref, exc = fresh, again
        key, href, reason = _find_failure(ref, spec, geobox, exc)
        if not spec.skip_failed:
            raise AssetReadError(item.id, key, href, reason) from None
        skipped.append(SkippedAsset(item.id, key, href, reason, month))
        log.warning("skipping item %s: asset %s: %s", item.id, key, reason)
        return None


def _stacked(
    read: dict[int, Row],
    items: Sequence[ItemRef],
    spec: LoadSpec,
    shape: tuple[int, int],
    skipped: list[SkippedAsset],
) -> LoadedBlock:
    """The block of the items read, in the order of ``items``."""
    h, w = shape
    order = sorted(read)
    if not order:
        empty = np.zeros((0, len(spec.bands), h, w), dtype=np.uint16)
        scl_empty = None if spec.mask_keep is None else np.zeros((0, h, w), dtype=np.uint8)
        cloud_empty = np.zeros((0, h, w), dtype=np.float32) if spec.cloud else None
        return LoadedBlock(empty, scl_empty, [], [], skipped, cloud_empty)
    dtype = np.result_type(*[read[i][0].dtype for i in order])
    values = np.stack([read[i][0].astype(dtype, copy=False) for i in order])
    scl_all = None
    if spec.mask_keep is not None:
        scl_all = np.stack([read[i][1] for i in order])  # type: ignore[misc]
    nodata = [read[i][2] for i in order]
    cloud_all = np.stack([read[i][3] for i in order]) if spec.cloud else None  # type: ignore[misc]
    return LoadedBlock(values, scl_all, nodata, [items[i] for i in order], skipped, cloud_all)

"""``encode``'s arguments, checked before anything is written (spec 2.1-2.5, 3.2-3.6, 4.1, 7, 8).

Each check raises ``EncodeError`` naming the argument. The result is typed: the data and its
description (:class:`EncodeArgs`) and the layout of the store's chunks (a
:class:`~chronozarr.format.StoreLayout`, checked where it is made); how the run goes is a
:class:`~chronozarr.write.RunOptions`. The order of the checks is the order a caller meets them: the data, its
times, bands, CRS, transform and nodata, then the layout, the variable name, mask and coverage.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from chronozarr.errors import EncodeError
from chronozarr.format import (
    DTYPES,
    HISTORY_PATH,
    Band,
    Codec,
    StoreLayout,
    codec_from,
    dumps,
    parse_times,
)
from chronozarr.write._cell_tasks import is_cell_source
from chronozarr.write._inputs import (
    normalize_bands,
    normalize_crs,
    normalize_nodata,
    normalize_transform,
    unwrap_array,
)

__all__ = [
    "FROM_SOURCE",
    "EncodeArgs",
    "check_encode_args",
    "check_provenance",
    "layout_of",
]

FROM_SOURCE = "planes of the cell source"  # mask/coverage given by a cell source
_RESERVED = {"mask", "coverage", "time", "band", "y", "x", "volatility"}
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass(frozen=True)
class EncodeArgs:
    """The checked data of one ``encode`` call and what describes it."""

    data: Any
    dtype: np.dtype
    shape: tuple[int, int, int, int]  # (time, band, y, x)
    times_ms: list[int]
    bands: tuple[Band, ...]
    crs: str
    transform: tuple[float, ...]
    resolution: float
    nodata: float | int | None
    layout: StoreLayout
    variable: str
    mask: Any
    coverage: Any

    @property
    def cs(self) -> int:
        return self.layout.chunk_size

    @property
    def shard_time(self) -> int | None:
        return self.layout.shard_time_for(self.shape[0])

    @property
    def data_codecs(self) -> list[dict[str, Any]]:
        """The chunk codec chain of the data arrays (spec 8)."""
        return self.layout.codec.chain(self.dtype.name)

    @property
    def plane_codecs(self) -> list[dict[str, Any]]:
        """The chunk codec chain of the uint8 mask and coverage arrays (spec 8)."""
        return self.layout.codec.chain("uint8")


def _check_data(data: Any) -> tuple[Any, np.dtype, tuple[int, int, int, int]]:
    if not is_cell_source(data):  # a cell source produces its own planes (write._cell_tasks)
        data = unwrap_array(data, "data")
    if data is None or getattr(data, "ndim", None) != 4:
        raise EncodeError(
            "data", f"expected a (time, band, y, x) array, got shape {getattr(data, 'shape', None)}"
        )
    dtype = np.dtype(data.dtype)
    if dtype.name not in DTYPES:
        raise EncodeError(
            "data", f"dtype {dtype.name} is not supported (expected one of {list(DTYPES)})"
        )
    n_time, n_band, height, width = (int(s) for s in data.shape)
    if min(n_time, n_band, height, width) < 1:
        raise EncodeError("data", f"every axis needs at least one element, got shape {data.shape}")
    return data, dtype, (n_time, n_band, height, width)


def _check_planes(
    mask: Any, coverage: Any, n_time: int, height: int, width: int
) -> tuple[Any, Any]:
    """mask (2.4) and coverage (2.5): (time, y, x) uint8 (or bool); mask values 0 or 1."""
    mask = unwrap_array(mask, "mask")
    coverage = unwrap_array(coverage, "coverage")
    for name, plane in (("mask", mask), ("coverage", coverage)):
        if plane is None:
            continue
        if tuple(plane.shape) != (n_time, height, width):
            raise EncodeError(
                name,
                f"expected shape {(n_time, height, width)} (time, y, x), got {tuple(plane.shape)}",
            )
        if np.dtype(plane.dtype) not in (np.dtype("uint8"), np.dtype(bool)):
            raise EncodeError(name, f"expected uint8, got {np.dtype(plane.dtype).name}")
    if isinstance(mask, np.ndarray) and mask.dtype != bool and mask.size and int(mask.max()) > 1:
        raise EncodeError("mask", "values must be 0 (invalid) or 1 (valid) (spec 2.4)")
    return mask, coverage


def _codec(codec: str | Codec, options: Mapping[str, Any] | None) -> Codec:
    try:
        return codec_from(codec, options)
    except ValueError as exc:  # codec_from names the bad option; report it under its argument
        arg = "codec_options" if str(exc).startswith("codec_options") else "codec"
        raise EncodeError(arg, str(exc).split(": ", 1)[-1]) from exc


_KEYWORD_DEFAULTS: dict[str, Any] = {
    "chunk_size": 512,
    "encoding": "auto",
    "anchor_interval": 6,
    "shard": False,
    "shard_time": None,
    "codec": "zstd",
    "codec_options": None,
    "history": False,
    "history_time": 12,
    "history_block": None,
    "multiscales": "list",
}


def layout_of(layout: StoreLayout | None, **keywords: Any) -> StoreLayout:
    """The store layout of an ``encode`` call: ``layout`` as given (then every layout keyword
    must be left at its default), or one made of the keywords (``chunk_size``, ``encoding``,
    ``anchor_interval``, ``shard``, ``shard_time``, ``codec``, ``codec_options``, ``history``,
    ``history_time``, ``history_block``, ``multiscales``)."""
    if layout is not None:
        if not isinstance(layout, StoreLayout):
            raise EncodeError("layout", f"expected a chronozarr.StoreLayout, got {layout!r}")
        given = sorted(k for k, v in keywords.items() if v != _KEYWORD_DEFAULTS[k])
        if given:
            raise EncodeError("layout", f"give the layout or {', '.join(given)}, not both")
        return layout
    fields = {k: v for k, v in keywords.items() if k not in ("codec", "codec_options")}
    made = StoreLayout(**fields)  # the fields' rules first, then the codec's (as ever)
    codec = _codec(keywords.get("codec", "zstd"), keywords.get("codec_options"))
    return replace(made, codec=codec)


def _check_variable(variable: Any) -> str:
    if (
        not isinstance(variable, str)
        or not _VARIABLE_RE.fullmatch(variable)
        or variable in _RESERVED
    ):
        raise EncodeError(
            "variable",
            f"expected a plain array name other than {sorted(_RESERVED)}, got {variable!r}",
        )
    return variable


def _values(coordinate: Any) -> Any:
    """An xarray coordinate (``da.time``, ``da.band``) as its values; anything else as it is."""
    return (
        coordinate.values
        if hasattr(coordinate, "dims") and hasattr(coordinate, "values")
        else coordinate
    )


def check_encode_args(
    data: Any,
    description: Mapping[str, Any],
    layout: StoreLayout | None,
    layout_keywords: Mapping[str, Any],
    variable: Any,
) -> EncodeArgs:
    """Every argument checked (and normalized) before anything is written. ``description``
    holds ``times``, ``bands``, ``crs``, ``transform``, ``nodata``, ``mask`` and ``coverage``."""
    data, dtype, shape = _check_data(data)
    n_time, n_band, height, width = shape
    try:
        times_ms = parse_times(_values(description["times"]), n_time)
    except ValueError as exc:  # parse_times says which entry; report it under ``times``
        raise EncodeError("times", str(exc)) from exc
    bands = normalize_bands(_values(description["bands"]), n_band)
    crs = normalize_crs(description["crs"])
    transform, resolution = normalize_transform(description["transform"])
    nodata = normalize_nodata(description["nodata"], dtype)
    store_layout = layout_of(layout, **layout_keywords)
    store_layout.check_dtype(dtype)
    name = _check_variable(variable)
    if store_layout.history and name == HISTORY_PATH:  # the companion's group (docs/spec.md C25)
        raise EncodeError("variable", f"{name!r} names the time-series companion's group")
    mask, coverage = description["mask"], description["coverage"]
    if is_cell_source(data):
        if mask is not None or coverage is not None:
            raise EncodeError("mask", "a cell source gives its own mask and coverage planes")
        mask = FROM_SOURCE if getattr(data, "has_mask", False) else None
        coverage = FROM_SOURCE if getattr(data, "has_coverage", False) else None
    else:
        mask, coverage = _check_planes(mask, coverage, n_time, height, width)
    return EncodeArgs(
        data, dtype, shape, times_ms, bands, crs, transform, resolution, nodata, store_layout,
        name, mask, coverage,
    )  # fmt: skip


def check_provenance(provenance: Any) -> None:
    """A provenance mapping must serialize as JSON now, not when the root is written last."""
    if provenance is None or callable(provenance):
        return
    if not isinstance(provenance, Mapping):
        raise EncodeError("provenance", "expected an object (mapping)")
    try:  # checked now, not when the root zarr.json is written after every chunk
        dumps(dict(provenance))
    except (TypeError, ValueError) as exc:  # json refuses numpy scalars, NaN, objects
        raise EncodeError("provenance", f"must be JSON (no NaN, no numpy scalars): {exc}") from exc

"""The streaming writer: ``encode`` (spec 2-9).

Memory is bounded by a few cells whatever the region: level 0 is written cell by cell from the
input (a numpy, dask or xarray array read one cell-timestep batch at a time), each level k from
level k-1 as stored (read back, reconstructed, block-averaged), so nothing larger than a 2 x 2
block of cells is held. Write order (spec 9): every chunk/shard object, then the coordinate
arrays and volatility, then every zarr.json below the root, the root zarr.json last: a crash
leaves no root, never a root that describes missing data.

The steps live beside this module: argument checks and cell reads in :mod:`chronozarr.inputs`,
the auto choice in :mod:`chronozarr.auto` (4.3), per-cell writing in :mod:`chronozarr.cells`,
the metadata commit in :mod:`chronozarr.commit` (9).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chronozarr.auto import AUTO_THRESHOLD, choose_encoding
from chronozarr.cells import (
    CellResult,
    Layout,
    Planes,
    Readback,
    default_workers,
    merge_results,
    parallel,
    split_tasks,
    write_cell_series,
)
from chronozarr.commit import write_metadata
from chronozarr.errors import EncodeError
from chronozarr.grid import cell_slice, grid_shape, level_resolution, level_shapes, level_transform
from chronozarr.inputs import (
    DEFAULT,
    CellInput,
    local_target,
    normalize_bands,
    normalize_crs,
    normalize_nodata,
    normalize_transform,
    unwrap_array,
)
from chronozarr.metadata import (
    DELTA_DTYPES,
    DTYPES,
    SPEC_VERSION,
    Band,
    LevelInfo,
    RootAttrs,
    Temporal,
    codec_chain,
    data_array_doc,
    dumps,
    format_time,
    multiscales,
    parse_times,
    plane_array_doc,
)
from chronozarr.storage import LocalStore
from chronozarr.temporal import schedule, volatility_value

__all__ = ["encode"]

log = logging.getLogger("chronozarr.writer")

_RESERVED = {"mask", "coverage", "time", "band", "y", "x", "volatility"}
_VARIABLE_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*")


@dataclass
class _Args:
    """The checked arguments of one ``encode`` call."""

    data: Any
    dtype: np.dtype
    shape: tuple[int, int, int, int]  # (time, band, y, x)
    times_ms: list[int]
    bands: tuple[Band, ...]
    crs: str
    transform: tuple[float, ...]
    resolution: float
    nodata: float | int | None
    cs: int
    encoding: str
    anchor_interval: int
    shard_time: int | None
    data_codecs: list[dict[str, Any]]
    plane_codecs: list[dict[str, Any]]
    variable: str
    mask: Any
    coverage: Any


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def _check_data(data: Any) -> tuple[Any, np.dtype, tuple[int, int, int, int]]:
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


def _check_layout(
    dtype: np.dtype,
    n_time: int,
    chunk_size: Any,
    encoding: Any,
    anchor_interval: Any,
    shard: bool,
    shard_time: Any,
) -> tuple[int, int | None]:
    """The chunk size (2.1), encoding (4.1), anchor interval (4.2) and shard_time (7.1)."""
    if not _is_int(chunk_size) or chunk_size < 2 or chunk_size % 2:
        raise EncodeError(
            "chunk_size", f"must be an even integer >= 2 (spec 2.1), got {chunk_size!r}"
        )
    if encoding not in ("auto", "none", "star-delta"):
        raise EncodeError("encoding", f"expected 'auto', 'none' or 'star-delta', got {encoding!r}")
    if encoding == "star-delta" and dtype.name not in DELTA_DTYPES:
        raise EncodeError(
            "encoding",
            f"star-delta is only valid for uint8 and uint16 data (spec 4.1), data is {dtype.name}",
        )
    if not _is_int(anchor_interval) or anchor_interval < 1:
        raise EncodeError("anchor_interval", f"must be an integer >= 1, got {anchor_interval!r}")
    sharded = bool(shard) or shard_time is not None
    if shard_time is not None and (not _is_int(shard_time) or shard_time < 1):
        raise EncodeError("shard_time", f"must be an integer >= 1 (spec 7.1), got {shard_time!r}")
    st = (int(shard_time) if shard_time is not None else n_time) if sharded else None
    return int(chunk_size), st


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


def _codecs_for(codec: Any, options: Any, dtype: np.dtype) -> tuple[list[Any], list[Any]]:
    """The chunk codec chains of data and of the uint8 planes (spec 8)."""
    try:
        return codec_chain(codec, options, dtype.name), codec_chain(codec, options, "uint8")
    except ValueError as exc:  # codec_chain names the bad option; report it under its argument
        arg = "codec_options" if str(exc).startswith("codec_options") else "codec"
        raise EncodeError(arg, str(exc).split(": ", 1)[-1]) from exc


def _open_target(store: Any) -> LocalStore:
    """The new or empty local folder the store is written into (spec 9: never over a store)."""
    target = LocalStore(local_target(store))
    if target.root.exists() and (not target.root.is_dir() or any(target.root.iterdir())):
        what = "holds a Zarr store" if target.get("zarr.json") is not None else "is not empty"
        raise EncodeError(
            "store",
            f"{target.url} {what}; a store is written into a new or empty folder (a re-encode goes under a new prefix, spec 9)",
        )
    if target.get("zarr.json") is not None:
        raise EncodeError(
            "store",
            f"{target.url} already holds a Zarr store; a re-encode goes under a new prefix (spec 9)",
        )
    return target


def _select(
    layout: Layout, inp: CellInput, args: _Args, workers: int
) -> tuple[Temporal, dict[tuple[int, int], dict[int, bytes]]]:
    """The temporal block (4.1-4.3) and, for auto, the sampled chunks of the chosen encoding.
    ``layout`` is switched to ``none`` when that is the choice."""
    selection = None
    samples: dict[tuple[int, int], dict[int, bytes]] = {}
    chosen = args.encoding
    if args.encoding == "auto":
        if args.dtype.name in DELTA_DTYPES:
            h, w = args.shape[2:]
            ratio, n_sampled, plains, deltas = choose_encoding(
                layout, inp, h, w, workers, args.anchor_interval
            )
            ratio = round(ratio, 4)  # the recorded ratio is the one the 0.85 rule is applied to
            chosen = "star-delta" if ratio <= AUTO_THRESHOLD else "none"
            samples = deltas if chosen == "star-delta" else plains
            selection = {"mode": "auto", "sampled_cells": n_sampled, "ratio": ratio}
            log.info("auto: star-delta/plain = %.4f over %d cells -> %s", ratio, n_sampled, chosen)
        else:
            chosen = "none"  # spec 4.3: auto applies to uint8/uint16 only, no selection written
    if chosen == "none":
        layout.encoding = "none"
        layout.anchors = frozenset()
        layout.refs = {}
        return Temporal(encoding="none", selection=selection), samples
    return (
        Temporal(
            encoding="star-delta",
            anchor_interval=args.anchor_interval,
            anchor_indices=tuple(sorted(layout.vol_anchors)),
            delta_reference=dict(layout.vol_refs),
            selection=selection,
        ),
        samples,
    )


def _level_info(args: _Args, k: int, h: int, w: int) -> LevelInfo:
    tf = level_transform(args.transform, k)
    return LevelInfo(
        str(k),
        level_resolution(args.resolution, k),
        tuple(tf),
        (args.shape[0], args.shape[1], h, w),
        grid_shape(h, w, args.cs),
    )


def _level_docs(args: _Args, info: LevelInfo) -> dict[str, dict[str, Any]]:
    """The zarr.json documents of a level's data, mask and coverage arrays (2.1, 2.4, 2.5)."""
    path = info.path
    docs = {
        f"{path}/{args.variable}": data_array_doc(
            shape=info.shape,
            dtype=args.dtype.name,
            cs=args.cs,
            codecs=args.data_codecs,
            nodata=args.nodata,
            shard_time=args.shard_time,
            crs=args.crs,
            transform=list(info.transform),
        )
    }
    h, w = info.shape[2:]
    for name, plane in (("mask", args.mask), ("coverage", args.coverage)):
        if plane is not None:
            docs[f"{path}/{name}"] = plane_array_doc(
                shape=(args.shape[0], h, w),
                cs=args.cs,
                codecs=args.plane_codecs,
                shard_time=args.shard_time,
            )
    return docs


def _write_level0(
    layout: Layout,
    args: _Args,
    info: LevelInfo,
    samples: dict[tuple[int, int], dict[int, bytes]],
    workers: int,
) -> list[CellResult]:
    """Level 0 from the input, cell by cell, with the volatility terms (5)."""
    inp = CellInput(args.data, args.dtype)
    mask_in = None if args.mask is None else CellInput(args.mask, np.dtype("uint8"))
    cov_in = None if args.coverage is None else CellInput(args.coverage, np.dtype("uint8"))
    h, w = info.shape[2:]
    dtype = args.dtype

    def one(task: tuple[tuple[int, int], range]) -> CellResult:
        (r, c), times_k = task
        ys, xs = cell_slice(r, c, args.cs, h, w)
        get = inp.cell(ys, xs, times_k)
        getm = mask_in.cell(ys, xs, times_k) if mask_in else None
        getc = cov_in.cell(ys, xs, times_k) if cov_in else None

        def planes_at(t: int) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
            m = None if getm is None else np.asarray(getm(t)).astype(np.uint8, copy=False)
            if m is not None and m.size and int(m.max()) > 1:
                raise EncodeError(
                    "mask",
                    f"values must be 0 or 1 (spec 2.4), found {int(m.max())} at timestep {t}",
                )
            cv = None if getc is None else np.asarray(getc(t)).astype(np.uint8, copy=False)
            return np.asarray(get(t), dtype=dtype), m, cv

        return write_cell_series(
            layout,
            "0",
            r,
            c,
            Planes(planes_at),
            times_k,
            volatility=True,
            encoded=samples.get((r, c)),
        )

    cells = [(r, c) for r in range(info.grid[0]) for c in range(info.grid[1])]
    tasks = split_tasks(cells, range(args.shape[0]), args.shard_time, workers)
    return merge_results(parallel(one, tasks, workers))


def _write_upper(
    layout: Layout,
    args: _Args,
    info: LevelInfo,
    below: LevelInfo,
    docs: Mapping[str, Mapping[str, Any]],
    workers: int,
) -> list[CellResult]:
    """Level k from level k-1 as stored: read back, reconstructed, block-averaged (6)."""

    def one(task: tuple[tuple[int, int], range]) -> CellResult:
        rb = Readback(layout, below, docs)
        (r, c), times_k = task
        return write_cell_series(
            layout,
            info.path,
            r,
            c,
            Planes(lambda t: rb.reduced(t, r, c)),
            times_k,
            volatility=False,
        )

    cells = [(r, c) for r in range(info.grid[0]) for c in range(info.grid[1])]
    tasks = split_tasks(cells, range(args.shape[0]), args.shard_time, workers)
    return merge_results(parallel(one, tasks, workers))


def _write_levels(
    layout: Layout,
    args: _Args,
    samples: dict[tuple[int, int], dict[int, bytes]],
    workers: int,
) -> tuple[list[LevelInfo], dict[str, dict[str, Any]], dict[str, dict[str, int]], np.ndarray]:
    """Every level's chunks, level by level; returns the levels, their array documents, the
    shard sizes (7.3) and the volatility grid (5)."""
    height, width = args.shape[2:]
    levels: list[LevelInfo] = []
    docs: dict[str, dict[str, Any]] = {}
    shard_bytes: dict[str, dict[str, int]] = {}
    volatility = np.zeros(grid_shape(height, width, args.cs), dtype=np.float32)
    for k, (h, w) in enumerate(level_shapes(height, width, args.cs)):
        info = _level_info(args, k, h, w)
        levels.append(info)
        docs.update(_level_docs(args, info))
        if k == 0:
            results = _write_level0(layout, args, info, samples, workers)
            samples.clear()
            for res in results:
                volatility[res.row, res.col] = volatility_value(res.vol_sum, res.vol_count)
        else:
            results = _write_upper(layout, args, info, levels[k - 1], docs, workers)
        if args.shard_time is not None:
            shard_bytes[info.path] = {
                key: size for res in results for key, size in res.shard_sizes.items()
            }
    return levels, docs, shard_bytes, volatility


def _layout(args: _Args, target: LocalStore) -> Layout:
    """The per-cell writer's layout, star-delta on the nominal schedule (spec 4.2, 5); ``_select``
    switches it to none when that is the choice."""
    n_time, n_band = args.shape[:2]
    vol_anchors, vol_refs = schedule(n_time, args.anchor_interval)
    return Layout(
        store=target,
        variable=args.variable,
        n_time=n_time,
        n_band=n_band,
        cs=args.cs,
        dtype=args.dtype,
        nodata=args.nodata,
        encoding="star-delta",
        anchors=frozenset(vol_anchors),
        refs=vol_refs,
        vol_anchors=frozenset(vol_anchors),
        vol_refs=vol_refs,
        shard_time=args.shard_time,
        data_codecs=args.data_codecs,
        plane_codecs=args.plane_codecs,
        has_mask=args.mask is not None,
        has_coverage=args.coverage is not None,
    )


def _check_args(
    data: Any,
    times: Any,
    bands: Any,
    crs: Any,
    transform: Any,
    nodata: Any,
    mask: Any,
    coverage: Any,
    options: Mapping[str, Any],
) -> _Args:
    """Every argument checked (and normalized) before anything is written."""
    data, dtype, shape = _check_data(data)
    n_time, n_band, height, width = shape
    # an xarray coordinate (da.time, da.band) is read as its values
    times = times.values if hasattr(times, "dims") and hasattr(times, "values") else times
    bands = bands.values if hasattr(bands, "dims") and hasattr(bands, "values") else bands
    try:
        times_ms = parse_times(times, n_time)
    except ValueError as exc:  # parse_times says which entry; report it under ``times``
        raise EncodeError("times", str(exc)) from exc
    band_objs = normalize_bands(bands, n_band)
    crs_text = normalize_crs(crs)
    transform_t, resolution = normalize_transform(transform)
    nodata_v = normalize_nodata(nodata, dtype)
    cs, st = _check_layout(
        dtype,
        n_time,
        options["chunk_size"],
        options["encoding"],
        options["anchor_interval"],
        options["shard"],
        options["shard_time"],
    )
    data_codecs, plane_codecs = _codecs_for(options["codec"], options["codec_options"], dtype)
    variable = options["variable"]
    if (
        not isinstance(variable, str)
        or not _VARIABLE_RE.fullmatch(variable)
        or variable in _RESERVED
    ):
        raise EncodeError(
            "variable",
            f"expected a plain array name other than {sorted(_RESERVED)}, got {variable!r}",
        )
    mask, coverage = _check_planes(mask, coverage, n_time, height, width)
    return _Args(
        data, dtype, shape, times_ms, band_objs, crs_text, transform_t, resolution, nodata_v, cs,
        options["encoding"], int(options["anchor_interval"]), st, data_codecs, plane_codecs,
        variable, mask, coverage,
    )  # fmt: skip


def encode(
    data: Any,
    store: str | os.PathLike[str],
    *,
    times: Sequence[Any],
    bands: Sequence[Any],
    crs: Any,
    transform: Sequence[float],
    nodata: Any = DEFAULT,
    mask: Any = None,
    coverage: Any = None,
    encoding: str = "auto",
    anchor_interval: int = 6,
    chunk_size: int = 512,
    shard: bool = False,
    shard_time: int | None = None,
    codec: str = "zstd",
    codec_options: Mapping[str, Any] | None = None,
    provenance: Mapping[str, Any] | None = None,
    variable: str = "data",
    workers: int | None = None,
) -> None:
    """Write ``data`` (time, band, y, x) as a chronozarr v0.2 store at ``store`` (a local path).

    See docs/spec.md for every argument's meaning. Raises ``EncodeError`` naming the argument on
    bad input, before anything is written. ``shard_time`` implies ``shard``. ``workers`` is the
    number of cells encoded at once (default: up to 4, bounded by the CPU count).
    """
    options = dict(
        chunk_size=chunk_size,
        encoding=encoding,
        anchor_interval=anchor_interval,
        shard=shard,
        shard_time=shard_time,
        codec=codec,
        codec_options=codec_options,
        variable=variable,
    )
    args = _check_args(data, times, bands, crs, transform, nodata, mask, coverage, options)
    if provenance is not None and not isinstance(provenance, Mapping):
        raise EncodeError("provenance", "expected an object (mapping)")
    if provenance is not None:
        try:  # checked now, not when the root zarr.json is written after every chunk
            dumps(dict(provenance))
        except (TypeError, ValueError) as exc:  # json refuses numpy scalars, NaN, objects
            raise EncodeError(
                "provenance", f"must be JSON (no NaN, no numpy scalars): {exc}"
            ) from exc
    target = _open_target(store)
    workers = workers or default_workers()
    layout = _layout(args, target)
    temporal, samples = _select(layout, CellInput(args.data, args.dtype), args, workers)
    levels, docs, shard_bytes, volatility = _write_levels(layout, args, samples, workers)
    attrs = RootAttrs(
        spec_version=SPEC_VERSION,
        variable=args.variable,
        times=tuple(format_time(t) for t in args.times_ms),
        bands=args.bands,
        band_names=tuple(b.name for b in args.bands),
        nodata=args.nodata,
        crs=args.crs,
        temporal=temporal,
        volatility_path="volatility",
        mask_variable="mask" if args.mask is not None else None,
        coverage_variable="coverage" if args.coverage is not None else None,
        provenance=dict(provenance) if provenance is not None else None,
        levels=tuple(levels),
        shard_bytes=shard_bytes if args.shard_time is not None else None,
    )
    multiscale = multiscales([lv.path for lv in levels], args.crs)
    write_metadata(target, attrs, docs, args.times_ms, volatility, multiscale, codec, codec_options)

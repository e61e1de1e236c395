"""``cz build`` and ``cz append``: from a monthly plan to a chronozarr store, at any size.

A build runs in two passes so that memory never grows with the region or the number of months:

1. **Composites.** The grid is cut into blocks of the store's cell size. Each (month, block) is
   one task (:func:`compute_block`): read the month's items that touch the block (odc-stac,
   :mod:`cz.load`), correct, mosaic per solar day and take the median (:mod:`cz.composite`).
   The task returns the raw composite and its coverage, compressed (zstd level 1), and the
   caller writes them to a *spill* folder of small files next to the target. Tasks run on a
   local thread pool or, with ``scheduler``, on a dask.distributed cluster (results come back to
   the client, so the workers need no shared disk). At most ``2 x workers`` tasks are in flight.
2. **Store.** ``chronozarr.encode`` (or ``chronozarr.append``) streams the store cell by cell
   from lazy views of the spill (:class:`SpillPlanes`): data, mask and coverage are three
   array-likes with ``compute`` that the writer reads in (months, cell) batches. Gap-fill is
   applied while reading: a month depends only on the raw composites of the ``max_age`` months
   before it (:func:`cz.composite.carry_forward_source`), which the spill holds (and, for an
   append, the store itself: a pixel with coverage > 0 holds its raw composite).

Why not one lazy dask graph fed to ``encode``: ``encode`` computes data, mask and coverage in
separate ``compute`` calls and in batches of months, so a graph that loads pixels would load each
month three times, plus the ``max_age`` months before every batch for gap-fill. The spill makes
every (month, block) computed exactly once, in parallel, anywhere; its files cost one fast
compression of level 0 and are deleted when the build ends. For notebooks,
:func:`lazy_composites` exposes the same per-(month, block) work as a dask-backed xarray.

Where the store goes. A local build writes into a staging folder next to the target
(``.NAME.building-*``) and renames it into place only when complete (the writer already puts
the root zarr.json last); a failed build removes the staging folder and leaves the target as it
was. A URL target (``s3://...``) is built locally first, then published with
:func:`cz.publish.publish` (chunks first, root last).

Provenance. ``chronozarr.provenance`` in the root holds the small summary (sources, composite,
gap-fill, notes, the recipe choices an append must match, skipped items). The item ids behind
each month live in the store's root-level array ``provenance_items`` (Zarr v3 ``string``, dims
``["time"]``, one chunk per month holding one JSON document), so the root zarr.json a browser
loads first stays small. See :func:`write_provenance_items` for the order that keeps it at least
as long as the time axis.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import re
import shutil
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from chronozarr import provenance
from chronozarr.objects import has_root
from chronozarr.provenance import (
    PROVENANCE_ITEMS,
    read_provenance_items,
    write_provenance_items,
)
from cz.composite import (
    assemble_filled,
    carry_forward_source,
    composite_block,
    fill_value,
    mask_from_source,
)
from cz.errors import CzError
from cz.load import (
    BandLoad,
    ItemRef,
    LoadSpec,
    SkippedAsset,
    gdal_options,
    load_block,
)
from cz.plan import GridPlan, MonthPlan, Plan, month_range, plan_recipe, project_lonlat
from cz.recipe import Recipe, TimeSpec

__all__ = [
    "PROVENANCE_ITEMS",
    "AppendRefusedError",
    "BlockResult",
    "BlockTask",
    "BuildError",
    "BuildOptions",
    "BuildResult",
    "CompositeContext",
    "Progress",
    "SpillPlanes",
    "append_months",
    "build",
    "compute_block",
    "lazy_composites",
    "parse_months",
    "read_provenance_items",
    "store_bands",
    "write_provenance_items",
]

log = logging.getLogger(__name__)

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_SPILL_CODEC_LEVEL = 1


class BuildError(CzError):
    """A build or append could not be done: the target, the cluster, a read, the store."""


class AppendRefusedError(BuildError):
    """``cz append`` refuses: the months or the recipe do not fit the store (nothing written)."""


# --------------------------------------------------------------------------------------------
# options, progress, result


@dataclass
class BuildOptions:
    """How a build runs (not what it builds: that is the recipe).

    ``scheduler``: address of a dask.distributed scheduler (``tcp://host:8786``), else local
    threads. ``workers``: local threads for compositing and writing (default: the CPU count, at
    most 8). ``skip_failed``: leave out items whose assets cannot be read, and record them.
    ``overwrite``: replace an existing local store, once the new one is complete.
    ``read_attempts`` / ``retry_delay``: our retries of a failing read (GDAL retries HTTP
    429/5xx itself first, see :data:`cz.load.GDAL_DEFAULTS`). ``work_dir``: where the spill and,
    for URL targets, the local copy go (default: next to the target, or the current folder).
    ``connect_timeout``: seconds to reach the dask scheduler.
    """

    scheduler: str | None = None
    workers: int | None = None
    skip_failed: bool = False
    overwrite: bool = False
    read_attempts: int = 3
    retry_delay: float = 0.5
    gdal: dict[str, str] | None = None
    work_dir: str | None = None
    connect_timeout: float = 15.0

    def threads(self) -> int:
        return max(1, self.workers or min(8, os.cpu_count() or 1))


class Progress:
    """Progress events of a build; this base ignores them (the CLI draws rich bars).

    Phases: ``plan`` (no total), ``months`` (composites, total = months), ``cells`` (level-0
    cells written, total = cells), ``pyramid`` (upper levels and metadata, no total),
    ``publish`` (objects uploaded).
    """

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        """A phase begins (``total`` units, or unknown)."""

    def advance(self, phase: str, amount: float = 1.0) -> None:
        """``amount`` units of ``phase`` are done."""

    def finish(self, phase: str) -> None:
        """A phase is complete."""

    def note(self, message: str) -> None:
        """Something a person should know (a skipped item, a warning of the plan)."""


@dataclass
class BuildResult:
    """What a build or an append did."""

    action: str  # "build" or "append"
    store: str  # local path of the store (or of the local copy for a URL target)
    published: str | None  # the URL a store was published to
    months: list[str]
    empty_months: list[str]
    bands: list[str]
    shape: list[int]
    levels: int
    cells: int
    items_read: int
    observations: int
    skipped: list[SkippedAsset]
    encoding: str
    bytes: int
    objects: int
    seconds: float
    composite_seconds: float
    write_seconds: float
    valid_fraction: float
    gap_filled_fraction: float
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["skipped"] = [s.to_json() for s in self.skipped]
        return out


# --------------------------------------------------------------------------------------------
# tasks


@dataclass(frozen=True)
class CompositeContext:
    """What every block task shares: the load spec and the composite rules (picklable)."""

    load: LoadSpec
    dtype: str
    nodata: float | None
    keep: tuple[int, ...] | None
    harmonized: tuple[bool, ...]


@dataclass(frozen=True)
class BlockTask:
    """One unit of work: the items of month ``t`` that touch block (row, col)."""

    t: int
    month: str
    row: int
    col: int
    window: tuple[int, int, int, int]
    items: tuple[ItemRef, ...]


@dataclass
class BlockResult:
    """The raw composite of one (month, block), compressed, and what went into it."""

    t: int
    row: int
    col: int
    values: bytes
    coverage: bytes
    items_read: list[str]
    observations: int
    skipped: list[SkippedAsset]


def _codec() -> Any:
    from numcodecs import Zstd

    return Zstd(level=_SPILL_CODEC_LEVEL)


def compute_block(task: BlockTask, ctx: CompositeContext) -> BlockResult:
    """Read, correct, mosaic and composite one (month, block); runs on any worker."""
    loaded = load_block(task.items, ctx.load, task.window, month=task.month)
    values, coverage = composite_block(
        loaded.values,
        loaded.scl,
        corrections=[r.correction for r in loaded.items],
        solar_days=[r.solar_day for r in loaded.items],
        keep=ctx.keep,
        src_nodata=loaded.src_nodata,
        harmonized=ctx.harmonized,
        dtype=ctx.dtype,
        nodata=ctx.nodata,
    )
    codec = _codec()
    return BlockResult(
        task.t,
        task.row,
        task.col,
        bytes(codec.encode(np.ascontiguousarray(values))),
        bytes(codec.encode(np.ascontiguousarray(coverage))),
        [r.id for r in loaded.items],
        len({r.solar_day for r in loaded.items}),
        loaded.skipped,
    )


# --------------------------------------------------------------------------------------------
# the spill: raw composites per (month, block) on disk


class Spill:
    """Raw composites of (month, block) as small zstd files in a folder; thread-safe."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=False)
        self._present: set[tuple[int, int, int]] = set()
        self._lock = threading.Lock()

    def _path(self, t: int, row: int, col: int, kind: str) -> Path:
        return self.root / f"{t}.{row}.{col}.{kind}"

    def put(self, result: BlockResult) -> None:
        for kind, blob in (("v", result.values), ("c", result.coverage)):
            path = self._path(result.t, result.row, result.col, kind)
            tmp = path.with_suffix(path.suffix + ".tmp")
            tmp.write_bytes(blob)
            tmp.replace(path)
        with self._lock:
            self._present.add((result.t, result.row, result.col))

    def has(self, t: int, row: int, col: int) -> bool:
        with self._lock:
            return (t, row, col) in self._present

    def get(self, t: int, row: int, col: int, kind: str) -> bytes:
        return self._path(t, row, col, kind).read_bytes()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)


class _LRU:
    """A small byte-bounded LRU cache, thread-safe."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.items: OrderedDict[Any, np.ndarray] = OrderedDict()
        self.nbytes = 0
        self.lock = threading.Lock()

    def get(self, key: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        with self.lock:
            if key in self.items:
                self.items.move_to_end(key)
                return self.items[key]
        value = make()
        with self.lock:
            if key not in self.items:
                self.items[key] = value
                self.nbytes += value.nbytes
                while self.nbytes > self.max_bytes and len(self.items) > 1:
                    _, old = self.items.popitem(last=False)
                    self.nbytes -= old.nbytes
        return value


History = Callable[[int, int, int], tuple[np.ndarray, np.ndarray] | None]


class SpillPlanes:
    """Final (gap-filled) values, mask and coverage of any (month, cell), from the spill.

    ``history(t, row, col)`` gives ``(values, coverage)`` of month ``t < 0`` (months before the
    first one built: an append reads them from the store), or ``None``.
    """

    def __init__(
        self,
        spill: Spill,
        *,
        n_months: int,
        shape: tuple[int, int],
        cs: int,
        n_band: int,
        dtype: str,
        nodata: float | None,
        max_age: int,
        history: History | None = None,
        on_data: Callable[[int, int, int], None] | None = None,
        readers: int = 2,
    ) -> None:
        self.spill = spill
        self.n_months = n_months
        self.height, self.width = shape
        self.cs = cs
        self.n_band = n_band
        self.dtype = np.dtype(dtype)
        self.fill = fill_value(self.dtype, nodata)
        self.max_age = max_age
        self.history = history
        self.on_data = on_data
        self.codec = _codec()
        # the writer reads each cell's months in order on ``readers`` threads; a month looks back
        # at most ``max_age`` months of the same cell: keep that much, decompress the rest again
        block = cs * cs
        self._cov = _LRU(max(8 << 20, readers * (max_age + 2) * block * 4))
        self._values = _LRU(readers * (max_age + 2) * block * n_band * self.dtype.itemsize)
        self._past_cache: OrderedDict[tuple[int, int, int], Any] = OrderedDict()
        self._past_lock = threading.Lock()
        rows, cols = math.ceil(self.height / cs), math.ceil(self.width / cs)
        self._counted = np.zeros((n_months, rows, cols), dtype=bool)
        self._valid = 0
        self._filled = 0
        self._count_lock = threading.Lock()

    def block_shape(self, row: int, col: int) -> tuple[int, int]:
        return (
            min(self.cs, self.height - row * self.cs),
            min(self.cs, self.width - col * self.cs),
        )

    def _past(self, t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
        """Month t < 0 from ``history`` (cached: every later month looks back at it)."""
        if self.history is None:
            return None
        with self._past_lock:
            if (t, row, col) in self._past_cache:
                self._past_cache.move_to_end((t, row, col))
                return self._past_cache[(t, row, col)]
        past = self.history(t, row, col)
        with self._past_lock:
            self._past_cache[(t, row, col)] = past
            while len(self._past_cache) > max(16, 4 * (self.max_age + 1)):
                self._past_cache.popitem(last=False)
        return past

    def _raw_coverage(self, t: int, row: int, col: int) -> np.ndarray | None:
        if t < 0:
            past = self._past(t, row, col)
            return None if past is None else past[1]
        if not self.spill.has(t, row, col):
            return None

        def make() -> np.ndarray:
            raw = self.codec.decode(self.spill.get(t, row, col, "c"))
            return np.frombuffer(raw, dtype=np.uint8).reshape(self.block_shape(row, col))

        return self._cov.get((t, row, col), make)

    def _raw_values(self, t: int, row: int, col: int) -> np.ndarray:
        if t < 0:
            past = self._past(t, row, col)
            assert past is not None
            return past[0]

        def make() -> np.ndarray:
            raw = self.codec.decode(self.spill.get(t, row, col, "v"))
            h, w = self.block_shape(row, col)
            return np.frombuffer(raw, dtype=self.dtype).reshape(self.n_band, h, w)

        return self._values.get((t, row, col), make)

    def source(self, t: int, row: int, col: int) -> np.ndarray:
        """Carry-forward source plane of (month t, block): 0 own, k = month t-k, -1 none."""
        covs = [self._raw_coverage(t - k, row, col) for k in range(self.max_age + 1)]
        return carry_forward_source(covs, self.block_shape(row, col))

    def coverage(self, t: int, row: int, col: int) -> np.ndarray:
        cov = self._raw_coverage(t, row, col)
        return np.zeros(self.block_shape(row, col), np.uint8) if cov is None else cov

    def mask(self, t: int, row: int, col: int) -> np.ndarray:
        src = self.source(t, row, col)
        with self._count_lock:  # the summary's shares, each (month, cell) counted once
            if not self._counted[t, row, col]:
                self._counted[t, row, col] = True
                self._valid += int(np.count_nonzero(src >= 0))
                self._filled += int(np.count_nonzero(src > 0))
        return mask_from_source(src)

    def fractions(self) -> tuple[float, float]:
        """(valid, gap-filled) share of the level-0 pixels of the months the writer read."""
        total = self.n_months * self.height * self.width
        if not total:
            return 0.0, 0.0
        return self._valid / total, self._filled / total

    def values(self, t: int, row: int, col: int) -> np.ndarray:
        if self.on_data is not None:
            self.on_data(t, row, col)
        src = self.source(t, row, col)
        return assemble_filled(
            src,
            lambda k: self._raw_values(t - k, row, col),
            self.n_band,
            self.dtype,
            self.fill,
        )


class _View:
    """A lazy (time, band, y, x) or (time, y, x) array over :class:`SpillPlanes` for the writer.

    It has ``shape``, ``dtype``, ``ndim`` and ``compute`` (the writer's test for a lazy input);
    indexing with slices returns numpy, assembled from the blocks the slice covers.
    """

    def __init__(self, planes: SpillPlanes, kind: str) -> None:
        self.planes = planes
        self.kind = kind
        h, w = planes.height, planes.width
        if kind == "data":
            self.shape: tuple[int, ...] = (planes.n_months, planes.n_band, h, w)
            self.dtype = planes.dtype
        else:
            self.shape = (planes.n_months, h, w)
            self.dtype = np.dtype(np.uint8)
        self.ndim = len(self.shape)

    def compute(self) -> np.ndarray:
        return self[tuple(slice(None) for _ in self.shape)]

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.compute()
        return out if dtype is None else out.astype(dtype)

    def __getitem__(self, key: Any) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key,)
        key = key + (slice(None),) * (self.ndim - len(key))
        squeeze: list[int] = []
        ranges: list[range] = []
        for axis, (k, n) in enumerate(zip(key, self.shape, strict=True)):
            if isinstance(k, int | np.integer):
                k = int(k) + (n if k < 0 else 0)
                ranges.append(range(k, k + 1))
                squeeze.append(axis)
            elif isinstance(k, slice):
                start, stop, step = k.indices(n)
                if step != 1:
                    raise IndexError("only unit-step slices are supported")
                ranges.append(range(start, max(start, stop)))
            else:
                raise IndexError(f"unsupported index {k!r}")
        times, ys, xs = ranges[0], ranges[-2], ranges[-1]
        bands = ranges[1] if self.kind == "data" else None
        cs = self.planes.cs
        if self.kind == "data":
            assert bands is not None
            out = np.empty((len(times), len(bands), len(ys), len(xs)), dtype=self.dtype)
        else:
            out = np.empty((len(times), len(ys), len(xs)), dtype=self.dtype)
        if len(ys) and len(xs):
            for row in range(ys.start // cs, (ys.stop - 1) // cs + 1):
                for col in range(xs.start // cs, (xs.stop - 1) // cs + 1):
                    by0, bx0 = row * cs, col * cs
                    y0, y1 = max(ys.start, by0), min(ys.stop, by0 + cs)
                    x0, x1 = max(xs.start, bx0), min(xs.stop, bx0 + cs)
                    oy, ox = (
                        slice(y0 - ys.start, y1 - ys.start),
                        slice(x0 - xs.start, x1 - xs.start),
                    )
                    iy, ix = slice(y0 - by0, y1 - by0), slice(x0 - bx0, x1 - bx0)
                    for i, t in enumerate(times):
                        if self.kind == "data":
                            block = self.planes.values(t, row, col)
                            out[i, :, oy, ox] = block[bands.start : bands.stop, iy, ix]
                        elif self.kind == "mask":
                            out[i, oy, ox] = self.planes.mask(t, row, col)[iy, ix]
                        else:
                            out[i, oy, ox] = self.planes.coverage(t, row, col)[iy, ix]
        if squeeze:
            out = out.squeeze(axis=tuple(squeeze))
        return out


# --------------------------------------------------------------------------------------------
# recipe -> store arguments


def store_bands(recipe: Recipe) -> list[dict[str, Any]]:
    """The band objects of the store (spec 3.6): name, common_name, scale, offset, units."""
    out = []
    for band in recipe.bands:
        entry: dict[str, Any] = {"name": band.name, "scale": band.scale}
        entry["offset"] = band.physical_offset
        if band.common_name:
            entry["common_name"] = band.common_name
        if band.units:
            entry["units"] = band.units
        out.append(entry)
    return out


def _codec_options(recipe: Recipe) -> dict[str, Any]:
    codec = recipe.store.codec
    if codec.name == "blosc":
        opts: dict[str, Any] = {"clevel": codec.effective_level}
        if codec.cname:
            opts["cname"] = codec.cname
        if codec.shuffle:
            opts["shuffle"] = codec.shuffle
        return opts
    return {"level": codec.effective_level}


def _recipe_fingerprint(recipe: Recipe) -> dict[str, Any]:
    """The recipe choices an append must repeat, as recorded in the store's provenance."""
    return {
        "collection": recipe.catalog.collection,
        "composite": recipe.composite.method,
        "gap_fill": recipe.gap_fill.method,
        "gap_fill_max_age": recipe.gap_fill.max_age,
        "mask_keep": None if recipe.mask is None else list(recipe.mask.keep),
        "dn_offset": recipe.store_dn_offset if any(b.harmonize for b in recipe.bands) else 0,
        "harmonized": [b.name for b in recipe.bands if b.harmonize],
        "resampling": {b.name: b.resampling for b in recipe.bands},
    }


def _provenance(recipe: Recipe, skipped: Sequence[SkippedAsset]) -> dict[str, Any]:
    """The root's ``chronozarr.provenance`` (spec 3.8): small, whatever the number of items."""
    gap = recipe.gap_fill
    keep = None if recipe.mask is None else ", ".join(str(k) for k in recipe.mask.keep)
    notes = recipe.provenance.notes
    if notes is None and keep is not None:
        notes = f"SCL classes {keep} kept"
    catalog = recipe.catalog.url or f"local file {Path(str(recipe.catalog.path)).name}"
    out: dict[str, Any] = {
        "sources": [recipe.catalog.collection],
        "composite": f"monthly {recipe.composite.method}",
        "gap_fill": gap.method,
        "notes": notes,
    }
    if gap.method == "carry-forward":
        out["gap_fill_max_age"] = gap.max_age
    out["catalog"] = catalog
    if recipe.name:
        out["recipe"] = recipe.name
    out["software"] = "cz build (chronozarr toolkit)"
    out["items"] = provenance.items_reference()
    out["build"] = _recipe_fingerprint(recipe)
    out["skipped_items"] = provenance.skipped_entries(skipped)
    return out


def _month_document(month: MonthPlan, skipped: Sequence[SkippedAsset]) -> str:
    """The JSON of one month in ``provenance_items``: the items kept and skipped."""
    return provenance.items_document(
        month.month,
        items=[p.id for p in month.items],
        solar_days=month.solar_days,
        corrections={p.id: p.correction for p in month.items if p.correction},
        dropped=len(month.dropped),
        skipped=skipped,
    )


# --------------------------------------------------------------------------------------------
# running the composite tasks


def _item_refs(month: MonthPlan, recipe: Recipe) -> list[ItemRef]:
    """The month's items as :class:`ItemRef`, only the assets read, signed when needed."""
    from cz.stac import sign_items

    refs = []
    trimmed_items = []
    for p in month.items:
        if p.stac is None:
            raise BuildError(f"plan item {p.id} carries no STAC dict; make the plan again")
        keys = set(p.assets.values())
        stac = {k: v for k, v in p.stac.items() if k not in ("links", "assets")}
        stac["assets"] = {k: v for k, v in (p.stac.get("assets") or {}).items() if k in keys}
        stac["links"] = []
        trimmed_items.append(stac)
    if recipe.catalog.sign != "none" and trimmed_items:
        import pystac

        signed = sign_items(
            [pystac.Item.from_dict(s, preserve_dict=False, migrate=False) for s in trimmed_items],
            recipe,
        )
        trimmed_items = [
            it.to_dict(include_self_link=False, transform_hrefs=False) for it in signed
        ]
    for p, stac in zip(month.items, trimmed_items, strict=True):
        refs.append(ItemRef(p.id, stac, dict(p.assets), int(p.correction), p.solar_day))
    return refs


def _blocks(grid: GridPlan) -> list[tuple[int, int, tuple[int, int, int, int]]]:
    height, width = grid.shape
    cs = grid.chunk_size
    out = []
    for row in range(math.ceil(height / cs)):
        for col in range(math.ceil(width / cs)):
            out.append(
                (
                    row,
                    col,
                    (row * cs, min(height, (row + 1) * cs), col * cs, min(width, (col + 1) * cs)),
                )
            )
    return out


def _blocks_touched(month: MonthPlan, grid: GridPlan) -> dict[tuple[int, int], list[int]]:
    """For each block, the indices of the month's items whose footprint overlaps it."""
    from shapely.geometry import box

    a, _, c, _, e, f = grid.transform
    out: dict[tuple[int, int], list[int]] = {}
    blocks = _blocks(grid)
    for i, p in enumerate(month.items):
        geom = (p.stac or {}).get("geometry")
        if not geom:
            bbox = (p.stac or {}).get("bbox")
            geom = box(*bbox[:4]).__geo_interface__ if bbox else None
        if geom is None:
            footprint = None
        else:
            try:
                footprint = project_lonlat(dict(geom), grid.crs)
                if not footprint.is_valid:
                    footprint = footprint.buffer(0)
            except Exception:  # malformed geometry: read the item everywhere
                footprint = None
        for row, col, (y0, y1, x0, x1) in blocks:
            if footprint is not None:
                cell = box(c + a * x0, f + e * y1, c + a * x1, f + e * y0)
                if not footprint.intersects(cell):
                    continue
            out.setdefault((row, col), []).append(i)
    return out


class _Executor:
    """Runs :func:`compute_block` tasks: local threads, or a dask.distributed cluster."""

    def __init__(self, options: BuildOptions) -> None:
        self.options = options
        self.client: Any = None
        self.pool: ThreadPoolExecutor | None = None
        if options.scheduler:
            try:
                from distributed import Client
            except ImportError:
                raise BuildError(
                    "--scheduler needs dask.distributed: pip install distributed"
                ) from None
            try:
                self.client = Client(
                    options.scheduler,
                    timeout=f"{options.connect_timeout}s",
                    set_as_default=False,
                )
            except (OSError, TimeoutError) as exc:
                raise BuildError(
                    f"cannot connect to the dask scheduler at {options.scheduler}: {exc}"
                ) from None
            threads = sum(self.client.nthreads().values()) or 1
            self.window = 2 * threads
        else:
            self.pool = ThreadPoolExecutor(max_workers=options.threads(), thread_name_prefix="cz")
            self.window = 2 * options.threads()

    def describe(self) -> str:
        if self.client is not None:
            n = len(self.client.nthreads())
            return f"dask.distributed at {self.options.scheduler} ({n} workers)"
        return f"local, {self.options.threads()} threads"

    def submit(self, task: BlockTask, ctx: CompositeContext) -> Any:
        if self.client is not None:
            return self.client.submit(compute_block, task, ctx, pure=False)
        assert self.pool is not None
        return self.pool.submit(compute_block, task, ctx)

    def wait_any(self, pending: set[Any]) -> tuple[set[Any], set[Any]]:
        if self.client is not None:
            from distributed import wait as dwait

            with self.client.as_current():  # our client is not the process default
                done, rest = dwait(list(pending), return_when="FIRST_COMPLETED")
            return set(done), set(rest)
        done, rest = wait(pending, return_when=FIRST_COMPLETED)
        return set(done), set(rest)

    def cancel(self, pending: set[Any]) -> None:
        for fut in pending:
            fut.cancel()

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        if self.client is not None:
            with contextlib.suppress(Exception):
                self.client.close()


def _result_of(future: Any) -> BlockResult:
    """A task's result; an unexpected failure (a worker without ``cz``, a lost worker...) becomes
    a BuildError that says so. Toolkit errors (an unreadable asset) pass as they are."""
    try:
        return future.result()
    except CzError:
        raise
    except Exception as exc:
        raise BuildError(f"a composite task failed: {type(exc).__name__}: {exc}") from exc


@dataclass
class _CompositeStats:
    items_read: dict[int, set[str]] = field(default_factory=dict)
    observations: dict[int, int] = field(default_factory=dict)
    skipped: list[SkippedAsset] = field(default_factory=list)
    seconds: float = 0.0


def _run_composites(
    plan: Plan,
    recipe: Recipe,
    ctx: CompositeContext,
    spill: Spill,
    executor: _Executor,
    progress: Progress,
) -> _CompositeStats:
    """Pass 1: every (month, block) with items, computed once, written to the spill."""
    stats = _CompositeStats()
    start = time.perf_counter()
    months = plan.months
    progress.start("months", len(months), executor.describe())

    windows = {(r, c): w for r, c, w in _blocks(plan.grid)}

    def tasks() -> Iterator[BlockTask]:
        for t, month in enumerate(months):
            touched = _blocks_touched(month, plan.grid) if month.items else {}
            if not touched:
                progress.advance("months", 1.0)
                continue
            refs = _item_refs(month, recipe)  # signed here: late, per month of work
            share = 1.0 / len(touched)
            for (row, col), members in sorted(touched.items()):
                _shares[(t, row, col)] = share
                items = tuple(refs[i] for i in members)
                yield BlockTask(t, month.month, row, col, windows[(row, col)], items)

    _shares: dict[tuple[int, int, int], float] = {}
    queue = tasks()
    pending: set[Any] = set()
    try:
        exhausted = False
        while True:
            while not exhausted and len(pending) < executor.window:
                task = next(queue, None)
                if task is None:
                    exhausted = True
                    break
                pending.add(executor.submit(task, ctx))
            if not pending:
                break
            done, pending = executor.wait_any(pending)
            for fut in done:
                result = _result_of(fut)
                spill.put(result)
                stats.items_read.setdefault(result.t, set()).update(result.items_read)
                stats.observations[result.t] = max(
                    stats.observations.get(result.t, 0), result.observations
                )
                for s in result.skipped:
                    progress.note(f"skipped item {s.item} ({s.month}): asset {s.asset}: {s.error}")
                stats.skipped.extend(result.skipped)
                progress.advance("months", _shares.pop((result.t, result.row, result.col), 0.0))
    except BaseException:
        executor.cancel(pending)
        raise
    progress.finish("months")
    stats.seconds = time.perf_counter() - start
    return stats


def _decoded_block(task: BlockTask, ctx: CompositeContext) -> tuple[np.ndarray, np.ndarray]:
    """:func:`compute_block`, decompressed: (values (nb, h, w), coverage (h, w))."""
    result = compute_block(task, ctx)
    codec = _codec()
    y0, y1, x0, x1 = task.window
    nb = len(ctx.load.bands)
    values = np.frombuffer(codec.decode(result.values), dtype=ctx.dtype)
    coverage = np.frombuffer(codec.decode(result.coverage), dtype=np.uint8)
    return values.reshape(nb, y1 - y0, x1 - x0), coverage.reshape(y1 - y0, x1 - x0)


def lazy_composites(
    recipe: Recipe, *, plan: Plan | None = None, options: BuildOptions | None = None
) -> Any:
    """The raw monthly composites of a recipe as a lazy, dask-backed ``xarray.Dataset``.

    ``data`` (time, band, y, x) in the store dtype and ``coverage`` (time, y, x) uint8, chunked
    per (1 month, cell); each chunk is :func:`compute_block` of that (month, block), run when it
    is computed, on whatever dask scheduler is active. Nothing is written. Gap-fill is not
    applied (it belongs to the store: ``cz build``). Signed URLs are signed now, so compute
    within the token's lifetime. For notebooks; ``cz build`` does not go through it (see the
    module docstring).
    """
    import dask
    import dask.array as da
    import xarray as xr

    from chronozarr.grid import pixel_centres

    options = options or BuildOptions()
    plan = plan or plan_recipe(recipe)
    ctx = _context(recipe, plan, options)
    grid = plan.grid
    height, width = grid.shape
    nb = len(recipe.bands)
    dtype = np.dtype(recipe.store.dtype)
    fill = fill_value(dtype, recipe.store.effective_nodata)
    blocks = _blocks(grid)
    rows = 1 + max(r for r, _c, _w in blocks)
    cols = 1 + max(c for _r, c, _w in blocks)
    data_months, cov_months = [], []
    for t, month in enumerate(plan.months):
        touched = _blocks_touched(month, grid) if month.items else {}
        refs = _item_refs(month, recipe) if touched else []
        data_grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
        cov_grid: list[list[Any]] = [[None] * cols for _ in range(rows)]
        for row, col, window in blocks:
            h, w = window[1] - window[0], window[3] - window[2]
            members = touched.get((row, col))
            if not members:
                data_grid[row][col] = da.full((1, nb, h, w), fill, dtype=dtype)
                cov_grid[row][col] = da.zeros((1, h, w), dtype=np.uint8)
                continue
            task = BlockTask(t, month.month, row, col, window, tuple(refs[i] for i in members))
            pair = dask.delayed(_decoded_block, pure=True)(task, ctx)
            data_grid[row][col] = da.from_delayed(pair[0], (nb, h, w), dtype=dtype)[None]
            cov_grid[row][col] = da.from_delayed(pair[1], (h, w), dtype=np.uint8)[None]
        data_months.append(da.block(data_grid))  # rows along y, cells along x
        cov_months.append(da.block(cov_grid))
    ys, xs = pixel_centres(grid.transform, height, width)
    coords = {
        "time": np.array([np.datetime64(m.time.rstrip("Z"), "ns") for m in plan.months]),
        "band": [b.name for b in recipe.bands],
        "y": np.asarray(ys),
        "x": np.asarray(xs),
    }
    data = da.concatenate(data_months, axis=0)
    coverage = da.concatenate(cov_months, axis=0)
    return xr.Dataset(
        {
            "data": (("time", "band", "y", "x"), data),
            "coverage": (("time", "y", "x"), coverage),
        },
        coords=coords,
        attrs={"crs": grid.crs, "transform": list(grid.transform), "nodata": fill},
    )


# --------------------------------------------------------------------------------------------
# the target


def _is_url(text: str) -> bool:
    return bool(_URL.match(text)) and not text.startswith("file://")


def _local_path(text: str) -> Path:
    return Path(text.removeprefix("file://")).expanduser().resolve()


@dataclass
class _Target:
    """A local build target: the final path, the staging folder and the spill folder."""

    final: Path
    staging: Path
    spill_root: Path
    replace: bool

    @classmethod
    def prepare(cls, final: Path, options: BuildOptions) -> _Target:
        """Check and reserve the target (no store is written yet): refuses an existing store
        (unless ``overwrite``) or a non-empty folder; creates the staging folder to prove the
        place is writable."""
        replace = False
        if final.exists() or final.is_symlink():
            if not final.is_dir():
                raise BuildError(f"{final} exists and is not a folder; choose another --out")
            if any(final.iterdir()):
                if not has_root(final):
                    raise BuildError(
                        f"{final} is a folder that is not empty and holds no store; "
                        "choose another --out"
                    )
                if not options.overwrite:
                    raise BuildError(
                        f"{final} already holds a store; a rebuild goes to a new path (spec 9), "
                        "or pass --overwrite to replace it once the new store is complete"
                    )
                replace = True
        parent = final.parent
        try:
            parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BuildError(
                f"cannot create the folder {parent} for {final}: {_os_reason(exc)}"
            ) from None
        tag = uuid.uuid4().hex[:10]
        staging = parent / f".{final.name}.building-{tag}"
        try:
            staging.mkdir()
        except OSError as exc:
            raise BuildError(
                f"cannot write next to {final} ({parent}): {_os_reason(exc)}"
            ) from None
        work = Path(options.work_dir).expanduser().resolve() if options.work_dir else parent
        return cls(final, staging, work / f".{final.name}.composites-{tag}", replace)

    def commit(self) -> None:
        """Move the complete staging folder to the final path (an old store goes only after)."""
        if self.replace:
            trash = self.final.parent / f".{self.final.name}.replaced-{uuid.uuid4().hex[:10]}"
            os.rename(self.final, trash)
            try:
                os.rename(self.staging, self.final)
            except OSError:
                os.rename(trash, self.final)
                raise
            shutil.rmtree(trash, ignore_errors=True)
        else:  # a missing path, or an empty folder (POSIX rename replaces an empty folder)
            os.rename(self.staging, self.final)

    def abort(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def _os_reason(exc: OSError) -> str:
    return exc.strerror or str(exc)


def _store_size(path: Path) -> tuple[int, int]:
    total = count = 0
    for dirpath, _dirs, files in os.walk(path):
        for name in files:
            total += (Path(dirpath) / name).stat().st_size
            count += 1
    return total, count


def _spill_planes(
    spill: Spill, recipe: Any, plan: Any, options: Any, progress: Any, **extra: Any
) -> SpillPlanes:
    """The writer's view of a plan's spilled composites (build and append read them alike)."""
    grid = plan.grid
    return SpillPlanes(
        spill,
        n_months=len(plan.months),
        shape=(grid.shape[0], grid.shape[1]),
        cs=grid.chunk_size,
        n_band=len(recipe.bands),
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        on_data=_CellCounter(len(plan.months), grid, progress),
        readers=options.threads(),
        **extra,
    )


def _max_age(recipe: Recipe) -> int:
    """Months a value may be carried forward (0: no gap-fill)."""
    if recipe.gap_fill.method != "carry-forward":
        return 0
    return int(recipe.gap_fill.max_age or 0)


def _context(recipe: Recipe, plan: Plan, options: BuildOptions) -> CompositeContext:
    grid = plan.grid
    spec = LoadSpec(
        crs=grid.crs,
        transform=tuple(float(v) for v in grid.transform),  # type: ignore[arg-type]
        bands=tuple(BandLoad(b.name, b.resampling, b.harmonize) for b in recipe.bands),
        mask_keep=None if recipe.mask is None else tuple(recipe.mask.keep),
        attempts=options.read_attempts,
        retry_delay=options.retry_delay,
        skip_failed=options.skip_failed,
        gdal=gdal_options(options.gdal),
    )
    return CompositeContext(
        load=spec,
        dtype=recipe.store.dtype,
        nodata=recipe.store.effective_nodata,
        keep=spec.mask_keep,
        harmonized=tuple(b.harmonize for b in recipe.bands),
    )


class _CellCounter:
    """Counts level-0 (month, cell) planes handed to the writer, for the ``cells`` bar."""

    def __init__(self, n_months: int, grid: GridPlan, progress: Progress) -> None:
        rows, cols = grid.levels[0].grid
        self.seen = np.zeros((n_months, rows, cols), dtype=bool)
        self.remaining = n_months * rows * cols
        self.share = 1.0 / max(1, n_months)
        self.progress = progress
        self.lock = threading.Lock()

    def __call__(self, t: int, row: int, col: int) -> None:
        with self.lock:
            if self.seen[t, row, col]:
                return
            self.seen[t, row, col] = True
            self.remaining -= 1
            last = self.remaining == 0
        self.progress.advance("cells", self.share)
        if last:
            self.progress.finish("cells")
            self.progress.start("pyramid", None, "upper levels, volatility, metadata")


# --------------------------------------------------------------------------------------------
# build


def build(
    recipe: Recipe,
    *,
    out: str | None = None,
    plan: Plan | None = None,
    options: BuildOptions | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Build the store of ``recipe`` at ``out`` (else ``store.path``); see the module docstring.

    Raises :class:`BuildError` (target, cluster, store), :class:`cz.load.AssetReadError` (an
    asset that cannot be read), :class:`cz.errors.StacError` (the catalog) and
    :class:`cz.errors.RecipeError`. On any error nothing is left at the target.
    """
    options = options or BuildOptions()
    progress = progress or Progress()
    started = time.perf_counter()
    where = out if out is not None else recipe.store.path
    if where is None:
        raise BuildError("no output: give --out or set store.path in the recipe")
    if _is_url(where):
        return _build_to_url(recipe, where, plan, options, progress, started)
    target = _Target.prepare(_local_path(where), options)
    try:
        result = _build_local(recipe, target, plan, options, progress, started)
        target.commit()
    except BaseException:
        target.abort()
        raise
    finally:
        shutil.rmtree(target.spill_root, ignore_errors=True)
    result.store = str(target.final)
    result.seconds = time.perf_counter() - started
    return result


def _build_to_url(
    recipe: Recipe,
    url: str,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    try:
        from cz import publish as publishing
    except ImportError:
        raise BuildError(
            f"cannot build to {url}: publishing to URLs needs cz.publish, which this "
            "installation does not have; build to a local path and upload it"
        ) from None
    base = Path(options.work_dir or ".").expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", url.rstrip("/").rsplit("/", 1)[-1]) or "store.zarr"
    local = base / f".cz-publish-{uuid.uuid4().hex[:10]}" / name
    target = _Target.prepare(local, options)
    try:
        result = _build_local(recipe, target, plan, options, progress, started)
        target.commit()
    except BaseException:
        target.abort()
        shutil.rmtree(local.parent, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(target.spill_root, ignore_errors=True)
    objects = [0]

    def uploaded(_obj: Any) -> None:
        objects[0] += 1
        progress.advance("publish", 1.0)

    progress.start("publish", result.objects, url)
    try:
        publishing.publish(local, url, on_uploaded=uploaded)
    except CzError as exc:
        raise BuildError(
            f"the store was built at {local} but publishing it to {url} failed: {exc}; "
            f"publish it with `cz publish {local} {url}`"
        ) from None
    progress.finish("publish")
    shutil.rmtree(local.parent, ignore_errors=True)
    result.store = str(local)
    result.published = url
    result.seconds = time.perf_counter() - started
    return result


def _build_local(
    recipe: Recipe,
    target: _Target,
    plan: Plan | None,
    options: BuildOptions,
    progress: Progress,
    started: float,
) -> BuildResult:
    import chronozarr

    executor = _Executor(options)  # first: an unreachable cluster fails before any search
    try:
        if plan is None:
            progress.start("plan", None, "resolving items")
            plan = plan_recipe(recipe, out=str(target.final))
            progress.finish("plan")
        for warning in plan.warnings:
            if not warning.startswith("store.path is not set"):
                progress.note(warning)
        ctx = _context(recipe, plan, options)
        spill = Spill(target.spill_root)
        stats = _run_composites(plan, recipe, ctx, spill, executor, progress)
    finally:
        executor.close()
    grid = plan.grid
    n_months = len(plan.months)
    planes = _spill_planes(spill, recipe, plan, options, progress, max_age=_max_age(recipe))
    store = recipe.store
    progress.start("cells", grid.cells, f"{grid.cells} cells x {n_months} months")
    write_start = time.perf_counter()
    try:
        chronozarr.encode(
            _View(planes, "data"),
            target.staging,
            times=[m.time for m in plan.months],
            bands=store_bands(recipe),
            crs=grid.crs,
            transform=grid.transform,
            nodata=store.effective_nodata,
            mask=_View(planes, "mask"),
            coverage=_View(planes, "coverage"),
            encoding=store.encoding,
            anchor_interval=store.anchor_interval,
            chunk_size=store.chunk_size,
            shard=store.shard,
            shard_time=store.shard_time,
            codec=store.codec.name,
            codec_options=_codec_options(recipe),
            provenance=_provenance(recipe, stats.skipped),
            workers=options.threads(),
        )
    except chronozarr.ChronozarrError as exc:
        raise BuildError(f"writing the store failed: {exc}") from exc
    documents = [_month_document(m, stats.skipped) for m in plan.months]
    write_provenance_items(target.staging, documents, first=0, update_root=True)
    progress.finish("pyramid")
    write_seconds = time.perf_counter() - write_start
    valid, filled = planes.fractions()
    size, count = _store_size(target.staging)
    encoding = chronozarr.open_store(target.staging).attrs.temporal.encoding
    return BuildResult(
        action="build",
        store=str(target.final),
        published=None,
        months=[m.month for m in plan.months],
        empty_months=[m.month for m in plan.months if not m.items],
        bands=[b.name for b in recipe.bands],
        shape=list(grid.shape),
        levels=len(grid.levels),
        cells=grid.cells,
        items_read=len(set().union(*stats.items_read.values())) if stats.items_read else 0,
        observations=sum(stats.observations.values()),
        skipped=stats.skipped,
        encoding=encoding,
        bytes=size,
        objects=count,
        seconds=time.perf_counter() - started,
        composite_seconds=stats.seconds,
        write_seconds=write_seconds,
        valid_fraction=valid,
        gap_filled_fraction=filled,
        warnings=list(plan.warnings),
    )


# --------------------------------------------------------------------------------------------
# append


_MONTH = re.compile(r"^\d{4}-(0[1-9]|1[0-2])$")


def parse_months(text: str) -> list[str]:
    """``2026-10`` or ``2026-10..2026-12`` -> the months, in order. Raises ValueError."""
    parts = [p.strip() for p in text.split("..")]
    if len(parts) not in (1, 2) or not all(_MONTH.match(p) for p in parts):
        raise ValueError(f"expected a month YYYY-MM or a range YYYY-MM..YYYY-MM, got {text!r}")
    months = month_range(parts[0], parts[-1])
    if not months:
        raise ValueError(f"the range {text!r} is empty: {parts[-1]} is before {parts[0]}")
    return months


def _store_month(iso: str) -> str:
    return iso[:7]


def _next_month(month: str) -> str:
    year, mon = (int(p) for p in month.split("-"))
    return f"{year + (mon == 12):04d}-{mon % 12 + 1:02d}"


def _compare_recipe(recipe: Recipe, reader: Any, grid: GridPlan) -> list[str]:
    """Where the recipe differs from the store's grid, bands and store options (empty: fits)."""
    from chronozarr.metadata import codec_chain

    diffs: list[str] = []
    attrs = reader.attrs
    lv0 = reader.levels[0]
    if attrs.crs != grid.crs:
        diffs.append(f"grid CRS: recipe {grid.crs}, store {attrs.crs}")
    if [round(v, 9) for v in lv0.transform] != [round(float(v), 9) for v in grid.transform]:
        diffs.append(f"grid transform: recipe {list(grid.transform)}, store {list(lv0.transform)}")
    if list(lv0.shape[-2:]) != list(grid.shape):
        diffs.append(f"grid shape: recipe {list(grid.shape)}, store {list(lv0.shape[-2:])}")
    if reader.chunk_size(0) != recipe.store.chunk_size:
        diffs.append(
            f"store.chunk_size: recipe {recipe.store.chunk_size}, store {reader.chunk_size(0)}"
        )
    want = store_bands(recipe)
    have = [b.to_json() for b in attrs.bands]
    if [b["name"] for b in want] != [b.get("name") for b in have]:
        diffs.append(
            f"bands: recipe {[b['name'] for b in want]}, store {[b.get('name') for b in have]}"
        )
    else:
        for w, h in zip(want, have, strict=True):
            for key in ("scale", "offset", "common_name", "units"):
                a, b = w.get(key), h.get(key)
                if isinstance(a, float) or isinstance(b, float):
                    same = a is not None and b is not None and math.isclose(a, b, rel_tol=1e-12)
                else:
                    same = a == b
                if not same:
                    diffs.append(f"bands[{w['name']}].{key}: recipe {a!r}, store {b!r}")
    if reader.dtype.name != recipe.store.dtype:
        diffs.append(f"store.dtype: recipe {recipe.store.dtype}, store {reader.dtype.name}")
    if attrs.nodata != recipe.store.effective_nodata:
        diffs.append(f"store.nodata: recipe {recipe.store.effective_nodata}, store {attrs.nodata}")
    enc = attrs.temporal.encoding
    if recipe.store.encoding != "auto" and recipe.store.encoding != enc:
        diffs.append(f"store.encoding: recipe {recipe.store.encoding}, store {enc}")
    if enc == "star-delta" and attrs.temporal.anchor_interval != recipe.store.anchor_interval:
        diffs.append(
            f"store.anchor_interval: recipe {recipe.store.anchor_interval}, "
            f"store {attrs.temporal.anchor_interval}"
        )
    info = reader.array(0).info
    if bool(info.sharded) != bool(recipe.store.shard):
        diffs.append(f"store.shard: recipe {recipe.store.shard}, store {bool(info.sharded)}")
    elif (
        info.sharded
        and recipe.store.shard_time is not None
        and info.shard_time != recipe.store.shard_time
    ):
        diffs.append(f"store.shard_time: recipe {recipe.store.shard_time}, store {info.shard_time}")
    try:
        want_comp = codec_chain(recipe.store.codec.name, _codec_options(recipe), reader.dtype.name)[
            1
        ]
    except ValueError as exc:  # pragma: no cover - the recipe model checks levels
        diffs.append(f"store.codec: {exc}")
    else:
        have_comp = [c for c in info.codecs if c.get("name") != "bytes"]
        if not have_comp or have_comp[-1] != want_comp:
            diffs.append(
                f"store.codec: recipe {want_comp}, store {have_comp[-1] if have_comp else None}"
            )
    if not reader.has_mask or not reader.has_coverage:
        diffs.append("the store has no mask/coverage (cz build always writes both)")
    for key, value, recorded in provenance.fingerprint_differences(
        attrs.provenance, _recipe_fingerprint(recipe)
    ):
        diffs.append(f"recipe {key}: recipe {value!r}, store built with {recorded!r}")
    return diffs


def append_months(
    recipe: Recipe,
    months: Sequence[str],
    *,
    store: str | None = None,
    options: BuildOptions | None = None,
    progress: Progress | None = None,
) -> BuildResult:
    """Composite ``months`` with ``recipe`` and append them to the local store (spec 14).

    Refuses (:class:`AppendRefusedError`, nothing written) months already in the store, before
    its last month or leaving a gap after it, and a recipe whose grid, bands or store options
    differ from the store's. Gap-fill reads the months before the first new one from the store.
    """
    import chronozarr

    options = options or BuildOptions()
    progress = progress or Progress()
    started = time.perf_counter()
    where = store if store is not None else recipe.store.path
    if where is None:
        raise BuildError("no store: give --store or set store.path in the recipe")
    if _is_url(where):
        raise AppendRefusedError(
            f"append works on a local copy of the store, not on {where}: append locally, "
            "validate, then `cz publish` (spec 14)"
        )
    path = _local_path(where)
    try:
        reader = chronozarr.open_store(path)
    except chronozarr.ChronozarrError as exc:
        raise AppendRefusedError(f"cannot open the store at {path}: {exc}") from None
    months = list(months)
    have = [_store_month(t) for t in reader.attrs.times]
    inside = [m for m in months if m in set(have)]
    if inside:
        raise AppendRefusedError(
            f"month(s) {', '.join(inside)} are already in the store ({have[0]}..{have[-1]}); "
            "append only adds months after the last one"
        )
    if months[0] <= have[-1]:
        raise AppendRefusedError(
            f"{months[0]} is before the store's last month {have[-1]}; append only adds months "
            "after it"
        )
    expected = _next_month(have[-1])
    if months[0] != expected:
        raise AppendRefusedError(
            f"the store ends at {have[-1]}: the next month is {expected}, not {months[0]} "
            f"(a monthly store has every month; append {expected}..{months[-1]})"
        )
    sub = recipe.model_copy(update={"time": TimeSpec(start=months[0], end=months[-1])})
    progress.start("plan", None, "resolving items")
    plan = plan_recipe(sub, out=str(path))
    progress.finish("plan")
    diffs = _compare_recipe(recipe, reader, plan.grid)
    if diffs:
        raise AppendRefusedError(
            f"the recipe does not fit the store at {path}: " + "; ".join(diffs)
        )
    for warning in plan.warnings:
        if not warning.startswith("store.path is not set"):
            progress.note(warning)
    grid = plan.grid
    n_old = reader.n_time
    ctx = _context(recipe, plan, options)
    tag = uuid.uuid4().hex[:10]
    work = Path(options.work_dir).expanduser().resolve() if options.work_dir else path.parent
    spill = Spill(work / f".{path.name}.composites-{tag}")
    try:
        executor = _Executor(options)
        try:
            stats = _run_composites(plan, recipe, ctx, spill, executor, progress)
        finally:
            executor.close()
        max_age = _max_age(recipe)
        history_lock = threading.Lock()

        def history(t: int, row: int, col: int) -> tuple[np.ndarray, np.ndarray] | None:
            index = n_old + t
            if index < 0:
                return None
            with history_lock:  # one reader, shared by the writer's threads
                values = reader.read_cell(index, row, col, 0)
                coverage = reader.plane_cell("coverage", index, row, col, 0)
            return np.asarray(values), np.asarray(coverage, dtype=np.uint8)

        n_new = len(plan.months)
        planes = _spill_planes(
            spill, recipe, plan, options, progress, max_age=max_age, history=history
        )
        documents = [_month_document(m, stats.skipped) for m in plan.months]
        write_start = time.perf_counter()
        # provenance first: the array may run ahead of the time axis, never behind it
        write_provenance_items(path, documents, first=n_old, update_root=True)
        if stats.skipped:
            provenance.record_skipped_items(path, stats.skipped)
        progress.start("cells", grid.cells, f"{grid.cells} cells x {n_new} months")
        try:
            chronozarr.append(
                path,
                _View(planes, "data"),
                times=[m.time for m in plan.months],
                mask=_View(planes, "mask"),
                coverage=_View(planes, "coverage"),
                bands=store_bands(recipe),
                crs=grid.crs,
                transform=grid.transform,
                nodata=recipe.store.effective_nodata,
                workers=options.threads(),
            )
        except chronozarr.AppendError as exc:
            raise AppendRefusedError(f"chronozarr.append refused: {exc}") from exc
        except chronozarr.ChronozarrError as exc:
            raise BuildError(f"appending to {path} failed: {exc}") from exc
        progress.finish("pyramid")
        valid, filled = planes.fractions()
    finally:
        spill.remove()
    size, count = _store_size(path)
    encoding = chronozarr.open_store(path).attrs.temporal.encoding
    return BuildResult(
        action="append",
        store=str(path),
        published=None,
        months=[m.month for m in plan.months],
        empty_months=[m.month for m in plan.months if not m.items],
        bands=[b.name for b in recipe.bands],
        shape=list(grid.shape),
        levels=len(grid.levels),
        cells=grid.cells,
        items_read=len(set().union(*stats.items_read.values())) if stats.items_read else 0,
        observations=sum(stats.observations.values()),
        skipped=stats.skipped,
        encoding=encoding,
        bytes=size,
        objects=count,
        seconds=time.perf_counter() - started,
        composite_seconds=stats.seconds,
        write_seconds=time.perf_counter() - write_start,
        valid_fraction=valid,
        gap_filled_fraction=filled,
        warnings=list(plan.warnings),
    )

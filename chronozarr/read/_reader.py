"""The reader (spec 10): open a store, reconstruct any timestep with at most two chunk reads.

``open_store(path_or_url)`` follows spec 10 step by step: one GET of the root zarr.json (with the
consolidated metadata when present, per-array zarr.json otherwise), version and encoding checks,
mirrors as the primary source, then per cell-timestep one chunk read (none, anchors) or two (a
delta and its recorded anchor), modular reconstruction in the stored dtype, shard indexes read
with bounded ranges from shard_bytes and cached, missing objects decoded as fill.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Mapping
from typing import Any

import numpy as np

from chronozarr._optional import require
from chronozarr.errors import (
    CorruptStoreError,
    NotAChronozarrStoreError,
    StoreNotFoundError,
)
from chronozarr.format import (
    ArrayInfo,
    Band,
    ChunkCodec,
    CRSInfo,
    LevelInfo,
    RootAttrs,
    apply_residual,
    check_level_mirror,
    check_names,
    check_nodata,
    load_json,
    parse_crs,
    parse_time,
    pixel_centres,
    store_names,
    validity,
)
from chronozarr.io import LRU, Store, open_store_bytes
from chronozarr.read._arrays import ArrayReader
from chronozarr.read._history import (
    DEFAULT_REQUESTS,
    PixelSeries,
    Window,
    fewer_objects,
    history_array,
    read_window,
)

__all__ = ["ArrayReader", "Reader", "open_store"]


class Reader:
    """An open chronozarr store. Obtain with :func:`open_store`."""

    def __init__(self, store: Store, root: Mapping[str, Any], *, cache_bytes: int = 256 << 20):
        self.store = store
        attributes = root.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            raise CorruptStoreError(f"{store.url}/zarr.json: attributes must be an object")
        if "chronozarr" not in attributes:
            raise NotAChronozarrStoreError(
                f"{store.url}/zarr.json: a Zarr group without the 'chronozarr' attribute"
            )
        self.attrs = RootAttrs.from_json(attributes["chronozarr"])
        self.multiscales = attributes.get("multiscales")
        # names become paths and URLs: refuse any that could leave the store (decision 0013)
        check_names(store_names(attributes["chronozarr"], self.multiscales))
        consolidated = root.get("consolidated_metadata") or {}
        meta = consolidated.get("metadata") if isinstance(consolidated, Mapping) else None
        self._consolidated: Mapping[str, Any] = meta if isinstance(meta, Mapping) else {}
        self._index_cache: LRU[Any, Any] = LRU(64 << 20)
        self._anchor_cache: LRU[tuple[int, int, int, int], np.ndarray] = LRU(cache_bytes)
        self._arrays: dict[tuple[int, str], ArrayReader] = {}
        self._history_arrays: dict[int, ArrayReader] = {}  # the companion's (C25)
        self._history_cache: LRU[tuple[int, int, int, int], np.ndarray] = LRU(32 << 20)
        self._lock = threading.Lock()
        self.levels: tuple[LevelInfo, ...] = self._enumerate_levels()
        # spec 10.2: read every level's data array metadata now, failing on unsupported types.
        for k in range(len(self.levels)):
            self.array(k)
        check_nodata(self.attrs.nodata, self.array(0).info.dtype)  # before any comparison

    # -- metadata --------------------------------------------------------------------------------

    def document(self, key: str) -> Mapping[str, Any] | None:
        """A child's zarr.json as the store's root describes it (consolidated metadata first,
        then one GET, spec 3.1), or None when there is none: what a writer of this store reads
        (append keeps the old documents and grows them)."""
        return self._doc(key)

    def _doc(self, key: str) -> Mapping[str, Any] | None:
        """A child's zarr.json: consolidated metadata first, then one GET (spec 3.1)."""
        if key in self._consolidated:
            entry: Mapping[str, Any] = self._consolidated[key]
            return entry
        raw = self.store.get(f"{key}/zarr.json")
        if raw is None:
            return None
        doc: Mapping[str, Any] = load_json(raw, f"{self.store.url}/{key}/zarr.json")
        return doc

    def _enumerate_levels(self) -> tuple[LevelInfo, ...]:
        """spec 10.2: from chronozarr.levels, else multiscales paths plus level zarr.json."""
        if self.attrs.levels is not None:
            return self.attrs.levels
        try:
            paths = [d["path"] for d in self.multiscales[0]["datasets"]]  # type: ignore[index]
        except (TypeError, KeyError, IndexError) as exc:  # no usable multiscales: no levels from it
            raise CorruptStoreError(
                f"{self.store.url}/zarr.json: neither chronozarr.levels nor multiscales[0].datasets"
            ) from exc
        levels = []
        for path in paths:
            group = self._doc(str(path))
            if group is None:
                raise CorruptStoreError(f"{self.store.url}/{path}/zarr.json is missing")
            ga = group.get("attributes", {})
            arr = self._doc(f"{path}/{self.attrs.variable}")
            if arr is None:
                raise CorruptStoreError(
                    f"{self.store.url}/{path}/{self.attrs.variable}/zarr.json is missing"
                )
            info = ArrayInfo.from_json(arr, f"{path}/{self.attrs.variable}")
            cs = info.cs
            shape = info.shape
            levels.append(
                LevelInfo(
                    path=str(path),
                    resolution=float(ga.get("resolution", float("nan"))),
                    transform=tuple(float(v) for v in ga.get("transform", (float("nan"),) * 6)),
                    shape=shape,
                    grid=(math.ceil(shape[2] / cs), math.ceil(shape[3] / cs)),
                )
            )
        return tuple(levels)

    def array(self, level: int, variable: str | None = None) -> ArrayReader:
        """The (cached, one per level and variable) raw chunk reader of an array (spec 7.2)."""
        name = variable or self.attrs.variable
        key = (level, name)
        with self._lock:
            if key in self._arrays:
                return self._arrays[key]
        path = f"{self.levels[level].path}/{name}"
        doc = self._doc(path)
        if doc is None:
            raise CorruptStoreError(f"{self.store.url}/{path}/zarr.json is missing")
        planes = (self.attrs.mask_variable, self.attrs.coverage_variable)
        if name != self.attrs.variable and name in planes:
            info = ArrayInfo.from_json(doc, path, allowed_dtypes=("uint8",))  # spec 2.4, 2.5
        else:
            info = ArrayInfo.from_json(doc, path)
        shard_bytes = None
        if name == self.attrs.variable and self.attrs.shard_bytes:
            shard_bytes = self.attrs.shard_bytes.get(self.levels[level].path)
        if name == self.attrs.variable:  # spec 3.7: the mirror must describe this array
            check_level_mirror(self.levels[level], info, self.n_time)
        reader = ArrayReader(self.store, path, info, shard_bytes, self._index_cache)
        with self._lock:
            self._arrays.setdefault(key, reader)
            return self._arrays[key]

    @property
    def times(self) -> np.ndarray:
        """Timestamps as numpy datetime64[ms] (from the chronozarr.times mirror, spec 3.5)."""
        ms = np.empty(len(self.attrs.times), dtype=np.int64)
        for i, text in enumerate(self.attrs.times):
            try:
                ms[i] = parse_time(text)
            except (TypeError, ValueError, OverflowError) as exc:  # not a time numpy can hold
                raise CorruptStoreError(
                    f"{self.store.url}/zarr.json: chronozarr.times[{i}] = {text[:40]!r} is not an"
                    f" ISO-8601 time ({exc})"
                ) from exc
        return ms.astype("datetime64[ms]")

    @property
    def crs(self) -> CRSInfo | None:
        """The store's CRS: ``text`` (chronozarr.crs), ``epsg``, ``wkt2`` and ``projjson`` as the
        level-0 data array carries them (proj:code, proj:wkt2, proj:projjson; docs/spec.md C16)."""
        doc = self._doc(f"{self.levels[0].path}/{self.attrs.variable}") or {}
        attributes = doc.get("attributes") if isinstance(doc, Mapping) else None
        return parse_crs(self.attrs.crs, attributes if isinstance(attributes, Mapping) else None)

    @property
    def bands(self) -> tuple[Band, ...]:
        return self.attrs.bands

    @property
    def band_names(self) -> tuple[str, ...]:
        return tuple(b.name for b in self.attrs.bands)

    @property
    def encoding(self) -> str:
        return self.attrs.temporal.encoding

    @property
    def nodata(self) -> float | int | None:
        return self.attrs.nodata

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.array(0).info.dtype)

    @property
    def n_time(self) -> int:
        return len(self.attrs.times)

    @property
    def has_mask(self) -> bool:
        return self.attrs.mask_variable is not None

    @property
    def has_coverage(self) -> bool:
        return self.attrs.coverage_variable is not None

    def chunk_size(self, level: int = 0) -> int:
        """cs from the data array's spatial inner chunk size (spec 2.1)."""
        return self.array(level).info.cs

    def level_for(self, gsd: float) -> int:
        """The largest level whose resolution does not exceed ``gsd``; 0 if none (spec 10.3)."""
        best = 0
        for k, lv in enumerate(self.levels):
            if lv.resolution <= gsd:
                best = k
        return best

    def volatility(self) -> np.ndarray | None:
        """The (grid_rows_0, grid_cols_0) float32 volatility array (spec 5), None if absent."""
        path = self.attrs.volatility_path
        if not path:
            return None
        doc = self._doc(path)
        if doc is None:
            return None
        info = ArrayInfo.from_json(doc, path, allowed_dtypes=("float32",))
        if len(info.shape) != 2 or len(info.chunk_shape) != 2:  # spec 5: (grid rows, grid cols)
            raise CorruptStoreError(
                f"{self.store.url}/{path}: the volatility array must be 2-d (the level-0 cell"
                f" grid), its shape is {list(info.shape)}"
            )
        return _read_2d(self.store, path, info)

    # -- data ------------------------------------------------------------------------------------

    def _check(self, t: int, row: int, col: int, level: int) -> tuple[int, int]:
        if not 0 <= level < len(self.levels):
            raise IndexError(f"level {level} out of range (store has {len(self.levels)} levels)")
        if not 0 <= t < self.n_time:
            raise IndexError(f"timestep {t} out of range (store has {self.n_time})")
        rows, cols = self.levels[level].grid
        if not (0 <= row < rows and 0 <= col < cols):
            raise IndexError(
                f"cell ({row}, {col}) out of range at level {level} (grid {rows} x {cols})"
            )
        return rows, cols

    def _trim(self, chunk: np.ndarray, row: int, col: int, level: int) -> np.ndarray:
        h, w = self.levels[level].shape[-2:]
        cs = chunk.shape[-1]
        return chunk[..., : min(cs, h - row * cs), : min(cs, w - col * cs)]

    def _anchor(self, arr: ArrayReader, a: int, row: int, col: int, level: int) -> np.ndarray:
        key = (level, a, row, col)
        chunk = self._anchor_cache.get(key)
        if chunk is None:
            chunk = arr.inner(a, row, col)[0]
            self._anchor_cache.put(key, chunk, chunk.nbytes)
        return chunk

    def read_chunk(self, t: int, row: int, col: int, level: int = 0) -> np.ndarray:
        """Reconstructed full (band, cs, cs) chunk of a cell (spec 10.4-10.5), untrimmed."""
        self._check(t, row, col, level)
        arr = self.array(level)
        ref = self.attrs.temporal.reference(t)
        if ref is None:
            if t in self.attrs.temporal._anchor_set:
                return self._anchor(arr, t, row, col, level).copy()
            return np.require(arr.inner(t, row, col)[0], requirements="W")  # caller may edit it
        anchor = self._anchor(arr, ref, row, col, level)
        return apply_residual(anchor, arr.inner(t, row, col)[0])

    def read_cell(self, t: int, row: int, col: int, level: int = 0) -> np.ndarray:
        """(band, h, w) of cell (row, col) at timestep t, trimmed to the array shape."""
        return self._trim(self.read_chunk(t, row, col, level), row, col, level)

    def read(self, t: int, level: int = 0) -> np.ndarray:
        """(band, H, W) of timestep t at a level: exact stored-dtype values."""
        lv = self.levels[level]
        rows, cols = lv.grid
        _, nb, h, w = lv.shape
        cs = self.chunk_size(level)
        out = np.empty((nb, h, w), dtype=self.dtype)
        for r in range(rows):
            for c in range(cols):
                out[:, r * cs : (r + 1) * cs, c * cs : (c + 1) * cs] = self.read_cell(
                    t, r, c, level
                )
        return out

    def _plane(self, variable: str | None, t: int, level: int) -> np.ndarray | None:
        if variable is None:
            return None
        arr = self.array(level, variable)
        lv = self.levels[level]
        rows, cols = lv.grid
        h, w = lv.shape[-2:]
        cs = arr.info.cs
        out = np.empty((h, w), dtype=np.uint8)
        for r in range(rows):
            for c in range(cols):
                chunk = arr.inner(t, r, c)[0]
                out[r * cs : (r + 1) * cs, c * cs : (c + 1) * cs] = chunk[
                    : min(cs, h - r * cs), : min(cs, w - c * cs)
                ]
        return out

    def plane_cell(self, variable: str, t: int, row: int, col: int, level: int = 0) -> np.ndarray:
        """(h, w) of a mask or coverage cell, trimmed."""
        self._check(t, row, col, level)
        return self._trim(self.array(level, variable).inner(t, row, col)[0], row, col, level)

    def read_mask(self, t: int, level: int = 0) -> np.ndarray | None:
        """(H, W) uint8 mask of timestep t, or None when the store has no mask (spec 2.4)."""
        self._check(t, 0, 0, level)
        return self._plane(self.attrs.mask_variable, t, level)

    def read_coverage(self, t: int, level: int = 0) -> np.ndarray | None:
        """(H, W) uint8 coverage of timestep t, or None when the store has none (spec 2.5)."""
        self._check(t, 0, 0, level)
        return self._plane(self.attrs.coverage_variable, t, level)

    def valid_bands(self, t: int, level: int = 0) -> np.ndarray:
        """(band, H, W) validity per spec 2.3: mask when present, else per-band value != nodata."""
        values = self.read(t, level)
        return np.ascontiguousarray(validity(values, self.nodata, self.read_mask(t, level)))

    def valid(self, t: int, level: int = 0) -> np.ndarray:
        """(H, W) validity (spec 2.3). With a mask: the mask. Without: valid where any band is
        valid (a pixel is missing when every band holds nodata). Per band: ``valid_bands``."""
        mask = self.read_mask(t, level)
        if mask is not None:
            return mask.astype(bool)
        return np.asarray(self.valid_bands(t, level).any(axis=0))

    def physical(self, values: np.ndarray, valid: np.ndarray | None = None) -> np.ndarray:
        """stored * scale + offset per band (spec 3.6) as float64; invalid pixels become NaN."""
        scale = np.array([b.effective_scale for b in self.bands])[:, None, None]
        offset = np.array([b.effective_offset for b in self.bands])[:, None, None]
        out: np.ndarray = values.astype(np.float64) * scale + offset
        if valid is not None:
            out = np.where(valid, out, np.nan)
        return out

    # -- histories (docs/spec.md C25; decision 0048) -------------------------------------------

    def has_history(self, level: int = 0) -> bool:
        """Whether ``level`` carries the time-series companion (checked against the level)."""
        return history_array(self, level) is not None

    def read_history(
        self,
        ts: range,
        ys: range,
        xs: range,
        level: int = 0,
        *,
        use_history: bool | None = None,
        max_requests: int = DEFAULT_REQUESTS,
    ) -> Window:
        """Stored values (time, band, h, w), mask and coverage (time, h, w) of a window over
        timesteps ``ts``: from the companion when the level carries one and it needs fewer
        objects, else from the chunks, ``max_requests`` at a time (anchors first). ``use_history``
        True insists on the companion where present, False never reads it."""
        if not 0 <= level < len(self.levels):
            raise IndexError(f"level {level} out of range (store has {len(self.levels)} levels)")
        return read_window(
            self, level, ts, ys, xs, use_history=use_history, max_requests=max_requests
        )

    def prefers_history(self, ts: range, ys: range, xs: range, level: int = 0) -> bool:
        """Whether :meth:`read_history` reads this window from the companion: the level carries
        one and it covers the window with fewer objects than the chunks (C25)."""
        arr = history_array(self, level)
        return arr is not None and fewer_objects(self, level, arr, ts, ys, xs)

    def pixel_at(self, x: float, y: float, level: int = 0) -> tuple[int, int] | None:
        """The (row, col) of the level's pixel holding projected (x, y), None outside (3.3)."""
        lv = self.levels[level]
        a, _b, c, _d, e, f = lv.transform
        col, row = math.floor((x - c) / a), math.floor((y - f) / e)
        if 0 <= row < lv.shape[2] and 0 <= col < lv.shape[3]:
            return row, col
        return None

    def pixel_series(
        self,
        row: int,
        col: int,
        level: int = 0,
        *,
        use_history: bool | None = None,
        max_requests: int = DEFAULT_REQUESTS,
    ) -> PixelSeries:
        """Every timestep of pixel (row, col) of a level: the companion's few objects when the
        level carries it, else each timestep's chunks in parallel (spec 10.4)."""
        if not 0 <= level < len(self.levels):
            raise IndexError(f"level {level} out of range (store has {len(self.levels)} levels)")
        lv = self.levels[level]
        if not (0 <= row < lv.shape[2] and 0 <= col < lv.shape[3]):
            raise IndexError(
                f"pixel row {row}, col {col} is outside level {level} ({lv.shape[2]} x"
                f" {lv.shape[3]})"
            )
        win = self.read_history(
            range(self.n_time), range(row, row + 1), range(col, col + 1), level,
            use_history=use_history, max_requests=max_requests,
        )  # fmt: skip
        a, b, c, d, e, f = lv.transform
        return PixelSeries(
            level, row, col, a * (col + 0.5) + b * (row + 0.5) + c,
            d * (col + 0.5) + e * (row + 0.5) + f, self.times, self.bands,
            win.values[:, :, 0, 0], None if win.mask is None else win.mask[:, 0, 0],
            None if win.coverage is None else win.coverage[:, 0, 0], self.nodata, win.source,
        )  # fmt: skip

    def series(
        self,
        x: float,
        y: float,
        level: int = 0,
        *,
        use_history: bool | None = None,
        max_requests: int = DEFAULT_REQUESTS,
    ) -> PixelSeries:
        """The history of the pixel at projected (x, y) in the store's CRS (see
        :meth:`pixel_series`); IndexError outside the level."""
        if not 0 <= level < len(self.levels):
            raise IndexError(f"level {level} out of range (store has {len(self.levels)} levels)")
        where = self.pixel_at(x, y, level)
        if where is None:
            raise IndexError(f"({x}, {y}) is outside level {level}")
        return self.pixel_series(*where, level, use_history=use_history, max_requests=max_requests)

    def to_xarray(self, level: int = 0) -> Any:  # an xarray.DataArray (imported lazily)
        """A lazy (dask) DataArray of reconstructed values with coords time/band/y/x."""
        da = require("dask.array", "xarray", "Reader.to_xarray")
        xr = require("xarray", "xarray", "Reader.to_xarray")

        lv = self.levels[level]
        cs = self.chunk_size(level)
        backend = _LazyLevel(self, level)
        arr = da.from_array(
            backend,
            chunks=(1, lv.shape[1], cs, cs),
            meta=np.empty((0, 0, 0, 0), dtype=self.dtype),
            name=f"chronozarr-{self.store.url}-{level}-{self.n_time}",
            inline_array=True,
            asarray=False,
        )
        ys, xs = pixel_centres(lv.transform, lv.shape[2], lv.shape[3])
        attrs: dict[str, Any] = {"crs": self.attrs.crs, "transform": list(lv.transform)}
        if self.nodata is not None:
            attrs["nodata"] = self.nodata
        return xr.DataArray(
            arr,
            dims=("time", "band", "y", "x"),
            coords={"time": self.times, "band": list(self.band_names), "y": ys, "x": xs},
            name=self.attrs.variable,
            attrs=attrs,
        )


class _LazyLevel:
    """Array-like over one level for dask.array.from_array: __getitem__ reads the cells needed."""

    def __init__(self, reader: Reader, level: int):
        self.reader = reader
        self.level = level
        self.shape = tuple(reader.levels[level].shape)
        self.dtype = reader.dtype
        self.ndim = 4

    def __getitem__(self, key: Any) -> np.ndarray:
        if not isinstance(key, tuple):
            key = (key,)
        if any(k is Ellipsis for k in key) or not all(
            isinstance(k, slice | int | np.integer) for k in key
        ):
            out: np.ndarray = self[(slice(None),) * 4][key]  # rare fancy indexing: read all
            return out
        key = tuple(key) + (slice(None),) * (4 - len(key))
        drop = tuple(i for i, k in enumerate(key) if not isinstance(k, slice))
        slices = [
            k if isinstance(k, slice) else slice(int(k) % self.shape[i], int(k) % self.shape[i] + 1)
            for i, k in enumerate(key)
        ]
        out = self._read(*slices)
        return out.squeeze(axis=drop) if drop else out

    def _read(self, t_sl: slice, b_sl: slice, y_sl: slice, x_sl: slice) -> np.ndarray:
        ts = range(*t_sl.indices(self.shape[0]))
        y0, y1, _ = y_sl.indices(self.shape[2])
        x0, x1, _ = x_sl.indices(self.shape[3])
        cs = self.reader.chunk_size(self.level)
        out = np.empty((len(ts), self.shape[1], max(y1 - y0, 0), max(x1 - x0, 0)), dtype=self.dtype)
        for i, t in enumerate(ts):
            for r in range(y0 // cs, math.ceil(y1 / cs) if y1 > y0 else 0):
                for c in range(x0 // cs, math.ceil(x1 / cs) if x1 > x0 else 0):
                    chunk = self.reader.read_chunk(t, r, c, self.level)
                    ya, yb = max(y0, r * cs), min(y1, (r + 1) * cs)
                    xa, xb = max(x0, c * cs), min(x1, (c + 1) * cs)
                    out[i, :, ya - y0 : yb - y0, xa - x0 : xb - x0] = chunk[
                        :, ya - r * cs : yb - r * cs, xa - c * cs : xb - c * cs
                    ]
        return out[:, b_sl]


def _read_2d(store: Store, path: str, info: ArrayInfo) -> np.ndarray:
    """Read a single-chunk 2-d array (volatility) whole."""
    codec = ChunkCodec(info.codecs, info.dtype, info.chunk_shape)
    raw = store.get(f"{path}/c/0/0")
    if raw is None:
        return np.full(info.shape, info.typed_fill(), dtype=info.dtype)
    return codec.decode(raw)[: info.shape[0], : info.shape[1]]


def open_store(path_or_url: Any, **options: Any) -> Reader:
    """Open a chronozarr store at a local path, ``file://``, ``http(s)://`` or ``s3://`` URL.

    Raises ``StoreNotFoundError`` when there is no root zarr.json, ``NotAChronozarrStoreError``
    for a group without chronozarr attributes, ``UnsupportedError`` for an unsupported
    spec_version, encoding, data_type or codec, ``CorruptStoreError`` for malformed metadata.
    """
    cache_bytes = int(options.pop("cache_bytes", 256 << 20))
    store = (
        path_or_url
        if hasattr(path_or_url, "get_range")
        else open_store_bytes(path_or_url, **options)
    )
    raw = store.get("zarr.json")
    if raw is None:
        raise StoreNotFoundError(f"no chronozarr store at {store.url}: zarr.json not found")
    root = load_json(raw, f"{store.url}/zarr.json")
    if (
        not isinstance(root, dict)
        or root.get("zarr_format") != 3
        or root.get("node_type") != "group"
    ):
        raise NotAChronozarrStoreError(f"{store.url}/zarr.json: not a Zarr v3 group")
    try:
        return Reader(store, root, cache_bytes=cache_bytes)
    except (
        TypeError,
        AttributeError,
        ValueError,
        KeyError,
        IndexError,
        ArithmeticError,
    ) as exc:  # a safety net under the typed checks (below)
        # a safety net under the typed checks: malformed metadata never escapes as a bare error
        raise CorruptStoreError(f"{store.url}: malformed metadata ({exc!r})") from exc

"""The source files as the writer reads them: one window (a cell's timestep) at a time.

The writer (``chronozarr.encode``/``append``) asks for one cell's timesteps at a time, read from
the files with rasterio ``read(window=...)`` (through a warped VRT when resampling). So memory is
bounded by a few cells, whatever the number or size of the files. :class:`WindowSource` is the
writer's *cell source* (``chronozarr.write.is_cell_source``): nothing is planned per window
ahead of time (the dask graph used before held ~390 bytes per (timestep, cell): 4.4 GB for the
11 x 10^6 windows of three timesteps over a 10^6 x 10^6 px grid). Datasets stay open per thread in
a small LRU (GDAL handles are not thread-safe) and are closed at the end.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from cz.convert.errors import ConvertError
from cz.convert.plan import RasterPlan
from cz.convert.probe import GDAL_OPTIONS
from cz.convert.sources import gdal_path

__all__ = ["WindowReader", "WindowSource"]

OPEN_PER_THREAD = 16  # datasets kept open per thread


class WindowReader:
    """Reads windows of the plan's timesteps in the store's grid and dtype."""

    def __init__(self, plan: RasterPlan, on_block: Callable[[], None] | None = None) -> None:
        self.plan = plan
        self.on_block = on_block
        self._local = threading.local()
        self._all: list[Any] = []
        self._lock = threading.Lock()

    # -- datasets ---------------------------------------------------------------------------

    def _open(self, path: str, where: str, *, categorical: bool = False) -> Any:
        import rasterio
        from rasterio.enums import Resampling
        from rasterio.vrt import WarpedVRT

        cache: OrderedDict[str, Any] | None = getattr(self._local, "cache", None)
        if cache is None:
            cache = self._local.cache = OrderedDict()
        key = f"{path}|{categorical}"
        if key in cache:
            cache.move_to_end(key)
            return cache[key][-1]
        try:
            ds = rasterio.open(gdal_path(path))
            handles = [ds]
            if self.plan.resampling is not None:
                g = self.plan.grid
                from rasterio.crs import CRS
                from rasterio.transform import Affine

                method = "nearest" if categorical else self.plan.resampling
                vrt = WarpedVRT(
                    ds,
                    crs=CRS.from_user_input(g.crs),
                    transform=Affine(*g.transform),
                    width=g.width,
                    height=g.height,
                    resampling=Resampling[method],
                    src_nodata=ds.nodata,
                    nodata=ds.nodata,
                )
                handles.append(vrt)
        except Exception as exc:
            raise ConvertError(where, f"cannot open for reading ({exc})") from exc
        cache[key] = handles
        with self._lock:
            self._all.extend(handles)
        while len(cache) > OPEN_PER_THREAD:
            _, old = cache.popitem(last=False)
            for h in reversed(old):
                h.close()
        return handles[-1]

    def close(self) -> None:
        with self._lock:
            for h in reversed(self._all):
                with contextlib.suppress(Exception):  # closed by the LRU already
                    h.close()
            self._all.clear()

    # -- windows ----------------------------------------------------------------------------

    def data(self, t: int, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        """(band, y1 - y0, x1 - x0) of timestep ``t`` in the store's dtype and nodata."""
        import rasterio
        from rasterio.windows import Window

        plan = self.plan
        step = plan.steps[t]
        out = np.empty((len(step.bands), y1 - y0, x1 - x0), dtype=plan.dtype)
        window = Window(x0, y0, x1 - x0, y1 - y0)
        # one read per file: a pixel-interleaved tile is decoded once for all its bands
        by_file: dict[str, list[tuple[int, int]]] = {}
        for b, src in enumerate(step.bands):
            by_file.setdefault(src.file.path, []).append((b, src.band))
        with rasterio.Env(**GDAL_OPTIONS):
            for path, pairs in by_file.items():
                file = next(s.file for s in step.bands if s.file.path == path)
                where = file.where
                ds = self._open(path, where)
                try:
                    raw = ds.read([i for _, i in pairs], window=window)
                except Exception as exc:
                    raise ConvertError(where, f"reading window {window!r} failed ({exc})") from exc
                info = plan.infos[path]
                for (b, i), plane in zip(pairs, raw, strict=True):
                    rule = plan.rules[info.dtypes[i - 1]]
                    out[b] = rule.apply(plane, info.nodata, plan.nodata, f"{where} {_win(window)}")
            if plan.mask == "files":
                valid = self._mask_file(t, window)
                if plan.nodata is not None:
                    out[:, ~valid] = plan.nodata  # the toolkit writes nodata where mask is 0
        if self.on_block is not None:
            self.on_block()
        return out

    def _mask_file(self, t: int, window: Any) -> np.ndarray:
        m = self.plan.steps[t].mask
        assert m is not None
        ds = self._open(m.path, m.where, categorical=True)
        try:
            return np.asarray(ds.read(1, window=window)) != 0
        except Exception as exc:
            raise ConvertError(m.where, f"reading window {window!r} failed ({exc})") from exc

    def mask(self, t: int, y0: int, y1: int, x0: int, x1: int) -> np.ndarray:
        """(y, x) uint8 mask of timestep ``t``: from the mask file, or from nodata."""
        import rasterio
        from rasterio.windows import Window

        if self.plan.mask == "files":
            with rasterio.Env(**GDAL_OPTIONS):
                valid = self._mask_file(t, Window(x0, y0, x1 - x0, y1 - y0))
        else:
            values = self.data(t, y0, y1, x0, x1)
            valid = (values != self.plan.nodata).any(axis=0)
        return valid.astype(np.uint8)


def _win(window: Any) -> str:
    return f"(window x {window.col_off}..{window.col_off + window.width}, y {window.row_off}..{window.row_off + window.height})"


class WindowSource:
    """The writer's cell source over timesteps ``start .. stop`` of a plan: a cell's planes are
    read from the files when the writer asks for them (``open_cell``), nothing ahead."""

    ndim = 4
    has_coverage = False

    def __init__(self, reader: WindowReader, start: int = 0, stop: int | None = None) -> None:
        plan = reader.plan
        stop = len(plan.steps) if stop is None else stop
        self.reader, self.start = reader, start
        self.shape = (stop - start, len(plan.band_names), plan.grid.height, plan.grid.width)
        self.dtype = np.dtype(plan.dtype)
        self.has_mask = plan.mask is not None

    def open_cell(
        self, row: int, col: int, ys: slice, xs: slice, times: Any
    ) -> Callable[[int], tuple[np.ndarray, np.ndarray | None, None]]:
        reader, start, plan = self.reader, self.start, self.reader.plan
        window = (ys.start, ys.stop, xs.start, xs.stop)

        def planes(t: int) -> tuple[np.ndarray, np.ndarray | None, None]:
            values = reader.data(start + t, *window)
            if plan.mask is None:
                return values, None, None
            if plan.mask == "nodata":  # from the values just read, not a second read
                return values, (values != plan.nodata).any(axis=0).astype(np.uint8), None
            return values, reader.mask(start + t, *window), None

        return planes

"""``cz export``: a store's timesteps as Cloud-Optimized GeoTIFFs, one per timestep.

Each COG (GDAL's COG driver through rasterio, deflate-compressed, internal overviews) holds every
band of one timestep at one level, with the store's CRS, the level's transform, the store's
nodata and the band names as band descriptions. By default the values are the stored ones, in
the store's dtype, with each band's scale and offset set as GDAL band scale/offset (so
``gdalinfo`` and QGIS show physical values) and repeated in the tags; a store mask becomes the
COG's internal mask. ``--physical`` writes float32 physical values (stored x scale + offset,
invalid pixels NaN, nodata NaN). One timestep is in memory at a time.

File names are ``{variable}_{YYYY-MM-DD}.tif`` (``..._{YYYY-MM-DDTHHMMSS}.tif`` when times have a
time of day), so ``cz convert OUT_DIR`` reads the folder back with the default date rule.
"""

from __future__ import annotations

import os
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

import chronozarr
from cz.build import Progress
from cz.convert.errors import ConvertError

__all__ = ["ExportResult", "export", "select_times"]

_PERIOD = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2})(?:[T ](.*))?)?)?$")


def _period(text: str, end: bool) -> datetime:
    """The start (or the end) of ``YYYY``, ``YYYY-MM``, ``YYYY-MM-DD`` or a full ISO time."""
    m = _PERIOD.match(text.strip())
    if not m:
        raise ConvertError(
            "--times", f"expected YYYY, YYYY-MM, YYYY-MM-DD or ISO-8601, got {text!r}"
        )
    year, month, day, rest = m.groups()
    try:
        if rest:
            value = text.strip().replace(" ", "T")
            if value.endswith(("Z", "z")):
                value = value[:-1] + "+00:00"
            t = datetime.fromisoformat(value)
            return t.replace(tzinfo=UTC) if t.tzinfo is None else t.astimezone(UTC)
        y = int(year)
        if day:
            start = datetime(y, int(month), int(day), tzinfo=UTC)
            return start + timedelta(days=1) - timedelta(milliseconds=1) if end else start
        if month:
            start = datetime(y, int(month), 1, tzinfo=UTC)
            nxt = datetime(y + (int(month) == 12), int(month) % 12 + 1, 1, tzinfo=UTC)
            return nxt - timedelta(milliseconds=1) if end else start
        start = datetime(y, 1, 1, tzinfo=UTC)
        return datetime(y + 1, 1, 1, tzinfo=UTC) - timedelta(milliseconds=1) if end else start
    except ValueError as exc:
        raise ConvertError("--times", f"not a date: {text!r} ({exc})") from exc


def select_times(times: np.ndarray, spec: str | None) -> list[int]:
    """Indices of ``times`` (datetime64[ms]) within ``a..b`` (inclusive periods; either side
    may be left out), or equal to one period ``a``; every index when ``spec`` is None."""
    if spec is None:
        return list(range(len(times)))
    if ".." in spec:
        a, b = spec.split("..", 1)
    else:
        a = b = spec
    lo = _period(a, end=False) if a.strip() else None
    hi = _period(b, end=True) if b.strip() else None
    out = []
    for i, t in enumerate(times):
        when = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=int(t.astype(np.int64)))
        if (lo is None or when >= lo) and (hi is None or when <= hi):
            out.append(i)
    if not out:
        raise ConvertError("--times", f"no timestep of the store in {spec!r}")
    return out


@dataclass
class ExportResult:
    store: str
    out_dir: str
    level: int
    physical: bool
    files: list[str]
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "out_dir": self.out_dir,
            "level": self.level,
            "physical": self.physical,
            "files": self.files,
            "seconds": round(self.seconds, 3),
        }


def _name(variable: str, t: np.datetime64, with_time: bool) -> str:
    text = str(t.astype("datetime64[s]"))
    day, clock = text[:10], text[11:].replace(":", "")
    return f"{variable}_{day}T{clock}.tif" if with_time else f"{variable}_{day}.tif"


def export(
    store: str,
    out_dir: str,
    *,
    times: str | None = None,
    level: int = 0,
    physical: bool = False,
    overwrite: bool = False,
    progress: Progress | None = None,
) -> ExportResult:
    """Write the selected timesteps of ``store`` at ``level`` as COGs into ``out_dir``."""
    import time

    from rasterio.transform import Affine

    progress = progress or Progress()
    start = time.perf_counter()
    reader = _open_level(store, level)
    indices = select_times(reader.times, times)
    lv = reader.levels[level]
    _, n_band, height, width = lv.shape
    crs = _crs(reader, store)
    out = Path(out_dir).expanduser()
    names = _file_names(reader, indices, out, overwrite)
    out.mkdir(parents=True, exist_ok=True)
    dtype = "float32" if physical else reader.dtype.name
    profile = {
        "driver": "GTiff",
        "width": width,
        "height": height,
        "count": n_band,
        "dtype": dtype,
        "crs": crs,
        "transform": Affine(*lv.transform),
        "nodata": float("nan") if physical else reader.nodata,
    }
    progress.start("export", len(indices), f"{len(indices)} timestep(s) at level {level}")
    written: list[str] = []
    for i, name in zip(indices, names, strict=True):
        final = out / name
        # a name of this process's own: concurrent exports into one folder never share a part
        # file (each renames a complete file into place; the last rename wins, same content)
        part = out / f".{name}.{os.getpid()}-{uuid.uuid4().hex[:8]}.part"
        try:  # a failed or interrupted export leaves no part file behind
            _write_cog(reader, store, i, level, physical, profile, part)
            part.replace(final)
        finally:
            part.unlink(missing_ok=True)
        written.append(str(final))
        progress.advance("export")
    progress.finish("export")
    return ExportResult(store, str(out), level, physical, written, time.perf_counter() - start)


def _open_level(store: str, level: int) -> chronozarr.Reader:
    """The store's reader; a ConvertError when it cannot be read or has no such level."""
    try:
        reader = chronozarr.open_store(store)
    except chronozarr.ChronozarrError as exc:
        raise ConvertError(store, str(exc)) from exc
    if not 0 <= level < len(reader.levels):
        raise ConvertError(
            "--level", f"the store has levels 0..{len(reader.levels) - 1}, not {level}"
        )
    return reader


def _crs(reader: chronozarr.Reader, store: str) -> Any:
    """The store's CRS as rasterio's (None when the store has none)."""
    from rasterio.crs import CRS

    attrs = reader.attrs
    try:
        return CRS.from_user_input(attrs.crs) if attrs.crs else None
    except Exception as exc:
        raise ConvertError(
            store, f"the store's crs {str(attrs.crs)[:60]!r} is not one GDAL reads"
        ) from exc


def _file_names(
    reader: chronozarr.Reader, indices: list[int], out: Path, overwrite: bool
) -> list[str]:
    """A file name per timestep (with the time of day when any timestep has one); an existing
    file is refused unless ``overwrite``."""
    with_time = any(int(t.astype(np.int64)) % 86_400_000 for t in reader.times[indices])
    names = [_name(reader.attrs.variable, reader.times[i], with_time) for i in indices]
    if not overwrite:
        clash = [n for n in names if (out / n).exists()]
        if clash:
            raise ConvertError(str(out / clash[0]), "exists; give --overwrite to replace it")
    return names


def _write_cog(
    reader: chronozarr.Reader,
    store: str,
    i: int,
    level: int,
    physical: bool,
    profile: dict[str, Any],
    part: Path,
) -> None:
    """Timestep ``i`` as a COG at ``part``: band names, units, scale and offset (stored
    values), the mask, the time and where it comes from."""
    from rasterio.io import MemoryFile
    from rasterio.shutil import copy as rio_copy

    values = reader.read(i, level)
    mask = reader.read_mask(i, level)
    if physical:
        values = reader.physical(values, reader.valid_bands(i, level)).astype(np.float32)
    with MemoryFile() as mem, mem.open(**profile) as ds:
        ds.write(values)
        for b, band in enumerate(reader.bands, start=1):
            ds.set_band_description(b, band.name)
            if not physical:
                ds.update_tags(b, scale=band.effective_scale, offset=band.effective_offset)
            if band.units:
                ds.set_band_unit(b, band.units)
        if not physical:
            ds.scales = [b.effective_scale for b in reader.bands]
            ds.offsets = [b.effective_offset for b in reader.bands]
        if mask is not None and not physical:
            ds.write_mask(np.where(mask > 0, 255, 0).astype(np.uint8))
        ds.update_tags(
            time=str(reader.times[i]) + "Z",
            store=store,
            level=str(level),
            values="physical" if physical else "stored",
        )
        rio_copy(
            ds,
            str(part),
            driver="COG",
            compress="DEFLATE",
            predictor="2" if profile["dtype"] != "float32" else "3",
        )

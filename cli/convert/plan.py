"""From a raster source to a checked plan: which file gives which band of which timestep.

:func:`plan_rasters` runs every check of ``cz convert`` before a pixel is read, and raises a
:class:`~cz.convert.errors.ConvertError` naming the offending file on the first failure:
readable files; times unique (and so, sorted, strictly increasing); band names; one grid (or a
target grid to resample onto); dtypes the spec stores or an explicit ``--dtype``; one nodata;
scale and offset of each band the same in every file. The plan (``to_json``) is what
``cz convert --dry-run`` prints.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import numpy as np

from cz.convert.dtypes import DtypeRule, rule_for
from cz.convert.errors import ConvertError
from cz.convert.grid import RESAMPLING, Grid, one_grid, resampled_grid, same_crs
from cz.convert.probe import FileInfo, probe_file, probe_files
from cz.convert.sources import RasterFile, list_rasters, read_manifest

__all__ = ["BandSource", "ConvertOptions", "RasterPlan", "Step", "plan_rasters"]


@dataclass(frozen=True)
class ConvertOptions:
    """What the user asked for (``cz convert`` options), independent of the source kind."""

    date_pattern: str | None = None
    bands: tuple[str, ...] | None = None
    variable: str | None = None
    grid: str | None = None
    crs: str | None = None
    resolution: float | None = None
    resampling: str = "nearest"
    dtype: str | None = None
    nodata: float | None = None
    mask: str | None = None  # None, "nodata", or a folder/glob/manifest of mask files

    @property
    def resample(self) -> bool:
        return self.grid is not None or self.crs is not None or self.resolution is not None


@dataclass(frozen=True)
class BandSource:
    """Band ``band`` (1-based) of ``file`` gives one band of a timestep."""

    file: RasterFile
    band: int


@dataclass(frozen=True)
class Step:
    """One timestep: the source of each store band, in band order, and its mask file."""

    time: datetime
    bands: tuple[BandSource, ...]
    mask: RasterFile | None = None


@dataclass
class RasterPlan:
    """A checked conversion of raster files: everything the reader of windows needs."""

    source: str
    steps: list[Step]
    band_names: list[str]
    band_origin: str
    scales: list[float]
    offsets: list[float]
    units: list[str | None]
    infos: dict[str, FileInfo]
    rules: dict[str, DtypeRule]
    dtype: str
    nodata: float | int | None
    nodata_origin: str
    grid: Grid
    resampling: str | None
    mask: str | None
    checks: list[dict[str, str]] = field(default_factory=list)

    kind = "rasters"

    @property
    def files(self) -> list[str]:
        """Every distinct source file, in time order (recorded in the provenance)."""
        seen: dict[str, None] = {}
        for step in self.steps:
            for b in step.bands:
                seen.setdefault(b.file.path, None)
        return list(seen)

    @property
    def mask_files(self) -> list[str]:
        return [s.mask.path for s in self.steps if s.mask is not None]

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "timesteps": len(self.steps),
            "times": [s.time.strftime("%Y-%m-%dT%H:%M:%SZ") for s in self.steps],
            "files": len(self.files),
            "bands": [
                {"name": n, "scale": s, "offset": o, "units": u}
                for n, s, o, u in zip(
                    self.band_names, self.scales, self.offsets, self.units, strict=True
                )
            ],
            "band_names_from": self.band_origin,
            "dtype": self.dtype,
            "dtype_conversion": [r.text for r in self.rules.values() if r.converts],
            "nodata": self.nodata,
            "nodata_from": self.nodata_origin,
            "grid": self.grid.to_json(),
            "resampling": self.resampling,
            "mask": self.mask,
            "checks": self.checks,
        }


def _label(f: RasterFile) -> str:
    return f.where


def source_files(source: str, options: ConvertOptions) -> list[RasterFile]:
    """The rasters of a folder, glob, single raster or manifest (CSV/JSON)."""
    from pathlib import Path

    from cz.convert.sources import MANIFEST_SUFFIXES, RASTER_SUFFIXES, date_from_name, is_url
    from cz.convert.sources import compile_date_pattern as _pattern

    bands = list(options.bands) if options.bands else None
    suffix = Path(source.split("?", 1)[0]).suffix.lower()
    if suffix in MANIFEST_SUFFIXES and not is_url(source):
        return read_manifest(source)
    if suffix in RASTER_SUFFIXES and (is_url(source) or Path(source).is_file()):
        when = date_from_name(Path(source.split("?", 1)[0]).name, _pattern(options.date_pattern))
        if when is None:
            raise ConvertError(source, "no date in the file name; see --date-pattern")
        return [RasterFile(path=source, time=when)]
    if is_url(source):
        raise ConvertError(
            source,
            "a URL source is one raster or a local manifest listing URLs (a folder cannot be "
            "listed over http)",
        )
    return list_rasters(source, date_pattern=options.date_pattern, band_names=bands)


def _group(files: list[RasterFile], bands: Sequence[str] | None) -> tuple[list[Step], list[str]]:
    """Timesteps from dated files; band names when the files are one per band."""
    by_time: dict[datetime, list[RasterFile]] = {}
    for f in files:
        by_time.setdefault(f.time, []).append(f)
    per_band = any(f.band is not None for f in files)
    if per_band:
        missing = [f for f in files if f.band is None]
        if missing:
            raise ConvertError(_label(missing[0]), "has no band while other rows name theirs")
        names = list(bands) if bands else list(dict.fromkeys(f.band for f in files if f.band))
        steps = []
        for when, group in sorted(by_time.items()):
            got: dict[str, RasterFile] = {}
            for f in group:
                if f.band not in names:
                    raise ConvertError(_label(f), f"band {f.band!r} is not one of {names}")
                if f.band in got:
                    raise ConvertError(
                        _label(f),
                        f"duplicate: band {f.band} at {when:%Y-%m-%d %H:%M:%S} is also in "
                        f"{_label(got[f.band])}",
                    )
                got[f.band] = f
            absent = [n for n in names if n not in got]
            if absent:
                raise ConvertError(
                    _label(group[0]),
                    f"the timestep {when:%Y-%m-%d %H:%M:%S} lacks band(s) {absent}",
                )
            steps.append(Step(when, tuple(BandSource(got[n], 1) for n in names)))
        return steps, names
    steps = []
    for when, group in sorted(by_time.items()):
        if len(group) > 1:
            raise ConvertError(
                _label(group[1]),
                f"duplicate date {when:%Y-%m-%d %H:%M:%S}: also {_label(group[0])} (times must "
                "be unique; one file per band needs --bands naming them)",
            )
        steps.append(Step(when, (BandSource(group[0], 0),)))  # band index set after probing
    return steps, []


def _mask_steps(steps: list[Step], options: ConvertOptions) -> list[Step]:
    """Pair each timestep with its mask file (same time) when ``--mask`` names files."""
    assert options.mask is not None
    masks = source_files(options.mask, ConvertOptions(date_pattern=options.date_pattern))
    by_time: dict[datetime, RasterFile] = {}
    for m in masks:
        if m.time in by_time:
            raise ConvertError(_label(m), f"a second mask file for {m.time:%Y-%m-%d}")
        by_time[m.time] = m
    out = []
    for s in steps:
        if s.time not in by_time:
            raise ConvertError(
                "--mask",
                f"no mask file for the timestep {s.time:%Y-%m-%d %H:%M:%S} "
                f"({_label(s.bands[0].file)}) in {options.mask}",
            )
        out.append(Step(s.time, s.bands, by_time[s.time]))
    return out


def _bands(
    files: list[RasterFile], infos: dict[Any, Any], steps: list[Step], per_band_names: list[str] | None,
    options: ConvertOptions, checks: list[dict[str, str]],
) -> tuple[list[str], str, list[Step]]:  # fmt: skip
    """The band names and where they come from; a file holding several bands becomes a step of one source per band."""
    if per_band_names:
        names, band_origin = per_band_names, "manifest/file names"
        for f in files:
            if infos[f.path].count != 1:
                raise ConvertError(
                    _label(f),
                    f"holds {infos[f.path].count} bands; a file per band must hold one",
                )
    else:
        first = files[0]
        count = infos[first.path].count
        for f in files[1:]:
            if infos[f.path].count != count:
                raise ConvertError(
                    _label(f),
                    f"has {infos[f.path].count} band(s), {_label(first)} has {count}",
                )
        descs = infos[first.path].descriptions
        if options.bands:
            if len(options.bands) != count:
                raise ConvertError(
                    "--bands",
                    f"names {len(options.bands)} band(s), the files hold {count} ({_label(first)})",
                )
            names, band_origin = list(options.bands), "--bands"
        elif all(descs) and len(set(descs)) == count:
            names, band_origin = [str(d) for d in descs], "band descriptions"
        else:
            names, band_origin = [f"b{i + 1}" for i in range(count)], "default (b1, b2, ...)"
        steps = [
            Step(s.time, tuple(BandSource(s.bands[0].file, i + 1) for i in range(count)))
            for s in steps
        ]
    if len(set(names)) != len(names) or not all(names):
        raise ConvertError("--bands", f"band names must be unique and non-empty, got {names}")
    checks.append({"check": "band names", "result": f"{', '.join(names)} (from {band_origin})"})
    return names, band_origin, steps


def _scale_offset(
    names: list[str], steps: list[Step], infos: dict[Any, Any], checks: list[dict[str, str]]
) -> tuple[list[float], list[float], list[Any]]:
    """Scale, offset and units per band: the same in every file that gives the band."""
    scales, offsets, units = [], [], []
    for b in range(len(names)):
        ref = steps[0].bands[b]
        ri = infos[ref.file.path]
        scale, offset = ri.scales[ref.band - 1], ri.offsets[ref.band - 1]
        for s in steps[1:]:
            src = s.bands[b]
            si = infos[src.file.path]
            got = (si.scales[src.band - 1], si.offsets[src.band - 1])
            if not (math.isclose(got[0], scale) and math.isclose(got[1], offset)):
                raise ConvertError(
                    _label(src.file),
                    f"band {names[b]} has scale/offset {got}, {_label(ref.file)} has "
                    f"{(scale, offset)}: one band has one scale and offset in a store",
                )
        scales.append(scale)
        offsets.append(offset)
        units.append(ri.units[ref.band - 1])
    checks.append(
        {
            "check": "scale/offset",
            "result": ", ".join(
                f"{n} x{s:g} {o:+g}" for n, s, o in zip(names, scales, offsets, strict=True)
            ),
        }
    )
    return scales, offsets, units


def _grid(
    options: ConvertOptions,
    infos_list: list[Any],
    files: list[RasterFile],
    checks: list[dict[str, str]],
) -> tuple[Any, str | None]:
    """The store's grid: one grid every file is on, or the target grid of a resampling."""
    if options.resample:
        grid_info = probe_file(options.grid) if options.grid else None
        grid = resampled_grid(
            infos_list,
            [_label(f) for f in files],
            grid_file=grid_info,
            crs=options.crs,
            resolution=options.resolution,
        )
        resampling: str | None = options.resampling
        on_grid = all(
            same_crs(i.crs_wkt, infos_list[0].crs_wkt)
            and i.transform == grid.transform
            and i.shape == grid.shape
            for i in infos_list
        )
        checks.append(
            {
                "check": "grid",
                "result": f"resampled ({options.resampling}) onto {grid.crs[:60]} at "
                f"{grid.resolution:g}, {grid.height} x {grid.width} px"
                + (" (every file is already on it)" if on_grid else ""),
            }
        )
    else:
        grid = one_grid(infos_list, [_label(f) for f in files])
        resampling = None
        checks.append(
            {
                "check": "one grid",
                "result": f"{grid.crs[:60]}, {grid.resolution:g} per pixel, "
                f"{grid.height} x {grid.width} px, every file identical",
            }
        )
    return grid, resampling


def _dtypes(
    files: list[RasterFile],
    infos: dict[Any, Any],
    options: ConvertOptions,
    checks: list[dict[str, str]],
) -> tuple[dict[str, DtypeRule], str]:
    """The store's dtype and the rule that converts each source dtype to it."""
    rules: dict[str, DtypeRule] = {}
    src_dtypes: dict[str, str] = {}
    for f in files:
        info = infos[f.path]
        for d in set(info.dtypes):
            src_dtypes.setdefault(d, _label(f))
    if len(src_dtypes) > 1 and options.dtype is None:
        (d1, w1), (d2, w2) = list(src_dtypes.items())[:2]
        raise ConvertError(
            w2, f"is {d2}, {w1} is {d1}: a store has one dtype; choose it with --dtype"
        )
    for d, where in src_dtypes.items():
        rules[d] = rule_for(d, options.dtype, where)
    dtype = options.dtype or next(iter(src_dtypes))
    conv = [r.text for r in rules.values() if r.converts]
    checks.append(
        {"check": "dtype", "result": dtype + (f" (converted: {'; '.join(conv)})" if conv else "")}
    )
    return rules, dtype


def _nodata(
    files: list[RasterFile], infos: dict[Any, Any], options: ConvertOptions, dtype: str,
    checks: list[dict[str, str]],
) -> tuple[Any, str]:  # fmt: skip
    """nodata: from the files (all agree), or --nodata."""
    nodatas: dict[str, float | None] = {}
    for f in files:
        nodatas.setdefault(repr(infos[f.path].nodata), infos[f.path].nodata)
    if options.nodata is not None:
        nodata_value: float | None = options.nodata
        nodata_origin = "--nodata" + (
            f" (file nodata {', '.join(sorted(nodatas))} written as it)"
            if set(nodatas) - {"None", repr(options.nodata)}
            else ""
        )
    else:
        if len(nodatas) > 1:
            ref_nd = infos[files[0].path].nodata
            for f in files:
                if repr(infos[f.path].nodata) != repr(ref_nd):
                    raise ConvertError(
                        _label(f),
                        f"has nodata {infos[f.path].nodata}, {_label(files[0])} has {ref_nd}: "
                        "give the store's nodata with --nodata",
                    )
        nodata_value = next(iter(nodatas.values()))
        nodata_origin = "the files" if nodata_value is not None else "none declared by the files"
        if nodata_value is not None and math.isnan(nodata_value):
            raise ConvertError(
                _label(files[0]),
                "has nodata NaN, which is not a valid nodata (spec 2.3); give --nodata V "
                "(NaN pixels are then written as V)",
            )
    nodata = _store_nodata(nodata_value, dtype)
    checks.append({"check": "nodata", "result": f"{nodata} (from {nodata_origin})"})
    return nodata, nodata_origin


def _mask(
    steps: list[Step], options: ConvertOptions, nodata: Any, infos: dict[Any, Any],
    infos_list: list[Any], grid: Any, resampling: str | None, workers: int,
    checks: list[dict[str, str]],
) -> tuple[list[Step], str | None]:  # fmt: skip
    """The mask: none, from nodata, or mask files on the data's grid."""
    mask = None
    if options.mask == "nodata":
        if nodata is None:
            raise ConvertError("--mask", "nodata: the files declare no nodata; give --nodata")
        mask = "nodata"
        checks.append({"check": "mask", "result": "from nodata (valid where any band is valid)"})
    elif options.mask is not None:
        steps = _mask_steps(steps, options)
        mask_files = [s.mask for s in steps if s.mask is not None]
        mask_infos = probe_files(mask_files, workers=workers)
        for m, mi in zip(mask_files, mask_infos, strict=True):
            infos[m.path] = mi
            if mi.count < 1 or np.dtype(mi.dtypes[0]).kind not in "uib":
                raise ConvertError(_label(m), f"a mask file must hold integers, got {mi.dtypes}")
            if resampling is None and not (
                same_crs(mi.crs_wkt, infos_list[0].crs_wkt)
                and mi.shape == grid.shape
                and all(
                    math.isclose(a, b, abs_tol=1e-6 * abs(grid.resolution))
                    for a, b in zip(mi.transform, grid.transform, strict=True)
                )
            ):
                raise ConvertError(_label(m), "the mask file is not on the grid of the data")
        mask = "files"
        checks.append(
            {"check": "mask", "result": f"{len(mask_files)} mask file(s), nonzero = valid"}
        )
    return steps, mask


def plan_rasters(source: str, options: ConvertOptions, *, workers: int = 4) -> RasterPlan:
    """Every check of a raster conversion; the plan, or a ConvertError naming the file."""
    if options.resampling not in RESAMPLING:
        raise ConvertError("--resampling", f"expected one of {list(RESAMPLING)}")
    files = source_files(source, options)
    checks: list[dict[str, str]] = []
    steps, per_band_names = _group(files, options.bands)
    infos_list = probe_files(files, workers=workers)
    infos = {f.path: i for f, i in zip(files, infos_list, strict=True)}
    checks.append({"check": "files readable", "result": f"{len(infos)} file(s) opened"})
    checks.append(
        {
            "check": "times unique, increasing",
            "result": f"{len(steps)} timestep(s), {steps[0].time:%Y-%m-%d} .. "
            f"{steps[-1].time:%Y-%m-%d}",
        }
    )

    names, band_origin, steps = _bands(files, infos, steps, per_band_names, options, checks)
    scales, offsets, units = _scale_offset(names, steps, infos, checks)
    grid, resampling = _grid(options, infos_list, files, checks)
    rules, dtype = _dtypes(files, infos, options, checks)
    nodata, nodata_origin = _nodata(files, infos, options, dtype, checks)
    steps, mask = _mask(
        steps, options, nodata, infos, infos_list, grid, resampling, workers, checks
    )
    return RasterPlan(
        source=source,
        steps=steps,
        band_names=names,
        band_origin=band_origin,
        scales=scales,
        offsets=offsets,
        units=units,
        infos=infos,
        rules=rules,
        dtype=dtype,
        nodata=nodata,
        nodata_origin=nodata_origin,
        grid=grid,
        resampling=resampling,
        mask=mask,
        checks=checks,
    )


def _store_nodata(value: float | None, dtype: str) -> float | int | None:
    """The nodata in the store's dtype, refused when the dtype cannot hold it exactly."""
    if value is None:
        return None
    if not math.isfinite(value):  # before int(): --nodata nan/inf (typer reads them as floats)
        raise ConvertError("--nodata", f"{value} is not a valid nodata (spec 2.3)")
    dt = np.dtype(dtype)
    if dt.kind in "ui":
        info = np.iinfo(dt)
        if value != int(value) or not info.min <= value <= info.max:
            raise ConvertError("nodata", f"{value:g} cannot be stored as {dtype}")
        return int(value)
    if not math.isfinite(value) or float(np.float32(value)) != value:
        raise ConvertError("nodata", f"{value!r} is not exactly representable as float32")
    return float(value)

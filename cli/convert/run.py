"""Run a checked conversion: stream the source into ``chronozarr.encode`` or ``append``.

A new store is written into a staging folder beside the target and renamed into place when
complete; on any failure (a file that stops being readable, a value that does not fit the
``--dtype``) the staging folder is removed: nothing half-written is left. ``--append`` adds the
source's timesteps after the store's last one with ``chronozarr.append`` (spec 14: its own
write order keeps the old root until the new data is in place); timesteps the store already
holds are skipped, so a growing folder can be converted again and again.

The store options are the recipes' (``store:`` section, :class:`cz.recipe.StoreSpec`), with the
same defaults and validation. Provenance (spec 3.8) lists every source file.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeAlias

import numpy as np

import chronozarr
from cz.build import Progress
from cz.build.leftovers import new_tag, start_run, tagged_name
from cz.convert.dataset import DatasetPlan, is_dataset, plan_dataset
from cz.convert.errors import ConvertError
from cz.convert.grid import same_crs
from cz.convert.plan import ConvertOptions, RasterPlan, plan_rasters
from cz.convert.stream import WindowReader, WindowSource
from cz.signals import commit_section

__all__ = ["ConvertResult", "Plan", "append_check", "convert", "plan_source", "store_spec"]

Plan: TypeAlias = RasterPlan | DatasetPlan


class _Sources(Protocol):
    """What :func:`provenance` reads of a plan (a whole plan, or the part an append writes)."""

    @property
    def source(self) -> str: ...
    @property
    def files(self) -> list[str]: ...
    @property
    def mask_files(self) -> list[str]: ...
    @property
    def resampling(self) -> str | None: ...
    @property
    def mask(self) -> str | None: ...
    def to_json(self) -> dict[str, Any]: ...


PROVENANCE_FILES = (
    200  # paths listed in the root provenance at most: the root stays small (spec 3.1)
)


def plan_source(source: str, options: ConvertOptions, *, workers: int = 4) -> Plan:
    """The checked plan of any source: a dataset (NetCDF, Zarr) or raster files."""
    if is_dataset(source, options):
        return plan_dataset(source, options)
    return plan_rasters(source, options, workers=workers)


def store_spec(dtype: str, **options: Any) -> Any:
    """A recipe ``store:`` section (:class:`cz.recipe.StoreSpec`) from ``cz convert`` options,
    validated by the recipe model, plus the cross-field rules of recipe validation."""
    from pydantic import ValidationError

    from cz.recipe import StoreSpec

    given = {k: v for k, v in options.items() if v is not None}
    codec: dict[str, Any] = {"name": given.pop("codec", "zstd")}
    if "codec_level" in given:
        codec["level"] = given.pop("codec_level")
    try:
        spec = StoreSpec.model_validate({"dtype": dtype, "codec": codec, **given})
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = "--" + "-".join(str(p) for p in first["loc"]).replace("_", "-")
        raise ConvertError(loc, first["msg"]) from exc
    if spec.encoding == "star-delta" and dtype not in ("uint8", "uint16"):
        raise ConvertError(
            "--encoding", f"star-delta is only valid for uint8 and uint16 (spec 4.1), not {dtype}"
        )
    if spec.shard_time is not None and not spec.shard:
        raise ConvertError("--shard-time", "shard_time is only used with --shard")
    lo, hi = {"zstd": (-7, 22), "gzip": (0, 9), "blosc": (0, 9)}[spec.codec.name]
    if not lo <= spec.codec.effective_level <= hi:
        raise ConvertError("--codec-level", f"expected a {spec.codec.name} level in [{lo}, {hi}]")
    return spec


@dataclass
class ConvertResult:
    """What a conversion did (``--json`` prints it)."""

    action: str  # "convert" or "append"
    store: str
    timesteps: int
    skipped: list[str]
    bands: list[str]
    shape: tuple[int, int]
    dtype: str
    encoding: str
    seconds: float
    bytes: int
    objects: int

    def to_json(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "store": self.store,
            "timesteps": self.timesteps,
            "skipped_times": self.skipped,
            "bands": self.bands,
            "shape": list(self.shape),
            "dtype": self.dtype,
            "encoding": self.encoding,
            "seconds": round(self.seconds, 3),
            "bytes": self.bytes,
            "objects": self.objects,
        }


def _bands(plan: Plan) -> list[dict[str, Any]]:
    out = []
    for name, scale, offset, units in zip(
        plan.band_names, plan.scales, plan.offsets, plan.units, strict=True
    ):
        band: dict[str, Any] = {"name": name, "scale": scale, "offset": offset}
        if units:
            band["units"] = str(units)
        out.append(band)
    return out


def _times(plan: Plan) -> list[Any]:
    if isinstance(plan, DatasetPlan):
        return list(plan.times)
    return [np.datetime64(s.time.replace(tzinfo=None), "ms") for s in plan.steps]


def provenance(plan: _Sources, *, previous: dict[str, Any] | None = None) -> dict[str, Any]:
    """The root's ``chronozarr.provenance`` (spec 3.8): the source files and the rules applied.

    An append extends the previous file list (``previous`` is the store's provenance)."""
    files = list(plan.files) + list(plan.mask_files)
    if previous and isinstance(previous.get("source_files"), list):
        files = [
            *previous["source_files"],
            *[f for f in files if f not in previous["source_files"]],
        ]
    total = len(files) + (int(previous.get("source_files_omitted", 0)) if previous else 0)
    prov: dict[str, Any] = {
        "sources": [plan.source]
        if not previous
        else list(dict.fromkeys([*previous.get("sources", []), plan.source])),
        "converted_by": "cz convert",
        "source_files": files[:PROVENANCE_FILES],
    }
    if total > PROVENANCE_FILES:
        prov["source_files_omitted"] = total - PROVENANCE_FILES
    rules = plan.to_json()["dtype_conversion"]
    if rules:
        prov["dtype_conversion"] = rules
    if plan.resampling is not None:
        prov["resampling"] = plan.resampling
    if plan.mask is not None:
        prov["mask"] = "from nodata" if plan.mask == "nodata" else "from mask files"
    return prov


def _size(path: Path) -> tuple[int, int]:
    total = count = 0
    for dirpath, _dirs, names in os.walk(path):
        for name in names:
            total += (Path(dirpath) / name).stat().st_size
            count += 1
    return total, count


def _lazy(plan: Plan, chunk: int, progress: Progress) -> tuple[Any, Any, WindowReader | None]:
    def on_block() -> None:
        progress.advance("read")

    if isinstance(plan, DatasetPlan):
        data, mask = plan.lazy(chunk, on_block)
        return data, mask, None
    reader = WindowReader(plan, on_block)
    return WindowSource(reader), None, reader  # the writer's cell source: nothing per window


def _cells(plan: Plan, chunk: int) -> int:
    return -(-plan.grid.height // chunk) * -(-plan.grid.width // chunk)


def convert(
    plan: Plan,
    store: str,
    spec: Any,
    *,
    append: bool = False,
    workers: int | None = None,
    progress: Progress | None = None,
) -> ConvertResult:
    """Write ``plan`` as a new store at ``store`` (or append it); see the module docstring."""
    import dask

    progress = progress or Progress()
    start = time.perf_counter()
    target = Path(store).expanduser()
    if "://" in store:
        raise ConvertError(store, "a store is written locally; then `cz publish STORE URL`")
    if append:
        return _append(plan, target, spec, workers=workers, progress=progress, start=start)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise ConvertError(store, "exists and is not empty (use --append to add later dates)")
    target.parent.mkdir(parents=True, exist_ok=True)
    tag = new_tag()
    staging = target.parent / tagged_name(target, "converting", tag)
    n_time = len(_times(plan))
    progress.start("read", n_time * _cells(plan, spec.chunk_size), f"{n_time} timesteps")
    data, mask, reader = _lazy(plan, spec.chunk_size, progress)
    lock = start_run(target, tag)  # a dead run's staging is swept (cz.build.leftovers)
    try:
        with dask.config.set(scheduler="synchronous"):  # the writer's threads are the parallelism
            chronozarr.encode(
                data,
                staging,
                times=_times(plan),
                bands=_bands(plan),
                crs=plan.grid.crs,
                transform=plan.grid.transform,
                nodata=plan.nodata,
                mask=mask,
                encoding=spec.encoding,
                anchor_interval=spec.anchor_interval,
                chunk_size=spec.chunk_size,
                shard=spec.shard,
                shard_time=spec.shard_time,
                history=spec.history,
                codec=spec.codec.name,
                codec_options=spec.codec.writer_options(),
                provenance=provenance(plan),
                workers=workers,
            )
        progress.finish("read")
        with commit_section():  # a signal now waits; after it, the run finishes (cz.signals)
            if target.exists():
                target.rmdir()  # an empty folder: replaced by the complete store
            os.replace(staging, target)
    except chronozarr.EncodeError as exc:
        raise ConvertError("store", str(exc)) from exc
    finally:
        if reader is not None:
            reader.close()
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        lock.release()
    size, count = _size(target)
    return ConvertResult(
        action="convert",
        store=str(target),
        timesteps=n_time,
        skipped=[],
        bands=list(plan.band_names),
        shape=plan.grid.shape,
        dtype=plan.dtype,
        encoding=chronozarr.open_store(str(target)).encoding,
        seconds=time.perf_counter() - start,
        bytes=size,
        objects=count,
    )


def append_check(plan: Plan, store: str) -> tuple[Any, list[int], list[str]]:
    """The checks of ``--append`` (also run by ``--dry-run --append``): the open store, the
    indices of the plan's timesteps to append and the times skipped (already in the store)."""
    try:
        reader = chronozarr.open_store(str(Path(store).expanduser()))
    except chronozarr.ChronozarrError as exc:
        raise ConvertError(store, f"cannot append: {exc}") from exc
    store_times = [np.datetime64(t, "ms") for t in reader.times]
    times = _times(plan)
    old = set(store_times)
    keep = [i for i, t in enumerate(times) if t not in old]
    skipped = [str(times[i]) for i in range(len(times)) if times[i] in old]
    last = store_times[-1] if store_times else None
    early = [i for i in keep if last is not None and times[i] < last]
    if early:
        raise ConvertError(
            _where(plan, early[0]),
            f"dated {times[early[0]]}, before the store's last time {last} and not in the store: "
            "append adds later dates only (spec 14)",
        )
    if not same_crs(plan.grid.crs, reader.attrs.crs):
        raise ConvertError(
            store, f"the store's CRS differs from the source's ({plan.grid.crs[:60]})"
        )
    if plan.dtype != reader.dtype.name:
        raise ConvertError(
            store,
            f"the store holds {reader.dtype.name}, the source gives {plan.dtype} (--dtype)",
        )
    if keep and reader.has_mask != (plan.mask is not None):
        raise ConvertError(
            "--mask",
            "the store has a mask: give --mask as for the first conversion"
            if reader.has_mask
            else "the store has no mask, and a store cannot gain one (spec 14)",
        )
    if keep and reader.has_coverage:
        raise ConvertError(store, "the store has coverage, which a conversion cannot give")
    return reader, keep, skipped


def _append(
    plan: Plan, target: Path, spec: Any, *, workers: int | None, progress: Progress, start: float
) -> ConvertResult:
    # one run at a time on the store (decision 0051): the check below reads it under the lock
    lock = start_run(target, new_tag())
    try:
        return _append_locked(plan, target, spec, workers=workers, progress=progress, start=start)
    finally:
        lock.release()


def _append_locked(
    plan: Plan, target: Path, spec: Any, *, workers: int | None, progress: Progress, start: float
) -> ConvertResult:
    import dask

    reader, keep, skipped = append_check(plan, str(target))
    times = _times(plan)
    if not keep:
        return ConvertResult(
            "append",
            str(target),
            0,
            skipped,
            list(plan.band_names),
            plan.grid.shape,
            plan.dtype,
            reader.encoding,
            time.perf_counter() - start,
            *_size(target),
        )
    chunk = reader.chunk_size(0)
    progress.start("read", len(keep) * _cells(plan, chunk), f"{len(keep)} new timesteps")
    data, mask, wreader = _lazy(plan, chunk, progress)
    lo, hi = keep[0], keep[-1] + 1
    prov = provenance(_Subset(plan, keep), previous=dict(reader.attrs.provenance or {}))
    try:
        with dask.config.set(scheduler="synchronous"):
            chronozarr.append(
                str(target),
                _part(data, lo, hi),
                times=times[lo:hi],
                mask=None if mask is None else mask[lo:hi],
                bands=list(plan.band_names),
                crs=reader.attrs.crs,
                transform=plan.grid.transform,
                nodata=plan.nodata,
                provenance=prov,
                workers=workers,
            )
        progress.finish("read")
    except chronozarr.AppendError as exc:
        raise ConvertError(str(target), f"cannot append: {exc}") from exc
    finally:
        if wreader is not None:
            wreader.close()
    return ConvertResult(
        "append",
        str(target),
        len(keep),
        skipped,
        list(plan.band_names),
        plan.grid.shape,
        plan.dtype,
        reader.encoding,
        time.perf_counter() - start,
        *_size(target),
    )


def _part(data: Any, lo: int, hi: int) -> Any:
    """Timesteps ``lo .. hi`` of the data: a dask array's slice, or a narrower cell source."""
    if isinstance(data, WindowSource):
        return WindowSource(data.reader, data.start + lo, data.start + hi)
    return data[lo:hi]


def _where(plan: Plan, i: int) -> str:
    if isinstance(plan, RasterPlan):
        return plan.steps[i].bands[0].file.where
    return f"{plan.source} (time[{i}])"


class _Subset:
    """The part of a plan an append writes (for its provenance's file list)."""

    def __init__(self, plan: Plan, keep: Sequence[int]) -> None:
        self._plan = plan
        self.source = plan.source
        self.resampling = plan.resampling
        self.mask = plan.mask
        if isinstance(plan, RasterPlan):
            steps = [plan.steps[i] for i in keep]
            self.files = list(dict.fromkeys(b.file.path for s in steps for b in s.bands))
            self.mask_files = [s.mask.path for s in steps if s.mask is not None]
        else:
            self.files, self.mask_files = plan.files, plan.mask_files

    def to_json(self) -> dict[str, Any]:
        return self._plan.to_json()

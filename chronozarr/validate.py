"""``validate``: check a store against every MUST of chronozarr v0.2 that can be seen (and SHOULDs
as warnings). Each finding names the spec section and the key it is about.

Shallow validation reads metadata, the coordinate arrays and the object list (or HEADs where a
host cannot list); ``deep=True`` also decodes every chunk and recomputes the pyramid (block means,
mask max, coverage rounded mean), the volatility and the mirrors.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from chronozarr import codecs as _codecs
from chronozarr.errors import ChronozarrError, CorruptStoreError, StoreNotFoundError
from chronozarr.metadata import (
    CODEC_NAMES,
    DELTA_DTYPES,
    ArrayInfo,
    RootAttrs,
    format_time,
    parse_time,
)
from chronozarr.pyramid import block_mean, coverage_reduce, mask_reduce, validity
from chronozarr.storage import Store, open_store_bytes
from chronozarr.temporal import abs_diff_sum, anchor_indices, schedule, volatility_value

__all__ = ["Finding", "Report", "validate"]


@dataclass(frozen=True)
class Finding:
    """One problem: ``rule`` id, spec ``section``, ``severity`` (error|warning), message, key."""

    rule: str
    section: str
    severity: str
    message: str
    key: str

    def to_json(self) -> dict[str, str]:
        return asdict(self)


@dataclass
class Report:
    """Result of :func:`validate`. ``ok`` is True when there is no error-severity finding."""

    store: str
    deep: bool
    findings: list[Finding] = field(default_factory=list)
    checked: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    @property
    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.severity == "warning"]

    def to_json(self) -> dict[str, Any]:
        return {
            "store": self.store,
            "ok": self.ok,
            "deep": self.deep,
            "errors": len(self.errors),
            "warnings": len(self.warnings),
            "checked": dict(self.checked),
            "findings": [f.to_json() for f in self.findings],
        }


def _compressors(codecs: Any) -> list[tuple[Any, Any]]:
    """The compressors of a chunk chain, without the dtype-dependent blosc typesize (spec 8:
    the same chain applies to data, mask and coverage, whose item sizes differ)."""
    out: list[tuple[Any, Any]] = []
    for c in list(codecs)[1:]:
        if not isinstance(c, Mapping):
            out.append((repr(c), []))
            continue
        raw = c.get("configuration") or {}
        conf = dict(raw) if isinstance(raw, Mapping) else {"configuration": repr(raw)}
        if c.get("name") == "blosc":
            conf.pop("typesize", None)
        out.append((c.get("name"), sorted(conf.items(), key=lambda kv: str(kv[0]))))
    return out


def _malformed_array(doc: Any) -> str | None:
    """What makes ``doc`` unusable as Zarr v3 array metadata (types only), or None."""
    if not isinstance(doc, Mapping):
        return "not an object"
    shape = doc.get("shape")
    if not isinstance(shape, list) or not all(_is_count(v) for v in shape):
        return f"shape {shape!r}"
    grid = doc.get("chunk_grid")
    conf = grid.get("configuration") if isinstance(grid, Mapping) else None
    chunks = conf.get("chunk_shape") if isinstance(conf, Mapping) else None
    if (
        not isinstance(chunks, list)
        or len(chunks) != len(shape)
        or not all(_is_count(v) and v > 0 for v in chunks)
    ):
        return f"chunk_grid {grid!r}"
    if not isinstance(doc.get("codecs"), list) or not all(
        isinstance(c, Mapping) and isinstance(c.get("configuration", {}), Mapping)
        for c in doc["codecs"]
    ):
        return f"codecs {doc.get('codecs')!r}"
    for c in doc["codecs"]:
        if c.get("name") == "sharding_indexed":
            sc = c.get("configuration") or {}
            inner = sc.get("chunk_shape")
            if (
                not isinstance(inner, list)
                or len(inner) != len(shape)
                or not all(_is_count(v) and v > 0 for v in inner)
            ):
                return f"sharding chunk_shape {inner!r}"
            for name in ("codecs", "index_codecs"):
                sub = sc.get(name, [])
                if not isinstance(sub, list) or not all(
                    isinstance(x, Mapping) and isinstance(x.get("configuration", {}), Mapping)
                    for x in sub
                ):
                    return f"sharding {name} {sub!r}"
    for name in ("chunk_key_encoding", "attributes"):
        if name in doc and not isinstance(doc[name], Mapping):
            return f"{name} {doc[name]!r}"
    cke = doc.get("chunk_key_encoding") or {}
    if cke.get("configuration") is not None and not isinstance(cke["configuration"], Mapping):
        return f"chunk_key_encoding {cke!r}"
    for name in ("dimension_names",):
        value = doc.get(name)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str | type(None)) for v in value)
        ):
            return f"{name} {value!r}"
    ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
    if ad is not None and not (isinstance(ad, list) and all(isinstance(v, str) for v in ad)):
        return f"attributes._ARRAY_DIMENSIONS {ad!r}"
    return None


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63


def _fits(value: Any, dtype: str) -> bool:
    """True when ``value`` is a value of the Zarr data type (a valid fill_value, spec 2.3)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if dtype == "float32":  # Zarr rounds a JSON number to the nearest float32
        return math.isfinite(value) and abs(value) <= float(np.finfo(np.float32).max)
    try:
        info = np.iinfo(dtype)
    except ValueError:
        return True
    return float(value).is_integer() and info.min <= value <= info.max


_MAX_SHARDS = 1_000_000  # beyond this a shard grid is not enumerated (spec 7.3 checks)


def _is_transform(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == 6
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in value)
    )


class _Stop(Exception):
    """Raised when a finding makes further checks meaningless."""


class _Validator:
    def __init__(self, store: Store, deep: bool):
        self.store = store
        self.report = Report(store=store.url, deep=deep)
        self.docs: dict[str, Any] = {}
        self.consolidated: Mapping[str, Any] = {}
        self._where = "zarr.json"  # the metadata document being checked, for findings

    # -- helpers ---------------------------------------------------------------------------------

    def add(self, rule: str, section: str, message: str, key: str, severity: str = "error") -> None:
        self.report.findings.append(Finding(rule, section, severity, message, key))

    def count(self, what: str, n: int = 1) -> None:
        self.report.checked[what] = self.report.checked.get(what, 0) + n

    def doc(self, path: str) -> Any:
        """The metadata of ``path`` as the root describes it: its consolidated copy when the root
        has one (spec 3.1, readers' primary source), else its zarr.json. None when absent."""
        self._where = f"{path}/zarr.json" if path else "zarr.json"
        if path and isinstance(self.consolidated.get(path), Mapping):
            entry = self.consolidated[path]
            return {k: v for k, v in entry.items() if k != "consolidated_metadata"}
        return self.disk_doc(path)

    def disk_doc(self, path: str) -> Any:
        """The zarr.json of ``path`` as stored; None when absent."""
        if path in self.docs:
            return self.docs[path]
        key = f"{path}/zarr.json" if path else "zarr.json"
        raw = self.store.get(key)
        value = None
        if raw is not None:
            try:
                value = json.loads(raw)
            except ValueError as exc:
                self.add("json.invalid", "3", f"invalid JSON: {exc}", key)
                value = None
        self.docs[path] = value
        return value

    # -- checks ----------------------------------------------------------------------------------

    def run(self) -> Report:
        try:
            self._run()
        except _Stop:
            pass
        except (TypeError, ValueError, AttributeError, KeyError, IndexError, OverflowError) as exc:
            # metadata malformed in a way no specific check anticipated: a finding, never a crash
            self.add(
                "metadata.malformed",
                "3",
                f"malformed metadata stopped validation: {type(exc).__name__}: {exc}",
                self._where,
            )
        return self.report

    def _run(self) -> None:
        root = self.doc("")
        if root is None:
            self.add("root.missing", "2", "no root zarr.json: not a store", "zarr.json")
            raise _Stop
        if root.get("zarr_format") != 3 or root.get("node_type") != "group":
            self.add("root.group", "2", "root zarr.json is not a Zarr v3 group", "zarr.json")
            raise _Stop
        attributes = root.get("attributes") or {}
        if not isinstance(attributes, Mapping):
            self.add("root.attributes", "3", "root attributes must be an object", "zarr.json")
            raise _Stop
        raw = attributes.get("chronozarr")
        if raw is None:
            self.add(
                "root.chronozarr", "3.2", "root attributes have no 'chronozarr' block", "zarr.json"
            )
            raise _Stop
        try:
            attrs = RootAttrs.from_json(raw)
        except ChronozarrError as exc:
            if "shard_bytes" in str(exc):
                self.add(
                    "shard_bytes.malformed", "7.3", str(exc), "zarr.json#chronozarr.shard_bytes"
                )
            else:
                self.add("root.chronozarr", "3.2", str(exc), "zarr.json#chronozarr")
            raise _Stop from exc
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            self.add(
                "root.chronozarr",
                "3.2",
                f"malformed chronozarr block: {type(exc).__name__}: {exc}",
                "zarr.json#chronozarr",
            )
            raise _Stop from exc
        self.attrs = attrs
        for name in ("variable", "volatility_path", "mask_variable", "coverage_variable"):
            value = raw.get(name)
            if value is not None and not (isinstance(value, str) and value):
                self.add(
                    "chronozarr.key",
                    "3.2",
                    f"chronozarr.{name} must be a name (a non-empty string), got {value!r}",
                    f"zarr.json#chronozarr.{name}",
                )
                raise _Stop
        v02 = attrs.spec_version.startswith("0.2.")
        cons = root.get("consolidated_metadata")
        if isinstance(cons, Mapping) and isinstance(cons.get("metadata"), Mapping):
            self.consolidated = cons["metadata"]
        else:
            self.add(
                "root.consolidated",
                "3.1",
                "no consolidated metadata (SHOULD be written)",
                "zarr.json",
                "warning",
            )
        for key in ("variable", "times", "bands", "nodata", "crs", "temporal"):
            if key not in raw:
                self.add(
                    "chronozarr.key",
                    "3.2",
                    f"chronozarr.{key} is missing",
                    f"zarr.json#chronozarr.{key}",
                )
        if v02:
            for key in ("band_names", "levels", "volatility_path"):
                if key not in raw:
                    self.add(
                        "chronozarr.key",
                        "3.2",
                        f"chronozarr.{key} is missing",
                        f"zarr.json#chronozarr.{key}",
                    )
        elif "volatility_path" not in raw:
            self.add(
                "chronozarr.key",
                "5",
                "no volatility_path: decodable but not conforming",
                "zarr.json#chronozarr.volatility_path",
                "warning",
            )
        self._check_multiscales(attributes.get("multiscales"), attrs)
        self._check_band_objects(raw, attrs)
        self._check_nodata(raw)
        levels = self._check_levels(attrs)
        if not levels:
            raise _Stop
        self._check_temporal(raw, attrs, levels)
        self._check_coords(attrs, levels)
        self._check_volatility(attrs, levels)
        self._check_shard_bytes(attrs, levels)
        self._check_consolidated()
        self._check_dotfiles()
        if self.report.deep:
            if self.report.errors:
                self.add(
                    "deep.skipped",
                    "10",
                    "deep checks skipped: fix the metadata errors first",
                    "zarr.json",
                    "warning",
                )
            else:
                self._deep(attrs, levels)

    def _check_multiscales(self, ms: Any, attrs: RootAttrs) -> None:
        key = "zarr.json#multiscales"
        if not isinstance(ms, list) or not ms or not isinstance(ms[0], Mapping):
            self.add("multiscales.missing", "3.4", "multiscales must be a list with one entry", key)
            return
        entry = ms[0]
        datasets = entry.get("datasets")
        if not isinstance(datasets, list) or not datasets:
            self.add(
                "multiscales.datasets",
                "3.4",
                "multiscales[0].datasets must be a non-empty list",
                key,
            )
            return
        paths = [d.get("path") if isinstance(d, Mapping) else None for d in datasets]
        if paths != [str(i) for i in range(len(paths))]:
            self.add(
                "multiscales.order",
                "3.4",
                f"levels must be listed as '0', '1', ... without gaps, got {paths}",
                key,
            )
        for i, d in enumerate(datasets):
            if isinstance(d, Mapping) and "crs" in d and d["crs"] != attrs.crs:
                self.add(
                    "multiscales.crs",
                    "3.4",
                    f"datasets[{i}].crs {d['crs']!r} differs from chronozarr.crs {attrs.crs!r}",
                    key,
                )
        meta = entry.get("metadata")
        if "method" in entry:
            self.add(
                "multiscales.method",
                "3.4",
                "method must be nested under metadata, not top-level",
                key,
            )
        if not isinstance(meta, Mapping) or not {"method", "version", "args"} <= set(meta):
            self.add(
                "multiscales.metadata",
                "3.4",
                "metadata must hold method, version and args (ndpyramid schema)",
                key,
            )
        if "type" not in entry:
            self.add(
                "multiscales.type", "3.4", "multiscales[0].type is missing (ndpyramid schema)", key
            )
        if "layout" in entry:
            self.add(
                "multiscales.layout",
                "3.4",
                "the zarr-conventions layout[] form cannot be mixed with the ndpyramid list form",
                key,
            )
        self.levels_from_ms = paths

    def _check_band_objects(self, raw: Mapping[str, Any], attrs: RootAttrs) -> None:
        names = [b.name for b in attrs.bands]
        if len(set(names)) != len(names):
            self.add(
                "bands.unique",
                "3.6",
                f"band names are not unique: {names}",
                "zarr.json#chronozarr.bands",
            )
        if attrs.band_names is not None and list(attrs.band_names) != names:
            self.add(
                "mirror.band_names",
                "3.5",
                f"band_names {list(attrs.band_names)} differ from bands {names}",
                "zarr.json#chronozarr.band_names",
            )
        for i, b in enumerate(raw.get("bands", [])):
            if isinstance(b, Mapping) and ("scale" not in b or "offset" not in b):
                self.add(
                    "bands.scale",
                    "3.6",
                    f"bands[{i}] has no explicit scale/offset (SHOULD)",
                    f"zarr.json#chronozarr.bands[{i}]",
                    "warning",
                )

    def _check_nodata(self, raw: Mapping[str, Any]) -> None:
        nodata = raw.get("nodata")
        if isinstance(nodata, float) and math.isnan(nodata):
            self.add(
                "nodata.nan", "2.3", "NaN is not a valid nodata", "zarr.json#chronozarr.nodata"
            )

    def _array(
        self, path: str, allowed: tuple[str, ...] | None = None, dtype_section: str = "2.3"
    ) -> ArrayInfo | None:
        doc = self.doc(path)
        key = f"{path}/zarr.json"
        if doc is None:
            self.add("array.missing", "2", f"array {path} is missing", key)
            return None
        malformed = _malformed_array(doc)
        if malformed:
            self.add(
                "array.malformed", "2", f"not a valid Zarr v3 array document: {malformed}", key
            )
            return None
        try:
            info = ArrayInfo.from_json(
                doc, path, **({"allowed_dtypes": allowed} if allowed else {})
            )
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            self.add(
                "array.malformed",
                "2",
                f"not a valid Zarr v3 array document: {type(exc).__name__}: {exc}",
                key,
            )
            return None
        except CorruptStoreError as exc:
            self.add("array.malformed", "2", f"not a valid Zarr v3 array document: {exc}", key)
            return None
        except ChronozarrError as exc:
            text = str(exc)
            if "data_type" in text:
                section = dtype_section  # 2.3 data, 2.4 mask, 2.5 coverage, 5 volatility
            elif "index" in text:
                section = "7.2"
            elif "chunk_grid" in text:
                section = "2.1"
            else:
                section = "8"  # codecs, blosc options, endianness, compressor count
            self.add("array.unsupported", section, text, key)
            return None
        cke = doc.get("chunk_key_encoding") or {}
        if (
            cke.get("name") != "default"
            or (cke.get("configuration") or {}).get("separator", "/") != "/"
        ):
            self.add(
                "array.key_encoding",
                "2",
                f"chunk keys must be the default encoding with '/' (c/t/.../c), got {cke!r}",
                key,
            )
        if info.sharded:
            names = [c.get("name") for c in info.index_codecs]
            endian = (
                (info.index_codecs[0].get("configuration") or {}) if info.index_codecs else {}
            ).get("endian", "little")
            if names != ["bytes", "crc32c"] or endian != "little":
                self.add(
                    "shard.index",
                    "7.2",
                    f"the shard index is (offset, nbytes) uint64 little-endian pairs plus a crc32c: index_codecs must be bytes then crc32c, got {names}",
                    key,
                )
            if info.index_location != "end":
                self.add(
                    "shard.index_location",
                    "7.2",
                    f"index_location {info.index_location!r}: writers SHOULD use 'end' (zarrita ignores index_location)",
                    key,
                    "warning",
                )
        dims = doc.get("dimension_names")
        ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
        if dims is None:
            self.add("array.dimension_names", "2.2", "dimension_names is missing", key)
        if ad is None:
            self.add("array.array_dimensions", "2.2", "attribute _ARRAY_DIMENSIONS is missing", key)
        elif dims is not None and list(ad) != list(dims):
            self.add(
                "array.array_dimensions",
                "2.2",
                f"_ARRAY_DIMENSIONS {ad} differs from dimension_names {dims}",
                key,
            )
        self.count("arrays")
        return info

    def _check_levels(self, attrs: RootAttrs) -> list[dict[str, Any]]:
        paths = getattr(self, "levels_from_ms", None)
        if attrs.levels is not None:
            lpaths = [lv.path for lv in attrs.levels]
            if paths is not None and lpaths != paths:
                self.add(
                    "mirror.levels",
                    "3.7",
                    f"levels paths {lpaths} differ from multiscales {paths}",
                    "zarr.json#chronozarr.levels",
                )
            paths = lpaths
        self.level_paths = list(paths or [])
        if not paths:
            self.add(
                "levels.missing",
                "3.7",
                "no levels found in chronozarr.levels or multiscales",
                "zarr.json",
            )
            return []
        if paths != [str(i) for i in range(len(paths))]:
            self.add(
                "levels.consecutive",
                "6",
                f"levels must be consecutive from '0', got {paths}",
                "zarr.json#chronozarr.levels",
            )
        n_time = len(attrs.times)
        n_band = len(attrs.bands)
        var = attrs.variable
        out: list[dict[str, Any]] = []
        cs0 = None
        dtype0 = None
        codecs0 = None
        planes_present: dict[str, list[bool]] = {"mask": [], "coverage": []}
        for k, path in enumerate(paths):
            gdoc = self.doc(path)
            gkey = f"{path}/zarr.json"
            if gdoc is None or gdoc.get("node_type") != "group":
                self.add("level.group", "2", f"level {path} is not a group", gkey)
                continue
            ga = gdoc.get("attributes") or {}
            if not isinstance(ga, Mapping):
                self.add("level.attrs", "3.3", "level group attributes must be an object", gkey)
                ga = {}
            if "transform" in ga and not _is_transform(ga["transform"]):
                self.add(
                    "level.attrs",
                    "3.3",
                    f"transform must be six numbers [a, b, c, d, e, f], got {ga['transform']!r}",
                    gkey,
                )
                ga = {k: v for k, v in ga.items() if k != "transform"}
            res = ga.get("resolution")
            if "resolution" in ga and (
                isinstance(res, bool) or not isinstance(res, int | float) or not res > 0
            ):
                self.add(
                    "level.attrs",
                    "3.3",
                    f"resolution must be a positive number, got {res!r}",
                    gkey,
                )
                ga = {k: v for k, v in ga.items() if k != "resolution"}
            for name in ("crs", "transform", "resolution"):
                if name not in ga:
                    self.add(
                        "level.attrs", "3.3", f"level group attribute {name!r} is missing", gkey
                    )
            info = self._array(f"{path}/{var}")
            if info is None:
                continue
            dkey = f"{path}/{var}/zarr.json"
            doc = self.doc(f"{path}/{var}")
            if info.dimension_names is not None and list(info.dimension_names) != [
                "time",
                "band",
                "y",
                "x",
            ]:
                self.add(
                    "data.dims",
                    "2.1",
                    f"dimension_names must be [time, band, y, x], got {list(info.dimension_names)}",
                    dkey,
                )
            if len(info.shape) != 4:
                self.add(
                    "data.shape",
                    "2.1",
                    f"data array must be 4-d, got shape {list(info.shape)}",
                    dkey,
                )
                continue
            cs = info.cs
            if cs % 2 or cs < 2:
                self.add("data.cs", "2.1", f"chunk size {cs} must be even", dkey)
            if info.inner_chunk_shape != (1, info.shape[1], cs, cs):
                self.add(
                    "data.chunks",
                    "2.1",
                    f"inner chunk shape must be (1, n_band, cs, cs), got {list(info.inner_chunk_shape)}",
                    dkey,
                )
            if cs0 is None:
                cs0, dtype0, codecs0 = cs, info.dtype, list(info.codecs)
            else:
                if cs != cs0:
                    self.add(
                        "data.cs", "2.1", f"chunk size {cs} differs from level 0's {cs0}", dkey
                    )
                if info.dtype != dtype0:
                    self.add(
                        "data.dtype",
                        "2.3",
                        f"data_type {info.dtype} differs from level 0's {dtype0}",
                        dkey,
                    )
            if info.shape[0] != n_time:
                self.add(
                    "data.time",
                    "3.5",
                    f"time axis {info.shape[0]} differs from len(chronozarr.times) {n_time}",
                    dkey,
                )
            if info.shape[1] != n_band:
                self.add(
                    "data.band",
                    "3.5",
                    f"band axis {info.shape[1]} differs from len(chronozarr.bands) {n_band}",
                    dkey,
                )
            if info.sharded and info.chunk_shape[1:] != (info.shape[1], cs, cs):
                self.add(
                    "data.shard",
                    "7.1",
                    f"shard shape must be (shard_time, n_band, cs, cs), got {list(info.chunk_shape)}",
                    dkey,
                )
            names = [c.get("name") for c in info.codecs]
            if len(names) != 2 or names[1] not in CODEC_NAMES:
                self.add(
                    "codec.one",
                    "8",
                    f"writers MUST use bytes then exactly one of {list(CODEC_NAMES)}, got {names}",
                    dkey,
                )
            # nodata profile (2.3)
            nodata = attrs.nodata
            attr_nodata = (doc.get("attributes") or {}).get("nodata", None)
            if nodata is None:
                if info.fill_value not in (0, 0.0):
                    self.add(
                        "nodata.fill",
                        "2.3",
                        f"nodata is null so fill_value must be 0, got {info.fill_value!r}",
                        dkey,
                    )
                if "nodata" in (doc.get("attributes") or {}):
                    self.add(
                        "nodata.attr",
                        "2.3",
                        "nodata is null so the nodata attribute must be absent",
                        dkey,
                    )
            else:
                if info.fill_value != nodata:
                    self.add(
                        "nodata.fill",
                        "2.3",
                        f"fill_value {info.fill_value!r} differs from chronozarr.nodata {nodata!r}",
                        dkey,
                    )
                if attr_nodata != nodata:
                    self.add(
                        "nodata.attr",
                        "2.3",
                        f"attribute nodata {attr_nodata!r} differs from chronozarr.nodata {nodata!r}",
                        dkey,
                    )
            if nodata is not None and not _fits(nodata, info.dtype):
                self.add(
                    "nodata.range",
                    "2.3",
                    f"chronozarr.nodata {nodata!r} is not a value of the data type {info.dtype}",
                    "zarr.json#chronozarr.nodata",
                )
            # geometry (6): level k is level 0 at 2^k the pixel size, same outer corner
            tf = ga.get("transform")
            if (
                out
                and k > 0
                and out[0]["path"] == "0"
                and _is_transform(tf)
                and _is_transform(out[0]["transform"])
            ):
                want_tf = [float(v) for v in out[0]["transform"]]
                s = 2.0**k
                want_tf = [
                    want_tf[0] * s,
                    want_tf[1] * s,
                    want_tf[2],
                    want_tf[3] * s,
                    want_tf[4] * s,
                    want_tf[5],
                ]
                if not all(
                    math.isclose(float(a), b, rel_tol=1e-9, abs_tol=1e-9)
                    for a, b in zip(tf, want_tf, strict=True)
                ):
                    self.add(
                        "pyramid.transform",
                        "6",
                        f"level {path} transform {list(tf)} is not level 0's at 2^{k} the pixel size: {want_tf}",
                        gkey,
                    )
            if out:
                ph, pw = out[-1]["shape"][2:]
                want = (math.ceil(ph / 2), math.ceil(pw / 2))
                if tuple(info.shape[2:]) != want:
                    self.add(
                        "pyramid.shape",
                        "6",
                        f"level {path} is {list(info.shape[2:])}, expected ceil of half the level below: {list(want)}",
                        dkey,
                    )
                pres = out[-1]["resolution"]
                if (
                    ga.get("resolution") is not None
                    and pres is not None
                    and not math.isclose(float(ga["resolution"]), 2 * pres)
                ):
                    self.add(
                        "pyramid.resolution",
                        "6",
                        f"resolution {ga['resolution']} is not twice {pres}",
                        gkey,
                    )
            for attr in (
                "proj:code",
                "spatial:dimensions",
                "spatial:shape",
                "spatial:transform",
                "spatial:bbox",
            ):
                if attr not in (doc.get("attributes") or {}) and not (
                    attr == "proj:code" and not str(attrs.crs or "").upper().startswith("EPSG:")
                ):
                    self.add(
                        "data.spatial",
                        "3.3",
                        f"data array attribute {attr!r} is missing (SHOULD)",
                        dkey,
                        "warning",
                    )
            self._check_spatial_values(doc, attrs, ga, dkey)
            if str(attrs.crs or "").upper().startswith("EPSG:") and "_CRS" not in (
                doc.get("attributes") or {}
            ):
                self.add(
                    "data.crs",
                    "3.3",
                    "EPSG store without the _CRS attribute GDAL reads (SHOULD)",
                    dkey,
                    "warning",
                )
            if codecs0 is not None and list(info.codecs) != codecs0:
                self.add("codec.same", "8", "data codecs differ between levels", dkey, "warning")
            # mask / coverage (2.4, 2.5)
            for plane in ("mask", "coverage"):
                pdoc = self.doc(f"{path}/{plane}")
                planes_present[plane].append(pdoc is not None)
                if pdoc is None:
                    continue
                psec = "2.4" if plane == "mask" else "2.5"
                pinfo = self._array(f"{path}/{plane}", allowed=("uint8",), dtype_section=psec)
                pkey = f"{path}/{plane}/zarr.json"
                if pinfo is None:
                    continue
                if pinfo.shape != (info.shape[0], *info.shape[2:]):
                    self.add(
                        f"{plane}.shape",
                        psec,
                        f"shape {list(pinfo.shape)} must be [n_time, H, W] = {[info.shape[0], *info.shape[2:]]}",
                        pkey,
                    )
                if pinfo.fill_value != 0:
                    self.add(
                        f"{plane}.fill",
                        psec,
                        f"fill_value must be 0, got {pinfo.fill_value!r}",
                        pkey,
                    )
                if pinfo.dimension_names is not None and list(pinfo.dimension_names) != [
                    "time",
                    "y",
                    "x",
                ]:
                    self.add(
                        f"{plane}.dims",
                        psec,
                        f"dimension_names must be [time, y, x], got {list(pinfo.dimension_names)}",
                        pkey,
                    )
                if pinfo.inner_chunk_shape != (1, cs, cs):
                    self.add(
                        f"{plane}.chunks",
                        psec,
                        f"inner chunk shape must be (1, cs, cs), got {list(pinfo.inner_chunk_shape)}",
                        pkey,
                    )
                if pinfo.sharded != info.sharded or (
                    info.sharded and tuple(pinfo.chunk_shape) != (info.chunk_shape[0], cs, cs)
                ):
                    self.add(
                        f"{plane}.layout",
                        psec,
                        "mask/coverage must be chunked like data (same sharding and shard_time)",
                        pkey,
                    )
                if _compressors(pinfo.codecs) != _compressors(info.codecs):
                    self.add(
                        f"{plane}.codec",
                        "8",
                        "the same codec chain applies to data, mask and coverage",
                        pkey,
                    )
            lv = {
                "path": path,
                "shape": list(info.shape),
                "info": info,
                "resolution": float(ga["resolution"])
                if isinstance(ga.get("resolution"), int | float)
                else None,
                "transform": ga.get("transform"),
                "grid": [math.ceil(info.shape[2] / cs), math.ceil(info.shape[3] / cs)],
            }
            # levels mirror (3.7)
            if attrs.levels is not None and k < len(attrs.levels):
                m = attrs.levels[k]
                mkey = f"zarr.json#chronozarr.levels[{k}]"
                if list(m.shape) != lv["shape"]:
                    self.add(
                        "mirror.levels",
                        "3.7",
                        f"shape {list(m.shape)} differs from the array's {lv['shape']}",
                        mkey,
                    )
                if list(m.grid) != lv["grid"]:
                    self.add(
                        "mirror.levels",
                        "3.7",
                        f"grid {list(m.grid)} differs from ceil(shape / cs) {lv['grid']}",
                        mkey,
                    )
                if lv["resolution"] is not None and m.resolution != lv["resolution"]:
                    self.add(
                        "mirror.levels",
                        "3.7",
                        f"resolution {m.resolution} differs from the level group's {lv['resolution']}",
                        mkey,
                    )
                if lv["transform"] is not None and [float(v) for v in lv["transform"]] != list(
                    m.transform
                ):
                    self.add(
                        "mirror.levels",
                        "3.7",
                        f"transform {list(m.transform)} differs from the level group's {lv['transform']}",
                        mkey,
                    )
            if ga.get("crs") is not None and ga.get("crs") != attrs.crs:
                self.add(
                    "level.crs",
                    "3.3",
                    f"level crs {ga.get('crs')!r} differs from chronozarr.crs {attrs.crs!r}",
                    gkey,
                )
            out.append(lv)
        for plane, present in planes_present.items():
            declared = attrs.mask_variable if plane == "mask" else attrs.coverage_variable
            if any(present) and not all(present):
                self.add(
                    f"{plane}.levels",
                    "2.4" if plane == "mask" else "2.5",
                    f"{plane} must exist at every level or at none (present at {[p for p, x in zip(paths, present, strict=False) if x]})",
                    f"{plane}",
                )
            if any(present) and declared != plane:
                self.add(
                    f"{plane}.variable",
                    "2.4" if plane == "mask" else "2.5",
                    f"{plane} arrays exist but chronozarr.{plane}_variable is {declared!r}",
                    f"zarr.json#chronozarr.{plane}_variable",
                )
            if not any(present) and declared is not None:
                self.add(
                    f"{plane}.variable",
                    "2.4" if plane == "mask" else "2.5",
                    f"chronozarr.{plane}_variable is {declared!r} but no {plane} array exists",
                    f"zarr.json#chronozarr.{plane}_variable",
                )
        if attrs.levels is not None and len(attrs.levels) != len(paths):
            self.add(
                "mirror.levels",
                "3.7",
                "levels mirror length differs from the level groups",
                "zarr.json#chronozarr.levels",
            )
        return out

    def _check_spatial_values(
        self, doc: Mapping[str, Any], attrs: RootAttrs, ga: Mapping[str, Any], dkey: str
    ) -> None:
        """proj:code, spatial:* and _CRS carry the same values as the level (spec 3.3, SHOULD)."""
        a = doc.get("attributes") or {}
        shape = doc.get("shape") or []
        crs = str(attrs.crs or "")
        tf = ga.get("transform")
        want: dict[str, Any] = {"spatial:dimensions": ["y", "x"]}
        if len(shape) == 4:
            want["spatial:shape"] = list(shape[2:])
        if crs.upper().startswith("EPSG:"):
            want["proj:code"] = crs.upper()
            want["_CRS"] = f"http://www.opengis.net/def/crs/EPSG/0/{crs.split(':', 1)[1]}"
        if _is_transform(tf):
            want["spatial:transform"] = [float(v) for v in tf]
            if len(shape) == 4:
                ta, _, tc, _, te, tf_ = (float(v) for v in tf)
                xs, ys = [tc, tc + ta * shape[3]], [tf_, tf_ + te * shape[2]]
                want["spatial:bbox"] = [min(xs), min(ys), max(xs), max(ys)]
        for name, value in want.items():
            if name not in a:
                continue
            got = a[name]
            if name == "_CRS":
                got = got.get("url") if isinstance(got, Mapping) else got
            same = got == value
            if not same and name in ("spatial:transform", "spatial:bbox"):
                same = (
                    isinstance(got, list)
                    and len(got) == len(value)
                    and all(
                        isinstance(x, int | float)
                        and math.isclose(float(x), y, rel_tol=1e-9, abs_tol=1e-9)
                        for x, y in zip(got, value, strict=True)
                    )
                )
            if not same:
                self.add(
                    "data.spatial",
                    "3.3",
                    f"attribute {name} is {got!r}, the level says {value!r} (same values SHOULD)",
                    dkey,
                    "warning",
                )

    def _check_temporal(
        self, raw: Mapping[str, Any], attrs: RootAttrs, levels: list[dict[str, Any]]
    ) -> None:
        tkey = "zarr.json#chronozarr.temporal"
        temporal = attrs.temporal
        rt = raw.get("temporal") or {}
        n_time = len(attrs.times)
        dtype = levels[0]["info"].dtype
        sel = temporal.selection
        if sel is not None:
            if not (
                isinstance(sel, Mapping)
                and sel.get("mode") == "auto"
                and isinstance(sel.get("sampled_cells"), int)
                and isinstance(sel.get("ratio"), int | float)
            ):
                self.add(
                    "temporal.selection",
                    "4.3",
                    f"selection must be {{mode: auto, sampled_cells, ratio}}, got {sel!r}",
                    tkey,
                )
            elif levels[0]["path"] == self.level_paths[0] and not (
                min(3, levels[0]["grid"][0] * levels[0]["grid"][1])
                <= sel["sampled_cells"]
                <= levels[0]["grid"][0] * levels[0]["grid"][1]
            ):
                n_cells = levels[0]["grid"][0] * levels[0]["grid"][1]
                self.add(
                    "temporal.selection",
                    "4.3",
                    f"sampled_cells {sel['sampled_cells']}: auto samples at least 3 level-0 cells, or all {n_cells} when fewer",
                    tkey,
                )
            elif temporal.encoding == "star-delta" and sel["ratio"] > 0.85 + 1e-9:
                self.add(
                    "temporal.selection",
                    "4.3",
                    f"auto kept star-delta at ratio {sel['ratio']} > 0.85",
                    tkey,
                )
            elif temporal.encoding == "none" and sel["ratio"] <= 0.85 - 1e-9:
                self.add(
                    "temporal.selection",
                    "4.3",
                    f"auto chose none at ratio {sel['ratio']} <= 0.85",
                    tkey,
                    "warning",
                )
        if sel is not None and dtype not in DELTA_DTYPES:
            self.add(
                "temporal.selection",
                "4.3",
                f"auto applies to uint8 and uint16 only; a {dtype} store carries no selection",
                tkey,
                "warning",
            )
        if temporal.encoding == "none":
            for key in ("anchor_interval", "anchor_indices", "delta_reference"):
                if key in rt:
                    self.add(
                        "temporal.none", "4.1", f"{key} must be absent when encoding is none", tkey
                    )
            return
        if dtype not in DELTA_DTYPES:
            self.add(
                "temporal.dtype",
                "4.1",
                f"star-delta is valid only for uint8 and uint16, data is {dtype}",
                tkey,
            )
        k = temporal.anchor_interval or 0
        if k < 1:
            self.add(
                "temporal.anchor_interval", "4.2", f"anchor_interval must be >= 1, got {k}", tkey
            )
            return
        want = anchor_indices(n_time, k)
        if list(temporal.anchor_indices) != want:
            self.add(
                "temporal.anchor_indices",
                "4.2",
                f"anchor_indices must be {want}, got {list(temporal.anchor_indices)}",
                tkey,
            )
        anchors = set(temporal.anchor_indices)
        for t in range(n_time):
            if t in anchors:
                if t in temporal.delta_reference:
                    self.add(
                        "temporal.delta_reference",
                        "4.2",
                        f"anchor {t} must not have a delta_reference entry",
                        tkey,
                    )
                continue
            ref = temporal.delta_reference.get(t)
            if ref is None:
                self.add(
                    "temporal.delta_reference",
                    "4.2",
                    f"timestep {t} has no delta_reference entry",
                    tkey,
                )
            elif ref not in anchors or not 0 < abs(t - ref) < k:
                self.add(
                    "temporal.delta_reference",
                    "4.2",
                    f"timestep {t} references {ref}: not an anchor at distance 0 < d < {k}",
                    tkey,
                )
        for t in temporal.delta_reference:
            if not 0 <= t < n_time:
                self.add(
                    "temporal.delta_reference",
                    "4.2",
                    f"delta_reference names timestep {t} outside 0..{n_time - 1}",
                    tkey,
                )

    def _coord(self, path: str, dtype: str) -> Any:
        try:
            return self._coord_values(path, dtype)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            self.add(
                "coord.malformed",
                "2.2",
                f"malformed coordinate array metadata: {type(exc).__name__}: {exc}",
                f"{path}/zarr.json",
            )
            return None

    def _coord_values(self, path: str, dtype: str) -> Any:
        doc = self.doc(path)
        key = f"{path}/zarr.json"
        if doc is None:
            self.add("coord.missing", "2.2", f"coordinate array {path} is missing", key)
            return None
        dims = doc.get("dimension_names")
        ad = (doc.get("attributes") or {}).get("_ARRAY_DIMENSIONS")
        if dims is None or ad is None or list(dims) != list(ad):
            self.add(
                "array.dimension_names",
                "2.2",
                "dimension_names and _ARRAY_DIMENSIONS must both be set and equal",
                key,
            )
        name = path.rsplit("/", 1)[-1]
        if dims is not None and list(dims) != [name]:
            self.add(
                "coord.dims",
                "2.2",
                f"dimension_names of the {name} coordinate must be [{name!r}], got {list(dims)}",
                key,
            )
        comp = [c.get("name") for c in (doc.get("codecs") or [])[1:]]
        if any(c not in CODEC_NAMES for c in comp) or len(comp) > 1:
            self.add(
                "coord.codec",
                "8",
                f"coordinate arrays MAY use one of {list(CODEC_NAMES)}, got {comp}",
                key,
            )
            return None
        if doc.get("data_type") != dtype:
            self.add(
                "coord.dtype",
                "2.2",
                f"data_type must be {dtype}, got {doc.get('data_type')!r}",
                key,
            )
            return None
        shape = doc.get("shape") or [0]
        chunks = doc.get("chunk_grid", {}).get("configuration", {}).get("chunk_shape", [0])
        if list(chunks) != list(shape):
            self.add(
                "coord.chunk", "2.2", "coordinate arrays SHOULD be a single chunk", key, "warning"
            )
            return None
        raw = self.store.get(f"{path}/c/0")
        if raw is None:
            self.add("coord.chunk", "2.2", "coordinate chunk c/0 is missing", f"{path}/c/0")
            return None
        try:
            codecs = doc.get("codecs", [])
            if dtype == "string":
                data = raw
                for c in reversed(codecs[1:]):
                    data = bytes(_codecs.compressor_for(c).decode(data))
                return _codecs.vlen_utf8_decode(data)
            data = raw
            for c in reversed(codecs[1:]):
                data = bytes(_codecs.compressor_for(c).decode(data))
            values = np.frombuffer(data, dtype=np.dtype(dtype).newbyteorder("<"))
            if path.rsplit("/", 1)[-1] == "time" and len(values) > shape[0]:
                # spec 14 write order: time/c/0 is rewritten before the zarr.json files
                self.add(
                    "append.in_progress",
                    "14",
                    f"time/c/0 holds {len(values)} values, the root describes {shape[0]}: an unfinished append; re-run it",
                    f"{path}/c/0",
                    "warning",
                )
                values = values[: shape[0]]
            if len(values) != shape[0]:
                raise ValueError(f"{len(values)} values, expected {shape[0]}")
            return values
        except Exception as exc:
            self.add("coord.decode", "2.2", f"cannot decode: {exc}", f"{path}/c/0")
            return None

    def _check_coords(self, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
        band_names = [b.name for b in attrs.bands]
        for lv in levels:
            path = lv["path"]
            times = self._coord(f"{path}/time", "int64")
            if times is not None:
                rendered = [format_time(int(t)) for t in times]
                if len(rendered) != len(attrs.times):
                    self.add(
                        "mirror.times",
                        "3.5",
                        f"time has {len(rendered)} values, chronozarr.times {len(attrs.times)}",
                        f"{path}/time",
                    )
                else:
                    for i, (a, b) in enumerate(zip(rendered, attrs.times, strict=True)):
                        try:
                            same = parse_time(b) == int(times[i])
                        except (TypeError, ValueError):
                            same = False
                        if not same or a != b:
                            self.add(
                                "mirror.times",
                                "2.2",
                                f"chronozarr.times[{i}] = {b!r} is not the ISO rendering of time[{i}] ({a})",
                                f"{path}/time",
                            )
                            break
                if len(times) > 1 and np.any(np.diff(times) <= 0):
                    self.add(
                        "time.order",
                        "14",
                        "time values must be strictly increasing",
                        f"{path}/time",
                    )
            bands = self._coord(f"{path}/band", "string")
            if bands is None:
                bdoc = self.doc(f"{path}/band")
                if bdoc is not None and bdoc.get("data_type") == "int32":
                    bands = None  # integer band coordinate: allowed, no name mirror
            elif list(bands) != band_names:
                self.add(
                    "mirror.band_names",
                    "2.2",
                    f"band coordinate {list(bands)} differs from band names {band_names}",
                    f"{path}/band",
                )
            h, w = lv["shape"][2:]
            for axis, n in (("y", h), ("x", w)):
                values = self._coord(f"{path}/{axis}", "float64")
                if values is not None and len(values) != n:
                    self.add(
                        "coord.length",
                        "2.2",
                        f"{axis} has {len(values)} values, expected {n}",
                        f"{path}/{axis}",
                    )
                elif values is not None and lv["transform"] is not None:
                    a, _b, c, _d, e, f = (float(v) for v in lv["transform"])
                    idx = np.arange(n) + 0.5
                    want = (f + e * idx) if axis == "y" else (c + a * idx)
                    if not np.allclose(values, want, rtol=0, atol=abs(a) * 1e-6):
                        self.add(
                            "coord.centres",
                            "2.2",
                            f"{axis} values are not the pixel centres of the level transform",
                            f"{path}/{axis}",
                        )
            self.count("coordinates", 4)
        self._check_root_coords(attrs, band_names)

    def _check_root_coords(self, attrs: RootAttrs, band_names: list[str]) -> None:
        """Root-level time and band, when present, mirror chronozarr.times and band_names like
        every level's (root_coordinates; spec 2.2, 3.5). Stores without them are conforming."""
        if self.doc("time") is not None:
            times = self._coord("time", "int64")
            if times is not None and [format_time(int(t)) for t in times] != list(attrs.times):
                self.add(
                    "mirror.times",
                    "2.2",
                    "root-level time differs from chronozarr.times (it must equal every level's)",
                    "time",
                )
        if self.doc("band") is not None:
            bands = self._coord("band", "string")
            if bands is not None and list(bands) != band_names:
                self.add(
                    "mirror.band_names",
                    "2.2",
                    f"root-level band {list(bands)} differs from band names {band_names}",
                    "band",
                )

    def _check_volatility(self, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
        path = attrs.volatility_path
        if not path:
            return
        info = self._array(path, allowed=("float32",), dtype_section="5")
        if info is None:
            return
        key = f"{path}/zarr.json"
        if info.chunk_shape == info.shape and not info.sharded:
            raw = self.store.get(f"{path}/c/" + "/".join("0" * len(info.shape)))
            try:
                values = (
                    None
                    if raw is None
                    else _codecs.ChunkCodec(info.codecs, "float32", info.shape).decode(raw)
                )
            except Exception as exc:
                self.add("volatility.decode", "5", f"cannot decode: {exc}", f"{path}/c/0/0")
                values = None
            if values is not None and not np.all(
                np.isfinite(values) & (values >= 0) & (values <= 1)
            ):
                self.add(
                    "volatility.range",
                    "5",
                    f"volatility is clipped to [0, 1]; found {values[~(np.isfinite(values) & (values >= 0) & (values <= 1))][:3].tolist()}",
                    f"{path}/c/0/0",
                )
        if levels[0]["path"] == self.level_paths[0] and list(info.shape) != levels[0]["grid"]:
            self.add(
                "volatility.shape",
                "5",
                f"shape {list(info.shape)} must be level 0's grid {levels[0]['grid']}",
                key,
            )
        if info.chunk_shape != info.shape:
            self.add("volatility.chunk", "5", "volatility must be a single chunk", key)
        self.volatility_info = info

    def _n_shards(self, lv: dict[str, Any]) -> int:
        info: ArrayInfo = lv["info"]
        rows, cols = lv["grid"]
        return math.ceil(info.shape[0] / info.chunk_shape[0]) * rows * cols

    def _in_grid(self, sk: str, lv: dict[str, Any]) -> bool:
        """True when ``sk`` is "<t_shard>/<row>/<col>" inside the level's shard grid (7.3)."""
        parts = sk.split("/")
        if len(parts) != 3 or not all(p.isdigit() and str(int(p)) == p for p in parts):
            return False
        info: ArrayInfo = lv["info"]
        ts, r, c = (int(p) for p in parts)
        rows, cols = lv["grid"]
        return ts < math.ceil(info.shape[0] / info.chunk_shape[0]) and r < rows and c < cols

    def _expected_shards(self, lv: dict[str, Any]) -> list[str]:
        info: ArrayInfo = lv["info"]
        st = info.chunk_shape[0]
        n_ts = math.ceil(info.shape[0] / st)
        rows, cols = lv["grid"]
        return [f"{ts}/{r}/{c}" for ts in range(n_ts) for r in range(rows) for c in range(cols)]

    def _listing(self) -> dict[str, int] | None:
        if not hasattr(self, "_objects"):
            try:
                self._objects: dict[str, int] | None = dict(self.store.list(""))
            except Exception:
                self._objects = None
        return self._objects

    def _check_shard_bytes(self, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
        sharded = levels[0]["info"].sharded
        key = "zarr.json#chronozarr.shard_bytes"
        if attrs.shard_bytes is None:
            return
        if not sharded:
            self.add("shard_bytes.unsharded", "7.3", "shard_bytes is for sharded stores only", key)
            return
        if not isinstance(attrs.shard_bytes, Mapping) or not all(
            isinstance(v, Mapping)
            and all(isinstance(sk, str) and _is_count(n) for sk, n in v.items())
            for v in attrs.shard_bytes.values()
        ):
            self.add(
                "shard_bytes.malformed",
                "7.3",
                "shard_bytes must map level paths to {'<t_shard>/<row>/<col>': byte length}",
                key,
            )
            return
        for lvl in sorted(set(attrs.shard_bytes) - set(self.level_paths)):
            self.add(
                "shard_bytes.exists",
                "7.3",
                f"shard_bytes lists level {lvl!r}, which is not a level of the store",
                key,
            )
        listing = self._listing()
        for lv in levels:
            listed = attrs.shard_bytes.get(lv["path"], {})
            if self._n_shards(lv) <= _MAX_SHARDS:
                keys = self._expected_shards(lv)
            else:  # a grid too large to enumerate (or a shape gone wrong): the listed ones
                self.add(
                    "shard_bytes.unchecked",
                    "7.3",
                    f"level {lv['path']}: {self._n_shards(lv)} shards; only listed ones checked",
                    key,
                    "warning",
                )
                keys = sorted(sk for sk in listed if self._in_grid(sk, lv))
            for sk in keys:
                obj = f"{lv['path']}/{attrs.variable}/c/" + sk.replace("/", "/0/", 1)
                size = listing.get(obj) if listing is not None else self.store.size(obj)
                if sk in listed and size is None:
                    self.add(
                        "shard_bytes.exists",
                        "7.3",
                        f"lists {sk} but the shard object does not exist",
                        obj,
                    )
                elif sk in listed and size != listed[sk]:
                    if self._index_at(obj, listed[sk], lv["info"]):
                        # an unfinished append rewrote the trailing shard keeping its old bytes,
                        # old index included: the listed length still locates a valid index
                        self.add(
                            "append.in_progress",
                            "14",
                            f"shard {sk} has {size} bytes; shard_bytes lists {listed[sk]}, which still locates a valid index: an unfinished append; re-run it",
                            obj,
                            "warning",
                        )
                    else:
                        self.add(
                            "shard_bytes.size",
                            "7.3",
                            f"lists {listed[sk]} bytes for {sk}, the object has {size}",
                            obj,
                        )
                elif sk not in listed and size is not None:
                    self.add(
                        "shard_bytes.missing", "7.3", f"shard {sk} exists but is not listed", obj
                    )
                self.count("shards")
            extra = [sk for sk in listed if not self._in_grid(sk, lv)]
            for sk in sorted(extra):
                self.add("shard_bytes.exists", "7.3", f"lists {sk}, outside the shard grid", key)

    def _index_at(self, key: str, length: int, info: ArrayInfo) -> bool:
        """True when the bytes ending at ``length`` are a shard index with a valid crc32c."""
        n = info.chunk_shape[0] // info.inner_chunk_shape[0]
        with_crc = any(c.get("name") == "crc32c" for c in info.index_codecs)
        nbytes = _codecs.index_nbytes(n, with_crc)
        if not with_crc or length < nbytes:
            return False
        raw = self.store.get_range(key, length - nbytes, length)
        try:
            _codecs.parse_index(raw or b"", n, with_crc=True, where=key)
        except ChronozarrError:
            return False
        return True

    def _check_consolidated(self) -> None:
        for path, entry in self.consolidated.items():
            if not isinstance(entry, Mapping):
                self.add(
                    "consolidated.stale",
                    "3.1",
                    f"consolidated entry for {path} is not a metadata object",
                    "zarr.json#consolidated_metadata",
                )
                continue
            doc = self.disk_doc(path)
            if doc is None:
                self.add(
                    "consolidated.stale",
                    "3.1",
                    f"consolidated metadata lists {path} which has no zarr.json",
                    f"{path}/zarr.json",
                )
                continue
            a = {k: v for k, v in entry.items() if k != "consolidated_metadata"}
            b = {k: v for k, v in doc.items() if k != "consolidated_metadata"}
            if a != b and _grown_along_time(a, b):
                self.add(
                    "append.in_progress",
                    "14",
                    f"{path}/zarr.json has {b['shape'][0]} timesteps, the root describes {a['shape'][0]}: an unfinished append; re-run it",
                    f"{path}/zarr.json",
                    "warning",
                )
            elif a != b:
                self.add(
                    "consolidated.stale",
                    "3.1",
                    f"consolidated entry for {path} differs from its zarr.json",
                    f"{path}/zarr.json",
                )

    def _check_dotfiles(self) -> None:
        listing = self._listing()
        if listing is None:
            return
        for key in listing:
            base = key.rsplit("/", 1)[-1]
            if base in (".zarray", ".zattrs", ".zgroup", ".zmetadata"):
                self.add("hosting.dotfile", "9", f"Zarr v2 dotfile {base} must not exist", key)
        self.count("objects", len(listing))

    # -- deep ------------------------------------------------------------------------------------

    def _deep(self, attrs: RootAttrs, levels: list[dict[str, Any]]) -> None:
        from chronozarr.reader import Reader

        reader = Reader(self.store, self.doc("") or {}, cache_bytes=512 << 20)
        n_time = reader.n_time
        temporal = attrs.temporal
        if temporal.encoding == "star-delta":
            vol_anchors, vol_refs = set(temporal.anchor_indices), dict(temporal.delta_reference)
        else:
            a, r = schedule(n_time, 6)
            vol_anchors, vol_refs = set(a), r
        lv0 = reader.levels[0]
        rows0, cols0 = lv0.grid
        vol = np.zeros((rows0, cols0), dtype=np.float32)
        try:
            for r in range(rows0):
                for c in range(cols0):
                    total, count = 0.0, 0
                    for t in range(n_time):
                        values = reader.read_cell(t, r, c, 0)
                        self.count("chunks decoded")
                        if reader.has_mask:
                            m = reader.plane_cell(attrs.mask_variable, t, r, c, 0)
                            if m.size and int(m.max()) > 1:
                                self.add(
                                    "mask.values",
                                    "2.4",
                                    f"mask values must be 0 or 1 (t={t}, cell {r},{c})",
                                    f"0/{attrs.mask_variable}",
                                )
                        if t not in vol_anchors and t in vol_refs:
                            total += abs_diff_sum(values, reader.read_cell(vol_refs[t], r, c, 0))
                            count += values.size
                    vol[r, c] = volatility_value(total, count)
            stored = reader.volatility()
            if stored is not None and stored.shape == vol.shape:
                bad = ~np.isclose(stored, vol, rtol=1e-5, atol=1e-7)
                if bad.any() and temporal.encoding == "none":
                    # the nominal schedule of a none store is the writer's choice (default 6)
                    # and is not recorded (spec 5): accept any anchor interval that explains it
                    vol, bad = self._none_volatility(reader, stored, vol, bad)
                if bad.any():
                    r, c = (int(v) for v in np.argwhere(bad)[0])
                    self.add(
                        "volatility.value",
                        "5",
                        f"cell ({r}, {c}) stores {stored[r, c]}, recomputed {vol[r, c]} ({int(bad.sum())} cells differ)",
                        "volatility/c/0/0",
                        # a warning: readers use it only to order prefetch (spec 5); a none
                        # store's schedule is not recorded; an unfinished append rewrites it
                        "warning",
                    )
            for k in range(1, len(reader.levels)):
                self._deep_level(reader, k)
        except ChronozarrError as exc:
            self.add("deep.decode", "10", f"decoding failed: {exc}", "data")

    @staticmethod
    def _cell_volatility(reader: Any, r: int, c: int, refs: Mapping[int, int]) -> np.float32:
        total, count = 0.0, 0
        for t, a in refs.items():
            values = reader.read_cell(t, r, c, 0)
            total += abs_diff_sum(values, reader.read_cell(a, r, c, 0))
            count += values.size
        return volatility_value(total, count)

    def _none_volatility(
        self, reader: Any, stored: np.ndarray, vol: np.ndarray, bad: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Try every anchor interval on the first differing cell, then the whole grid."""
        r0, c0 = (int(v) for v in np.argwhere(bad)[0])
        for k in range(1, reader.n_time + 1):
            refs = schedule(reader.n_time, k)[1]
            one = self._cell_volatility(reader, r0, c0, refs)
            if not np.isclose(stored[r0, c0], one, rtol=1e-5, atol=1e-7):
                continue
            cand = np.array(
                [
                    [self._cell_volatility(reader, r, c, refs) for c in range(vol.shape[1])]
                    for r in range(vol.shape[0])
                ],
                dtype=np.float32,
            ).reshape(vol.shape)
            cand_bad = ~np.isclose(stored, cand, rtol=1e-5, atol=1e-7)
            if not cand_bad.any():
                return cand, cand_bad
        return vol, bad

    def _deep_level(self, reader: Any, k: int) -> None:
        """Recompute level k from level k-1 and compare exactly (spec 6, 2.4, 2.5)."""
        lv, prev = reader.levels[k], reader.levels[k - 1]
        cs = reader.chunk_size(k)
        rows, cols = lv.grid
        ph, pw = prev.shape[-2:]
        prow, pcol = prev.grid
        mv, cv = reader.attrs.mask_variable, reader.attrs.coverage_variable
        reported = set()
        for r in range(rows):
            for c in range(cols):
                y0, x0 = 2 * r * cs, 2 * c * cs
                y1, x1 = min(y0 + 2 * cs, ph), min(x0 + 2 * cs, pw)
                for t in range(reader.n_time):
                    vals = np.empty((len(reader.bands), y1 - y0, x1 - x0), dtype=reader.dtype)
                    mask = np.empty((y1 - y0, x1 - x0), np.uint8) if mv else None
                    cov = np.empty((y1 - y0, x1 - x0), np.uint8) if cv else None
                    for rr in range(2 * r, min(2 * r + 2, prow)):
                        for cc in range(2 * c, min(2 * c + 2, pcol)):
                            ya, xa = rr * cs - y0, cc * cs - x0
                            part = reader.read_cell(t, rr, cc, k - 1)
                            vals[:, ya : ya + part.shape[1], xa : xa + part.shape[2]] = part
                            if mask is not None:
                                mask[ya : ya + part.shape[1], xa : xa + part.shape[2]] = (
                                    reader.plane_cell(mv, t, rr, cc, k - 1)
                                )
                            if cov is not None:
                                cov[ya : ya + part.shape[1], xa : xa + part.shape[2]] = (
                                    reader.plane_cell(cv, t, rr, cc, k - 1)
                                )
                    want = block_mean(vals, validity(vals, reader.nodata, mask), reader.nodata)
                    got = reader.read_cell(t, r, c, k)
                    self.count("chunks decoded")
                    same = np.array_equal(want, got, equal_nan=want.dtype.kind == "f")
                    if not same and ("data", k) not in reported:
                        reported.add(("data", k))
                        self.add(
                            "pyramid.mean",
                            "6",
                            f"level {k} cell ({r}, {c}) t={t} is not the block mean of level {k - 1}",
                            f"{lv.path}/{reader.attrs.variable}",
                        )
                    if (
                        mask is not None
                        and not np.array_equal(mask_reduce(mask), reader.plane_cell(mv, t, r, c, k))
                        and ("mask", k) not in reported
                    ):
                        reported.add(("mask", k))
                        self.add(
                            "pyramid.mask",
                            "2.4",
                            f"level {k} mask cell ({r}, {c}) t={t} is not the 2x2 maximum of level {k - 1}",
                            f"{lv.path}/{mv}",
                        )
                    if (
                        cov is not None
                        and not np.array_equal(
                            coverage_reduce(cov), reader.plane_cell(cv, t, r, c, k)
                        )
                        and ("coverage", k) not in reported
                    ):
                        reported.add(("coverage", k))
                        self.add(
                            "pyramid.coverage",
                            "2.5",
                            f"level {k} coverage cell ({r}, {c}) t={t} is not (sum + 2) // 4 of level {k - 1}",
                            f"{lv.path}/{cv}",
                        )


def _grown_along_time(root_view: Mapping[str, Any], disk: Mapping[str, Any]) -> bool:
    """True when ``disk`` equals ``root_view`` but for a longer time axis (an unfinished append)."""
    try:
        if disk["shape"][0] <= root_view["shape"][0] or disk["shape"][1:] != root_view["shape"][1:]:
            return False
    except (KeyError, TypeError, IndexError):
        return False
    a, b = json.loads(json.dumps(root_view)), json.loads(json.dumps(disk))
    a["shape"] = b["shape"]
    if a.get("dimension_names") == ["time"]:  # the time coordinate is one chunk of the new length
        a["chunk_grid"] = b.get("chunk_grid")
    return a == b


def validate(path_or_url: str | os.PathLike[str], deep: bool = False, **options: Any) -> Report:
    """Check a store against chronozarr v0.2. ``report.ok`` is False when any error is found.

    ``deep=True`` decodes every chunk and recomputes the pyramid and the volatility.
    """
    store = (
        path_or_url
        if hasattr(path_or_url, "get_range")
        else open_store_bytes(path_or_url, **options)
    )
    if store.get("zarr.json") is None:
        raise StoreNotFoundError(f"no store at {store.url}: zarr.json not found")
    return _Validator(store, deep).run()

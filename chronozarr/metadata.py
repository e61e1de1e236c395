"""The one metadata model of a chronozarr store (spec 2, 3, 4.1, 7, 8).

Everything that reads or writes JSON of a store goes through this module: the root ``chronozarr``
block with its mirrors, the ndpyramid ``multiscales`` list, level group attributes, and the
zarr.json documents of every array. Writer, append, reader and validator share it, so there is
exactly one parser and one serializer of each document.

Parsing is strict where the reader needs a value (a missing or malformed key raises
``CorruptStoreError`` naming the key) and tolerant of extra keys (forward compatibility).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError, UnsupportedError

__all__ = [
    "CODEC_NAMES",
    "DTYPES",
    "SPEC_VERSION",
    "ArrayInfo",
    "Band",
    "LevelInfo",
    "RootAttrs",
    "Temporal",
    "codec_chain",
    "consolidated_entry",
    "coord_array_doc",
    "data_array_doc",
    "default_nodata",
    "dumps",
    "format_time",
    "group_doc",
    "level_group_attrs",
    "multiscales",
    "parse_time",
    "parse_times",
    "plane_array_doc",
    "root_doc",
    "volatility_array_doc",
]

SPEC_VERSION = "0.2.0"
DTYPES = ("uint8", "uint16", "int16", "float32")  # spec 2.3
DELTA_DTYPES = ("uint8", "uint16")  # spec 4.1: star-delta only for these
CODEC_NAMES = ("zstd", "gzip", "blosc")  # spec 8
BLOSC_CNAMES = ("zstd", "lz4")
BLOSC_SHUFFLES = ("shuffle", "noshuffle")
TIME_UNITS = "milliseconds since 1970-01-01T00:00:00"

_EPSG_RE = re.compile(r"^EPSG:(\d+)$", re.IGNORECASE)


def dumps(doc: Mapping[str, Any]) -> bytes:
    """Serialize a zarr.json document (indented, UTF-8, NaN refused)."""
    return json.dumps(doc, indent=2, allow_nan=False).encode("utf-8")


def default_nodata(dtype: str) -> float | int | None:
    """Writer default nodata (spec 2.3): 0 for uint8 and uint16, null for int16 and float32."""
    return 0 if dtype in ("uint8", "uint16") else None


# --- time -------------------------------------------------------------------------------------


def parse_time(value: Any) -> int:
    """Milliseconds since the epoch (UTC) of a datetime, numpy datetime64 or ISO-8601 string."""
    if isinstance(value, np.datetime64):
        return int(value.astype("datetime64[ms]").astype(np.int64))
    if hasattr(value, "to_pydatetime"):  # pandas Timestamp
        value = value.to_pydatetime()
    if isinstance(value, _dt.datetime):
        dt = value
    elif isinstance(value, _dt.date):
        dt = _dt.datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        dt = _dt.datetime.fromisoformat(text)
    else:
        raise TypeError(f"cannot read {value!r} as a time")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=_dt.UTC)
    delta = dt - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
    return (delta.days * 86_400 + delta.seconds) * 1000 + delta.microseconds // 1000


def parse_times(times: Any, expected: int) -> list[int]:
    """Milliseconds of ``expected`` strictly increasing times (encode and append share the rule).

    Raises ValueError with a message meant to follow the argument name ``times``.
    """
    if isinstance(times, str) or not hasattr(times, "__len__") or len(times) != expected:
        got = 0 if isinstance(times, str) or not hasattr(times, "__len__") else len(times)
        raise ValueError(f"expected {expected} times (data axis 0), got {got}")
    try:
        values = [parse_time(t) for t in times]
    except (TypeError, ValueError) as exc:
        raise ValueError(f"cannot read a time: {exc}") from exc
    for i in range(1, len(values)):
        if values[i] <= values[i - 1]:
            raise ValueError(
                f"must be strictly increasing: times[{i}] = {format_time(values[i])} is not "
                f"after times[{i - 1}] = {format_time(values[i - 1])}"
            )
    return values


def format_time(ms: int) -> str:
    """ISO-8601 rendering of a time value (spec 2.2, 3.9): ``2024-01-01T00:00:00Z``.

    Fractional seconds appear only when non-zero (milliseconds).
    """
    dt = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC) + _dt.timedelta(milliseconds=int(ms))
    # not strftime("%Y"): glibc does not zero-pad years below 1000, and ISO-8601 needs 4 digits
    text = (
        f"{dt.year:04d}-{dt.month:02d}-{dt.day:02d}T{dt.hour:02d}:{dt.minute:02d}:{dt.second:02d}"
    )
    if dt.microsecond:
        text += f".{dt.microsecond // 1000:03d}"
    return text + "Z"


# --- band objects (spec 3.6) ----------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """One entry of chronozarr.bands. ``scale``/``offset`` None means absent (reads as 1 and 0)."""

    name: str
    common_name: str | None = None
    scale: float | None = None
    offset: float | None = None
    units: str | None = None

    @classmethod
    def from_json(cls, obj: Any, key: str = "chronozarr.bands") -> Band:
        """Read a band object, or the v0.1 string form as ``{name}`` (spec 3.6, 10.1)."""
        if isinstance(obj, str):
            return cls(name=obj)
        if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str):
            raise CorruptStoreError(f"{key}: expected a band name or an object with 'name'")
        for num in ("scale", "offset"):
            if obj.get(num) is not None and not isinstance(obj[num], int | float):
                raise CorruptStoreError(f"{key}.{num}: expected a number, got {obj[num]!r}")
        return cls(
            name=obj["name"],
            common_name=obj.get("common_name"),
            scale=None if obj.get("scale") is None else float(obj["scale"]),
            offset=None if obj.get("offset") is None else float(obj["offset"]),
            units=obj.get("units"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.common_name is not None:
            out["common_name"] = self.common_name
        if self.scale is not None:
            out["scale"] = self.scale
        if self.offset is not None:
            out["offset"] = self.offset
        if self.units is not None:
            out["units"] = self.units
        return out

    @property
    def effective_scale(self) -> float:
        return 1.0 if self.scale is None else self.scale

    @property
    def effective_offset(self) -> float:
        return 0.0 if self.offset is None else self.offset


# --- temporal block (spec 4) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Temporal:
    """chronozarr.temporal. ``delta_reference`` maps timestep -> anchor index."""

    encoding: str
    anchor_interval: int | None = None
    anchor_indices: tuple[int, ...] = ()
    delta_reference: Mapping[int, int] = field(default_factory=dict)
    selection: Mapping[str, Any] | None = None
    has_encoding_key: bool = True  # False for v0.1 stores (no "encoding" key, star-delta)

    @classmethod
    def from_json(cls, obj: Any) -> Temporal:
        key = "chronozarr.temporal"
        if not isinstance(obj, Mapping):
            raise CorruptStoreError(f"{key}: expected an object")
        has_key = "encoding" in obj
        encoding = obj.get("encoding", "star-delta")  # spec 13: a v0.1 store is star-delta
        if encoding not in ("none", "star-delta"):
            raise UnsupportedError(
                f"{key}.encoding: {encoding!r} is not supported (expected 'none' or 'star-delta')"
            )
        selection = obj.get("selection")
        if encoding == "none":
            return cls(encoding="none", selection=selection, has_encoding_key=has_key)
        try:
            interval = int(obj["anchor_interval"])
            anchors = tuple(int(a) for a in obj["anchor_indices"])
            refs = {int(k): int(v) for k, v in obj.get("delta_reference", {}).items()}
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CorruptStoreError(f"{key}: malformed star-delta block ({exc!r})") from exc
        return cls(
            encoding="star-delta",
            anchor_interval=interval,
            anchor_indices=anchors,
            delta_reference=refs,
            selection=selection,
            has_encoding_key=has_key,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.has_encoding_key:
            out["encoding"] = self.encoding
        if self.encoding == "star-delta":
            out["anchor_interval"] = self.anchor_interval
            out["anchor_indices"] = list(self.anchor_indices)
            out["delta_reference"] = {str(k): v for k, v in sorted(self.delta_reference.items())}
        if self.selection is not None:
            out["selection"] = dict(self.selection)
        return out

    def reference(self, t: int) -> int | None:
        """The anchor timestep t is decoded against, or None when t holds true values (spec 4.2)."""
        if self.encoding == "none" or t in self._anchor_set:
            return None
        try:
            return self.delta_reference[t]
        except KeyError:
            raise CorruptStoreError(
                f"chronozarr.temporal.delta_reference: no entry for timestep {t}"
            ) from None

    @property
    def _anchor_set(self) -> frozenset[int]:
        cached = self.__dict__.get("_anchors_cache")
        if cached is None:
            cached = frozenset(self.anchor_indices)
            object.__setattr__(self, "_anchors_cache", cached)
        return cached


# --- levels mirror (spec 3.7) --------------------------------------------------------------------


@dataclass(frozen=True)
class LevelInfo:
    """One entry of chronozarr.levels: path, resolution, transform, shape, grid."""

    path: str
    resolution: float
    transform: tuple[float, ...]
    shape: tuple[int, ...]
    grid: tuple[int, int]

    @classmethod
    def from_json(cls, obj: Any, i: int) -> LevelInfo:
        key = f"chronozarr.levels[{i}]"
        try:
            level = cls(
                path=str(obj["path"]),
                resolution=float(obj["resolution"]),
                transform=tuple(float(v) for v in obj["transform"]),
                shape=tuple(int(v) for v in obj["shape"]),
                grid=tuple(int(v) for v in obj["grid"]),  # type: ignore[arg-type]
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise CorruptStoreError(f"{key}: malformed level entry ({exc!r})") from exc
        # spec 3.7: shape mirrors the (time, band, y, x) data array, grid the cell grid
        if len(level.shape) != 4 or any(v < 0 for v in level.shape):
            raise CorruptStoreError(
                f"{key}.shape: expected 4 non-negative integers (time, band, y, x), "
                f"got {list(level.shape)}"
            )
        if len(level.grid) != 2 or any(v < 0 for v in level.grid):
            raise CorruptStoreError(
                f"{key}.grid: expected 2 non-negative integers, got {list(level.grid)}"
            )
        if len(level.transform) != 6:
            raise CorruptStoreError(
                f"{key}.transform: expected 6 numbers, got {list(level.transform)}"
            )
        return level

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "resolution": self.resolution,
            "transform": list(self.transform),
            "shape": list(self.shape),
            "grid": list(self.grid),
        }


# --- the chronozarr block (spec 3.2, 3.9) ----------------------------------------------------------


@dataclass(frozen=True)
class RootAttrs:
    """The root ``chronozarr`` attribute block, parsed. ``extra`` keeps unknown keys verbatim."""

    spec_version: str
    variable: str
    times: tuple[str, ...]
    bands: tuple[Band, ...]
    nodata: float | int | None
    crs: str | None
    temporal: Temporal
    band_names: tuple[str, ...] | None = None
    volatility_path: str | None = None
    mask_variable: str | None = None
    coverage_variable: str | None = None
    provenance: Mapping[str, Any] | None = None
    levels: tuple[LevelInfo, ...] | None = None
    shard_bytes: Mapping[str, Mapping[str, int]] | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    bands_as_strings: bool = False  # the v0.1 form, kept on rewrite (append)

    _KNOWN = (
        "spec_version",
        "variable",
        "times",
        "bands",
        "band_names",
        "nodata",
        "crs",
        "temporal",
        "volatility_path",
        "mask_variable",
        "coverage_variable",
        "provenance",
        "levels",
        "shard_bytes",
    )

    @classmethod
    def from_json(cls, obj: Any) -> RootAttrs:
        """Parse and check the block (spec 10.1): version, encoding, required keys."""
        if not isinstance(obj, Mapping):
            raise CorruptStoreError("attributes.chronozarr: expected an object")
        version = obj.get("spec_version")
        if not isinstance(version, str):
            raise CorruptStoreError("chronozarr.spec_version: missing or not a string")
        if not (version.startswith("0.1.") or version.startswith("0.2.")):
            raise UnsupportedError(
                f"chronozarr.spec_version: {version!r} is not supported (expected 0.1.x or 0.2.x)"
            )
        temporal = Temporal.from_json(obj.get("temporal"))
        for key in ("times", "bands"):
            if not isinstance(obj.get(key), list):
                raise CorruptStoreError(f"chronozarr.{key}: missing or not a list")
        nodata = obj.get("nodata")
        if nodata is not None and (isinstance(nodata, bool) or not isinstance(nodata, int | float)):
            raise CorruptStoreError(f"chronozarr.nodata: expected a number or null, got {nodata!r}")
        levels = None
        if obj.get("levels") is not None:
            if not isinstance(obj["levels"], list):
                raise CorruptStoreError("chronozarr.levels: expected a list")
            levels = tuple(LevelInfo.from_json(v, i) for i, v in enumerate(obj["levels"]))
        band_names = obj.get("band_names")
        if band_names is not None and not isinstance(band_names, list):
            raise CorruptStoreError("chronozarr.band_names: expected a list of strings")
        shard_bytes = obj.get("shard_bytes")
        if shard_bytes is not None:
            _check_shard_bytes(shard_bytes)
        raw_bands = obj["bands"]
        return cls(
            spec_version=version,
            variable=str(obj.get("variable", "data")),
            times=tuple(str(t) for t in obj["times"]),
            bands=tuple(
                Band.from_json(b, f"chronozarr.bands[{i}]") for i, b in enumerate(raw_bands)
            ),
            band_names=None if band_names is None else tuple(str(b) for b in band_names),
            nodata=nodata,
            crs=obj.get("crs"),
            temporal=temporal,
            volatility_path=obj.get("volatility_path"),
            mask_variable=obj.get("mask_variable"),
            coverage_variable=obj.get("coverage_variable"),
            provenance=obj.get("provenance"),
            levels=levels,
            shard_bytes=obj.get("shard_bytes"),
            extra={k: v for k, v in obj.items() if k not in cls._KNOWN},
            bands_as_strings=bool(raw_bands) and all(isinstance(b, str) for b in raw_bands),
        )

    def to_json(self) -> dict[str, Any]:
        """Serialize in the key order of the spec 3.9 example."""
        out: dict[str, Any] = {
            "spec_version": self.spec_version,
            "variable": self.variable,
            "times": list(self.times),
            "bands": [b.name if self.bands_as_strings else b.to_json() for b in self.bands],
        }
        if self.band_names is not None:
            out["band_names"] = list(self.band_names)
        out["nodata"] = self.nodata
        out["crs"] = self.crs
        out["temporal"] = self.temporal.to_json()
        if self.volatility_path is not None:
            out["volatility_path"] = self.volatility_path
        if self.mask_variable is not None:
            out["mask_variable"] = self.mask_variable
        if self.coverage_variable is not None:
            out["coverage_variable"] = self.coverage_variable
        if self.provenance is not None:
            out["provenance"] = self.provenance
        if self.levels is not None:
            out["levels"] = [lv.to_json() for lv in self.levels]
        if self.shard_bytes is not None:
            out["shard_bytes"] = {
                lvl: dict(sorted(v.items(), key=lambda kv: _key_order(kv[0])))
                for lvl, v in self.shard_bytes.items()
            }
        out.update(self.extra)
        return out

    def evolve(self, **changes: Any) -> RootAttrs:
        return replace(self, **changes)


def _check_shard_bytes(value: Any) -> None:
    """shard_bytes is {level: {"ts/r/c": non-negative length}} (spec 7.3)."""
    key = "chronozarr.shard_bytes"
    if not isinstance(value, Mapping):
        raise CorruptStoreError(f"{key}: expected an object", field="shard_bytes")
    for level, shards in value.items():
        if not isinstance(shards, Mapping):
            raise CorruptStoreError(f"{key}.{level}: expected an object", field="shard_bytes")
        for name, length in shards.items():
            if isinstance(length, bool) or not isinstance(length, int) or length < 0:
                raise CorruptStoreError(
                    f"{key}.{level}.{name}: expected a byte length, got {length!r}",
                    field="shard_bytes",
                )


def _key_order(key: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in key.split("/"))
    except ValueError:
        return (1 << 62,)


def multiscales(level_paths: Sequence[str], crs: str | None) -> list[dict[str, Any]]:
    """The ndpyramid multiscales list (spec 3.4): path and crs per dataset, no pixels_per_tile."""
    return [
        {
            "datasets": [{"path": p, "crs": crs} for p in level_paths],
            "type": "reduce",
            "metadata": {
                "method": "block_mean",
                "version": f"chronozarr {SPEC_VERSION}",
                "args": [],
            },
        }
    ]


def root_doc(
    attrs: RootAttrs,
    multiscales_attr: Any,
    consolidated: Mapping[str, Any] | None,
    other_attrs: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The root zarr.json: group with multiscales + chronozarr and consolidated metadata (3.1)."""
    attributes: dict[str, Any] = {"multiscales": multiscales_attr, "chronozarr": attrs.to_json()}
    if other_attrs:
        for k, v in other_attrs.items():
            if k not in attributes:
                attributes[k] = v
    doc: dict[str, Any] = {"zarr_format": 3, "node_type": "group", "attributes": attributes}
    if consolidated is not None:
        doc["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": dict(consolidated),
        }
    return doc


def group_doc(attributes: Mapping[str, Any]) -> dict[str, Any]:
    return {"zarr_format": 3, "node_type": "group", "attributes": dict(attributes)}


def consolidated_entry(doc: Mapping[str, Any]) -> dict[str, Any]:
    """A child's entry in the root's consolidated metadata, shaped as zarr-python 3.1 writes it."""
    entry = dict(doc)
    if entry.get("node_type") == "group":
        entry["consolidated_metadata"] = {
            "kind": "inline",
            "must_understand": False,
            "metadata": {},
        }
    return entry


def level_group_attrs(crs: str | None, transform: Sequence[float], resolution: float) -> dict:
    """Level group attributes (spec 3.3): crs, transform, resolution."""
    return {"crs": crs, "transform": [float(v) for v in transform], "resolution": float(resolution)}


# --- codecs (spec 8) -------------------------------------------------------------------------------


def codec_chain(codec: str, options: Mapping[str, Any] | None, dtype: str) -> list[dict[str, Any]]:
    """The codecs list of a chunk: ``bytes`` little-endian then exactly one compressor (spec 8).

    Raises ValueError naming the option when ``codec`` or an option is not allowed.
    """
    opts = dict(options or {})
    for name, value in opts.items():
        if name in ("level", "clevel", "blocksize") and (
            isinstance(value, bool) or not isinstance(value, int | np.integer)
        ):
            raise ValueError(f"codec_options.{name}: expected an integer, got {value!r}")
    itemsize = np.dtype(dtype).itemsize
    bytes_codec: dict[str, Any] = {"name": "bytes"}
    if itemsize > 1:  # spec 2.3: a one-byte dtype has no byte order
        bytes_codec["configuration"] = {"endian": "little"}
    if codec == "zstd":
        level = int(opts.pop("level", 5))
        if not -131072 <= level <= 22:
            raise ValueError(f"codec_options.level: zstd level must be -131072..22, got {level}")
        comp = {"name": "zstd", "configuration": {"level": level, "checksum": False}}
    elif codec == "gzip":
        level = int(opts.pop("level", 5))
        if not 0 <= level <= 9:
            raise ValueError(f"codec_options.level: gzip level must be 0..9, got {level}")
        comp = {"name": "gzip", "configuration": {"level": level}}
    elif codec == "blosc":
        cname = opts.pop("cname", "zstd")
        if cname not in BLOSC_CNAMES:
            raise ValueError(f"codec_options.cname: blosc cname must be one of {BLOSC_CNAMES}")
        shuffle = opts.pop("shuffle", "shuffle")
        if shuffle not in BLOSC_SHUFFLES:
            raise ValueError(f"codec_options.shuffle: must be one of {BLOSC_SHUFFLES}")
        clevel = int(opts.pop("clevel", 5))
        if not 0 <= clevel <= 9:
            raise ValueError(f"codec_options.clevel: blosc clevel must be 0..9, got {clevel}")
        blocksize = int(opts.pop("blocksize", 0))
        comp = {
            "name": "blosc",
            "configuration": {
                "typesize": itemsize,
                "cname": cname,
                "clevel": clevel,
                "shuffle": shuffle,
                "blocksize": blocksize,
            },
        }
    else:
        raise ValueError(f"codec: {codec!r} is not allowed (expected one of {CODEC_NAMES})")
    if opts:
        raise ValueError(f"codec_options: unknown option(s) {sorted(opts)} for codec {codec!r}")
    return [bytes_codec, comp]


INDEX_CODECS = [
    {"name": "bytes", "configuration": {"endian": "little"}},
    {"name": "crc32c"},
]


def _array_doc(
    shape: Sequence[int],
    dtype: str,
    chunk_shape: Sequence[int],
    codecs: list[dict[str, Any]],
    fill_value: Any,
    dims: Sequence[str],
    attributes: Mapping[str, Any],
) -> dict[str, Any]:
    return {
        "zarr_format": 3,
        "node_type": "array",
        "shape": [int(s) for s in shape],
        "data_type": dtype,
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
        "chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}},
        "fill_value": fill_value,
        "codecs": codecs,
        "dimension_names": list(dims),
        "attributes": {"_ARRAY_DIMENSIONS": list(dims), **attributes},
    }


def _chunking(
    inner: list[int], chunk_codecs: list[dict[str, Any]], shard_time: int | None
) -> tuple[list[int], list[dict[str, Any]]]:
    """Outer chunk shape and codecs: plain, or sharding_indexed with shard_time along time (7.1)."""
    if shard_time is None:
        return inner, chunk_codecs
    outer = [int(shard_time), *inner[1:]]
    sharding = {
        "name": "sharding_indexed",
        "configuration": {
            "chunk_shape": inner,
            "codecs": chunk_codecs,
            "index_codecs": INDEX_CODECS,
            "index_location": "end",
        },
    }
    return outer, [sharding]


def data_array_doc(
    *,
    shape: Sequence[int],
    dtype: str,
    cs: int,
    codecs: list[dict[str, Any]],
    nodata: float | int | None,
    shard_time: int | None,
    crs: str | None,
    transform: Sequence[float],
) -> dict[str, Any]:
    """{level}/{variable}/zarr.json (spec 2.1, 2.3, 3.3, 7)."""
    _n_time, n_band, height, width = (int(s) for s in shape)
    outer, array_codecs = _chunking([1, n_band, cs, cs], codecs, shard_time)
    fill = 0 if nodata is None else nodata
    if dtype == "float32":
        fill = float(fill)
    attrs: dict[str, Any] = {}
    if nodata is not None:
        attrs["nodata"] = nodata
    a, b, c, d, e, f = (float(v) for v in transform)
    xs = [c, c + a * width]
    ys = [f, f + e * height]
    if crs is not None and _EPSG_RE.match(crs):
        attrs["proj:code"] = crs.upper()
    attrs["spatial:dimensions"] = ["y", "x"]
    attrs["spatial:shape"] = [height, width]
    attrs["spatial:transform"] = [a, b, c, d, e, f]
    attrs["spatial:bbox"] = [min(xs), min(ys), max(xs), max(ys)]
    match = _EPSG_RE.match(crs or "")
    if match:
        attrs["_CRS"] = {"url": f"http://www.opengis.net/def/crs/EPSG/0/{match.group(1)}"}
    return _array_doc(shape, dtype, outer, array_codecs, fill, ["time", "band", "y", "x"], attrs)


def plane_array_doc(
    *, shape: Sequence[int], cs: int, codecs: list[dict[str, Any]], shard_time: int | None
) -> dict[str, Any]:
    """{level}/mask and {level}/coverage zarr.json: uint8 (time, y, x), fill 0 (spec 2.4, 2.5)."""
    outer, array_codecs = _chunking([1, cs, cs], codecs, shard_time)
    return _array_doc(shape, "uint8", outer, array_codecs, 0, ["time", "y", "x"], {})


def coord_array_doc(name: str, length: int, dtype: str, compressor: dict[str, Any]) -> dict:
    """time/band/y/x zarr.json: a single chunk (spec 2.2)."""
    if dtype == "string":
        codecs = [{"name": "vlen-utf8", "configuration": {}}, compressor]
        fill: Any = ""
    else:
        codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, compressor]
        fill = 0 if dtype == "int64" else 0.0
    attrs: dict[str, Any] = {}
    if name == "time":
        attrs = {"units": TIME_UNITS, "calendar": "proleptic_gregorian"}
    return _array_doc([length], dtype, [max(length, 1)], codecs, fill, [name], attrs)


def volatility_array_doc(grid: Sequence[int], compressor: dict[str, Any]) -> dict[str, Any]:
    """volatility/zarr.json: float32 (rows, cols), one chunk (spec 5)."""
    codecs = [{"name": "bytes", "configuration": {"endian": "little"}}, compressor]
    return _array_doc(list(grid), "float32", list(grid), codecs, 0.0, ["row", "col"], {})


# --- parsing an array's zarr.json (spec 2.1, 7, 8, 10.2) -----------------------------------------


@dataclass(frozen=True)
class ArrayInfo:
    """What a reader needs from an array's zarr.json."""

    key: str
    shape: tuple[int, ...]
    dtype: str
    chunk_shape: tuple[int, ...]  # outer (shard) shape when sharded
    inner_chunk_shape: tuple[int, ...]
    codecs: tuple[Mapping[str, Any], ...]  # the chunk codecs (inside the shard when sharded)
    fill_value: Any
    sharded: bool
    index_location: str = "end"
    index_codecs: tuple[Mapping[str, Any], ...] = ()
    dimension_names: tuple[str, ...] | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    separator: str = "/"

    @classmethod
    def from_json(cls, doc: Any, key: str, *, allowed_dtypes: Sequence[str] = DTYPES) -> ArrayInfo:
        """Parse and check an array document; unsupported dtype/codec raises UnsupportedError."""
        try:
            return cls._from_json(doc, key, allowed_dtypes)
        except (TypeError, AttributeError, ValueError, KeyError, IndexError) as exc:
            raise CorruptStoreError(f"{key}: malformed array metadata ({exc!r})") from exc

    @classmethod
    def _from_json(cls, doc: Any, key: str, allowed_dtypes: Sequence[str]) -> ArrayInfo:
        if not isinstance(doc, Mapping) or doc.get("node_type") != "array":
            raise CorruptStoreError(f"{key}: not a Zarr v3 array document")
        try:
            shape = tuple(int(s) for s in doc["shape"])
            dtype = doc["data_type"]
            grid = doc["chunk_grid"]
            chunk_shape = tuple(int(s) for s in grid["configuration"]["chunk_shape"])
            codecs = list(doc["codecs"])
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptStoreError(f"{key}: malformed array metadata ({exc!r})") from exc
        if not isinstance(dtype, str) or dtype not in allowed_dtypes:
            raise UnsupportedError(
                f"{key}: data_type {dtype!r} is not supported (expected one of {list(allowed_dtypes)})",
                field="data_type",
            )
        if grid.get("name") != "regular":
            raise UnsupportedError(
                f"{key}: chunk_grid {grid.get('name')!r} is not supported", field="chunk_grid"
            )
        cke = doc.get("chunk_key_encoding", {"name": "default"})
        separator = "/"
        if cke.get("name") == "default":
            separator = cke.get("configuration", {}).get("separator", "/")
        elif cke.get("name") == "v2":
            separator = cke.get("configuration", {}).get("separator", ".")
        sharded = bool(codecs) and codecs[0].get("name") == "sharding_indexed"
        index_location = "end"
        index_codecs: tuple = ()
        inner = chunk_shape
        if sharded:
            conf = codecs[0].get("configuration", {})
            inner = tuple(int(s) for s in conf.get("chunk_shape", ()))
            codecs = list(conf.get("codecs", []))
            index_location = conf.get("index_location", "end")
            index_codecs = tuple(conf.get("index_codecs", ()))
            if index_location not in ("start", "end"):
                raise UnsupportedError(
                    f"{key}: index_location {index_location!r} not supported", field="shard_index"
                )
            names = [c.get("name") for c in index_codecs]
            if names not in (["bytes", "crc32c"], ["bytes"]):
                raise UnsupportedError(
                    f"{key}: shard index codecs {names} are not supported", field="shard_index"
                )
            if len(inner) != len(shape) or any(
                o % i for o, i in zip(chunk_shape, inner, strict=False)
            ):
                raise CorruptStoreError(
                    f"{key}: inner chunk_shape {inner} does not tile {chunk_shape}"
                )
        _check_chunk_codecs(codecs, key, dtype)
        return cls(
            key=key,
            shape=shape,
            dtype=dtype,
            chunk_shape=chunk_shape,
            inner_chunk_shape=inner,
            codecs=tuple(codecs),
            fill_value=doc.get("fill_value"),
            sharded=sharded,
            index_location=index_location,
            index_codecs=index_codecs,
            dimension_names=None
            if doc.get("dimension_names") is None
            else tuple(doc["dimension_names"]),
            attributes=doc.get("attributes", {}) or {},
            separator=separator,
        )

    @property
    def shard_time(self) -> int | None:
        return self.chunk_shape[0] if self.sharded else None

    @property
    def cs(self) -> int:
        """The spatial inner chunk size (spec 2.1): inner chunk_shape[-2]."""
        return self.inner_chunk_shape[-2]

    def typed_fill(self) -> Any:
        return np.array(self.fill_value if self.fill_value is not None else 0).astype(self.dtype)[
            ()
        ]


def _check_chunk_codecs(codecs: Sequence[Mapping[str, Any]], key: str, dtype: str) -> None:
    """Chunk codecs: bytes (little-endian) then at most one of zstd, gzip, blosc (spec 8)."""
    names = [c.get("name") for c in codecs]
    if not names or names[0] != "bytes":
        raise UnsupportedError(
            f"{key}: codecs {names} are not supported (expected 'bytes' first)", field="codecs"
        )
    endian = (codecs[0].get("configuration") or {}).get("endian", "little")
    if endian != "little" and np.dtype(dtype).itemsize > 1:
        raise UnsupportedError(
            f"{key}: bytes codec endian {endian!r} is not supported", field="codecs"
        )
    for c in codecs[1:]:
        name = c.get("name")
        if name not in CODEC_NAMES:
            raise UnsupportedError(
                f"{key}: codec {name!r} is not supported (expected one of {list(CODEC_NAMES)})",
                field="codecs",
            )
        if name == "blosc":
            conf = c.get("configuration", {})
            if conf.get("cname") not in BLOSC_CNAMES:
                raise UnsupportedError(
                    f"{key}: blosc cname {conf.get('cname')!r} is not supported", field="codecs"
                )
            if conf.get("shuffle") not in BLOSC_SHUFFLES:
                raise UnsupportedError(
                    f"{key}: blosc shuffle {conf.get('shuffle')!r} is not supported", field="codecs"
                )
    if len(names) > 2:
        raise UnsupportedError(
            f"{key}: codecs {names}: exactly one compressor is allowed", field="codecs"
        )


def finite_or_error(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise ValueError(f"{what}: must be finite, got {value!r}")
    return value

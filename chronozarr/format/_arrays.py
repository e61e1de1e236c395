"""Zarr v3 array documents of a store (spec 2.1-2.5, 5, 7, 8, 10.2): the codec chains, the
zarr.json of data, mask, coverage, coordinate and volatility arrays, and ``ArrayInfo``, what a
reader needs back from an array's zarr.json (unsupported data types and codecs refused)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.errors import CorruptStoreError, UnsupportedError
from chronozarr.format._common import BLOSC_CNAMES, BLOSC_SHUFFLES, CODEC_NAMES, DTYPES, TIME_UNITS
from chronozarr.format._compressors import Codec, codec_from
from chronozarr.format._crs import crs_attributes

__all__ = [
    "ArrayInfo",
    "codec_chain",
    "coord_array_doc",
    "data_array_doc",
    "plane_array_doc",
    "residuals_attribute",
    "volatility_array_doc",
]

#: The data array attribute of a star-delta store (docs/spec.md "Star-delta seen by a plain Zarr
#: reader"; decision 0040): a reader that ignores the root's temporal block still learns from the
#: array itself that most timesteps are residuals, and where the anchors are listed.
RESIDUALS_KEY = "chronozarr:temporal"

# --- codecs (spec 8) -------------------------------------------------------------------------------


def codec_chain(
    codec: str | Codec, options: Mapping[str, Any] | None, dtype: str
) -> list[dict[str, Any]]:
    """The codecs list of a chunk: ``bytes`` little-endian then exactly one compressor (spec 8).

    ``codec`` is a name with ``options`` (``encode``'s keyword form) or a compressor object
    (:mod:`chronozarr.format._compressors`). Raises ValueError naming the option when ``codec``
    or an option is not allowed.
    """
    return codec_from(codec, options).chain(dtype)


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
    # the CRS where other readers look: proj:code or proj:wkt2/proj:projjson, and GDAL's _CRS
    # (spec 3.3; docs/spec.md C16 for a CRS without an EPSG code)
    crs_attrs = crs_attributes(crs)
    attrs.update({k: v for k, v in crs_attrs.items() if k != "_CRS"})
    attrs["spatial:dimensions"] = ["y", "x"]
    attrs["spatial:shape"] = [height, width]
    attrs["spatial:transform"] = [a, b, c, d, e, f]
    attrs["spatial:bbox"] = [min(xs), min(ys), max(xs), max(ys)]
    if "_CRS" in crs_attrs:
        attrs["_CRS"] = crs_attrs["_CRS"]
    return _array_doc(shape, dtype, outer, array_codecs, fill, ["time", "band", "y", "x"], attrs)


def residuals_attribute() -> dict[str, Any]:
    """``{"chronozarr:temporal": ...}`` for each level's data array of a star-delta store: the
    same text in every store and level, so an append never rewrites it (spec 4.2, 14)."""
    return {
        RESIDUALS_KEY: {
            "encoding": "star-delta",
            "anchors": "root zarr.json: attributes.chronozarr.temporal.anchor_indices",
            "values": (
                "a timestep t not in anchor_indices holds (value[t] - value[a]) mod 2**bits of "
                "the stored dtype, a = attributes.chronozarr.temporal.delta_reference[t] "
                "(chronozarr spec 4.2): read it through a chronozarr reader"
            ),
        }
    }


def plane_array_doc(
    *, shape: Sequence[int], cs: int, codecs: list[dict[str, Any]], shard_time: int | None
) -> dict[str, Any]:
    """{level}/mask and {level}/coverage zarr.json: uint8 (time, y, x), fill 0 (spec 2.4, 2.5)."""
    outer, array_codecs = _chunking([1, cs, cs], codecs, shard_time)
    return _array_doc(shape, "uint8", outer, array_codecs, 0, ["time", "y", "x"], {})


def coord_array_doc(
    name: str, length: int, dtype: str, compressor: dict[str, Any]
) -> dict[str, Any]:
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


def _sharding(
    conf: Mapping[str, Any], shape: tuple[int, ...], chunk_shape: tuple[int, ...], key: str
) -> tuple[tuple[int, ...], list[Any], str, tuple[Mapping[str, Any], ...]]:
    """A sharding codec's configuration (spec 7): the inner chunk shape, which must tile the
    shard, the inner codecs, and the index's location and codecs (bytes, then crc32c)."""
    inner = tuple(int(s) for s in conf.get("chunk_shape", ()))
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
    if (
        len(inner) != len(shape)
        or min(inner, default=1) < 1
        or any(o % i for o, i in zip(chunk_shape, inner, strict=False))
    ):
        raise CorruptStoreError(f"{key}: inner chunk_shape {inner} does not tile {chunk_shape}")
    return inner, list(conf.get("codecs", [])), index_location, index_codecs


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
        except (
            TypeError,
            AttributeError,
            ValueError,
            KeyError,
            IndexError,
        ) as exc:  # odd JSON types: CorruptStoreError naming the key
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
        except (KeyError, TypeError, ValueError) as exc:  # missing or mistyped required keys
            raise CorruptStoreError(f"{key}: malformed array metadata ({exc!r})") from exc
        if (
            len(chunk_shape) != len(shape)
            or min(chunk_shape, default=1) < 1
            or min(shape, default=0) < 0
        ):
            # Zarr v3 regular grid: one positive chunk length per dimension (spec 2.1: cs >= 1)
            raise CorruptStoreError(
                f"{key}: chunk_shape {list(chunk_shape)} is not one positive length per"
                f" dimension of shape {list(shape)}"
            )
        if not isinstance(dtype, str) or dtype not in allowed_dtypes:
            raise UnsupportedError(
                f"{key}: data_type {dtype!r} is not supported (expected one of {list(allowed_dtypes)})",
                field="data_type",
            )
        if grid.get("name") != "regular":
            raise UnsupportedError(
                f"{key}: chunk_grid {grid.get('name')!r} is not supported", field="chunk_grid"
            )
        separator = _chunk_key_separator(doc.get("chunk_key_encoding", {"name": "default"}), key)
        sharded = bool(codecs) and codecs[0].get("name") == "sharding_indexed"
        index_location = "end"
        index_codecs: tuple[Mapping[str, Any], ...] = ()
        inner = chunk_shape
        if sharded:
            inner, codecs, index_location, index_codecs = _sharding(
                codecs[0].get("configuration", {}), shape, chunk_shape, key
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


def _chunk_key_separator(cke: Any, key: str) -> str:
    """The separator of a ``default`` chunk key encoding (Zarr v3 9.2; chronozarr spec 2 writes
    ``/``). ``v2`` keys are refused, not read as all fill: a reader that built ``c/...`` keys
    for them silently returned fill values (decision 0013)."""
    if not isinstance(cke, Mapping):
        raise CorruptStoreError(
            f"{key}: chunk_key_encoding must be an object, got {cke!r}", field="chunk_key_encoding"
        )
    if cke.get("name") != "default":
        raise UnsupportedError(
            f"{key}: chunk_key_encoding {cke.get('name')!r} is not supported (expected 'default')",
            field="chunk_key_encoding",
        )
    conf = cke.get("configuration") or {}
    separator = conf.get("separator", "/") if isinstance(conf, Mapping) else None
    if separator not in ("/", "."):
        raise CorruptStoreError(
            f"{key}: chunk key separator {separator!r} is not '/' or '.'",
            field="chunk_key_encoding",
        )
    return str(separator)


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

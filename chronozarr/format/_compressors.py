"""The chunk compressors of spec 8 as typed, frozen values (as zarr-python's ``zarr.codecs``).

A store's data, mask and coverage chunks are ``bytes`` (little-endian) then exactly one
compressor: ``zstd`` (level; checksum false), ``gzip`` (level) or ``blosc`` (cname ``zstd`` or
``lz4``, clevel, shuffle ``shuffle`` or ``noshuffle``, typesize, blocksize). Each is one frozen
dataclass here, checked when it is made, so an out-of-range level is refused where it is written
(``ZstdCodec(level=30)``), not when the first chunk is encoded. :func:`codec_from` builds one from
``encode``'s ``codec`` name and ``codec_options`` mapping (the keyword API), with the messages
that name the option (``codec_options.level: ...``); :meth:`chain` gives the codecs list of an
array's zarr.json for a data type (blosc's ``typesize`` is the item size).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeAlias

import numpy as np

from chronozarr.format._common import BLOSC_CNAMES, BLOSC_SHUFFLES, CODEC_NAMES

__all__ = ["BloscCodec", "Codec", "GzipCodec", "ZstdCodec", "codec_from"]


def _integer(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValueError(f"codec_options.{name}: expected an integer, got {value!r}")


def _bytes_codec(dtype: str) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "bytes"}
    if np.dtype(dtype).itemsize > 1:  # spec 2.3: a one-byte dtype has no byte order
        out["configuration"] = {"endian": "little"}
    return out


class _Compressor(ABC):
    """What every compressor gives: its name, its options and the chunk codec chain (an
    abstract base: each codec of spec 8 implements the two abstract methods)."""

    name: ClassVar[str]

    @abstractmethod
    def compressor(self, dtype: str) -> dict[str, Any]:
        """The compressor's entry of an array's ``codecs`` (spec 8) for ``dtype``."""

    @abstractmethod
    def options(self) -> dict[str, Any]:
        """``encode``'s ``codec_options`` that make this compressor."""

    def chain(self, dtype: str) -> list[dict[str, Any]]:
        """The codecs list of a chunk of ``dtype``: ``bytes`` then this compressor (spec 8)."""
        return [_bytes_codec(dtype), self.compressor(dtype)]


@dataclass(frozen=True)
class ZstdCodec(_Compressor):
    """zstd at ``level`` (-131072..22; default 5), without a frame checksum."""

    level: int = 5
    name: ClassVar[str] = "zstd"

    def __post_init__(self) -> None:
        _integer("level", self.level)
        if not -131072 <= self.level <= 22:
            raise ValueError(
                f"codec_options.level: zstd level must be -131072..22, got {self.level}"
            )

    def compressor(self, dtype: str) -> dict[str, Any]:
        return {"name": "zstd", "configuration": {"level": int(self.level), "checksum": False}}

    def options(self) -> dict[str, Any]:
        return {"level": int(self.level)}


@dataclass(frozen=True)
class GzipCodec(_Compressor):
    """gzip (zlib) at ``level`` (0..9; default 5)."""

    level: int = 5
    name: ClassVar[str] = "gzip"

    def __post_init__(self) -> None:
        _integer("level", self.level)
        if not 0 <= self.level <= 9:
            raise ValueError(f"codec_options.level: gzip level must be 0..9, got {self.level}")

    def compressor(self, dtype: str) -> dict[str, Any]:
        return {"name": "gzip", "configuration": {"level": int(self.level)}}

    def options(self) -> dict[str, Any]:
        return {"level": int(self.level)}


@dataclass(frozen=True)
class BloscCodec(_Compressor):
    """blosc with ``cname`` (zstd, lz4), ``clevel`` (0..9), ``shuffle`` (shuffle, noshuffle) and
    ``blocksize`` (0: blosc's choice); ``typesize`` is the item size of the array's dtype."""

    cname: str = "zstd"
    clevel: int = 5
    shuffle: str = "shuffle"
    blocksize: int = 0
    name: ClassVar[str] = "blosc"

    def __post_init__(self) -> None:
        _integer("clevel", self.clevel)
        _integer("blocksize", self.blocksize)
        if self.cname not in BLOSC_CNAMES:
            raise ValueError(f"codec_options.cname: blosc cname must be one of {BLOSC_CNAMES}")
        if self.shuffle not in BLOSC_SHUFFLES:
            raise ValueError(f"codec_options.shuffle: must be one of {BLOSC_SHUFFLES}")
        if not 0 <= self.clevel <= 9:
            raise ValueError(f"codec_options.clevel: blosc clevel must be 0..9, got {self.clevel}")

    def compressor(self, dtype: str) -> dict[str, Any]:
        return {
            "name": "blosc",
            "configuration": {
                "typesize": np.dtype(dtype).itemsize,
                "cname": self.cname,
                "clevel": int(self.clevel),
                "shuffle": self.shuffle,
                "blocksize": int(self.blocksize),
            },
        }

    def options(self) -> dict[str, Any]:
        return {
            "cname": self.cname,
            "clevel": int(self.clevel),
            "shuffle": self.shuffle,
            "blocksize": int(self.blocksize),
        }


Codec: TypeAlias = ZstdCodec | GzipCodec | BloscCodec
_CLASSES: dict[str, type[Codec]] = {"zstd": ZstdCodec, "gzip": GzipCodec, "blosc": BloscCodec}
_OPTIONS = {
    "zstd": ("level",),
    "gzip": ("level",),
    "blosc": ("cname", "clevel", "shuffle", "blocksize"),
}


def codec_from(codec: str | Codec, options: Mapping[str, Any] | None = None) -> Codec:
    """The compressor named ``codec`` with ``options`` (``encode``'s keyword form), or ``codec``
    itself when it is one already (then ``options`` must be empty).

    Raises ValueError naming the option (``codec_options.level: ...``) or the codec: the integer
    options first, then the values, then options the codec does not know, as the codec chain
    always has."""
    if isinstance(codec, ZstdCodec | GzipCodec | BloscCodec):
        if options:
            raise ValueError("codec_options: give the options in the codec object, not both")
        return codec
    opts = dict(options or {})
    for name, value in opts.items():
        if name in ("level", "clevel", "blocksize"):
            _integer(name, value)
    cls = _CLASSES.get(codec) if isinstance(codec, str) else None
    if cls is None:
        raise ValueError(f"codec: {codec!r} is not allowed (expected one of {CODEC_NAMES})")
    known = {k: opts.pop(k) for k in _OPTIONS[codec] if k in opts}
    made = cls(**known)
    if opts:
        raise ValueError(f"codec_options: unknown option(s) {sorted(opts)} for codec {codec!r}")
    return made

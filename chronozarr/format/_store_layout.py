"""How a store is laid out (spec 2.1, 4.1, 4.2, 7.1, 8): one frozen value, checked once.

:class:`StoreLayout` holds the choices of a store's chunks: the cell size, the temporal encoding
and its anchor interval, sharding along time, and the compressor. Every rule of each field is
checked here when the value is made (``EncodeError`` naming the field), and nowhere else: the
keyword arguments of ``encode``, a recipe's ``store:`` section and ``cz convert``'s options all
make a ``StoreLayout``. The one rule that needs the data (star-delta only for uint8 and uint16,
spec 4.1) is :meth:`StoreLayout.check_dtype`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chronozarr.errors import EncodeError
from chronozarr.format._common import DELTA_DTYPES
from chronozarr.format._compressors import Codec, ZstdCodec
from chronozarr.format._geozarr import MULTISCALES_FORMS
from chronozarr.format._history import HISTORY_BLOCK, HISTORY_TIME

__all__ = ["ENCODINGS", "MAX_SHARD_TIME", "StoreLayout"]

ENCODINGS = ("auto", "none", "star-delta")  # spec 4.1, 4.3


def _is_int(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | np.integer)


def _chunk_size(value: Any) -> int:
    if not _is_int(value) or value < 2 or value % 2:
        raise EncodeError(
            "chunk_size",
            f"expected an even number >= 2 (spec 2.1; 256 or 512 recommended), got {value!r}",
        )
    return int(value)


def _encoding(value: Any) -> str:
    if value not in ENCODINGS:
        raise EncodeError("encoding", f"expected 'auto', 'none' or 'star-delta', got {value!r}")
    return str(value)


def _anchor_interval(value: Any) -> int:
    if not _is_int(value) or value < 1:
        raise EncodeError("anchor_interval", f"must be an integer >= 1, got {value!r}")
    return int(value)


#: Timesteps per shard at most: a shard's index is 16 bytes per timestep whatever the store
#: holds (spec 7.2; 1 MiB here), and the writer assembles a shard's chunk list in memory.
MAX_SHARD_TIME = 65_536


def _shard_time(value: Any) -> int | None:
    if value is not None and (not _is_int(value) or value < 1):
        raise EncodeError("shard_time", f"must be an integer >= 1 (spec 7.1), got {value!r}")
    if value is not None and value > MAX_SHARD_TIME:
        raise EncodeError(
            "shard_time",
            f"at most {MAX_SHARD_TIME:,} timesteps per shard (a shard's index holds 16 bytes per "
            f"timestep, spec 7.2), got {value:,}",
        )
    return None if value is None else int(value)


def _history(value: Any) -> bool:
    if not isinstance(value, bool | np.bool_):
        raise EncodeError("history", f"expected true or false, got {value!r}")
    return bool(value)


def _history_time(value: Any) -> int:
    if not _is_int(value) or value < 1:
        raise EncodeError(
            "history_time", f"must be an integer >= 1 (timesteps per chunk), got {value!r}"
        )
    return int(value)


def _history_block(value: Any) -> int | None:
    if value is not None and (not _is_int(value) or value < 1):
        raise EncodeError("history_block", f"must be an integer >= 1 (pixels), got {value!r}")
    return None if value is None else int(value)


def _multiscales(value: Any) -> str:
    if value not in MULTISCALES_FORMS:
        raise EncodeError(
            "multiscales",
            f"expected 'list' (ndpyramid, spec 3.4) or 'layout' (zarr-conventions), got {value!r}",
        )
    return str(value)


_CHECKS = {
    "chunk_size": _chunk_size,
    "encoding": _encoding,
    "anchor_interval": _anchor_interval,
    "shard_time": _shard_time,
    "history": _history,
    "history_time": _history_time,
    "history_block": _history_block,
    "multiscales": _multiscales,
}


@dataclass(frozen=True)
class StoreLayout:
    """The layout of a store's chunks (see the module docstring).

    ``chunk_size``: the cell size, an even number of pixels (2.1). ``encoding``: ``auto``,
    ``none`` or ``star-delta`` (4.1, 4.3). ``anchor_interval``: timesteps between anchors (4.2;
    also the nominal schedule of a none store's volatility, 5). ``shard``: one object per time
    shard (7); ``shard_time``: timesteps per shard (implies ``shard``; default: the whole axis).
    ``codec``: the compressor of every chunk (8). ``history``: also write the time-series
    companion at level 0 (docs/spec.md C25; decision 0048), ``history_time`` timesteps and
    ``history_block`` pixels per side in each of its chunks (default: 16, or the largest
    divisor of the cell size below it; a block never straddles two cells). ``multiscales``: the
    form of the root's ``multiscales`` attribute, ``list`` (ndpyramid, spec 3.4) or ``layout``
    (the zarr-conventions object form; docs/spec.md C26, decision 0054).
    """

    chunk_size: int = 512
    encoding: str = "auto"
    anchor_interval: int = 6
    shard: bool = False
    shard_time: int | None = None
    codec: Codec = field(default_factory=ZstdCodec)
    history: bool = False
    history_time: int = HISTORY_TIME
    history_block: int | None = None
    multiscales: str = "list"

    def __post_init__(self) -> None:
        for name, check in _CHECKS.items():
            object.__setattr__(self, name, check(getattr(self, name)))
        object.__setattr__(self, "shard", bool(self.shard) or self.shard_time is not None)
        if self.history_block is None:
            object.__setattr__(self, "history_block", math.gcd(self.chunk_size, HISTORY_BLOCK))
        elif self.chunk_size % self.history_block:
            raise EncodeError(
                "history_block",
                f"must divide the chunk size {self.chunk_size} (a block lies in one cell), "
                f"got {self.history_block}",
            )

    @staticmethod
    def checked(name: str, value: Any) -> Any:
        """``value`` for field ``name`` as a layout holds it, or ``EncodeError`` naming the field:
        the rule a form or a recipe field applies before the whole layout exists."""
        check = _CHECKS.get(name)
        return value if check is None else check(value)

    def check_dtype(self, dtype: np.dtype) -> None:
        """The rule that needs the data: star-delta only for uint8 and uint16 (spec 4.1)."""
        if self.encoding == "star-delta" and dtype.name not in DELTA_DTYPES:
            raise EncodeError(
                "encoding",
                f"star-delta is only valid for uint8 and uint16 data (spec 4.1), data is {dtype.name}",
            )

    def shard_time_for(self, n_time: int) -> int | None:
        """Timesteps per shard of a store of ``n_time`` timesteps (None: unsharded)."""
        if not self.shard:
            return None
        return self.shard_time if self.shard_time is not None else n_time

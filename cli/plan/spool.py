"""A plan's items on disk, read back by index (decision 0065).

A cluster build's client must not hold the region's items: at 24,000 items the plan's models
alone were ~110 MB of its RSS (decision 0060). :class:`ItemSpool` appends each record (a
candidate while the plan is made, then a plan item) to an unnamed temporary file, pickled and
zlib-compressed, and keeps only its offset and length (12 bytes a record); :class:`Spooled` is
a read-only sequence over some of its records, each read when asked (a group's items when its
context is made, decision 0058). The file goes with the spool (closed, or the process ending).

The records are this process's own pickles, or those of the child process that planned for it
(:func:`cz.plan.spooled.plan_in_child`, decision 0068: the file is this process's, passed to
the child), read back by this process only.
"""

from __future__ import annotations

import pickle
import tempfile
import threading
import weakref
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from typing import Any, BinaryIO, Generic, TypeVar, overload

import numpy as np

T = TypeVar("T")
U = TypeVar("U")


class ItemSpool:
    """Records appended to a temporary file; :meth:`get` reads one back (thread-safe: a
    group's context may be made on the runner's thread while the client reads another)."""

    def __init__(self, file: BinaryIO | None = None) -> None:
        """A spool over ``file`` (an empty file this spool owns: closed with it), or over a new
        unnamed temporary file."""
        if file is None:
            file = tempfile.TemporaryFile(prefix="cz-plan-")  # noqa: SIM115  # closed by close()
        self._file = file
        self._offsets = array("q")
        self._lengths = array("I")
        self._end = 0
        self._lock = threading.Lock()
        # the file goes when the spool does (a plan dropped): closed, not left to a warning
        self._closed = weakref.finalize(self, self._file.close)

    @classmethod
    def adopt(cls, file: BinaryIO, index: tuple[bytes, bytes]) -> ItemSpool:
        """The spool another process wrote into ``file`` (its records, as :meth:`index` gave
        them): this process reads them back (decision 0068, a plan made in a child process)."""
        spool = cls(file)
        spool._offsets.frombytes(index[0])
        spool._lengths.frombytes(index[1])
        if len(spool._offsets) != len(spool._lengths):
            raise ValueError("a spool's index: as many offsets as lengths")
        spool._end = spool._offsets[-1] + spool._lengths[-1] if len(spool._offsets) else 0
        return spool

    def index(self) -> tuple[bytes, bytes]:
        """Where each record is in the file (12 bytes a record), for :meth:`adopt`."""
        with self._lock:
            self._file.flush()
            return self._offsets.tobytes(), self._lengths.tobytes()

    def __len__(self) -> int:
        return len(self._offsets)

    def append(self, record: Any) -> int:
        """Write ``record``; its index."""
        data = zlib.compress(pickle.dumps(record, protocol=pickle.HIGHEST_PROTOCOL), 1)
        with self._lock:
            self._file.seek(self._end)
            self._file.write(data)
            self._offsets.append(self._end)
            self._lengths.append(len(data))
            self._end += len(data)
            return len(self._offsets) - 1

    def get(self, i: int) -> Any:
        """Record ``i``, as it was appended (a fresh object each time)."""
        with self._lock:
            self._file.seek(self._offsets[i])
            data = self._file.read(self._lengths[i])
        return pickle.loads(zlib.decompress(data))  # this process's own records

    def close(self) -> None:
        """Remove the file (the records can no longer be read)."""
        self._closed()

    def __getstate__(self) -> Any:
        raise TypeError("an ItemSpool stays in its process (its records are on its disk)")


class Spooled(Sequence[U], Generic[U]):
    """The records ``indices`` of ``spool`` (in that order) as a read-only sequence, each read
    when asked and passed through ``view`` (identity by default). Pickled, it is the list of its
    records (another process cannot read this one's file)."""

    def __init__(
        self,
        spool: ItemSpool,
        indices: Sequence[int] | np.ndarray,
        view: Callable[[Any], U] | None = None,
    ) -> None:
        self.spool = spool
        self.indices = np.asarray(indices, dtype=np.int64)
        self.view = view

    def __len__(self) -> int:
        return int(self.indices.size)

    def _read(self, j: int) -> U:
        record = self.spool.get(int(self.indices[j]))
        return record if self.view is None else self.view(record)

    @overload
    def __getitem__(self, j: int) -> U: ...

    @overload
    def __getitem__(self, j: slice) -> list[U]: ...

    def __getitem__(self, j: int | slice) -> U | list[U]:
        if isinstance(j, slice):
            return [self._read(k) for k in range(*j.indices(len(self)))]
        if not -len(self) <= j < len(self):
            raise IndexError(j)
        return self._read(j % len(self))

    def __iter__(self) -> Iterator[U]:
        for j in range(len(self)):
            yield self._read(j)

    def __reduce__(self) -> tuple[Any, ...]:
        return (list, (list(self),))

    def __repr__(self) -> str:
        return f"Spooled({len(self)} records)"

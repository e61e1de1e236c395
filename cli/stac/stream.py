"""A local FeatureCollection read one feature at a time (decision 0060).

``json.loads`` of a whole ItemCollection holds every item's parsed dict at once: ~11 kB of
Python objects an item, hundreds of MB for a continent's decade. :func:`stream_features` reads
the file in blocks and decodes the ``features`` array element by element with the standard
library's decoder (``json.JSONDecoder.raw_decode``), so the plan can screen and pack each item
(:mod:`cz.plan.make`) before the next is parsed. It streams only a file whose first member is
``"type": "FeatureCollection"`` (as STAC APIs and pystac write them); any other file is read
whole, as before, by :func:`cz.stac.resolve.read_local_items`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cz.errors import StacError

#: Bytes read at a time; a feature cut by a block's end is decoded again with the next block.
BLOCK = 1 << 20

_WS = " \t\n\r"


class _Reader:
    """A text buffer over a file: decode one JSON value or punctuation at the cursor."""

    def __init__(self, stream: IO[str], path: Path) -> None:
        self.stream, self.path = stream, path
        self.buf, self.pos, self.eof = "", 0, False
        self.decoder = json.JSONDecoder()

    def _more(self) -> bool:
        """Read the next block (dropping what was consumed); False at the end of the file."""
        if self.eof:
            return False
        block = self.stream.read(BLOCK)
        if not block:
            self.eof = True
            return False
        self.buf = self.buf[self.pos :] + block
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not white space ('' at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _WS:
                self.pos += 1
            if self.pos < len(self.buf) or not self._more():
                return self.buf[self.pos : self.pos + 1]

    def expect(self, char: str) -> None:
        found = self.peek()
        if found != char:
            self.fail(f"expected {char!r}, found {found or 'the end of the file'!r}")
        self.pos += 1

    def value(self) -> Any:
        """The JSON value at the cursor, reading further blocks while it is cut off."""
        self.peek()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                if self._more():
                    continue
                self.fail(str(exc))
            if not self._closed(end) and self._more():
                continue  # a number cut by the block's end ("1" of "12", "0" of "0.5")
            self.pos = end
            return value

    def _closed(self, end: int) -> bool:
        """Whether the value ending at ``end`` is followed by punctuation in the buffer (in
        valid JSON a value always is, but the whole document's)."""
        buf, at = self.buf, end
        while at < len(buf) and buf[at] in _WS:
            at += 1
        return at < len(buf) and buf[at] in ",]}:"

    def fail(self, why: str) -> None:
        raise StacError(f"{self.path}: not JSON ({why})")


def is_streamable(path: Path) -> bool:
    """Whether ``path`` starts as a FeatureCollection (``{"type": "FeatureCollection"``)."""
    try:
        with path.open(encoding="utf-8") as stream:
            reader = _Reader(stream, path)
            if reader.peek() != "{":
                return False
            reader.pos += 1
            if reader.value() != "type":
                return False
            reader.expect(":")
            return bool(reader.value() == "FeatureCollection")
    except (StacError, OSError, UnicodeDecodeError):
        return False  # read whole, which names the problem


def stream_features(path: Path) -> Iterator[Any]:
    """Each element of the ``features`` array of the FeatureCollection at ``path``, in order,
    as it is decoded (the file checked to the end, as ``json.loads`` would). Raises
    :class:`StacError` naming the file when it is not JSON or has no ``features`` list."""
    with path.open(encoding="utf-8") as stream:
        reader = _Reader(stream, path)
        reader.expect("{")
        seen = False
        while reader.peek() != "}":
            key = reader.value()
            reader.expect(":")
            if key == "features" and reader.peek() == "[":
                seen = True
                yield from _elements(reader)
            else:
                reader.value()  # another member (or a 'features' that is no list): dropped
            if reader.peek() == ",":
                reader.pos += 1
        reader.expect("}")
        if reader.peek():
            reader.fail("extra data after the FeatureCollection")
        if not seen:
            raise StacError(f"{path}: FeatureCollection without a 'features' list")


def _elements(reader: _Reader) -> Iterator[Any]:
    reader.expect("[")
    if reader.peek() == "]":
        reader.pos += 1
        return
    while True:
        yield reader.value()
        if reader.peek() == ",":
            reader.pos += 1
            continue
        reader.expect("]")
        return

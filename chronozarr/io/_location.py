"""Where a store lives: the one rule telling a local path from an http(s):// or s3:// URL.

A location is a URL when it starts with a scheme of two or more characters followed by ``://``
(RFC 3986 scheme characters); everything else is a local path, including a Windows drive
(``C:\\data``, one letter) and a name that merely holds a colon (``a:b``). ``file://`` URLs are
local: their path is percent-decoded (RFC 8089), so ``file:///tmp/my%20store`` is the folder
``/tmp/my store``. ``http``, ``https`` and ``s3`` are the remote schemes the reader serves
(spec 10 reads over byte ranges); any other scheme is ``unsupported``.

The writer, the reader, the validator and the toolkit (recipe inputs, publish targets) all ask
this module, so a location means the same thing everywhere.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Literal
from urllib.parse import unquote, urlparse

__all__ = ["REMOTE_SCHEMES", "Location", "is_remote", "is_url", "location"]

REMOTE_SCHEMES = ("http", "https", "s3")
_URL_RE = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]+)://")

Kind = Literal["local", "http", "s3", "unsupported"]


@dataclass(frozen=True)
class Location:
    """A parsed location.

    ``text`` is the location as given; ``scheme`` its lower-cased URL scheme (``""`` for a plain
    path); ``kind`` one of ``local``, ``http`` (http or https), ``s3``, ``unsupported``; ``path``
    the local filesystem path when ``kind`` is ``local`` (else ``None``).
    """

    text: str
    scheme: str
    kind: Kind
    path: str | None = None

    @property
    def is_remote(self) -> bool:
        return self.kind in ("http", "s3")


def is_url(text: str | os.PathLike[str]) -> bool:
    """True when ``text`` has a URL scheme (``scheme://``), whatever the scheme (file:// too)."""
    return _URL_RE.match(os.fspath(text)) is not None


def location(path_or_url: str | os.PathLike[str]) -> Location:
    """Parse a local path, ``file://``, ``http(s)://`` or ``s3://`` URL (no I/O)."""
    text = os.fspath(path_or_url)
    m = _URL_RE.match(text)
    if m is None:
        return Location(text, "", "local", text)
    scheme = m.group(1).lower()
    if scheme == "file":
        return Location(text, scheme, "local", unquote(urlparse(text).path))
    if scheme in ("http", "https"):
        return Location(text, scheme, "http")
    if scheme == "s3":
        return Location(text, scheme, "s3")
    return Location(text, scheme, "unsupported")


def is_remote(path_or_url: str | os.PathLike[str]) -> bool:
    """True for an ``http(s)://`` or ``s3://`` URL."""
    return location(path_or_url).is_remote

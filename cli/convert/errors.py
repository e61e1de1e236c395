"""The error of ``cz convert`` and ``cz export``: one type, naming the offending file or option."""

from __future__ import annotations

from cz.errors import CzError

__all__ = ["ConvertError"]


class ConvertError(CzError, ValueError):
    """A source, option or store that cannot be converted or exported.

    ``where`` is the offending file (as the user gave it), URL, manifest row or option; the
    message says what was found and what was expected. Raised before anything is written.
    """

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.detail = message
        super().__init__(f"{where}: {message}")

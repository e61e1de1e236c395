"""The error of the look commands: a bad selection (time, band, level, pixel) or output."""

from __future__ import annotations

from cz.errors import CzError

__all__ = ["LookError"]


class LookError(CzError, ValueError):
    """A selection or output the store cannot satisfy; the message names the option and value."""

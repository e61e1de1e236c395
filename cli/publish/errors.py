"""Errors of publishing: refused before any write, or failed part-way."""

from __future__ import annotations

from cz.errors import CzError

__all__ = ["PublishError", "PublishRefusedError"]


class PublishError(CzError):
    """A publish failed part-way; the message says what was written and what was not."""


class PublishRefusedError(PublishError):
    """A publish was refused before anything was written (a re-encode over an existing store,
    an invalid local store, a target that overlaps the source, ...)."""

"""Errors of a build or an append."""

from __future__ import annotations

from cz.errors import CzError


class BuildError(CzError):
    """A build or append could not be done: the target, the cluster, a read, the store."""


class AppendRefusedError(BuildError):
    """``cz append`` refuses: the months or the recipe do not fit the store (nothing written)."""

"""Errors of a build or an append."""

from __future__ import annotations

from cz.errors import CzError


class BuildError(CzError):
    """A build or append could not be done: the target, the cluster, a read, the store."""


class AppendRefusedError(BuildError):
    """``cz append`` refuses: the months or the recipe do not fit the store (nothing written)."""


class RecipeMismatchError(AppendRefusedError):
    """``cz append`` refuses a recipe that differs from the one the store was built with (its
    grid, bands, store options or recorded fingerprint): a usage error (exit 2), each differing
    field named with both values."""


class TargetBusyError(BuildError):
    """Another live ``cz`` run holds the target's lock (decision 0051): nothing was written.
    Exit code 75 (``EX_TEMPFAIL``: try again later), as for a store another writer holds."""

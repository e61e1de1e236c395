"""Typed errors of the format library.

The library raises these; only the CLI turns them into messages and exit codes. Every message says
what was wrong and where (argument, key or object), so that a user can act on it.
"""

from __future__ import annotations

__all__ = [
    "AppendError",
    "ChronozarrError",
    "ClusterError",
    "ConcurrentWriteError",
    "ConditionalWriteError",
    "CorruptStoreError",
    "EncodeError",
    "MissingExtraError",
    "NotAChronozarrStoreError",
    "RemoteStoreError",
    "StoreAccessError",
    "StoreNotFoundError",
    "UnsupportedError",
]


class ChronozarrError(Exception):
    """Base class of every error raised by chronozarr.

    ``field`` names the metadata field a store error is about when the raiser knows it (e.g.
    ``data_type``, ``chunk_grid``, ``shard_index``, ``codecs``, ``shard_bytes``), so that the
    validator can file it under its rule without reading the message.
    """

    def __init__(self, *args: object, field: str | None = None) -> None:
        super().__init__(*args)
        self.field = field


class EncodeError(ChronozarrError, ValueError):
    """An argument of ``encode`` is invalid; the message names the argument."""

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        self.message = message  # without the argument's name (a form names its own field)
        super().__init__(f"{argument}: {message}")


class AppendError(ChronozarrError, ValueError):
    """An append was refused before any byte was written; the message names the condition."""

    def __init__(self, condition: str, message: str) -> None:
        self.condition = condition
        super().__init__(f"{condition}: {message}")


class StoreNotFoundError(ChronozarrError, FileNotFoundError):
    """No root zarr.json at the given location."""


class StoreAccessError(ChronozarrError, OSError):
    """An object of a local store exists but cannot be read (permissions, an I/O error, a path
    the system refuses). The message names the object and the system's reason."""


class NotAChronozarrStoreError(ChronozarrError):
    """The root is a Zarr group (or not even that) without chronozarr attributes."""


class UnsupportedError(ChronozarrError):
    """The store uses a spec_version, encoding, data_type or codec this reader does not support."""


class CorruptStoreError(ChronozarrError):
    """Metadata or an object of the store is malformed (bad JSON, bad index checksum, ...)."""


class RemoteStoreError(ChronozarrError, OSError):
    """A request to a remote store failed for a reason other than an absent key (a 404 is not
    an error: it reads as a missing object, spec 7.2/9). The message names the request, the URL
    and the host's answer, without the client library's debug dump."""


class MissingExtraError(ChronozarrError, ImportError):
    """A feature needs an optional dependency that is not installed. The message is one line
    naming the feature and the extra that installs it, e.g. ``pip install 'chronozarr-tools[remote]'``."""

    def __init__(self, feature: str, extra: str, module: str) -> None:
        self.feature = feature
        self.extra = extra
        super().__init__(
            f"{feature} needs the '{extra}' extra ({module} is not installed): "
            f"pip install 'chronozarr-tools[{extra}]'"
        )
        self.name = module  # ImportError's attribute: the module that is missing


class ClusterError(ChronozarrError, RuntimeError):
    """A run on a dask.distributed cluster cannot go on (no worker left; decision 0017)."""


class ConcurrentWriteError(ChronozarrError, RuntimeError):
    """Another writer holds the store or committed it first (decision 0051): this write published
    nothing a reader can see. The message names the store and what the other writer did or is
    doing; running the same command again applies this write on top of the other one's."""


class ConditionalWriteError(RemoteStoreError):
    """The host does not honour conditional writes (If-None-Match / If-Match), so two writers
    cannot be told apart (decision 0051); ``CZ_CONDITIONAL_WRITES=warn`` writes anyway."""

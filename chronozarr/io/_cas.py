"""Compare-and-swap writes of one object (decision 0051): the root ``zarr.json`` commit and the
writer's lease.

A writer reads an object with its :class:`Version` (the host's ETag and version id on object
storage, a SHA-256 of the bytes in a folder) and later replaces it only if it is still that
version; a new object is created only if absent. On S3, GCS, Azure and S3-compatible hosts this
is one conditional PUT (``If-None-Match: *`` / ``If-Match: etag``, obstore's ``mode="create"``
and ``mode={"e_tag": ...}``): the host decides, so two writers on two machines cannot both win.
In a local folder a create is a hard link of the written file (``link`` fails when the name
exists) and an update compares the bytes then renames: exclusive under the toolkit's target
lock (decision 0051), best effort for two library callers racing on one folder.

A host that refuses conditional PUTs (HTTP 501, obstore ``NotSupportedError``) raises
:class:`~chronozarr.errors.ConditionalWriteError`, or, with the store option
``conditional_writes="warn"`` (``CZ_CONDITIONAL_WRITES=warn``), writes unconditionally after a
warning. A host that silently ignores the headers is caught by the lease's probe
(:mod:`chronozarr.io._lease`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import uuid
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from chronozarr.errors import ConcurrentWriteError, ConditionalWriteError
from chronozarr.io._faults import fault_point
from chronozarr.io._storage import LocalStore, ObjectStore, Store, check_key

__all__ = [
    "ABSENT",
    "CONDITIONAL_WRITES_ENV",
    "Conflict",
    "Version",
    "commit_root",
    "conditional_policy",
    "put_if",
    "read_versioned",
    "set_commit_guard",
]

log = logging.getLogger("chronozarr.io")

#: ``require`` (default): refuse a host without conditional writes; ``warn``: write anyway.
CONDITIONAL_WRITES_ENV = "CZ_CONDITIONAL_WRITES"


@dataclass(frozen=True)
class Version:
    """What identifies one state of an object: absent, or its ETag / version id (object
    storage) or SHA-256 (a folder, or a Store without versions)."""

    absent: bool
    etag: str | None = None
    version: str | None = None
    digest: str | None = None


ABSENT = Version(absent=True)


class Conflict(Exception):
    """The object is not at the expected version (internal: callers turn it into a message)."""


def conditional_policy(target: Any) -> str:
    """``require`` or ``warn``: the store's ``conditional_writes`` option, else the environment."""
    given = getattr(target, "conditional_writes", None) or os.environ.get(CONDITIONAL_WRITES_ENV)
    return "warn" if str(given or "").strip().lower() == "warn" else "require"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _obstore_of(target: Any) -> tuple[Any, Any] | None:
    """(obstore module, obstore store) of an :class:`ObjectStore` on s3 or an ObstoreTarget."""
    if isinstance(target, ObjectStore):
        return (target._obstore, target._store) if target.scheme == "s3" else None
    inner, module = getattr(target, "_store", None), getattr(target, "_obstore", None)
    if inner is not None and module is not None:
        return module, inner
    return None


def read_versioned(target: Store, key: str) -> tuple[bytes | None, Version]:
    """The object's bytes and version in one read (never a GET then a HEAD: a commit between
    the two would pair old bytes with the new version)."""
    own = getattr(target, "read_versioned", None)
    if callable(own):  # a wrapping Store (the toolkit's header-setting one) delegates
        return own(key)  # type: ignore[no-any-return]
    remote = _obstore_of(target)
    if remote is None:
        data = target.get(key)
        return data, ABSENT if data is None else Version(False, digest=_digest(data))
    obstore, store = remote
    try:
        result = obstore.get(store, check_key(key))
        data = bytes(result.bytes())
    except FileNotFoundError:  # absent
        return None, ABSENT
    except Exception as exc:  # any other failure: typed, as the store's own get
        if isinstance(target, ObjectStore):
            raise target._error("GET", key, exc) from exc
        raise
    meta = result.meta
    target.stats.record("get", key, len(data))
    return data, Version(False, meta.get("e_tag"), meta.get("version"), _digest(data))


def _unsupported(exc: BaseException) -> bool:
    name = type(exc).__name__
    text = str(exc)
    return name == "NotSupportedError" or "501" in text or "NotImplemented" in text


def put_if(
    target: Store,
    key: str,
    data: bytes,
    expected: Version,
    *,
    attributes: dict[str, str] | None = None,
) -> Version:
    """Write ``key`` only if it is at ``expected`` (absent, or that version); returns the new
    version. Raises :class:`Conflict` when it is not."""
    own = getattr(target, "put_if", None)
    if callable(own):  # a wrapping Store (the toolkit's header-setting one) delegates
        return own(key, data, expected)  # type: ignore[no-any-return]
    remote = _obstore_of(target)
    if remote is not None:
        return _put_if_remote(target, remote, key, data, expected, attributes)
    if isinstance(target, LocalStore):
        return _put_if_local(target, key, data, expected)
    # any other Store: compare, then put (no atomicity to be had from four methods)
    current = target.get(key)
    now = ABSENT if current is None else Version(False, digest=_digest(current))
    if now.absent != expected.absent or (not now.absent and now.digest != expected.digest):
        raise Conflict(key)
    target.put(key, data)
    return Version(False, digest=_digest(data))


def _put_if_remote(
    target: Store,
    remote: tuple[Any, Any],
    key: str,
    data: bytes,
    expected: Version,
    attributes: dict[str, str] | None,
) -> Version:
    obstore, store = remote
    mode: Any = "create"
    if not expected.absent:  # obstore wants the keys it has values for, no None
        mode = {k: v for k, v in (("e_tag", expected.etag), ("version", expected.version)) if v}
    try:
        if isinstance(target, ObjectStore):
            result = target.put_mode(key, data, mode, attributes)
        else:
            fault_point("put", key)
            result = obstore.put(
                store, check_key(key), data, attributes=attributes, mode=mode, use_multipart=False
            )
            target.stats.record("put", key, len(data))
    except Exception as exc:  # 412 / already exists: the other writer's; 501: no conditions
        name = type(exc).__name__
        if name in ("AlreadyExistsError", "PreconditionError"):
            raise Conflict(key) from exc
        if _unsupported(exc):
            if conditional_policy(target) != "warn":
                raise ConditionalWriteError(
                    f"{target.url}: the host does not support conditional writes (If-None-Match"
                    f" / If-Match), so a concurrent writer could not be detected; refused. Set"
                    f" {CONDITIONAL_WRITES_ENV}=warn to write without that protection"
                    " (docs/hosting.md)"
                ) from exc
            log.warning(
                "%s: the host does not support conditional writes; writing %s unconditionally"
                " (%s=warn): a concurrent writer would not be detected",
                target.url, key, CONDITIONAL_WRITES_ENV,
            )  # fmt: skip
            target.put(key, data)
            return Version(False, digest=_digest(data))
        if isinstance(target, ObjectStore):
            raise target._error("PUT", key, exc) from exc
        raise
    return Version(False, result.get("e_tag"), result.get("version"), _digest(data))


def _put_if_local(target: LocalStore, key: str, data: bytes, expected: Version) -> Version:
    path = target._path(key)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not expected.absent:
        current = target.get(key)
        if current is None or _digest(current) != expected.digest:
            raise Conflict(key)
        target.put(key, data)  # atomic rename; exclusive under the toolkit's target lock
        return Version(False, digest=_digest(data))
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
        fault_point("put", key)
        try:
            os.link(tmp, path)  # fails when the name exists: an atomic create
        except FileExistsError:
            raise Conflict(key) from None
        except OSError:  # a filesystem without hard links: check, then rename
            if path.exists():
                raise Conflict(key) from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    target.stats.record("put", key, len(data))
    return Version(False, digest=_digest(data))


def commit_root(
    target: Store,
    data: bytes,
    expected: Version,
    *,
    attributes: dict[str, str] | None = None,
) -> None:
    """Write the root ``zarr.json`` (the commit point, spec 9) only if it is still the root
    this writer read (``expected``; :data:`ABSENT` for a new store). Otherwise raises
    :class:`ConcurrentWriteError` naming the store and what the other writer committed."""
    try:
        with _guarded():
            put_if(target, "zarr.json", data, expected, attributes=attributes)
    except Conflict:
        if target.get("zarr.json") == data:  # our own PUT landed before a retry: committed
            return
        raise ConcurrentWriteError(
            f"{target.url}: another writer committed this store first ({_describe(target)});"
            " this run's root was not written, so readers see the other writer's store. Run"
            " the command again to apply this run on top of it"
        ) from None


def _describe(target: Store) -> str:
    """What the root at ``target`` now says: its number of timesteps and the last one."""
    try:
        raw = target.get("zarr.json")
        block = json.loads(raw or b"{}").get("attributes", {}).get("chronozarr", {})
        times = block.get("times") or []
        if not times:
            return "it now has no root" if raw is None else "it now has a root without times"
        return f"it now has {len(times)} timesteps, the last {times[-1]}"
    except Exception:  # a damaged root: say so, the conflict is the message
        return "its root is now another one"


_commit_guard: list[Callable[[], AbstractContextManager[Any]]] = []


def set_commit_guard(factory: Callable[[], AbstractContextManager[Any]] | None) -> None:
    """Wrap every root commit in ``factory()`` (the toolkit's: signals wait while the root is
    written, and a signal after it lets the run finish, cz.signals); None removes it."""
    _commit_guard.clear()
    if factory is not None:
        _commit_guard.append(factory)


def _guarded() -> AbstractContextManager[Any]:
    return _commit_guard[0]() if _commit_guard else contextlib.nullcontext()

"""The append journal: the pre-append volatility, so a re-run never applies a batch twice (14).

``volatility/c/0/0`` is the one object an append rewrites from its own previous value (the new
deltas join each cell's mean, spec 5). An append interrupted after writing it but before the root
leaves a store whose root still lists the old times while the volatility already holds the new
ones' deltas; a re-run cannot tell the two apart from the store alone and would add the deltas
again. So, before the volatility is rewritten, the append records the old chunk's bytes in
:data:`JOURNAL` (``.chronozarr-append.json`` at the store root), together with the number of
timesteps of the root they belong to, and removes the journal after the root is written.

A re-run whose root still has that many timesteps reads the old volatility from the journal, not
from ``volatility/c/0/0``: the result is the same whatever instant the first run died at. A
journal whose count differs from the root's (the append it describes completed, and the process
died before removing it) is stale and ignored; the next append replaces it. Readers, the
validator and ``cz publish`` never read it (publishing skips it, :mod:`chronozarr.io._objects`).
"""

from __future__ import annotations

import base64
import logging

from chronozarr.errors import ChronozarrError
from chronozarr.format import dumps, load_json
from chronozarr.io import APPEND_JOURNAL, Store

__all__ = [
    "JOURNAL",
    "begin_journal",
    "drop_stale_journal",
    "end_journal",
    "journaled_volatility",
]

log = logging.getLogger("chronozarr.append")

JOURNAL = APPEND_JOURNAL


def journaled_volatility(target: Store, n_time: int) -> tuple[bool, bytes | None]:
    """(found, old volatility chunk bytes or None when the chunk was absent) of a journal that
    belongs to a root of ``n_time`` timesteps; (False, None) when there is none that does."""
    raw = target.get(JOURNAL)
    if raw is None:
        return False, None
    try:
        doc = load_json(raw, f"{target.url}/{JOURNAL}")
        if not isinstance(doc, dict) or doc.get("n_time") != n_time:
            return False, None  # stale: its append completed
        blob = doc.get("volatility_chunk")
        return True, None if blob is None else base64.b64decode(str(blob), validate=True)
    except (ChronozarrError, ValueError) as exc:  # a damaged journal: recompute instead
        log.warning("%s/%s: unreadable append journal ignored (%s)", target.url, JOURNAL, exc)
        return False, None


def begin_journal(target: Store, n_time: int, chunk: bytes | None) -> None:
    """Record the volatility chunk of the root with ``n_time`` timesteps (before rewriting it)."""
    blob = None if chunk is None else base64.b64encode(chunk).decode("ascii")
    target.put(JOURNAL, dumps({"n_time": n_time, "volatility_chunk": blob}))


def end_journal(target: Store) -> None:
    """The root is written: the journal has served."""
    target.delete(JOURNAL)


def drop_stale_journal(target: Store, n_time: int) -> None:
    """Remove a journal whose append completed (its count differs from the root's ``n_time``):
    the debris of a run killed between its root and the journal's removal. Called under the
    writer's lease (decision 0051), so no live append owns it; a journal of this root (an
    interrupted append, to be re-run) stays."""
    raw = target.get(JOURNAL)
    if raw is None:
        return
    try:
        doc = load_json(raw, f"{target.url}/{JOURNAL}")
        current = isinstance(doc, dict) and doc.get("n_time") == n_time
    except ChronozarrError:  # unreadable: nothing a re-run could use
        current = False
    if not current:
        log.info("%s/%s: removing the journal of a completed append", target.url, JOURNAL)
        target.delete(JOURNAL)

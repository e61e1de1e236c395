"""A cluster build's plan, its items on disk (decision 0065).

:func:`cz.plan.make.make_plan` keeps every candidate and then every plan item in lists: ~4.7 kB
of the client's RSS an item (decision 0060), 110 MB at 24,000 items, which a cluster build's
client holds for the whole build. :func:`make_spooled_plan` makes the same plan (the same items,
in the same order, the same drops, totals and warnings) holding a few bytes an item:

- each candidate is written to an :class:`~cz.plan.spool.ItemSpool` as it is screened; what
  de-duplication groups by (the scene key, :func:`cz.plan.items.scene_key`) is kept as an
  8-byte digest, and only a scene with more than one candidate is read back and ranked by
  :func:`cz.plan.rules.deduplicate` (its exact key: a digest shared by two scenes is regrouped
  there). The kept candidates are in de-duplication's order;
- each kept candidate is read back once, made a plan item (:func:`cz.plan.make.planned_item`)
  and written to a second spool; a month's items are a :class:`~cz.plan.spool.Spooled`
  sequence over it in the month's order (datetime, then id), read when the build asks for them
  (a group's items, when its context is made: decision 0058).

The plan's :class:`~cz.plan.model.MonthPlan` entries are built without validation (their items
are a sequence, not a list); the plan's JSON is :func:`~cz.plan.make.make_plan`'s, which the dry
run and the local build use.
"""

from __future__ import annotations

import ctypes
import hashlib
import io
import os
import pickle
import signal
import subprocess
import sys
import tempfile
from array import array
from typing import Any, BinaryIO

import numpy as np

from cz.errors import PlanError
from cz.periods import Period
from cz.plan.bitfields import plan_bit_rules
from cz.plan.items import scene_key
from cz.plan.make import (
    Screened,
    assemble,
    mask_entry,
    planned_item,
    refuse_absent_assets,
    screen,
)
from cz.plan.model import DroppedItem, MonthPlan, Plan, PlannedItem
from cz.plan.rules import Candidate, deduplicate
from cz.plan.spool import ItemSpool, Spooled
from cz.recipe import Recipe
from cz.stac import PageCallback, Resolution, RetryPolicy, resolve_items

__all__ = ["make_spooled_plan", "plan_in_child", "plan_recipe_spooled"]


def _digest(key: tuple[Any, ...]) -> int:
    """8 bytes of a scene key (its repr: strings, numbers and None)."""
    return int.from_bytes(hashlib.blake2b(repr(key).encode(), digest_size=8).digest(), "little")


def _deduplicated(cands: ItemSpool, keys: array[int], screened: Screened) -> np.ndarray:
    """Rule 2 over the spooled candidates: the indices kept, in the order
    :func:`~cz.plan.rules.deduplicate` gives (scenes in order of first appearance, each
    scene's items best first)."""
    digests = np.frombuffer(keys, dtype=np.uint64) if len(keys) else np.zeros(0, np.uint64)
    _, first, inverse = np.unique(digests, return_index=True, return_inverse=True)
    inverse = inverse.ravel()
    members = np.argsort(inverse, kind="stable")  # each scene's candidates in screening order
    starts = np.concatenate([[0], np.cumsum(np.bincount(inverse, minlength=first.size))])
    kept = array("q")
    for g in np.argsort(first, kind="stable").tolist():
        group = members[starts[g] : starts[g + 1]]
        if group.size == 1:  # almost every scene: nothing to rank, nothing read back
            kept.append(int(group[0]))
            continue
        loaded: list[Candidate] = [cands.get(int(i)) for i in group]
        where = {id(c): int(i) for c, i in zip(loaded, group, strict=True)}
        kept.extend(where[id(c)] for c in deduplicate(loaded, screened.drop))
    return np.frombuffer(kept, dtype=np.int64) if len(kept) else np.zeros(0, np.int64)


def _spool_planned(
    recipe: Recipe, periods: list[Period], cands: ItemSpool, kept: np.ndarray, items: ItemSpool
) -> tuple[list[np.ndarray], list[list[str]]]:
    """Each kept candidate made a plan item and written to ``items``; each period's item
    indices in the month's order (datetime, then id) and its solar days."""
    at = {p.label: k for k, p in enumerate(periods)}
    month_of = array("i")
    order: list[bytes] = []  # "datetime\0id": sorts as the pair does (\0 below any character)
    solar: list[set[str]] = [set() for _ in periods]
    for i in kept.tolist():
        p = planned_item(recipe, cands.get(i))
        items.append(p)
        k = at[p.month]
        month_of.append(k)
        order.append(f"{p.datetime}\0{p.id}".encode())
        solar[k].add(p.solar_day)
    months = np.frombuffer(month_of, dtype=np.int32) if len(month_of) else np.zeros(0, np.int32)
    by_month = [
        np.asarray(sorted(np.flatnonzero(months == k).tolist(), key=order.__getitem__), np.int64)
        for k in range(len(periods))
    ]
    return by_month, [sorted(s) for s in solar]


def _month_plans(
    periods: list[Period],
    items: ItemSpool,
    by_month: list[np.ndarray],
    solar: list[list[str]],
    dropped: list[DroppedItem],
) -> tuple[list[MonthPlan], list[DroppedItem]]:
    """Rule 4 as :func:`cz.plan.make._month_plans` applies it, each month's items spooled."""
    labels = {p.label for p in periods}
    dropped_by: dict[str, list[DroppedItem]] = {m: [] for m in labels}
    outside: list[DroppedItem] = []
    for d in dropped:
        dropped_by.get(d.month or "", outside).append(d)
    month_plans = [
        MonthPlan.model_construct(
            month=period.label,
            time=period.time,
            end=period.bounds[1],
            items=Spooled[PlannedItem](items, by_month[k]),
            dropped=sorted(dropped_by[period.label], key=lambda d: (d.datetime or "", d.id)),
            solar_days=solar[k],
        )
        for k, period in enumerate(periods)
    ]
    outside.sort(key=lambda d: (d.datetime or "", d.id))
    return month_plans, outside


def make_spooled_plan(
    recipe: Recipe,
    resolution: Resolution,
    *,
    out: str | None = None,
    items: ItemSpool | None = None,
) -> Plan:
    """:func:`cz.plan.make.make_plan`'s plan, its items on disk (see the module docstring):
    in ``items`` (an empty spool; a new one by default)."""
    periods = recipe.periods()
    cands, items = ItemSpool(), ItemSpool() if items is None else items
    keys = array("Q")

    def keep(cand: Candidate, item: dict[str, Any]) -> None:
        keys.append(_digest(scene_key(item)))  # the raw item's: its packed copy's is the same
        cands.append(cand)

    try:
        screened = screen(recipe, periods, resolution.items, keep)
        refuse_absent_assets(recipe, screened.census)
        kept = _deduplicated(cands, keys, screened)
        entries = Spooled(cands, kept, mask_entry) if recipe.mask else []
        bit_rules = plan_bit_rules(recipe, entries)
        by_month, solar = _spool_planned(recipe, periods, cands, kept, items)
    except BaseException:
        items.close()
        raise
    finally:
        cands.close()
    planned = Spooled[PlannedItem](items, np.arange(len(items)))
    months = _month_plans(periods, items, by_month, solar, screened.dropped)
    return assemble(recipe, resolution, screened, planned, months, bit_rules, out)


def plan_recipe_spooled(
    recipe: Recipe,
    *,
    out: str | None = None,
    policy: RetryPolicy | None = None,
    on_page: PageCallback | None = None,
    child: bool = True,
) -> Plan:
    """:func:`cz.plan.plan_recipe` for a cluster build: the items streamed in (a local file)
    and spooled out (decision 0065), in a child process unless ``on_page`` is given or
    ``child`` is false (:func:`plan_in_child`, decision 0068)."""
    if child and on_page is None:
        return plan_in_child(recipe, out=out, policy=policy)
    resolution = resolve_items(recipe, policy=policy, on_page=on_page, stream=True)
    return make_spooled_plan(recipe, resolution, out=out)


# -- the plan made in a child process (decision 0068) ----------------------------------------
#
# Planning 24,000 items allocates and frees ~13 MB that glibc keeps in the client's arenas for
# the whole build (0.55 kB of RSS an item, decision 0065). A child process makes the plan, its
# items written to a file the client opened (unnamed: a killed client, or a killed child,
# leaves nothing behind) and hands back the plan's skeleton: every field but the items, each
# month's item indices, and the spool's index (12 bytes an item). The client adopts the file.

_ITEMS = "cz-plan-items"  # the persistent id of the items' spool in the skeleton's pickle


class _SkeletonPickler(pickle.Pickler):
    """A plan, its :class:`Spooled` months as their indices over the items' spool (by
    reference: the child's spool is the parent's file)."""

    def __init__(self, file: BinaryIO, spool: ItemSpool) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._spool = spool

    def persistent_id(self, obj: Any) -> str | None:
        return _ITEMS if obj is self._spool else None

    def reducer_override(self, obj: Any) -> Any:
        if type(obj) is Spooled:  # not as a list of its records (Spooled.__reduce__)
            return (Spooled, (obj.spool, obj.indices, obj.view))
        return NotImplemented


class _SkeletonUnpickler(pickle.Unpickler):
    def __init__(self, file: BinaryIO, spool: ItemSpool) -> None:
        super().__init__(file)
        self._spool = spool

    def persistent_load(self, pid: Any) -> Any:
        if pid != _ITEMS:
            raise pickle.UnpicklingError(f"unknown persistent id {pid!r}")
        return self._spool


def plan_in_child(
    recipe: Recipe, *, out: str | None = None, policy: RetryPolicy | None = None
) -> Plan:
    """:func:`plan_recipe_spooled`'s plan, made in a child process (see above): the same plan,
    its items in a file of this process's; the child's error raised here as it was raised."""
    file = tempfile.TemporaryFile(prefix="cz-plan-")  # noqa: SIM115  # the spool's, or closed
    try:
        request = pickle.dumps((recipe, out, policy, os.getpid()), pickle.HIGHEST_PROTOCOL)
        fd = file.fileno()
        code = "from cz.plan.spooled import _child_main; _child_main()"
        with subprocess.Popen(
            [sys.executable, "-c", code, str(fd)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            pass_fds=(fd,),
        ) as proc:
            try:
                reply, _ = proc.communicate(request)
            except BaseException:  # interrupted: the child goes too
                proc.kill()
                raise
        if proc.returncode or not reply:
            raise PlanError(
                f"planning in a child process failed (exit {proc.returncode}; its error above)"
            )
        kind, first, second = pickle.loads(reply)  # our own child's reply
        if kind == "error":
            raise first
        spool = ItemSpool.adopt(file, first)
        plan: Plan = _SkeletonUnpickler(io.BytesIO(second), spool).load()
    except BaseException:
        file.close()
        raise
    return plan


def _die_with_parent(parent: int) -> None:
    """The child ends when its parent does (Linux's ``PR_SET_PDEATHSIG``; elsewhere it ends
    when it replies to no one)."""
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent went before the signal was armed
        os._exit(1)


def _child_main() -> None:
    """The child of :func:`plan_in_child`: the request on stdin, the reply on stdout (the
    planning's own output, if any, goes to stderr)."""
    reply_fd = os.dup(1)
    os.dup2(2, 1)
    recipe, out, policy, parent = pickle.loads(sys.stdin.buffer.read())  # our parent's request
    _die_with_parent(parent)
    items = ItemSpool(os.fdopen(int(sys.argv[1]), "r+b"))
    try:
        resolution = resolve_items(recipe, policy=policy, stream=True)
        plan = make_spooled_plan(recipe, resolution, out=out, items=items)
        skeleton = io.BytesIO()
        _SkeletonPickler(skeleton, items).dump(plan)
        reply = pickle.dumps(("plan", items.index(), skeleton.getvalue()), pickle.HIGHEST_PROTOCOL)
    except Exception as exc:  # raised in the parent
        try:
            sent: Exception = pickle.loads(pickle.dumps(exc))
        except Exception:  # an error that does not pickle: its words
            sent = PlanError(f"{type(exc).__name__}: {exc}")
        reply = pickle.dumps(("error", sent, None), pickle.HIGHEST_PROTOCOL)
    with os.fdopen(reply_fd, "wb") as stream:
        stream.write(reply)

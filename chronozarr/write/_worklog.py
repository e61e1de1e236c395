"""The resumable work prefix of a write (decision 0017): ``.cz-build/<key>/`` in the target.

A resumable ``encode`` or ``append`` records one summary per finished task there, after the
task's chunk objects, and the commit removes the prefix after the root is written. A re-run with
the same key reads the summaries back and skips those tasks, so the volatility sums add up in
the same order (JSON keeps every float exactly) and the bytes equal an uninterrupted run's.
"""

from __future__ import annotations

import json
import logging
import re
import shutil
from collections.abc import Mapping, Sequence
from typing import Any

from chronozarr.errors import EncodeError
from chronozarr.io import WORK_PREFIX, LocalStore, Store
from chronozarr.write._cells import CellResult

__all__ = [
    "WorkLog",
    "check_resume_key",
    "clear_work",
    "pending_tasks",
    "result_from_json",
    "result_json",
    "task_name",
]

log = logging.getLogger("chronozarr.writer")

_RESUME_KEY_RE = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check_resume_key(key: str | None) -> str | None:
    """``key`` when it may name a work prefix (1-64 letters, digits, ``_`` or ``-``)."""
    if key is not None and not _RESUME_KEY_RE.fullmatch(str(key)):
        raise EncodeError("resume_key", f"expected 1-64 letters, digits, _ or -, got {key!r}")
    return key


class WorkLog:
    """The summaries of finished tasks under ``.cz-build/<key>/`` (decision 0017).

    ``done(name)`` reads a task's summary back (``None`` when the task has not finished);
    ``record(name, summary)`` writes it, after the task's chunk objects. JSON keeps every
    float exactly (``repr`` round-trips), so a resumed build sums the same volatility terms.
    """

    def __init__(self, target: Store, key: str):
        self.target = target
        self.key = key
        self.prefix = f"{WORK_PREFIX}/{key}"

    def started(self) -> bool:
        return self.target.get(f"{self.prefix}/started.json") is not None

    def start(self, description: dict[str, Any]) -> None:
        self.target.put(f"{self.prefix}/started.json", json.dumps(description).encode())

    def done(self, name: str) -> Any:
        blob = self.target.get(f"{self.prefix}/{name}.json")
        return None if blob is None else json.loads(blob)

    def record(self, name: str, summary: Any) -> None:
        self.target.put(f"{self.prefix}/{name}.json", json.dumps(summary).encode())

    def finished(self, level: str) -> list[str]:
        """Names of the tasks of ``level`` whose summary exists (one LIST, not one GET each)."""
        base = f"{self.prefix}/{level}/"
        return [
            f"{level}/{k[len(base) : -len('.json')]}"
            for k, _ in self.target.list(base)
            if k.endswith(".json")
        ]

    def other_keys(self) -> set[str]:
        """Work keys of other (different) builds that left a partial at this target."""
        keys = {k.split("/", 2)[1] for k, _ in self.target.list(f"{WORK_PREFIX}/") if "/" in k}
        return keys - {self.key}


def clear_work(target: Store, key: str) -> None:
    """Remove ``.cz-build/<key>/`` (after the root is written: the commit, decision 0017)."""
    if isinstance(target, LocalStore):
        shutil.rmtree(target.root / WORK_PREFIX / key, ignore_errors=True)
        work = target.root / WORK_PREFIX
        if work.is_dir() and not any(work.iterdir()):
            work.rmdir()
        return
    for k, _size in list(target.list(f"{WORK_PREFIX}/{key}/")):
        target.delete(k)


def task_name(level: str, task: tuple[tuple[int, int], range]) -> str:
    """The summary object's name of a (cell, time range) task (decision 0017)."""
    (r, c), times = task
    return f"{level}/{r}.{c}.{times.start}-{times.stop}"


def result_json(res: CellResult) -> dict[str, Any]:
    return {
        "row": res.row,
        "col": res.col,
        "shard_sizes": res.shard_sizes,
        "vol_sum": res.vol_sum,
        "vol_count": res.vol_count,
        "extra": res.extra,
    }


def result_from_json(doc: Mapping[str, Any]) -> CellResult:
    return CellResult(
        int(doc["row"]),
        int(doc["col"]),
        {str(k): int(v) for k, v in doc["shard_sizes"].items()},
        float(doc["vol_sum"]),
        int(doc["vol_count"]),
        doc.get("extra"),
    )


def pending_tasks(
    tasks: Sequence[Any], level: str, work: WorkLog | None
) -> tuple[list[int], dict[int, CellResult]]:
    """The indices of a level's tasks still to run, and the summaries a resumed run finds of
    the others (decision 0017)."""
    if work is None:
        return list(range(len(tasks))), {}
    finished = set(work.finished(level))
    todo: list[int] = []
    found: dict[int, CellResult] = {}
    for i, task in enumerate(tasks):
        name = task_name(level, (task[0], task[1]))
        summary = work.done(name) if name in finished else None
        if summary is None:
            todo.append(i)
        else:
            found[i] = result_from_json(summary)
    if len(todo) < len(tasks):
        log.info(
            "level %s: %d task(s) already written, %d to do",
            level, len(tasks) - len(todo), len(todo),
        )  # fmt: skip
    return todo, found

"""How a build runs (:class:`BuildOptions`), its progress events and its result."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from cz.load import SkippedAsset

if TYPE_CHECKING:  # annotations only: these modules import this one
    from cz.build.executor import CompositeStats
    from cz.plan import Plan
    from cz.recipe import Recipe


@dataclass
class BuildOptions:
    """How a build runs (not what it builds: that is the recipe).

    ``scheduler``: address of a dask.distributed scheduler (``tcp://host:8786``), else local
    threads. ``workers``: local threads for compositing and writing (default: the CPU count, at
    most 8). ``skip_failed``: leave out items whose assets cannot be read, and record them.
    ``overwrite``: replace an existing local store, once the new one is complete.
    ``read_attempts`` / ``retry_delay``: our retries of a failing read (GDAL retries HTTP
    429/5xx itself first, see :data:`cz.load.GDAL_DEFAULTS`). ``work_dir``: where the spill and,
    for URL targets, the local copy go (default: next to the target, or the current folder).
    ``connect_timeout``: seconds to reach the dask scheduler. ``worker_timeout``: seconds a
    cluster build waits while no worker is connected before it fails; ``retries``: dask's retries
    of a failed cluster task (a lost worker's tasks are rescheduled by dask anyway).
    ``allow_empty``: write the store even when no item gave a single valid pixel (else the
    build fails, decision 0020).
    """

    scheduler: str | None = None
    workers: int | None = None
    skip_failed: bool = False
    overwrite: bool = False
    read_attempts: int = 3
    retry_delay: float = 0.5
    gdal: dict[str, str] | None = None
    work_dir: str | None = None
    connect_timeout: float = 15.0
    worker_timeout: float = 180.0
    retries: int = 2
    allow_empty: bool = False

    def threads(self) -> int:
        return max(1, self.workers or min(8, os.cpu_count() or 1))


def resumed_text(resumed: dict[str, dict[str, int]]) -> str:
    """``12 of 16 level-0 tasks and 3 of 5 upper-level tasks found done on the target``."""
    level0 = resumed.get("0", {"found": 0, "tasks": 0})
    upper = [v for k, v in resumed.items() if k != "0"]
    found_up, tasks_up = sum(v["found"] for v in upper), sum(v["tasks"] for v in upper)
    text = f"{level0['found']:,} of {level0['tasks']:,} level-0 tasks"
    if tasks_up:
        text += f" and {found_up:,} of {tasks_up:,} upper-level tasks"
    return text + " found done on the target (not run again)"


class Progress:
    """Progress events of a build; this base ignores them (the CLI draws rich bars).

    Phases: ``plan`` (no total), ``months`` (composites, total = months), ``cells`` (level-0
    cells written, total = cells), ``pyramid`` (upper levels and metadata, no total),
    ``publish`` (objects uploaded).
    """

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        """A phase begins (``total`` units, or unknown)."""

    def advance(self, phase: str, amount: float = 1.0) -> None:
        """``amount`` units of ``phase`` are done."""

    def skip(self, phase: str, amount: float = 1.0) -> None:
        """``amount`` units of ``phase`` were found done on the target (a resumed run, decision
        0017): done, but not this run's work, so not in its rate or time left (decision 0050)."""

    def finish(self, phase: str) -> None:
        """A phase is complete."""

    def note(self, message: str) -> None:
        """Something a person should know (a skipped item, a warning of the plan)."""

    def plan_warnings(self, plan: Plan) -> None:
        """Note the plan's warnings (a missing ``store.path`` is moot: the target is given)."""
        for warning in plan.warnings:
            if not warning.startswith("store.path is not set"):
                self.note(warning)


@dataclass
class BuildResult:
    """What a build or an append did."""

    action: str  # "build" or "append"
    store: str  # local path of the store (or of the local copy for a URL target)
    published: str | None  # the URL a store was published to
    months: list[str]
    empty_months: list[str]
    bands: list[str]
    shape: list[int]
    levels: int
    cells: int
    items_read: int
    observations: int
    skipped: list[SkippedAsset]
    encoding: str
    bytes: int
    objects: int
    seconds: float
    composite_seconds: float
    write_seconds: float
    valid_fraction: float
    gap_filled_fraction: float
    warnings: list[str] = field(default_factory=list)
    #: a resumed run (decision 0017): per level (``"0"``, ``"1"``...) ``{"found": n, "tasks":
    #: m}``, the tasks found done on the target and not run again (decision 0050); else None
    resumed: dict[str, dict[str, int]] | None = None

    def to_json(self) -> dict[str, Any]:
        out = dict(self.__dict__)
        out["skipped"] = [s.to_json() for s in self.skipped]
        return out

    @classmethod
    def of_run(
        cls,
        action: str,
        store: str,
        *,
        recipe: Recipe,
        plan: Plan,
        stats: CompositeStats,
        encoding: str,
        size: tuple[int, int],
        started: float,
        write_seconds: float,
        fractions: tuple[float, float],
    ) -> BuildResult:
        """The result of a build or append of ``plan`` (``size``: bytes and objects)."""
        grid = plan.grid
        return cls(
            action=action,
            store=store,
            published=None,
            months=[m.month for m in plan.months],
            empty_months=[m.month for m in plan.months if not m.items],
            bands=[b.name for b in recipe.bands],
            shape=list(grid.shape),
            levels=len(grid.levels),
            cells=grid.cells,
            items_read=stats.distinct_read(),
            observations=sum(stats.observations.values()),
            skipped=stats.skipped,
            encoding=encoding,
            bytes=size[0],
            objects=size[1],
            seconds=time.perf_counter() - started,
            composite_seconds=stats.seconds,
            write_seconds=write_seconds,
            valid_fraction=fractions[0],
            gap_filled_fraction=fractions[1],
            warnings=list(plan.warnings),
        )

"""Progress on stderr for every step that can take more than a second (cz.conventions).

One interface, the phases of :class:`cz.build.Progress` (``start(phase, total, detail)``,
``advance(phase, amount)``, ``finish(phase)``, ``note(message)``), two renderings:

- a terminal gets rich bars (counts, rate, elapsed, ETA): :class:`RichProgress`, which
  :func:`build_progress` picks for ``cz build``, ``cz append``, ``cz convert`` and ``cz export``;
- anything else (a log file, CI, a pipe) gets plain lines, one per phase when it ends, with counts
  and rates, and a line every ``INTERVAL_S`` seconds (``CZ_PROGRESS_INTERVAL`` overrides it)
  while a long phase runs, with the estimated time left, each under 80 columns and never cut
  with an ellipsis: ``validate: 209.3 MB/209.3 MB, 1,204 requests in 31.2 s (6.7 MB/s)``,
  ``cells: 40/64 cells in 20.0 s (2.0 cells/s, eta 12 s) so far``.

A resumed run's units found done (``skip(phase, amount)``, decision 0050) count as done but not
in the rate or the estimate: ``cells: 64/64 cells (40 found done) in 12.1 s (2.0 cells/s)``.

``--quiet`` (or a log level above WARNING) draws nothing. :class:`CountingStore` counts the
requests and bytes of a chronozarr store, so a library call that takes a store (``validate``,
``open_store``) reports progress without a callback in the library.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import IO, Any

from rich.markup import escape
from rich.progress import (
    BarColumn,
    ProgressColumn,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichBars
from rich.text import Text

from cz.build.options import Progress
from cz.output import err

__all__ = [
    "CountingStore",
    "LineProgress",
    "NullProgress",
    "RichProgress",
    "build_progress",
    "eta_text",
    "human_bytes",
    "make_progress",
    "progress_interval",
]

INTERVAL_S = 15.0
#: The clock of the phases' times (a test sets its own).
clock = time.monotonic
#: The environment variable that sets the plain lines' interval in seconds (a log of a long run
#: may want fewer; a test wants them at once).
INTERVAL_ENV = "CZ_PROGRESS_INTERVAL"


def progress_interval() -> float:
    """The seconds between a running phase's plain lines: ``CZ_PROGRESS_INTERVAL`` when it is a
    number (at least 0), else ``INTERVAL_S``."""
    import os

    try:
        value = float(os.environ.get(INTERVAL_ENV, ""))
    except ValueError:
        return INTERVAL_S
    return value if value >= 0 else INTERVAL_S


def eta_text(seconds: float) -> str:
    """``42 s``, ``3 min 5 s``, ``2 h 10 min``: the time left, to the unit that matters."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds // 60:.0f} min {seconds % 60:.0f} s"
    return f"{seconds // 3600:.0f} h {seconds % 3600 // 60:.0f} min"


def human_bytes(n: float) -> str:
    """``209.3 MB``: decimal units, as sizes of objects on a host are quoted."""
    for unit in ("B", "kB", "MB", "GB", "TB", "PB"):
        if abs(n) < 1000 or unit == "PB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} PB"  # unreachable: the loop returns at PB


def _count(value: float) -> str:
    # shares of a unit (a month split over cells) add up to a float a hair off the integer
    return f"{value:,.0f}" if abs(value - round(value)) < 1e-6 else f"{value:,.1f}"


def _figures(state: _Phase, elapsed: float) -> tuple[str, str]:
    """(``done/total unit``, ``rate``) of a phase. A phase in unit ``B`` counts bytes; units
    found done (a resumed run) count in ``done``, are named, and are not in the rate."""
    elapsed = max(elapsed, 1e-9)
    if state.unit == "B":
        done = human_bytes(state.done)
        count = f"{done}/{human_bytes(state.total)}" if state.total is not None else done
        rate = f"{human_bytes(state.done / elapsed)}/s" if state.done else ""
        if state.requests:
            count += f", {state.requests:,} requests"
        return count, rate
    if state.total is None and not state.unit:  # a phase without counts: only its time
        return "done", ""
    done = _count(state.done)
    count = f"{done}/{_count(state.total)}" if state.total is not None else done
    if state.unit:
        count += f" {state.unit}"
    if state.skipped:
        count += f" ({_count(state.skipped)} found done)"
    ran = state.done - state.skipped
    rate = f"{_rate(ran / elapsed)} {state.unit}/s" if state.unit and ran else ""
    return count, rate


def _rate(per_second: float) -> str:
    """``12.5``, or two significant digits below one a second (``0.071``, not ``0.1``)."""
    return f"{per_second:.1f}" if per_second >= 0.95 else f"{per_second:.2g}"


def _eta(state: _Phase, elapsed: float) -> float | None:
    """Seconds left at this run's rate (units found done excluded), or None without a total or
    a rate yet."""
    ran = state.done - state.skipped
    if state.total is None or ran <= 0 or elapsed <= 0:
        return None
    return max(0.0, state.total - state.done) / (ran / elapsed)


class NullProgress:
    """Draws nothing (``--quiet``)."""

    def __enter__(self) -> NullProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        return None

    def advance(self, phase: str, amount: float = 1.0, requests: int = 0) -> None:
        return None

    def skip(self, phase: str, amount: float = 1.0) -> None:
        return None

    def finish(self, phase: str) -> None:
        return None

    def note(self, message: str) -> None:
        return None

    def plan_warnings(self, plan: Any) -> None:
        """Note the plan's warnings, as ``cz.build.Progress.plan_warnings`` does (the build
        pipeline calls it; a missing ``store.path`` is moot: the target is given)."""
        for warning in plan.warnings:
            if not warning.startswith("store.path is not set"):
                self.note(warning)


class _Phase:
    def __init__(self, total: float | None, unit: str, detail: str) -> None:
        self.total = total
        self.unit = unit
        self.detail = detail
        self.done = 0.0
        self.skipped = 0.0  # found done by a resumed run: in done, not in the rate
        self.requests = 0
        self.started = clock()
        self.last_line = self.started


class LineProgress(NullProgress):
    """Plain lines on a non-terminal stream: one per phase when it ends (and every
    ``interval`` seconds while it runs), with counts and rates. Thread-safe."""

    def __init__(
        self, stream: IO[str], units: dict[str, str] | None = None, interval: float | None = None
    ) -> None:
        self.stream = stream
        self.units = dict(units or {})
        self.interval = progress_interval() if interval is None else interval
        self.phases: dict[str, _Phase] = {}
        self.lock = threading.Lock()

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        with self.lock:
            if phase in self.phases:
                self.phases[phase].total = total
                return
            self.phases[phase] = _Phase(total, self.units.get(phase, ""), detail)

    def advance(self, phase: str, amount: float = 1.0, requests: int = 0) -> None:
        with self.lock:
            state = self.phases.get(phase)
            if state is None:
                return
            state.done += amount
            state.requests += requests
            now = clock()
            if now - state.last_line >= self.interval:
                state.last_line = now
                self._write(self.line(phase, state, now, running=True))

    def skip(self, phase: str, amount: float = 1.0) -> None:
        """``amount`` units of ``phase`` were found done (a resumed run): done, not in the rate."""
        with self.lock:
            state = self.phases.get(phase)
            if state is not None:
                state.done += amount
                state.skipped += amount

    def finish(self, phase: str) -> None:
        with self.lock:
            state = self.phases.pop(phase, None)
            if state is not None:
                if state.total is not None:  # an estimate may be passed: end at what was done
                    state.total = max(state.total, state.done)
                self._write(self.line(phase, state, clock(), running=False))

    def note(self, message: str) -> None:
        with self.lock:
            self._write(message)

    def _write(self, text: str) -> None:
        self.stream.write(text + "\n")
        self.stream.flush()

    @staticmethod
    def line(phase: str, state: _Phase, now: float, *, running: bool) -> str:
        """``phase: done/total unit in s (rate)``; the detail text is left to the terminal
        rendering, so the line stays short."""
        elapsed = now - state.started
        count, rate = _figures(state, elapsed)
        text = f"{phase}: {count} in {elapsed:.1f} s"
        eta = _eta(state, elapsed) if running else None
        if rate and eta is not None:
            text += f" ({rate}, eta {eta_text(eta)})"
        elif rate:
            text += f" ({rate})"
        return text + (" so far" if running else "")


class RichLineProgress(NullProgress):
    """Rich bars on a terminal: phase, bar, done/total, rate, elapsed."""

    def __init__(self, console: Any, units: dict[str, str] | None = None) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.units = dict(units or {})
        self.bars = Progress(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description:<9}"),
            BarColumn(bar_width=24),
            TextColumn("{task.fields[count]}"),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        self.tasks: dict[str, Any] = {}
        self.state: dict[str, _Phase] = {}
        self.lock = threading.Lock()
        self.running = False

    def __exit__(self, *exc: object) -> None:
        if self.running:
            self.bars.stop()

    def _fields(self, phase: str) -> dict[str, Any]:
        state = self.state[phase]
        count, rate = _figures(state, clock() - state.started)
        return {"count": count, "rate": rate}

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        with self.lock:
            if not self.running:
                self.bars.start()
                self.running = True
            if phase in self.tasks:
                self.state[phase].total = total
                self.bars.update(self.tasks[phase], total=total, **self._fields(phase))
                return
            self.state[phase] = _Phase(total, self.units.get(phase, ""), detail)
            self.tasks[phase] = self.bars.add_task(phase, total=total, **self._fields(phase))

    def advance(self, phase: str, amount: float = 1.0, requests: int = 0) -> None:
        with self.lock:
            if phase not in self.tasks:
                return
            state = self.state[phase]
            state.done += amount
            state.requests += requests
            self.bars.update(self.tasks[phase], completed=state.done, **self._fields(phase))

    def finish(self, phase: str) -> None:
        with self.lock:
            if phase not in self.tasks:
                return
            state = self.state[phase]
            total = max(state.total or 0, state.done) if state.total is not None else state.done
            state.total = total
            self.bars.update(self.tasks[phase], total=total, completed=total, **self._fields(phase))
            self.bars.stop_task(self.tasks[phase])

    def note(self, message: str) -> None:
        from rich.text import Text

        self.bars.console.print(Text(message))


def make_progress(console: Any, *, quiet: bool, units: dict[str, str] | None = None) -> Any:
    """Bars on a terminal, lines elsewhere, nothing under ``--quiet``."""
    if quiet:
        return NullProgress()
    if getattr(console, "is_terminal", False):
        return RichLineProgress(console, units)
    return LineProgress(console.file, units)


class CountingStore:
    """A chronozarr Store that reports each request's bytes (a phase in unit ``B``) and the
    request count to ``progress`` under ``phase``.

    Everything else is the wrapped store's (``url``, ``list``, ``size``, ``stats``...), so the
    library sees the store it would have opened itself.
    """

    def __init__(self, store: Any, progress: Any, phase: str) -> None:
        self._store = store
        self._progress = progress
        self._phase = phase
        self.requests = 0
        self.nbytes = 0
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def _count(self, data: bytes | None) -> bytes | None:
        n = len(data) if data is not None else 0
        with self._lock:
            self.requests += 1
            self.nbytes += n
        self._progress.advance(self._phase, n, requests=1)
        return data

    def get(self, key: str) -> bytes | None:
        return self._count(self._store.get(key))

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        return self._count(self._store.get_range(key, start, end))

    def list(self, prefix: str = "") -> Iterator[tuple[str, int]]:
        return self._store.list(prefix)


# --------------------------------------------------------------------------------------------
# the rich bars of a build, an append, a convert or an export

_PHASES = {
    "plan": ("plan", ""),
    "months": ("months", "months"),
    "cells": ("cells", "cells"),
    "pyramid": ("pyramid", ""),
    "publish": ("publish", "objects"),
    "read": ("read", "blocks"),  # cz convert: windows read from the source files
    "export": ("export", "files"),  # cz export: COGs written
}


class _Count(ProgressColumn):
    """``done/total`` (fractions kept while a month or cell is under way)."""

    def render(self, task: Any) -> Text:
        if task.total is None or not task.fields.get("unit"):
            return Text("")
        done = task.completed
        text = f"{done:.0f}" if float(done).is_integer() else f"{done:.1f}"
        return Text(f"{text}/{task.total:.0f}", style="progress.download")


class _Rate(ProgressColumn):
    """Units per second (or seconds per unit when slower than one a second)."""

    def render(self, task: Any) -> Text:
        unit = task.fields.get("unit", "")
        elapsed = task.finished_time if task.finished else task.elapsed
        speed = task.completed / elapsed if elapsed else None
        if not unit or not speed:
            return Text("")
        if speed >= 1:
            return Text(f"{speed:.1f} {unit}/s", style="progress.data.speed")
        return Text(f"{1 / speed:.1f} s/{unit.rstrip('s')}", style="progress.data.speed")


def build_progress() -> Any:
    """The progress of a build or append: rich bars on a terminal, one plain line per phase
    elsewhere (a log, CI), nothing under ``--quiet`` (see the module docstring)."""
    from cz.conventions import STATE

    if STATE.quiet:
        return NullProgress()
    if not err.is_terminal:
        return LineProgress(err.file, {phase: unit for phase, (_l, unit) in _PHASES.items()})
    return RichProgress()


class RichProgress(Progress):
    """Draws the build's phases as rich progress bars on stderr (see :class:`cz.build.Progress`).

    Thread-safe: the writer's threads report cells while the main thread reports months.
    """

    def __init__(self) -> None:
        self.bars = RichBars(
            SpinnerColumn(finished_text="[green]✓[/]"),
            TextColumn("{task.description:<8}"),
            BarColumn(bar_width=24),
            _Count(),
            _Rate(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("[dim]{task.fields[detail]}[/]"),
            console=err,
            transient=False,
            refresh_per_second=8,
        )
        self.tasks: dict[str, TaskID] = {}
        self.lock = threading.Lock()
        self.started = False

    def __enter__(self) -> RichProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.started:
            self.bars.stop()

    def start(self, phase: str, total: float | None = None, detail: str = "") -> None:
        label, unit = _PHASES.get(phase, (phase, ""))
        with self.lock:
            if not self.started:  # drawn from the first phase on: a refusal draws nothing
                self.bars.start()
                self.started = True
            if phase in self.tasks:
                self.bars.update(self.tasks[phase], total=total, detail=escape(detail))
                return
            self.tasks[phase] = self.bars.add_task(
                label, total=total, detail=escape(detail), unit=unit
            )

    def advance(self, phase: str, amount: float = 1.0) -> None:
        task = self.tasks.get(phase)
        if task is not None:
            self.bars.advance(task, amount)

    def skip(self, phase: str, amount: float = 1.0) -> None:
        """Units found done (a resumed run): the bar shrinks to what is left to do, so that its
        rate and ETA are this run's; the detail says how many were found."""
        with self.lock:
            task = self.tasks.get(phase)
            if task is None:
                return
            state = self.bars.tasks[task]  # type: ignore[index]
            base = state.fields.setdefault("base", state.fields["detail"])
            found = float(state.fields.get("found", 0.0)) + amount
            total = None if state.total is None else max(0.0, state.total - amount)
            detail = f"{_count(found)} found done; {base}"
            self.bars.update(task, total=total, found=found, detail=detail)

    def finish(self, phase: str) -> None:
        with self.lock:
            task = self.tasks.get(phase)
            if task is None:
                return
            total = self.bars.tasks[task].total  # type: ignore[index]
            if total is None:
                self.bars.update(task, total=1, completed=1)
            else:
                self.bars.update(task, completed=total)
            self.bars.stop_task(task)

    def note(self, message: str) -> None:
        self.bars.console.print(f"[yellow]warning:[/] {escape(message)}", highlight=False)

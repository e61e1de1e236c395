"""Command-line options shared by ``cz build`` and ``cz append`` (one definition, one help text)."""

from __future__ import annotations

from typing import Annotated

import typer

__all__ = ["SchedulerOpt", "SkipFailedOpt", "WorkDirOpt", "WorkerTimeoutOpt", "WorkersOpt"]

SchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Address of a dask.distributed scheduler (tcp://host:8786): the workers composite "
        "and write the store straight to --out (a shared folder or s3://); a re-run resumes. "
        "Default: local threads.",
    ),
]
WorkerTimeoutOpt = Annotated[
    float,
    typer.Option(
        "--worker-timeout",
        help="With --scheduler: seconds to wait while no worker is connected before failing.",
        min=1.0,
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option("--workers", min=1, help="Local threads (default: CPU count, at most 8)."),
]
SkipFailedOpt = Annotated[
    bool,
    typer.Option(
        "--skip-failed-items",
        help="Leave out items whose assets cannot be read (recorded in the provenance).",
    ),
]
WorkDirOpt = Annotated[
    str | None,
    typer.Option(
        "--work-dir",
        help="Folder for the temporary composites (and the local copy of a URL target); "
        "default: next to the store.",
    ),
]

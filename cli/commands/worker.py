"""``cz worker SCHEDULER``: a dask worker set up for ``cz build --scheduler`` (decision 0026).

It is ``dask worker`` (every option after the address passes through unchanged) with the one
setting a CPU-bound build wants that dask does not default to: dask's statistical profiler off
(``distributed.worker.profile.enabled: false``). The profiler samples every task thread from
the worker's event loop every 10 ms, holding the GIL while it walks their stacks: half a busy
worker's event-loop CPU, about 1.5 % of a core taken from the tasks (docs/benchmarks-archive.md,
"Build on a dask cluster: worker settings"; decision 0026). ``--profile`` keeps it on (dask's
dashboard then shows where the tasks spend their time). The process becomes ``dask worker``
(exec), so signals, exit codes and the nanny behave exactly as dask documents them.

Users who start workers another way (dask-jobqueue, Coiled, Dask Gateway) set the same option in
their cluster's dask configuration, or the environment variable
``DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED=False`` (docs/scale.md).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from cz.output import fail

__all__ = ["PROFILE_ENV", "register", "worker_command"]

PROFILE_ENV = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"


def worker_command(
    scheduler: str, extra: list[str], *, profile: bool = False
) -> tuple[list[str], dict[str, str]]:
    """The ``dask worker`` command line and environment ``cz worker`` runs."""
    env = dict(os.environ)
    if not profile:
        env[PROFILE_ENV] = "False"
    exe = Path(sys.executable).with_name("dask")
    argv = [str(exe) if exe.exists() else "dask", "worker", scheduler, *extra]
    return argv, env


def worker_cmd(
    ctx: typer.Context,
    scheduler: Annotated[
        str, typer.Argument(help="The dask scheduler's address, e.g. tcp://10.0.0.5:8786.")
    ],
    profile: Annotated[
        bool,
        typer.Option(
            "--profile/--no-profile",
            help="Keep dask's statistical profiler on (off by default: it takes CPU from "
            "build tasks).",
        ),
    ] = False,
) -> None:
    """Start a dask worker for cz build --scheduler (dask worker with the profiler off).

    Every option after SCHEDULER goes to dask worker as it is: cz worker tcp://HOST:8786
    --nthreads 1 --memory-limit 4GiB.
    """
    argv, env = worker_command(scheduler, list(ctx.args), profile=profile)
    try:
        os.execvpe(argv[0], argv, env)  # becomes dask worker: its signals, its exit code
    except OSError as exc:  # no dask in this environment
        fail(
            f"cannot start dask worker ({argv[0]}): {exc.strerror}; "
            "pip install 'distributed' in this environment"
        )


def register(app: typer.Typer) -> None:
    app.command(
        "worker",
        context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    )(worker_cmd)

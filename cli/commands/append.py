"""``cz append RECIPE --month 2026-10[..2026-12]`` (or ``--period A[..B]``, ``--next N`` for any
period): composite new periods and append them (spec 14).

The months are composited with the recipe exactly as ``cz build`` does (:func:`cz.build.append_months`)
and added with ``chronozarr.append``. Refused, before anything is written: months already in the
store, months before its last one or leaving a gap after it, a recipe whose grid, bands or store
options differ from the store's, and, without ``--scheduler``, a store given as a URL (append to a
local copy, validate, then ``cz publish``).

``--scheduler ADDRESS``: the new months are composited and written on the dask cluster, straight
to the store (a folder every worker sees, or ``s3://``), the client writing only the metadata
(:mod:`cz.build.cluster_append`); an interrupted run re-run with the same command resumes.

Exit codes: 0 appended, 1 runtime error or a refusal of the months or the store, 2 usage error
(a broken recipe or month, or a recipe that differs from the one the store was built with: each
differing field is named with both values), 75 another writer holds the store or committed it
first (nothing written; run again later: decision 0051).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from cz.build import BuildOptions, RecipeMismatchError, append_months, parse_months
from cz.build.appending import next_labels
from cz.commands.build import report_run, run_build_errors
from cz.errors import RecipeError
from cz.options import SkipFailedOpt, WorkDirOpt, WorkersOpt, WorkerTimeoutOpt
from cz.output import EXIT_USAGE, fail
from cz.periods import parse_labels
from cz.recipe import load_recipe

__all__ = ["append_cmd", "register"]

#: ``--scheduler`` of ``cz append`` (the store, not ``--out``, is where the workers write)
AppendSchedulerOpt = Annotated[
    str | None,
    typer.Option(
        "--scheduler",
        help="Address of a dask.distributed scheduler (tcp://host:8786): the workers composite "
        "the new months and write them straight to the store (a shared folder or s3://); a "
        "re-run resumes. Default: local threads.",
    ),
]


# Long by its signature: typer reads the command's options from it, each with its help text
# (the --help a user sees). The body is short: parse, call the package, report.
def append_cmd(
    recipe: Annotated[str, typer.Argument(help="The recipe YAML file.", show_default=False)],
    month: Annotated[
        str | None,
        typer.Option(
            "--month",
            help="The month to append, YYYY-MM, or a range YYYY-MM..YYYY-MM (a monthly store).",
            show_default=False,
        ),
    ] = None,
    period: Annotated[
        str | None,
        typer.Option(
            "--period",
            help="The period to append by its label (its start, YYYY-MM-DD; a month YYYY-MM), "
            "or a range A..B.",
            show_default=False,
        ),
    ] = None,
    next_count: Annotated[
        int | None,
        typer.Option(
            "--next",
            min=1,
            help="Append the N periods after the store's last one.",
            show_default=False,
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            help="The local store (with --scheduler: a folder every worker sees, or s3://...); "
            "default: store.path of the recipe.",
        ),
    ] = None,
    scheduler: AppendSchedulerOpt = None,
    worker_timeout: WorkerTimeoutOpt = 180.0,
    workers: WorkersOpt = None,
    skip_failed: SkipFailedOpt = False,
    work_dir: WorkDirOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Composite new periods (months by default) with the recipe and append them to its store."""
    given = [
        name
        for name, v in (("--month", month), ("--period", period), ("--next", next_count))
        if v is not None
    ]
    if len(given) != 1:
        fail(
            "give one of --month, --period or --next"
            + (f" (got {', '.join(given)})" if given else ""),
            EXIT_USAGE,
        )
    if month is not None:
        try:
            months = parse_months(month)
        except ValueError as exc:  # not a month or a range of months
            fail(f"--month: {exc}", EXIT_USAGE)
    try:
        parsed = load_recipe(recipe)
    except RecipeError as exc:  # a broken recipe: usage error
        run_build_errors(exc)
        return
    rule = parsed.composite.period.rule()
    if month is not None and rule.kind != "month":
        fail(
            f"--month: the recipe's period is {rule.describe()}, not the month; give --period "
            "START[..START] (YYYY-MM-DD) or --next N",
            EXIT_USAGE,
        )
    if period is not None:
        try:
            months = parse_labels(period, rule)
        except ValueError as exc:  # not a label of the recipe's period
            fail(f"--period: {exc}", EXIT_USAGE)
    if next_count is not None:
        try:
            months = next_labels(
                parsed, store if store is not None else parsed.store.path, next_count
            )
        except Exception as exc:  # no store there, or nothing follows: a message
            run_build_errors(exc)
            return
    options = BuildOptions(
        scheduler=scheduler,
        workers=workers,
        skip_failed=skip_failed,
        work_dir=work_dir,
        worker_timeout=worker_timeout,
    )
    report_run(  # the recipe not the store's (RecipeMismatchError) is a usage error
        lambda progress: append_months(
            parsed, months, store=store, options=options, progress=progress
        ),
        as_json=as_json,
        usage_errors=(RecipeMismatchError,),
    )


def register(app: Any) -> None:
    """Add ``append`` to the typer app."""
    app.command("append")(append_cmd)

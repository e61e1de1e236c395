"""``cz publish``: copy a store to a bucket or a served directory, root zarr.json last.

Results go to stdout (a summary, or JSON with ``--json``); the progress bar and errors go to
stderr. Exit codes: 0 published (or nothing to do), 1 refused or failed, 2 usage error, 75 another
writer holds the target or committed it first (nothing a reader sees was written; decision 0051).
"""

from __future__ import annotations

import contextlib
from typing import Annotated

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TransferSpeedColumn,
)
from rich.table import Table

from chronozarr.errors import ChronozarrError
from cz.output import EXIT_BUSY, EXIT_USAGE, err, fail, human_bytes, is_busy, out, print_json
from cz.publish import (
    Phase,
    PublishError,
    PublishPlan,
    PublishRefusedError,
    PublishResult,
    StoreObject,
    execute,
    hold,
    open_target,
    plan_publish,
)

__all__ = ["publish_cmd", "register"]


def _print_plan(plan: PublishPlan, dry_run: bool) -> None:
    state = {
        "empty": "empty (a fresh publish)",
        "partial": "objects but no root zarr.json (an interrupted publish: resuming)",
        "store": f"a store of {plan.target_times} timesteps (re-publish; local has {plan.local_times})",
    }[plan.target_state]
    out.print(  # paths and URLs are user text: never markup (decision 0013)
        f"[bold]{escape(str(plan.source))}[/] -> [bold]{escape(str(plan.target.url))}[/]",
        highlight=False,
    )
    out.print(f"  target    {state}", highlight=False)
    table = Table(title="upload plan" if dry_run else None, title_justify="left")
    for col in ("phase", "objects", "bytes"):
        table.add_column(col, justify="right" if col != "phase" else "left")
    for phase, objs in plan.phases():
        table.add_row(
            f"{int(phase)}. {phase.title}", str(len(objs)), human_bytes(sum(o.size for o in objs))
        )
    out.print(table)
    headers = (
        "Cache-Control set per object"
        if plan.target.sets_headers
        else "cache headers come from the web server (docs/hosting.md)"
    )
    out.print(
        f"  {len(plan.uploads)} to upload ({human_bytes(plan.upload_bytes)}), "
        f"{len(plan.unchanged)} unchanged; {headers}",
        highlight=False,
    )
    if plan.extra:
        out.print(f"  {len(plan.extra)} object(s) only at the target are kept", highlight=False)
    if plan.skipped:
        err.print(
            f"[yellow]warning:[/] {len(plan.skipped)} file(s) are not part of the store and are"
            f" not published (first: {escape(str(plan.skipped[0]))})",
            highlight=False,
        )


def _run_lines(plan: PublishPlan, workers: int) -> PublishResult:
    """Publish with one line per phase on a non-terminal stderr (nothing under --quiet)."""
    from cz.conventions import STATE
    from cz.progress import LineProgress, NullProgress

    lines = NullProgress() if STATE.quiet else LineProgress(err.file)
    current: list[str] = []

    def on_phase(phase: Phase, objs: list[StoreObject]) -> None:
        if current:
            lines.finish(current.pop())
        name = f"publish {int(phase)}/4 {phase.name.lower()}"
        if isinstance(lines, LineProgress):
            lines.units[name] = "B"
        lines.start(name, sum(o.size for o in objs))
        current.append(name)

    def on_uploaded(obj: StoreObject) -> None:
        if current:
            lines.advance(current[0], obj.size, requests=1)

    result = execute(plan, workers=workers, on_phase=on_phase, on_uploaded=on_uploaded)
    if current:
        lines.finish(current.pop())
    return result


def _run(plan: PublishPlan, workers: int) -> PublishResult:
    from cz.conventions import STATE

    if STATE.quiet or not err.is_terminal:  # a log or CI: plain lines, not a redrawn bar
        return _run_lines(plan, workers)
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[objects]}"),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeElapsedColumn(),
    )
    total = len(plan.uploads)
    with Progress(*columns, console=err, transient=False) as progress:
        task = progress.add_task("publishing", total=max(plan.upload_bytes, 1), objects="")
        done = [0]

        def on_phase(phase: Phase, objs: list[StoreObject]) -> None:
            progress.update(task, description=f"{int(phase)}/4 {phase.title}")

        def on_uploaded(obj: StoreObject) -> None:
            done[0] += 1
            progress.update(task, advance=obj.size, objects=f"{done[0]}/{total}")

        return execute(plan, workers=workers, on_phase=on_phase, on_uploaded=on_uploaded)


# Long by its signature: typer reads the command's options from it, each with its help text
# (the --help a user sees). The body is short: open the target, plan and run under its hold.
def publish_cmd(
    store: Annotated[str, typer.Argument(help="The local store (a directory).")],
    target: Annotated[
        str,
        typer.Argument(help="s3://bucket/prefix, or a local directory that a web server serves."),
    ],
    endpoint: Annotated[
        str | None,
        typer.Option(
            "--endpoint", help="S3 endpoint URL (R2, MinIO, ...); default AWS_ENDPOINT_URL."
        ),
    ] = None,
    region: Annotated[
        str | None, typer.Option("--region", help="S3 region; default AWS_REGION.")
    ] = None,
    conditional_writes: Annotated[
        str,
        typer.Option(
            "--conditional-writes",
            help="On a host that ignores or refuses conditional writes (If-None-Match/If-Match): "
            "'require' refuses to publish (default; CZ_CONDITIONAL_WRITES), 'warn' publishes "
            "without protection against a concurrent writer.",
        ),
    ] = "",
    workers: Annotated[
        int, typer.Option("--workers", min=1, max=128, help="Parallel uploads.")
    ] = 8,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Plan and check only: upload nothing.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
) -> None:
    """Publish a store to s3://bucket/prefix or a served directory, root zarr.json last.

    Order (spec 9, 14): chunks and shards, then time and volatility, then every zarr.json below
    the root, the root last. Re-publishing after an append uploads only new and changed objects;
    a different store (a re-encode) over an existing one is refused.
    """
    try:
        if conditional_writes not in ("", "require", "warn"):
            fail("--conditional-writes: expected 'require' or 'warn'", EXIT_USAGE)
        extra = {"conditional_writes": conditional_writes} if conditional_writes else {}
        if extra and not target.startswith("s3://"):
            fail("--conditional-writes applies to s3:// targets only", EXIT_USAGE)
        tgt = open_target(target, endpoint=endpoint, region=region, **extra)
    except PublishRefusedError as exc:  # a target we do not publish to
        fail(str(exc), EXIT_USAGE)
    except ChronozarrError as exc:  # the store or the remote host failed
        fail(str(exc), EXIT_USAGE)
    try:
        # one writer at a time (decision 0051): a directory's lock (its sweep comes with it,
        # also when the target turns out to be up to date), an S3 prefix's lease
        with contextlib.nullcontext() if dry_run else hold(tgt):
            plan = plan_publish(store, tgt, workers=workers)
            if not as_json:
                _print_plan(plan, dry_run)
            if dry_run:
                result = PublishResult(plan, [], 0.0, 0, dry_run=True)
            elif not plan.uploads:
                result = PublishResult(plan, [], 0.0, 0)
            else:
                result = _run(plan, workers)
    except Exception as exc:  # one line each, never a traceback
        if is_busy(exc):  # another writer holds or committed the target (decision 0051)
            fail(str(exc), EXIT_BUSY)
        if isinstance(exc, PublishError | ChronozarrError):  # refused, stopped, host failed
            fail(str(exc))
        if isinstance(exc, OSError):  # local files unreadable
            fail(f"{exc}")
        raise
    if as_json:
        print_json(result.to_json())
        return
    if dry_run:
        out.print("dry run: nothing was uploaded", highlight=False)
    elif not plan.uploads:
        out.print(f"[green]up to date[/]: {escape(str(tgt.url))}", highlight=False)
    else:
        out.print(
            f"[green]published[/] {len(result.uploaded)} objects ({human_bytes(result.bytes)}) to"
            f" {escape(str(tgt.url))} in {result.seconds:.1f} s"
            + (f", {result.retries} retried" if result.retries else ""),
            highlight=False,
        )


def register(app: typer.Typer) -> None:
    app.command("publish")(publish_cmd)

"""``cz build RECIPE``: from a recipe to a store (``--dry-run``: only the plan).

``--dry-run`` resolves the recipe's items and prints the monthly plan without loading a pixel:
the grid and its levels, per month the items kept and dropped (with the reason), the
digital-number correction of each item, totals, an estimate of the store's size and object
count, and the build's size (cells, tasks, bytes, PUT requests, CPU-hours from the cost model
:mod:`cz.plan.costs`, decision 0050). ``--json`` prints the same plan as JSON on stdout, the
size under ``"size"``.

Without ``--dry-run`` the store is built (:func:`cz.build.build`): composites month by month, then
the store cell by cell, with progress bars on stderr (months and cells, rates and ETA) and a
summary on stdout (``--json``: the summary as JSON). ``--scheduler ADDRESS`` runs the composites
on a dask.distributed cluster; ``--workers N`` sets the local threads. A URL ``--out``
(``s3://...``) is built locally, then published with ``cz publish``'s machinery.

Exit codes: 0 done, 1 runtime error (catalog unreachable, an unreadable asset, an unwritable
target), 2 usage error (a broken recipe: every problem is listed with file, line and field), 75
another run holds the target (nothing written; run again later: decision 0051).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from chronozarr.errors import ChronozarrError
from cz.build import BuildOptions, BuildResult, build
from cz.build.options import resumed_text
from cz.errors import CzError, RecipeError
from cz.options import SchedulerOpt, SkipFailedOpt, WorkDirOpt, WorkersOpt, WorkerTimeoutOpt
from cz.output import (
    EXIT_BUSY,
    EXIT_RUNTIME,
    EXIT_USAGE,
    err,
    fail,
    human_bytes,
    is_busy,
    out,
    print_json,
)
from cz.periods import period_adjective
from cz.plan import DroppedItem, Plan, PlannedItem, plan_recipe
from cz.plan.costs import PlanSize, size_of
from cz.progress import build_progress
from cz.recipe import load_recipe
from cz.recipe.period import PeriodSpec

__all__ = [
    "build_cmd",
    "print_plan",
    "print_result",
    "print_size",
    "register",
    "report_run",
    "run_build_errors",
]


def _source_line(plan: Plan) -> str:
    src = plan.source
    if src.get("kind") == "api":
        where = f"{src['url']} (STAC API, {src.get('method', 'POST')} search"
        where += f", {src.get('pages', 0)} page(s), server filter: {src.get('server_filter')})"
    else:
        where = f"{src.get('path')} (local file; every check on the client)"
    return f"{plan.collection} from {where}"


def _fmt(value: float) -> str:
    """A number without float noise: integral values without decimals (9126760, not 9.1e6)."""
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"


def _short_time(iso: str | None) -> str:
    """``2020-06-01T08:06:11.024Z`` -> ``2020-06-01 08:06``."""
    if not iso:
        return "-"
    return f"{iso[:10]} {iso[11:16]}"


def _rule_label(item: PlannedItem) -> str:
    if item.dn_offset_rule == "baseline" and item.processing_baseline:
        return f"baseline {item.processing_baseline}"
    return {
        "earthsearch-flag": "boa_offset_applied",
        "raster-bands": "raster:bands",
        "acquisition-date": "assumed from date",
    }.get(item.dn_offset_rule, item.dn_offset_rule)


def _dropped_row(d: DroppedItem) -> list[str]:
    return [
        f"[dim]{escape(d.id)}[/]",
        _short_time(d.datetime),
        "",
        f"[yellow]dropped ({d.reason})[/] {escape(d.detail)}",
        "",
    ]


def print_plan(plan: Plan) -> None:
    """Print a plan for people: rich tables on stdout."""
    _print_plan_header(plan)
    _print_levels(plan)
    _print_months(plan)
    _print_items(plan)
    _print_totals(plan)


def _print_plan_header(plan: Plan) -> None:
    """Catalog, grid, store, bands, numbers, mask and composite, one line each."""
    grid = plan.grid
    title = plan.name or plan.recipe
    out.print(f"[bold]Plan[/] {escape(title)} ({escape(plan.recipe)})", highlight=False)
    out.print(f"  catalog   {escape(_source_line(plan))}", highlight=False)
    if plan.signing != "none":
        out.print(f"  signing   {plan.signing}, per month at build time", highlight=False)
    out.print(
        f"  grid      {escape(str(grid.crs))} ({escape(grid.crs_reason)}), {_fmt(grid.resolution)} m, "
        f"{grid.shape[0]} x {grid.shape[1]} px, chunk {grid.chunk_size}, "
        f"{grid.cells} cells at level 0, {len(grid.levels)} levels",
        highlight=False,
    )
    out.print(
        f"  transform [{', '.join(_fmt(v) for v in grid.transform)}]  bounds "
        f"[{', '.join(_fmt(v) for v in grid.bounds)}]",
        highlight=False,
    )
    store = plan.store
    layout = f"sharded, shard_time {store['shard_time']}" if store["shard"] else "unsharded"
    codec = store["codec"]
    out.print(
        f"  store     {escape(str(store['path'] or '(not set: --out)'))}: {store['dtype']}, "
        f"nodata {store['nodata']}, encoding {store['encoding']}, {codec['name']} "
        f"{codec.get('level', '')}, {layout}",
        highlight=False,
    )
    bands = ", ".join(
        f"{b['name']} <- {b.get('expression') or '|'.join(b['asset'])} "
        f"(x{_fmt(b['scale'])} {_fmt(b['offset']):s}"
        + (", from the composite)" if b.get("when") == "composite" else ")")
        for b in plan.bands
    )
    out.print(f"  bands     {escape(bands)}", highlight=False)
    conv = plan.dn_convention
    if conv["harmonized_bands"]:
        out.print(
            f"  numbers   stored with Sentinel-2 offset {conv['store_dn_offset']} "
            f"(physical = stored x scale + offset); each item corrected to it",
            highlight=False,
        )
    if plan.mask is not None:
        _print_mask(plan.mask)
    _print_composite(plan)


def _print_mask(mask: dict[str, Any]) -> None:
    """The mask line: the classes kept, bit-flag rules, cloud cleaning, cloud probability."""
    keep = ", ".join(str(k) for k in mask["keep"] or ()) or "(any)"
    extra = ""
    for rule in mask.get("bits") or ():
        where = f"bit {rule['offset']}" + (
            f"-{rule['offset'] + rule['length'] - 1}" if rule["length"] > 1 else ""
        )
        values = ",".join(str(v) for v in rule["values"])
        extra += f"; rejects {escape(str(rule['name']))} ({where}) in {values}"
    if mask.get("open") or mask.get("dilate"):
        cleaned = ", ".join(str(c) for c in mask.get("clean", [])) or "none"
        extra += f"; cloud cleaned (classes {escape(cleaned)})"
    if mask.get("open"):
        extra += f"; opening {mask['open']} px"
    if mask.get("dilate"):
        extra += f"; dilation {mask['dilate']} px"
    if mask.get("cloud_probability_max") is not None:
        assets = escape("|".join(mask["cloud_probability_asset"]))
        extra += f"; cloud probability ({assets}) at most {mask['cloud_probability_max']:g} %"
    out.print(
        f"  mask      {escape('|'.join(mask['asset']))}, classes kept {keep}{extra}",
        highlight=False,
    )


def _print_composite(plan: Plan) -> None:
    """The composite line: the period, the method and the gap-fill."""
    gap = plan.gap_fill
    rule = PeriodSpec.model_validate(plan.period).rule()
    unit = "months" if rule.kind == "month" else f"{rule.describe()} periods"
    gap_text = gap["method"] + (f", max age {gap['max_age']} {unit}" if gap.get("max_age") else "")
    method = plan.composite["method"]
    if "q" in plan.composite:
        method += f" (q {plan.composite['q']:g})"
    if "index" in plan.composite:
        method += f" (index {escape(plan.composite['index'])})"
    out.print(
        f"  composite {period_adjective(rule)} {method}; gap-fill {gap_text}", highlight=False
    )


def _print_levels(plan: Plan) -> None:
    grid = plan.grid
    levels = Table(title="levels", title_justify="left")
    for col in ("level", "resolution (m)", "shape (y, x)", "grid (rows x cols)", "cells"):
        levels.add_column(col, justify="right")
    for lv in grid.levels:
        levels.add_row(
            lv.path,
            _fmt(lv.resolution),
            f"{lv.shape[0]} x {lv.shape[1]}",
            f"{lv.grid[0]} x {lv.grid[1]}",
            str(lv.grid[0] * lv.grid[1]),
        )
    out.print(levels)


def _print_months(plan: Plan) -> None:
    kind = str(plan.period.get("kind", "month"))
    months = Table(title="months" if kind == "month" else "periods", title_justify="left")
    for col, justify in (
        ("month", "left"),
        ("items", "right"),
        ("solar days", "right"),
        ("dropped", "left"),
    ):
        months.add_column(col, justify=justify)  # type: ignore[arg-type]
    for m in plan.months:
        reasons: dict[str, int] = {}
        for d in m.dropped:
            reasons[d.reason] = reasons.get(d.reason, 0) + 1
        dropped = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "-"
        months.add_row(
            m.month,
            str(len(m.items)) if m.items else "[yellow]0 (empty)[/]",
            str(len(m.solar_days)),
            escape(dropped),
        )
    out.print(months)


def _print_items(plan: Plan) -> None:
    """Every item kept or dropped, month by month in acquisition order, then those outside."""
    items = Table(title="items", title_justify="left")
    items.add_column("item", overflow="fold")
    items.add_column("acquired")
    items.add_column("cloud %", justify="right")
    items.add_column("decision", overflow="fold")
    items.add_column("DN offset -> correction", overflow="fold")
    for m in plan.months:
        rows: list[tuple[str, list[str]]] = []
        for p in m.items:
            notes = "".join(f"\n[dim]{escape(n)}[/]" for n in p.notes)
            dn = f"{p.dn_offset} -> {p.correction:+d} [dim]({escape(_rule_label(p))})[/]"
            if not p.lossless:
                dn += " [red]lossy[/]"
            rows.append(
                (
                    p.datetime,
                    [
                        escape(p.id),
                        _short_time(p.datetime),
                        f"{p.cloud_cover:.1f}" if p.cloud_cover is not None else "-",
                        "[green]kept[/]" + notes,
                        dn,
                    ],
                )
            )
        for d in m.dropped:
            rows.append((d.datetime or "", _dropped_row(d)))
        for i, (_, row) in enumerate(sorted(rows, key=lambda r: r[0])):
            items.add_row(*row, end_section=i == len(rows) - 1)
    for d in plan.outside:
        items.add_row(*_dropped_row(d))
    if items.row_count:
        out.print(items)


def _print_totals(plan: Plan) -> None:
    t = plan.totals
    dropped = ", ".join(f"{k} {v}" for k, v in t.dropped.items()) or "none"
    corrections = ", ".join(f"{k} x{v}" for k, v in t.corrections.items()) or "none"
    out.print(
        f"[bold]totals[/]    {t.months} months ({t.empty_months} empty), {t.items_found} items "
        f"found, {t.items_kept} kept, dropped: {escape(dropped)}; {t.observations} solar-day "
        f"observations; corrections: {escape(corrections)}",
        highlight=False,
    )
    e = plan.estimate
    out.print(
        f"[bold]estimate[/]  {e.timesteps} timesteps x {e.bands} bands, {e.levels} levels; "
        f"{human_bytes(e.raw_bytes)} raw, about {human_bytes(e.estimated_bytes)} stored; "
        f"{e.objects} objects ({e.chunk_objects} chunks, {e.metadata_objects} metadata)",
        highlight=False,
    )
    for warning in plan.warnings:
        out.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False)


def _cpu_text(hours: float) -> str:
    """``12.5 CPU-hours``, or CPU-seconds below a tenth of an hour (a small test recipe)."""
    if hours >= 0.1:
        return f"{hours:,.1f} CPU-hours"
    return f"{hours * 3600:.3g} CPU-seconds"


def print_size(size: PlanSize) -> None:
    """The dry run's last line: what the build will cost before it starts (decision 0050)."""
    sample = f", {size.sample_tasks} auto sample" if size.sample_tasks else ""
    out.print(
        f"[bold]size[/]      {size.cells:,} cells at level 0 ({size.cells_all_levels:,} over "
        f"every level) x {size.months} months = {size.cell_months:,} cell-months; "
        f"{size.tasks:,} tasks ({size.level0_tasks:,} level 0, {size.upper_tasks:,} upper"
        f"{sample}); about {human_bytes(size.bytes)} in {size.puts:,} PUTs; about "
        f"{_cpu_text(size.cpu_hours)}",
        highlight=False,
    )
    out.print(f"  [dim]{escape(size.basis)}[/]", highlight=False)


def _recipe_failure(exc: RecipeError) -> None:
    """Print every problem of a broken recipe on stderr, one per line, and exit 2 (under
    ``--json``: ``{"error", "code", "problems"}`` on stdout, cz/conventions.py)."""
    from cz.conventions import json_requested

    problems = [str(problem) for problem in exc.problems]
    if json_requested():
        print_json({"error": "; ".join(problems), "code": EXIT_USAGE, "problems": problems})
        raise typer.Exit(EXIT_USAGE)
    for problem in problems:
        err.print(Text.assemble(("error:", "bold red"), " ", problem), highlight=False)
    raise typer.Exit(EXIT_USAGE)


# --------------------------------------------------------------------------------------------
# progress and summary of a build (shared with cz append)


def print_result(result: BuildResult) -> None:
    """The summary of a build or append, for people, on stdout."""
    verb = "built" if result.action == "build" else "appended to"
    where = result.published or result.store
    out.print(f"[bold]{verb}[/] {escape(where)} in {result.seconds:.1f} s", highlight=False)
    months = result.months
    span = f"{months[0]} .. {months[-1]}" if months else "-"
    empty = f"; {len(result.empty_months)} empty: {', '.join(result.empty_months[:6])}"
    out.print(
        f"  {len(months)} month(s) ({span}{empty if result.empty_months else ''}), "
        f"{len(result.bands)} bands ({escape(', '.join(result.bands))}), "
        f"{result.shape[0]} x {result.shape[1]} px, {result.levels} levels, "
        f"{result.cells} cells at level 0",
        highlight=False,
    )
    out.print(
        f"  {result.items_read} items read, {result.observations} solar-day observations; "
        f"pixels valid {100 * result.valid_fraction:.1f} %, gap-filled "
        f"{100 * result.gap_filled_fraction:.1f} %",
        highlight=False,
    )
    out.print(
        f"  composites {result.composite_seconds:.1f} s, store {result.write_seconds:.1f} s; "
        f"encoding {result.encoding}; {human_bytes(result.bytes)} in {result.objects} objects",
        highlight=False,
    )
    if result.resumed is not None:
        out.print(f"  resumed: {resumed_text(result.resumed)}", highlight=False)
    if result.skipped:
        out.print(
            f"  [yellow]{len(result.skipped)} item(s) skipped[/] (recorded in the provenance):",
            highlight=False,
        )
        for s in result.skipped[:20]:
            out.print(
                f"    {escape(s.item)} ({s.month}): asset {escape(s.asset)}: {escape(s.error)}",
                highlight=False,
            )


def run_build_errors(exc: BaseException) -> None:
    """Turn a build/append error into a message on stderr and an exit code."""
    if isinstance(exc, RecipeError):
        _recipe_failure(exc)
    if is_busy(exc):  # another writer holds or committed the target (decision 0051)
        fail(str(exc), EXIT_BUSY)
    if isinstance(exc, CzError):
        fail(str(exc), EXIT_RUNTIME)
    if isinstance(exc, ChronozarrError):  # the format library's typed errors (decision 0013)
        fail(str(exc), EXIT_RUNTIME)
    raise exc


def report_run(
    work: Callable[[Any], BuildResult],
    *,
    as_json: bool,
    usage_errors: tuple[type[Exception], ...] = (),
) -> None:
    """Run a build or an append (``work(progress)``) under the progress display, then print its
    result: JSON under ``--json``, else the summary. A failure is one message and an exit code,
    never a traceback: ``usage_errors`` exit as usage errors, the rest as run_build_errors says."""
    try:
        with build_progress() as progress:
            result = work(progress)
    except usage_errors as exc:  # the command was asked something it cannot do
        fail(str(exc), EXIT_USAGE)
    except Exception as exc:  # any build/append failure: a message, never a traceback
        run_build_errors(exc)
        return
    if as_json:
        print_json(result.to_json())
    else:
        print_result(result)


# Long by its signature: typer reads the command's options from it, each with its help text
# (the --help a user sees). The body is short: parse, call the package, report.
def build_cmd(
    recipe: Annotated[str, typer.Argument(help="The recipe YAML file.", show_default=False)],
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="Print the monthly plan; load no pixels."),
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan (or the build summary) as JSON.")
    ] = False,
    out_path: Annotated[
        str | None,
        typer.Option("--out", help="Store path or URL; overrides store.path of the recipe."),
    ] = None,
    scheduler: SchedulerOpt = None,
    worker_timeout: WorkerTimeoutOpt = 180.0,
    workers: WorkersOpt = None,
    skip_failed: SkipFailedOpt = False,
    work_dir: WorkDirOpt = None,
    overwrite: Annotated[
        bool,
        typer.Option(
            "--overwrite", help="Replace an existing local store once the new one is complete."
        ),
    ] = False,
    allow_empty: Annotated[
        bool,
        typer.Option(
            "--allow-empty",
            help="Write the store even when no item gives a valid pixel (else: exit 1).",
        ),
    ] = False,
) -> None:
    """Build the store of a recipe. With --dry-run: print the plan (grid, months, items, cost)."""
    try:
        parsed = load_recipe(recipe)
    except RecipeError as exc:  # a broken recipe: usage error, every problem
        _recipe_failure(exc)
        return
    if not dry_run:
        options = BuildOptions(
            scheduler=scheduler,
            workers=workers,
            skip_failed=skip_failed,
            overwrite=overwrite,
            work_dir=work_dir,
            worker_timeout=worker_timeout,
            allow_empty=allow_empty,
        )
        report_run(
            lambda progress: build(parsed, out=out_path, options=options, progress=progress),
            as_json=as_json,
        )
        return

    from cz.conventions import STATE
    from cz.progress import make_progress

    seen = [0]
    try:  # the STAC search, page by page: a bar on a terminal, one line in a log
        with make_progress(err, quiet=STATE.quiet, units={"search": "items"}) as progress:

            def on_page(page: int, count: int) -> None:
                progress.advance("search", count - seen[0])
                seen[0] = count

            progress.start("search", None, "resolving items")
            plan = plan_recipe(parsed, out=out_path, on_page=on_page)
            progress.finish("search")
    except RecipeError as exc:
        _recipe_failure(exc)
        return
    except CzError as exc:
        fail(str(exc), EXIT_RUNTIME)  # fail() prints text, never markup
    size = size_of(plan, cluster=scheduler is not None)
    if as_json:
        print_json({**plan.to_dict(), "size": size.model_dump(mode="json")})
    else:
        print_plan(plan)
        print_size(size)


def register(app: Any) -> None:
    """Add ``build`` to the typer app."""
    app.command("build")(build_cmd)

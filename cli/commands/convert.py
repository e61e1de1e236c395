"""``cz convert SOURCE STORE`` and ``cz export STORE OUT_DIR``: bring rasters in, take them out.

Every check runs before anything is written, and a failed one exits 1 with ``error: FILE:
what`` on stderr (no traceback). ``--dry-run`` prints the checks and the plan (``--json``: as
JSON) and writes nothing. Progress bars are drawn on stderr; the summary goes to stdout.
Store, recipe and file text is never rendered as rich markup.

Exit codes: 0 done, 1 a refused source or store (or a runtime failure), 2 usage error, 75 another
run holds the target (nothing written; decision 0051).
"""

from __future__ import annotations

from types import TracebackType
from typing import Annotated, Any

import typer
from rich.markup import escape

import chronozarr
from cz.convert.errors import ConvertError
from cz.output import EXIT_BUSY, EXIT_USAGE, err, fail, is_busy, out, print_json
from cz.progress import build_progress

__all__ = ["convert_cmd", "export_cmd", "register"]


def _split(text: str | None) -> tuple[str, ...] | None:
    if text is None:
        return None
    names = tuple(n.strip() for n in text.split(","))
    if not all(names):
        fail(f"--bands: empty band name in {text!r}", EXIT_USAGE)
    return names


def _print_plan(plan: Any, store: str, spec: Any, size: Any) -> None:
    doc = plan.to_json()
    out.print(
        f"[bold]Convert[/] {escape(doc['source'])} -> {escape(store)} ({doc['kind']}, "
        f"{doc['files']} file(s), {doc['timesteps']} timestep(s))",
        highlight=False,
    )
    for check in doc["checks"]:
        out.print(f"  [green]ok[/] {check['check']:<26} {escape(check['result'])}", highlight=False)
    codec = spec.codec
    layout = f"sharded (shard_time {spec.shard_time or 'all'})" if spec.shard else "unsharded"
    out.print(
        f"  store    encoding {spec.encoding}, chunk {spec.chunk_size}, {layout}, "
        f"{codec.name} {codec.effective_level}",
        highlight=False,
    )
    out.print(f"  size     {escape(size.text())}", highlight=False)


# Long by its signature: typer reads the command's options from it, each with its help text
# (the --help a user sees). The body is short: parse, call the package, report.
def convert_cmd(
    source: Annotated[
        str,
        typer.Argument(
            help="A folder or glob of dated GeoTIFFs, one GeoTIFF (path or http(s)/s3 URL), a "
            "manifest (.csv/.json: time,path[,band]) or a dataset (.nc, .zarr).",
            show_default=False,
        ),
    ],
    store: Annotated[str, typer.Argument(help="The store folder to write.", show_default=False)],
    date_pattern: Annotated[
        str | None,
        typer.Option(
            "--date-pattern",
            help="How to find the date in a file name: strftime-like (%Y%m%d, A%Y%j) or a "
            "regex with named groups year, month/doy, day. Default: the first YYYY-MM-DD, "
            "YYYYMMDD, YYYY-MM or YYYYMM.",
        ),
    ] = None,
    bands: Annotated[
        str | None,
        typer.Option(
            "--bands",
            help="Band names, comma-separated: of a multi-band file in order, or the names "
            "found in the file names of one-file-per-band series.",
        ),
    ] = None,
    variable: Annotated[
        str | None, typer.Option("--variable", help="The dataset variable to convert.")
    ] = None,
    grid: Annotated[
        str | None, typer.Option("--grid", help="Resample onto the grid of this raster.")
    ] = None,
    crs: Annotated[
        str | None,
        typer.Option(
            "--crs",
            help="Resample into this CRS (EPSG:3035, WKT, PROJ); for a dataset without a CRS, its CRS.",
        ),
    ] = None,
    resolution: Annotated[
        float | None, typer.Option("--resolution", help="Resample to this pixel size.")
    ] = None,
    resampling: Annotated[
        str, typer.Option("--resampling", help="Resampling method (nearest keeps values).")
    ] = "nearest",
    dtype: Annotated[
        str | None,
        typer.Option(
            "--dtype",
            help="Store dtype (uint8, uint16, int16, float32); required to convert any other "
            "source dtype (the rule is recorded in the provenance).",
        ),
    ] = None,
    nodata: Annotated[
        float | None,
        typer.Option("--nodata", help="The store's nodata (file nodata and NaN become it)."),
    ] = None,
    mask: Annotated[
        str | None,
        typer.Option(
            "--mask",
            help="'nodata' (a mask from nodata), or a folder/glob/manifest of dated mask "
            "files (nonzero = valid).",
        ),
    ] = None,
    encoding: Annotated[
        str | None, typer.Option("--encoding", help="auto (default), none or star-delta.")
    ] = None,
    anchor_interval: Annotated[
        int | None, typer.Option("--anchor-interval", help="Star-delta anchor interval (6).")
    ] = None,
    chunk_size: Annotated[
        int | None, typer.Option("--chunk-size", help="Cell size in pixels (512).")
    ] = None,
    shard: Annotated[bool, typer.Option("--shard", help="Write a sharded store.")] = False,
    history: Annotated[
        bool,
        typer.Option(
            "--history", help="Also write the time-series companion (a pixel's history, C25)."
        ),
    ] = False,
    shard_time: Annotated[
        int | None, typer.Option("--shard-time", help="Timesteps per shard (with --shard).")
    ] = None,
    codec: Annotated[
        str | None, typer.Option("--codec", help="zstd (default), gzip or blosc.")
    ] = None,
    codec_level: Annotated[
        int | None, typer.Option("--codec-level", help="Compression level.")
    ] = None,
    append: Annotated[
        bool,
        typer.Option("--append", help="Add the source's later dates to an existing store."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Run the checks, print the plan, write nothing.")
    ] = False,
    workers: Annotated[
        int | None, typer.Option("--workers", min=1, max=64, help="Cells written at once.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the plan/summary as JSON.")
    ] = False,
    yes: Annotated[
        bool,
        typer.Option(
            "--yes",
            help="Convert even when the estimate exceeds 100 GB of values (the plan prints it).",
        ),
    ] = False,
) -> None:
    """Convert dated GeoTIFFs, a manifest or a NetCDF/Zarr variable into a store."""
    from cz.convert.plan import ConvertOptions
    from cz.convert.run import append_check, convert, plan_source, store_spec
    from cz.convert.size import check_size, estimate

    options = ConvertOptions(
        date_pattern=date_pattern,
        bands=_split(bands),
        variable=variable,
        grid=grid,
        crs=crs,
        resolution=resolution,
        resampling=resampling,
        dtype=dtype,
        nodata=nodata,
        mask=mask,
    )
    try:
        with _Status(not as_json, "checking the source ..."):
            plan = plan_source(source, options)
        spec = store_spec(
            plan.dtype,
            encoding=encoding,
            anchor_interval=anchor_interval,
            chunk_size=chunk_size,
            shard=shard or None,
            history=history or None,
            shard_time=shard_time,
            codec=codec,
            codec_level=codec_level,
        )
        n_time = len(plan.to_json()["times"])
        if append:
            reader, keep, skipped = append_check(plan, store)
            n_time = len(keep)
        size = estimate(plan, spec, n_time)
        if dry_run:
            if append:
                times = plan.to_json()["times"]
                plan.checks.append(
                    {
                        "check": "append",
                        "result": f"{len(keep)} new timestep(s) after the store's last "
                        f"{reader.attrs.times[-1]}"
                        + (f" ({times[keep[0]]} .. {times[keep[-1]]})" if keep else "")
                        + f", {len(skipped)} already in the store (skipped)",
                    }
                )
            if as_json:
                print_json(
                    {
                        "plan": plan.to_json(),
                        "store": {"path": store, **spec.model_dump()},
                        "estimate": size.to_json(),
                    }
                )
            else:
                _print_plan(plan, store, spec, size)
            check_size(size, yes=yes)  # a dry run says what the run would refuse
            return
        check_size(size, yes=yes)
        with build_progress() as progress:
            result = convert(plan, store, spec, append=append, workers=workers, progress=progress)
    except ConvertError as exc:
        fail(str(exc))
    except Exception as exc:  # one line each, never a traceback
        if is_busy(exc):  # another run holds the target (decision 0051): exit 75
            fail(str(exc), EXIT_BUSY)
        if isinstance(exc, chronozarr.ChronozarrError | OSError):  # a store or disk failure
            fail(f"{store}: {exc}")
        raise
    if as_json:
        print_json(result.to_json())
        return
    verb = "appended to" if result.action == "append" else "wrote"
    out.print(
        f"[bold]{verb}[/] {escape(result.store)} in {result.seconds:.1f} s: "
        f"{result.timesteps} timestep(s), {len(result.bands)} band(s) "
        f"({escape(', '.join(result.bands))}), {result.shape[0]} x {result.shape[1]} px, "
        f"{result.dtype}, encoding {result.encoding}, {result.bytes / 1e6:.1f} MB in "
        f"{result.objects} objects",
        highlight=False,
    )
    if result.skipped:
        out.print(
            f"  {len(result.skipped)} timestep(s) already in the store, skipped", highlight=False
        )


class _Status:
    """A spinner on stderr while the checks run (none under --json)."""

    def __init__(self, show: bool, text: str) -> None:
        self.cm = err.status(text) if show else None

    def __enter__(self) -> None:
        if self.cm is not None:
            self.cm.__enter__()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.cm is not None:
            self.cm.__exit__(exc_type, exc, tb)


def export_cmd(
    store: Annotated[str, typer.Argument(help="The store (path or URL).", show_default=False)],
    out_dir: Annotated[str, typer.Argument(help="Folder for the GeoTIFFs.", show_default=False)],
    times: Annotated[
        str | None,
        typer.Option(
            "--times",
            help="Timesteps to export: a..b (YYYY, YYYY-MM, YYYY-MM-DD or ISO; inclusive; "
            "either side may be left out), or one period. Default: all.",
        ),
    ] = None,
    level: Annotated[int, typer.Option("--level", min=0, help="Pyramid level.")] = 0,
    physical: Annotated[
        bool,
        typer.Option("--physical", help="Write float32 physical values (stored x scale + offset)."),
    ] = False,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace existing files of the same name.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Export a store's timesteps as Cloud-Optimized GeoTIFFs, one per timestep."""
    from cz.convert.export import export

    try:
        with build_progress() as progress:
            result = export(
                store,
                out_dir,
                times=times,
                level=level,
                physical=physical,
                overwrite=overwrite,
                progress=progress,
            )
    except ConvertError as exc:
        fail(str(exc))
    except (chronozarr.ChronozarrError, OSError) as exc:
        fail(f"{store}: {exc}")
    if as_json:
        print_json(result.to_json())
        return
    kind = "physical float32" if physical else "stored values"
    out.print(
        f"[bold]exported[/] {len(result.files)} COG(s) ({kind}, level {level}) to "
        f"{escape(result.out_dir)} in {result.seconds:.1f} s",
        highlight=False,
    )
    for f in result.files:
        out.print(f"  {escape(f)}", highlight=False)


def register(app: Any) -> None:
    """Add ``convert`` and ``export`` to the typer app."""
    app.command("convert")(convert_cmd)
    app.command("export")(export_cmd)

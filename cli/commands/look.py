"""The typer commands ``cz quicklook``, ``cz series``, ``cz preview`` and ``cz share``.

Results go to stdout (``--json`` for machines), progress and errors to stderr; store and user
text is never rendered as rich markup. Exit codes: 0 done, 1 runtime error (store unreadable,
file not writable), 2 usage error (a selection the store cannot satisfy).
"""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated, Any

import typer
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

import chronozarr
from chronozarr.errors import ChronozarrError
from cz.look.errors import LookError
from cz.look.expr import ExpressionError
from cz.output import EXIT_USAGE, err, fail, out, print_json

__all__ = ["register"]

StoreArg = Annotated[str, typer.Argument(help="Store path or URL (file://, http(s)://, s3://).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def _open(store: str) -> chronozarr.Reader:
    try:
        return chronozarr.open_store(store)
    except ChronozarrError as exc:  # not a store, corrupt, unsupported
        fail(str(exc))
    except OSError as exc:  # unreadable path or network failure
        fail(f"{store}: {exc}")


def _say(text: str) -> None:
    out.print(Text(text), highlight=False)


# Long by its signature: typer reads the command's options from it, each with its help text
# (the --help a user sees). The body is short: parse, call the package, report.
def quicklook_cmd(
    store: StoreArg,
    time: Annotated[
        str | None,
        typer.Option(
            "--time", help="A month or day (2024-06), or a range 2024-01..2024-12 (animation)."
        ),
    ] = None,
    index: Annotated[
        int | None, typer.Option("--index", help="Timestep index (negative: from the end).")
    ] = None,
    rgb: Annotated[
        str | None,
        typer.Option("--rgb", help="Three bands, by common_name or name: red,green,blue."),
    ] = None,
    band: Annotated[
        str | None, typer.Option("--band", help="One band (common_name or name).")
    ] = None,
    expression: Annotated[
        str | None,
        typer.Option("--expr", help='Band math on physical values: "(nir-red)/(nir+red)".'),
    ] = None,
    volatility: Annotated[
        bool, typer.Option("--volatility", help="The per-cell volatility map (spec 5).")
    ] = False,
    level: Annotated[
        str,
        typer.Option(
            "--level",
            help="Pyramid level, or auto (longer side at most 1024 px; less for long animations).",
        ),
    ] = "auto",
    stretch: Annotated[
        str, typer.Option("--stretch", help="Percentiles p2,p98 or physical limits 0,0.3.")
    ] = "p2,p98",
    colormap: Annotated[
        str | None,
        typer.Option(
            "--colormap", help="A matplotlib colormap (default viridis; RdYlGn for --expr)."
        ),
    ] = None,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Output .png (APNG when animated) or .gif.")
    ] = None,
    tiled: Annotated[
        bool,
        typer.Option("--tiled", help="With a --time range: one tiled picture, not an animation."),
    ] = False,
    delay: Annotated[
        int, typer.Option("--delay", min=20, help="Milliseconds per animation frame.")
    ] = 700,
    as_json: JsonOpt = False,
) -> None:
    """Write a picture of a store: one timestep (RGB, a band or an index), several (animated
    or tiled), or the volatility map. Invalid pixels are transparent; values are physical."""
    from cz.look.quicklook import quicklook, resolve_view, store_name
    from cz.look.select import parse_level, select_times
    from cz.look.stretch import parse_stretch

    reader = _open(store)
    try:
        spec = parse_stretch(stretch)
        view = resolve_view(
            reader,
            rgb=rgb,
            band=band,
            expression=expression,
            volatility=volatility,
            colormap=colormap,
        )
        times = [] if volatility else select_times(reader, time, index)
        k = parse_level(reader, level, frames=len(times) or 1)
        if out_file is None:
            name = store_name(reader.store.url).removesuffix(".zarr")
            if volatility:
                when = "volatility"
            elif len(times) > 1:
                when = f"{reader.attrs.times[times[0]][:10]}..{reader.attrs.times[times[-1]][:10]}"
            else:
                when = reader.attrs.times[times[0]][:10]
            out_file = Path(f"{name}-{when}.png")
        err.print(Text(f"drawing {view.label} at level {k} ({len(times) or 1} frame(s))"))
        info = quicklook(
            reader,
            view,
            times=times,
            level=k,
            out=out_file,
            stretch=spec,
            tiled=tiled,
            duration_ms=delay,
        )
    except ChronozarrError as exc:  # the store: unreadable or corrupt
        fail(str(exc))
    except (
        LookError,
        ExpressionError,
        ValueError,
    ) as exc:  # the options (parse_stretch: ValueError)
        fail(str(exc), EXIT_USAGE)
    except OSError as exc:  # unreadable path or network failure
        fail(f"{store}: {exc}")
    if as_json:
        print_json(info)
        return
    ranges = ", ".join(
        f"{c['name']} {c['min']:.4g}..{c['max']:.4g}" for c in info["stretch"]["channels"]
    )
    kind = (
        f"{info['frames']} frames"
        if info["frames"] > 1
        else ("tiled" if info["tiled"] else "1 frame")
    )
    _say(
        f"wrote {info['file']} ({info['width']} x {info['height']} px, {kind}, level {k}; "
        f"stretch {info['stretch']['spec']}: {ranges}; {info['valid_fraction']:.1%} valid)"
    )


def series_cmd(
    store: StoreArg,
    lon: Annotated[float | None, typer.Option("--lon", help="Longitude (WGS 84).")] = None,
    lat: Annotated[float | None, typer.Option("--lat", help="Latitude (WGS 84).")] = None,
    x: Annotated[float | None, typer.Option("--x", help="x in the store's CRS.")] = None,
    y: Annotated[float | None, typer.Option("--y", help="y in the store's CRS.")] = None,
    level: Annotated[int, typer.Option("--level", min=0, help="Pyramid level.")] = 0,
    out_file: Annotated[
        Path | None, typer.Option("--out", help="Write a chart (.png), .csv or .json instead.")
    ] = None,
    no_history: Annotated[
        bool,
        typer.Option(
            "--no-history",
            help="Read every timestep's chunks even when the store has a time-series companion.",
        ),
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """A pixel's history: stored and physical values per band, validity, coverage (gap-filled
    timesteps marked), read from the store's time-series companion when it has one (a few small
    objects), else from that pixel's cell only (its timesteps in parallel)."""
    from cz.look.select import lonlat_to_xy, pixel_at
    from cz.look.series import read_series, write_series

    geo = _lonlat_or_xy(lon, lat, x, y)
    reader = _open(store)
    try:
        if level >= len(reader.levels):
            raise LookError(f"--level {level}: the store has levels 0..{len(reader.levels) - 1}")
        if geo:
            assert lon is not None and lat is not None
            x, y = lonlat_to_xy(reader, lon, lat)
        assert x is not None and y is not None
        row, col = pixel_at(reader, x, y, level)
        series = read_series(reader, row, col, level, use_history=False if no_history else None)
        written = None if out_file is None else write_series(series, out_file)
    except LookError as exc:  # a bad level, pixel or --out: usage error
        fail(str(exc), EXIT_USAGE)
    except ChronozarrError as exc:  # the store cannot be read
        fail(str(exc))
    except OSError as exc:  # unreadable path or network failure
        fail(f"{store}: {exc}")
    if as_json:
        print_json(series.to_json() if written is None else {**written, "row": row, "col": col})
        return
    if written is not None:
        _say(f"wrote {written['file']} ({written['timesteps']} timesteps of row {row}, col {col})")
        return
    _print_series(series, row, col, level)


def _lonlat_or_xy(lon: float | None, lat: float | None, x: float | None, y: float | None) -> bool:
    """Whether the pixel is given by --lon/--lat (else by --x/--y); a usage error unless one
    pair is given whole."""
    geo = lon is not None or lat is not None
    crs = x is not None or y is not None
    if geo == crs or (geo and (lon is None or lat is None)) or (crs and (x is None or y is None)):
        fail("give --lon and --lat, or --x and --y", EXIT_USAGE)
    return geo


def _print_series(series: Any, row: int, col: int, level: int) -> None:
    """The pixel's history as a table: stored and physical value per band, mask, coverage."""
    title = f"row {row}, col {col} (level {level}), x {series.x:.2f}, y {series.y:.2f}"
    table = Table(title=Text(title), box=box.SIMPLE_HEAD, pad_edge=False)
    for col_name in ("time", "mask", "cov"):
        table.add_column(col_name, justify="left" if col_name == "time" else "right", no_wrap=True)
    for b in series.bands:  # "stored physical" in one column: the table fits a terminal
        table.add_column(Text(b.name), justify="right", no_wrap=True)
    gap = series.gap_filled
    for t, when in enumerate(series.times):
        cells: list[Any] = [
            Text(when[:10] + (" *" if gap[t] else "")),
            Text("" if series.mask is None else str(series.mask[t])),
            Text("" if series.coverage is None else str(series.coverage[t])),
        ]
        for i in range(len(series.bands)):
            phys = f"{series.physical[t, i]:.4g}" if series.valid[t, i] else "invalid"
            cells.append(Text(f"{series.stored[t, i].item()} {phys}"))
        table.add_row(*cells)
    # never wrap or truncate a row, whatever the terminal (or pipe) width
    wide = Console(width=max(out.width, 30 + 20 * len(series.bands)), soft_wrap=True)
    wide.print(table)
    _say("cells: stored value, then physical value (stored * scale + offset)")
    if gap.any():
        _say("* gap-filled: valid data with coverage 0 (spec 2.5)")


def preview_cmd(
    store: Annotated[str, typer.Argument(help="Local store folder, or an http(s):// store URL.")],
    port: Annotated[
        int, typer.Option("--port", min=0, max=65535, help="Port (0: a free one).")
    ] = 0,
    no_browser: Annotated[
        bool, typer.Option("--no-browser", help="Do not open a browser.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Serve a store and the viewer on 127.0.0.1 (Range, CORS) and open it; Ctrl-C stops."""
    from cz.look.preview import start_preview, wait_for_stop
    from cz.look.viewer import locate_viewer

    remote = store.startswith(("http://", "https://"))
    if not remote:
        _open(store)  # a clear error before serving a folder that is not a store
        if not Path(store).is_dir():
            fail(f"{store}: cz preview serves a local store folder or names an http(s) URL")
    try:
        viewer = locate_viewer(allow_source=True)
        preview = start_preview(store, viewer, port=port)
    except LookError as exc:  # no viewer bundle, or the store is refused
        fail(str(exc))
    except OSError as exc:  # the port is taken or not allowed
        fail(f"cannot listen on 127.0.0.1:{port} ({exc})")
    if as_json:
        print_json(preview.to_json())
    else:
        _say(preview.page_url)
    err.print(Text(f"serving {store} and the {viewer.kind} viewer; Ctrl-C stops"))
    if not no_browser:
        webbrowser.open(preview.page_url)
    try:
        wait_for_stop()
    finally:
        preview.server.stop()
        err.print(Text(f"stopped ({preview.server.requests} requests served)"))


def share_cmd(
    store: Annotated[str, typer.Argument(help="The store (local folder or http(s):// URL).")],
    out_dir: Annotated[Path, typer.Argument(help="Folder to write the static viewer into.")],
    base_url: Annotated[
        str | None,
        typer.Option("--base-url", help="Public URL OUT_DIR will have (absolute embed snippets)."),
    ] = None,
    store_url: Annotated[
        str | None,
        typer.Option("--store-url", help="How the page names the store (default: relative path)."),
    ] = None,
    overwrite: Annotated[
        bool, typer.Option("--overwrite", help="Replace a non-empty OUT_DIR.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Write a self-contained static viewer of a store into OUT_DIR, plus embed snippets
    (an iframe and a script): upload OUT_DIR next to the store for a working link."""
    from cz.look.quicklook import store_name
    from cz.look.share import share
    from cz.look.viewer import locate_viewer

    reader = _open(store)
    title = f"{store_name(reader.store.url)} · chronozarr viewer"
    try:
        viewer = locate_viewer()
        info = share(
            store,
            out_dir,
            viewer,
            base_url=base_url,
            store_url=store_url,
            overwrite=overwrite,
            title=title,
        )
    except LookError as exc:  # no viewer bundle, or the folder is refused
        fail(str(exc))
    if as_json:
        print_json(info)
        return
    _say(
        f"wrote {info['out_dir']} ({len(info['files'])} files, {info['bytes'] / 1e6:.1f} MB), store {info['store']}"
    )
    _say(
        f"open {info['page']} once uploaded; embed snippets in {Path(info['out_dir']) / 'embed.html'}:"
    )
    _say(info["snippets"]["iframe"])


def register(app: typer.Typer) -> None:
    app.command("quicklook")(quicklook_cmd)
    app.command("series")(series_cmd)
    app.command("preview")(preview_cmd)
    app.command("share")(share_cmd)

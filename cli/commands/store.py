"""``cz validate`` and ``cz inspect``: look at a store (local path, http(s):// or s3:// URL)."""

from __future__ import annotations

from collections import defaultdict
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

import chronozarr
from chronozarr.errors import ChronozarrError, UnsupportedError
from chronozarr.io import open_store_bytes
from cz.conventions import STATE
from cz.output import EXIT_INVALID, EXIT_OK, err, fail, human_bytes, out, print_json
from cz.progress import CountingStore, make_progress

__all__ = ["inspect_summary", "register"]

StoreArg = Annotated[str, typer.Argument(help="Store path or URL (file://, http(s)://, s3://).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")]


def validate_cmd(
    store: StoreArg,
    deep: Annotated[
        bool, typer.Option("--deep", help="Decode everything; recompute pyramid and volatility.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Check a store against chronozarr v0.2. Exit 0 valid, 3 invalid, 1 runtime error."""
    _warn_leftovers(store)
    try:
        report = _validate_with_progress(store, deep)
    except ChronozarrError as exc:
        fail(str(exc))
    except OSError as exc:  # unreadable path or network failure
        fail(f"{store}: {exc}")
    if as_json:
        print_json(report.to_json())
    else:
        last = {f.rule: i for i, f in enumerate(report.findings)}
        for i, f in enumerate(report.findings):  # keys and messages quote store text: never markup
            style = "red" if f.severity == "error" else "yellow"
            line = f" §{f.section:5} {f.rule:28} {f.key}: {f.message}"
            out.print(Text.assemble((f"{f.severity:7}", style), line), highlight=False)
            if last[f.rule] == i and report.omitted.get(f.rule):  # the first few are listed
                more = f" §{f.section:5} {f.rule:28} ... and {report.omitted[f.rule]:,} more"
                out.print(Text.assemble((f"{f.severity:7}", style), more), highlight=False)
        checked = ", ".join(f"{v} {k}" for k, v in report.checked.items())
        verdict = ("valid", "green") if report.ok else ("INVALID", "red")
        out.print(
            Text.assemble(
                verdict,
                f": {store} ({report.error_count} errors, {report.warning_count} warnings;"
                f" {'deep' if deep else 'metadata'} check of {checked})",
            ),
            highlight=False,
        )
    raise typer.Exit(EXIT_OK if report.ok else EXIT_INVALID)


def _warn_leftovers(store: str) -> None:
    """Warn (stderr) about what dead runs left beside a local store: an interrupted
    ``--overwrite`` swap, staging and spill folders (cz.build.leftovers; read-only here: the
    next build, append or publish of that target recovers or removes them)."""
    if "://" in store and not store.startswith("file://"):
        return
    from cz.build.leftovers import inspect
    from cz.build.target import local_path

    try:
        found = inspect(local_path(store))
    except OSError:  # an unreadable folder: validate itself reports the store
        return
    lines = [f"an interrupted --overwrite left the journal {p}" for p in found.swaps]
    lines += [f"left by a dead run: {p}" for p in found.paths]
    lines += [f"left by another program or an older cz: {p}" for p in found.unowned]
    for line in lines:
        err.print(Text.assemble(("warning:", "yellow"), " ", line), highlight=False)
    if found.swaps:
        err.print(
            Text("warning: the next cz build, append or publish of this target finishes it"),
            highlight=False,
        )


def _remote(store: str) -> bool:
    return store.split("://", 1)[0].lower() in ("http", "https", "s3") if "://" in store else False


def _validate_with_progress(store: str, deep: bool) -> chronozarr.Report:
    """``chronozarr.validate`` with the bytes it reads drawn on stderr (cz/progress.py) when it
    can take a while: a deep check, or any check of a remote store (it HEADs every object)."""
    if not (deep or _remote(store)):
        return chronozarr.validate(store, deep=deep)
    raw = open_store_bytes(store)
    total: int | None = None
    if deep:
        try:  # the objects' total size is the bar's end; an HTTP host cannot list
            total = sum(size for _key, size in raw.list(""))
        except UnsupportedError:  # http(s): counts and rates without a total
            total = None
    with make_progress(err, quiet=STATE.quiet, units={"validate": "B"}) as progress:
        progress.start("validate", total or None, "deep: every chunk" if deep else "metadata")
        report = chronozarr.validate(CountingStore(raw, progress, "validate"), deep=deep)
        progress.finish("validate")
    return report


def inspect_summary(reader: chronozarr.Reader) -> dict[str, Any]:
    """A JSON-able summary of an open store: what a person wants to know first."""
    attrs = reader.attrs
    objects: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    listed = True
    listing_error = None
    try:
        for key, size in reader.store.list(""):
            top = key.split("/", 1)[0]
            objects[top][0] += 1
            objects[top][1] += size
    except (ChronozarrError, OSError) as exc:  # http(s) cannot list; a listing can fail: say so
        listed = False
        listing_error = str(exc)
    levels = []
    for k, lv in enumerate(reader.levels):
        entry: dict[str, Any] = {
            "path": lv.path,
            "shape": list(lv.shape),
            "grid": list(lv.grid),
            "resolution": lv.resolution,
            "chunk_size": reader.chunk_size(k),
            "sharded": reader.array(k).info.sharded,
        }
        if listed:
            entry["objects"], entry["bytes"] = objects.get(lv.path, [0, 0])
        levels.append(entry)
    volatility_error = None
    try:
        vol = reader.volatility()
    except (ChronozarrError, OSError) as exc:  # an unreadable volatility array is reported
        vol, volatility_error = None, str(exc)
    temporal = attrs.temporal
    summary: dict[str, Any] = {
        "store": reader.store.url,
        "spec_version": attrs.spec_version,
        "variable": attrs.variable,
        "dtype": str(reader.dtype),
        "crs": attrs.crs,
        "times": {
            "count": reader.n_time,
            "first": attrs.times[0] if attrs.times else None,
            "last": attrs.times[-1] if attrs.times else None,
        },
        "bands": [b.to_json() for b in attrs.bands],
        "encoding": temporal.encoding,
        "selection": dict(temporal.selection) if temporal.selection else None,
        "anchor_interval": temporal.anchor_interval,
        "anchors": len(temporal.anchor_indices),
        "nodata": attrs.nodata,
        "mask": attrs.mask_variable is not None,
        "coverage": attrs.coverage_variable is not None,
        "shard_time": reader.array(0).info.shard_time,
        "levels": levels,
        "volatility": None
        if vol is None or vol.size == 0  # an empty grid has no statistics (decision 0013)
        else {"min": float(vol.min()), "max": float(vol.max()), "mean": float(vol.mean())},
        "provenance": attrs.provenance,
        "listing": {"ok": listed, "error": listing_error},
    }
    if volatility_error is not None:
        summary["volatility_error"] = volatility_error
    if listed:
        summary["total"] = {
            "objects": sum(v[0] for v in objects.values()),
            "bytes": sum(v[1] for v in objects.values()),
        }
    return summary


def _selection_text(sel: Any) -> str:
    """The auto-selection record (spec 4.3) in words; a record without a number says so."""
    if not isinstance(sel, dict):
        return f"auto selection {sel!r}"
    cells, ratio = sel.get("sampled_cells"), sel.get("ratio")
    ratio_text = f"{ratio:.3f}" if isinstance(ratio, int | float) else "not recorded"
    return f"auto over {cells if cells is not None else '?'} cells, star-delta/plain = {ratio_text}"


def inspect_cmd(store: StoreArg, as_json: JsonOpt = False) -> None:
    """Summarize a store: levels, bands, time range, encoding, nodata, mask/coverage, sizes."""
    try:
        if _remote(store):  # requests over the network: counts and rates on stderr
            with make_progress(err, quiet=STATE.quiet, units={"inspect": "B"}) as progress:
                progress.start("inspect", None, store)
                raw = CountingStore(open_store_bytes(store), progress, "inspect")
                summary = inspect_summary(chronozarr.open_store(raw))
                progress.finish("inspect")
        else:
            summary = inspect_summary(chronozarr.open_store(store))
    except ChronozarrError as exc:  # not a store, corrupt, unsupported: one line
        fail(str(exc))
    except OSError as exc:  # unreadable path or network failure
        fail(f"{store}: {exc}")
    if as_json:
        print_json(summary)
        return
    _print_summary(summary)
    _print_bands(summary["bands"])
    _print_levels(summary)
    _print_provenance(summary["provenance"])


def _print_summary(s: dict[str, Any]) -> None:
    """The store, data, time, encoding, layout and volatility lines."""
    sel = s["selection"]
    enc = s["encoding"]
    if enc == "star-delta":
        enc += f" (anchor every {s['anchor_interval']}, {s['anchors']} anchors)"
    if sel:
        enc += f"; {_selection_text(sel)}"
    # every value below comes from the store: escaped, never rendered as markup (decision 0013)
    out.print(
        f"[bold]{escape(str(s['store']))}[/]  chronozarr {escape(str(s['spec_version']))}",
        highlight=False,
    )
    out.print(
        escape(f"  data      {s['variable']}: {s['dtype']}, nodata {s['nodata']}, crs {s['crs']}"),
        highlight=False,
    )
    t = s["times"]
    out.print(
        escape(f"  time      {t['count']} timesteps, {t['first']} .. {t['last']}"),
        highlight=False,
    )
    out.print(f"  encoding  {escape(enc)}", highlight=False)
    layout = "unsharded" if not s["shard_time"] else f"sharded, shard_time {s['shard_time']}"
    out.print(
        f"  layout    {layout}; mask {'yes' if s['mask'] else 'no'}, coverage {'yes' if s['coverage'] else 'no'}",
        highlight=False,
    )
    if s["volatility"]:
        v = s["volatility"]
        out.print(
            f"  volatility min {v['min']:.4f}, mean {v['mean']:.4f}, max {v['max']:.4f}",
            highlight=False,
        )


def _print_bands(band_list: list[dict[str, Any]]) -> None:
    bands = Table(title="bands", title_justify="left")
    for col in ("name", "common_name", "scale", "offset", "units"):
        bands.add_column(col)
    for b in band_list:
        bands.add_row(
            *(Text(str(b.get(k, ""))) for k in ("name", "common_name", "scale", "offset", "units"))
        )
    out.print(bands)


def _print_levels(s: dict[str, Any]) -> None:
    """The levels table (sizes when the store could be listed), then the totals."""
    levels = Table(title="levels", title_justify="left")
    listed = s["listing"]["ok"]
    columns = ["level", "shape (t, band, y, x)", "grid", "resolution"]
    if listed:  # sizes only when the store could be listed: never a "?" for a failed read
        columns += ["objects", "bytes"]
    for col in columns:
        levels.add_column(col, justify="right")
    for lv in s["levels"]:
        row: list[Text | str] = [
            Text(str(lv["path"])),  # store text, never markup
            " x ".join(str(v) for v in lv["shape"]),
            f"{lv['grid'][0]} x {lv['grid'][1]}",
            f"{lv['resolution']:g}",
        ]
        if listed:
            row += [str(lv["objects"]), human_bytes(lv["bytes"])]
        levels.add_row(*row)
    out.print(levels)
    if not listed:
        out.print(
            Text(f"  sizes     not listed: {s['listing']['error']}"),
            highlight=False,
        )
    if "volatility_error" in s:
        out.print(Text(f"  volatility unreadable: {s['volatility_error']}"), highlight=False)
    if "total" in s:
        out.print(
            f"  total     {s['total']['objects']} objects, {human_bytes(s['total']['bytes'])}",
            highlight=False,
        )


def _print_provenance(prov: Any) -> None:
    """The human summary of the provenance (spec 3.8 keys); everything else is in --json."""
    if isinstance(prov, dict) and prov:
        # the human summary (spec 3.8 keys); everything else is in --json
        for key in ("sources", "composite", "gap_fill", "notes"):
            if key in prov:
                value = prov[key]
                text = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
                out.print(Text(f"  {key:9} {text}"), highlight=False)
        extra = sorted(k for k in prov if k not in ("sources", "composite", "gap_fill", "notes"))
        if extra:
            out.print(Text(f"  provenance also: {', '.join(extra)} (see --json)"), highlight=False)


def register(app: typer.Typer) -> None:
    app.command("validate")(validate_cmd)
    app.command("inspect")(inspect_cmd)

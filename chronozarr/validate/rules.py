"""The rule catalogue of the validator: rule id -> spec section, severity, one-line summary.

Every finding names a rule of this catalogue and takes its section and severity from it (a
finding's section is never inferred from its message). ``docs/spec.md`` carries the table that
:func:`markdown_table` renders (``python scripts/rules_table.py`` rewrites it; a test checks
that the document is current), and a test checks that every rule has a negative test that
triggers it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["RULES", "Rule", "markdown_table", "rule"]

Severity = Literal["error", "warning"]


@dataclass(frozen=True)
class Rule:
    """One check: its ``id``, the spec ``section`` it enforces, its ``severity`` (a MUST is an
    error, a SHOULD a warning) and a one-line ``summary``."""

    id: str
    section: str
    severity: Severity
    summary: str


def _rules(*rows: tuple[str, str, Severity, str]) -> dict[str, Rule]:
    out: dict[str, Rule] = {}
    for rid, section, severity, summary in rows:
        if rid in out:
            raise ValueError(f"rule {rid!r} is declared twice")
        out[rid] = Rule(rid, section, severity, summary)
    return out


def _plane_rules(plane: str, section: str) -> list[tuple[str, str, Severity, str]]:
    """The rules every mask (2.4) and coverage (2.5) array follows."""
    return [
        (f"{plane}.data_type", section, "error", f"{plane} arrays are uint8"),
        (f"{plane}.shape", section, "error", f"{plane} shape is [n_time, H, W] of its level"),
        (f"{plane}.fill", section, "error", f"{plane} fill_value is 0"),
        (f"{plane}.dims", section, "error", f"{plane} dimension_names are [time, y, x]"),
        (f"{plane}.chunks", section, "error", f"{plane} inner chunks are (1, cs, cs)"),
        (f"{plane}.layout", section, "error", f"{plane} is sharded like data (same shard_time)"),
        (f"{plane}.codec", "8", "error", f"{plane} uses the data's codec chain"),
        (f"{plane}.levels", section, "error", f"{plane} exists at every level or at none"),
        (
            f"{plane}.variable",
            section,
            "error",
            f"chronozarr.{plane}_variable is set exactly when {plane} arrays exist",
        ),
    ]


RULES: dict[str, Rule] = _rules(
    # 2: store layout
    ("root.missing", "2", "error", "the store has a root zarr.json"),
    ("root.group", "2", "error", "the root is a Zarr v3 group"),
    ("level.group", "2", "error", "every level is a group"),
    ("array.missing", "2", "error", "every array the metadata names exists"),
    ("array.malformed", "2", "error", "array metadata is a valid Zarr v3 array document"),
    ("array.key_encoding", "2", "error", "chunk keys use the default encoding with '/'"),
    # the time-series companion (project addition, docs/spec.md C25)
    ("history.block", "2", "error", "chronozarr.history lists levels of the store"),
    ("history.missing", "2", "error", "a listed level holds the history group, values, field"),
    (
        "history.layout",
        "2",
        "error",
        "history values are (time, field, y, x) in the data's type, unsharded (T, n, B, B)",
    ),
    ("history.field", "2", "error", "the field coordinate lists bands, mask, coverage"),
    ("history.codec", "8", "error", "history values use the data's codec chain"),
    ("history.values", "10", "error", "history values equal the data's, mask and coverage"),
    # 2.1 data array
    ("data.dims", "2.1", "error", "data dimension_names are [time, band, y, x]"),
    ("data.shape", "2.1", "error", "the data array is 4-d"),
    ("data.cs", "2.1", "error", "the chunk size is even and the same at every level"),
    ("data.chunks", "2.1", "error", "data inner chunks are (1, n_band, cs, cs)"),
    ("array.chunk_grid", "2.1", "error", "arrays use the regular chunk grid"),
    # 2.2 coordinates and dimension names
    ("array.dimension_names", "2.2", "error", "every array has dimension_names"),
    (
        "array.array_dimensions",
        "2.2",
        "error",
        "_ARRAY_DIMENSIONS is set and equals dimension_names",
    ),
    ("coord.missing", "2.2", "error", "time, band, y and x exist at every level"),
    ("coord.malformed", "2.2", "error", "coordinate array metadata is well formed"),
    ("coord.dims", "2.2", "error", "a coordinate's dimension_names are its own name"),
    ("coord.dtype", "2.2", "error", "time is int64, band string, y and x float64"),
    ("coord.single_chunk", "2.2", "warning", "a coordinate array is one chunk (SHOULD)"),
    ("coord.chunk", "2.2", "error", "a coordinate's chunk c/0 exists"),
    ("coord.decode", "2.2", "error", "a coordinate chunk decodes to its length"),
    ("coord.length", "2.2", "error", "y and x have the level's height and width"),
    ("coord.centres", "2.2", "error", "y and x are the pixel centres of the level transform"),
    ("mirror.time_values", "2.2", "error", "chronozarr.times is the ISO rendering of time"),
    ("mirror.band_coord", "2.2", "error", "the band coordinate equals the band names"),
    # 2.3 data type and nodata
    ("data.data_type", "2.3", "error", "data is uint8, uint16, int16 or float32"),
    ("data.dtype", "2.3", "error", "every level has level 0's data type"),
    ("nodata.nan", "2.3", "error", "nodata is not NaN"),
    ("nodata.fill", "2.3", "error", "fill_value is nodata (0 when nodata is null)"),
    ("nodata.attr", "2.3", "error", "the nodata attribute equals chronozarr.nodata"),
    ("nodata.range", "2.3", "error", "nodata is a value of the data type"),
    # 2.4 mask, 2.5 coverage
    *_plane_rules("mask", "2.4"),
    ("mask.values", "2.4", "error", "mask values are 0 or 1"),
    ("pyramid.mask", "2.4", "error", "a level's mask is the 2 x 2 maximum of the level below"),
    *_plane_rules("coverage", "2.5"),
    ("pyramid.coverage", "2.5", "error", "a level's coverage is (sum + 2) // 4 of the level below"),
    # 3 metadata
    ("json.invalid", "3", "error", "every zarr.json is valid JSON"),
    ("metadata.malformed", "3", "error", "metadata is well formed enough to be checked"),
    ("root.attributes", "3", "error", "the root attributes are an object"),
    ("root.consolidated", "3.1", "warning", "the root carries consolidated metadata (SHOULD)"),
    ("consolidated.stale", "3.1", "error", "consolidated entries equal the zarr.json files"),
    ("root.chronozarr", "3.2", "error", "the root has a parsable chronozarr block"),
    ("chronozarr.key", "3.2", "error", "the chronozarr block has every required key"),
    ("name.unsafe", "3.2", "error", "names are single path segments that stay in the store"),
    ("level.attrs", "3.3", "error", "level groups carry crs, transform and resolution"),
    ("level.crs", "3.3", "error", "a level's crs is chronozarr.crs"),
    ("data.spatial", "3.3", "warning", "data arrays carry proj:code and spatial:* (SHOULD)"),
    (
        "data.crs",
        "3.3",
        "warning",
        "data arrays carry _CRS (EPSG) or proj:wkt2 (a WKT crs; SHOULD)",
    ),
    (
        "multiscales.missing",
        "3.4",
        "error",
        "multiscales is a list with one entry or an object with layout[] (C26)",
    ),
    ("multiscales.datasets", "3.4", "error", "multiscales datasets is a non-empty list"),
    ("multiscales.order", "3.4", "error", "datasets list the levels '0', '1', ... in order"),
    ("multiscales.method", "3.4", "error", "method is nested under metadata"),
    ("multiscales.metadata", "3.4", "error", "metadata holds method, version and args"),
    ("multiscales.type", "3.4", "error", "multiscales has a type"),
    ("multiscales.layout", "3.4", "error", "the layout[] form is not mixed with the list form"),
    ("multiscales.crs", "3.4", "error", "every dataset's crs is chronozarr.crs"),
    ("multiscales.spatial", "3.4", "error", "an entry's spatial:* are its level's (C26)"),
    ("root.spatial", "3.1", "error", "root proj:* and spatial:* are level 0's and the crs (C26)"),
    (
        "root.conventions",
        "3.1",
        "error",
        "zarr_conventions registers each convention the root uses (C26)",
    ),
    ("data.time", "3.5", "error", "the time axis has len(chronozarr.times) entries"),
    ("data.band", "3.5", "error", "the band axis has len(chronozarr.bands) entries"),
    ("mirror.band_names", "3.5", "error", "band_names mirrors the bands' names"),
    ("mirror.times", "3.5", "error", "time has as many values as chronozarr.times"),
    ("bands.unique", "3.6", "error", "band names are unique"),
    ("bands.scale", "3.6", "warning", "band objects write scale and offset (SHOULD)"),
    ("levels.missing", "3.7", "error", "the store lists its levels"),
    ("mirror.levels", "3.7", "error", "chronozarr.levels mirrors the level groups"),
    # 4 temporal encoding
    ("temporal.none", "4.1", "error", "a none store has no anchor keys"),
    ("temporal.dtype", "4.1", "error", "star-delta is used for uint8 and uint16 only"),
    ("temporal.anchor_interval", "4.2", "error", "anchor_interval is >= 1"),
    ("temporal.anchor_indices", "4.2", "error", "anchor_indices are 0, k, 2k, ..."),
    ("temporal.delta_reference", "4.2", "error", "every delta references an anchor within k"),
    ("temporal.selection", "4.3", "error", "an auto selection is well formed and applied"),
    ("temporal.selection_none", "4.3", "warning", "auto chose none at a ratio <= 0.85"),
    ("temporal.selection_dtype", "4.3", "warning", "a selection on a non-uint8/uint16 store"),
    # 5 volatility
    ("volatility.path", "5", "warning", "a v0.1 store without volatility_path"),
    ("volatility.data_type", "5", "error", "volatility is float32"),
    ("volatility.shape", "5", "error", "volatility has level 0's grid shape"),
    ("volatility.chunk", "5", "error", "volatility is one chunk"),
    ("volatility.decode", "5", "error", "the volatility chunk decodes"),
    ("volatility.range", "5", "error", "volatility values are in [0, 1]"),
    ("volatility.value", "5", "warning", "volatility equals its recomputation"),
    # 6 pyramid
    ("levels.consecutive", "6", "error", "levels are consecutive from '0'"),
    ("pyramid.transform", "6", "error", "level k's transform is level 0's at 2^k the pixel size"),
    ("pyramid.shape", "6", "error", "level k is ceil(half) of level k-1"),
    ("pyramid.resolution", "6", "error", "level k's resolution is twice level k-1's"),
    ("pyramid.mean", "6", "error", "level k is the validity-aware block mean of level k-1"),
    # 7 sharding
    ("data.shard", "7.1", "error", "shards are (shard_time, n_band, cs, cs)"),
    ("array.shard_index", "7.2", "error", "shard index location and codecs are supported"),
    ("shard.index", "7.2", "error", "the shard index is bytes then crc32c, little-endian"),
    ("shard.index_location", "7.2", "warning", "the shard index is at the end (SHOULD)"),
    ("shard_bytes.malformed", "7.3", "error", "shard_bytes maps levels to shard byte lengths"),
    ("shard_bytes.unsharded", "7.3", "error", "shard_bytes appears in sharded stores only"),
    ("shard_bytes.exists", "7.3", "error", "every listed shard exists inside the grid"),
    ("shard_bytes.size", "7.3", "error", "listed lengths equal the shard objects' sizes"),
    ("shard_bytes.missing", "7.3", "error", "every shard object is listed"),
    ("shard_bytes.unchecked", "7.3", "warning", "a shard grid too large to enumerate"),
    # 8 codecs
    ("array.codec", "8", "error", "chunk codecs are bytes then one supported compressor"),
    ("codec.one", "8", "error", "data uses bytes then exactly one compressor"),
    ("codec.same", "8", "warning", "every level uses the same data codecs"),
    ("coord.codec", "8", "error", "coordinate arrays use a supported compressor"),
    # 9 hosting
    ("hosting.dotfile", "9", "error", "no Zarr v2 dotfiles"),
    ("object.refused", "9", "error", "every object is served from inside the store"),
    ("hosting.leftover", "9", "warning", "no temporary file of an interrupted write in the store"),
    # 10 reading
    ("deep.skipped", "10", "warning", "deep checks are skipped while metadata has errors"),
    ("deep.decode", "10", "error", "every chunk decodes"),
    # 14 append
    ("time.order", "14", "error", "time values are strictly increasing"),
    ("append.in_progress", "14", "warning", "an unfinished append (re-run it)"),
)


def rule(rule_id: str) -> Rule:
    """The catalogued rule ``rule_id`` (KeyError names an uncatalogued id: a programming error)."""
    return RULES[rule_id]


def _section_key(section: str) -> tuple[int, ...]:
    return tuple(int(p) for p in section.split("."))


def markdown_table() -> str:
    """The catalogue as a Markdown table, ordered by spec section then rule id."""
    rows = sorted(RULES.values(), key=lambda r: (_section_key(r.section), r.id))
    lines = ["| rule | section | severity | checks that |", "|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.section} | {r.severity} | {r.summary} |" for r in rows]
    return "\n".join(lines) + "\n"

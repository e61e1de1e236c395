"""Where a conversion's rasters come from: a folder or glob of dated GeoTIFFs, or a manifest.

A source resolves to :class:`RasterFile` entries (a path or URL, its time, and the band it holds
when the series keeps one file per band per date). Nothing here opens a raster: the checks of
grids, dtypes and nodata are in :mod:`cz.convert.probe`. xarray-readable datasets (NetCDF, Zarr)
are the other kind of source, in :mod:`cz.convert.dataset`.

Dates in file names. The default rule takes the first run of digits in the file name that reads
as a calendar date: ``YYYY-MM-DD``, ``YYYYMMDD``, ``YYYY_MM_DD``, ``YYYY-MM`` or ``YYYYMM``
(digits not part of a longer number). So ``LC08_L2SP_190026_20240115_20240124_02_T1_SR_B4.TIF``
reads as 2024-01-15 (``190026`` is not a date, and the first date wins). ``--date-pattern`` takes a
strftime-like pattern searched in the name (``%Y``, ``%m``, ``%d``, ``%j``, ``%H``, ``%M``,
``%S``; ``A%Y%j`` for MODIS) or a regular expression with named groups ``year``, ``month``/``doy``
and optionally ``day``, ``hour``, ``minute``, ``second``. Times are UTC.
"""

from __future__ import annotations

import csv
import glob
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path, PurePosixPath
from urllib.parse import urlparse

from cz.convert.errors import ConvertError

__all__ = [
    "DEFAULT_DATE_RULE",
    "RASTER_SUFFIXES",
    "RasterFile",
    "compile_date_pattern",
    "date_from_name",
    "gdal_path",
    "is_url",
    "list_rasters",
    "parse_time_text",
    "read_manifest",
]

RASTER_SUFFIXES = (".tif", ".tiff")
MANIFEST_SUFFIXES = (".csv", ".json")
DEFAULT_DATE_RULE = "first YYYY-MM-DD, YYYYMMDD, YYYY_MM_DD, YYYY-MM or YYYYMM in the file name"

_DEFAULT = re.compile(
    r"(?<!\d)(?P<year>\d{4})(?P<sep>[-_]?)(?P<month>\d{2})(?:(?P=sep)(?P<day>\d{2}))?(?!\d)"
)
_STRFTIME = {
    "Y": r"(?P<year>\d{4})",
    "m": r"(?P<month>\d{2})",
    "d": r"(?P<day>\d{2})",
    "j": r"(?P<doy>\d{3})",
    "H": r"(?P<hour>\d{2})",
    "M": r"(?P<minute>\d{2})",
    "S": r"(?P<second>\d{2})",
    "%": "%",
}


@dataclass(frozen=True)
class RasterFile:
    """One raster of the series: ``path`` as the user gave it, its time, its band (or None).

    ``band`` is set when each file holds one band of a date (a manifest's ``band`` column, or a
    ``--bands`` name found in the file name); None for a file holding every band.
    ``origin`` says where the entry came from, for messages (``manifest.csv:3``).
    """

    path: str
    time: datetime
    band: str | None = None
    origin: str = ""

    @property
    def where(self) -> str:
        """The file for messages, with the manifest row it came from when there is one."""
        return f"{self.path} ({self.origin})" if self.origin else self.path


def is_url(text: str) -> bool:
    """True for ``http(s)://`` and ``s3://`` locations (a one-letter scheme is a drive)."""
    return urlparse(text).scheme in ("http", "https", "s3")


def gdal_path(path: str) -> str:
    """The name GDAL opens: ``/vsicurl/`` for http(s), ``/vsis3/`` for s3, a local path as is."""
    parsed = urlparse(path)
    if parsed.scheme in ("http", "https"):
        return f"/vsicurl/{path}"
    if parsed.scheme == "s3":
        return f"/vsis3/{parsed.netloc}{parsed.path}"
    return path


def compile_date_pattern(pattern: str | None) -> re.Pattern[str]:
    """The regular expression of ``--date-pattern`` (strftime-like or a named-group regex)."""
    if pattern is None:
        return _DEFAULT
    if "%" in pattern:
        parts: list[str] = []
        i = 0
        while i < len(pattern):
            ch = pattern[i]
            if ch == "%":
                code = pattern[i + 1 : i + 2]
                if code not in _STRFTIME:
                    raise ConvertError(
                        "--date-pattern",
                        f"unknown directive %{code} in {pattern!r} (known: "
                        + ", ".join(f"%{k}" for k in _STRFTIME)
                        + ")",
                    )
                parts.append(_STRFTIME[code])
                i += 2
            else:
                parts.append(re.escape(ch))
                i += 1
        text = "".join(parts)
    else:
        text = pattern
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise ConvertError("--date-pattern", f"not a valid pattern {pattern!r} ({exc})") from exc
    groups = set(compiled.groupindex)
    if "year" not in groups or not ({"month", "doy"} & groups):
        raise ConvertError(
            "--date-pattern",
            f"{pattern!r} needs a year and a month or day of year (%Y with %m or %j, or the "
            "named groups year and month/doy)",
        )
    return compiled


def _date_of(match: re.Match[str]) -> datetime | None:
    g = {k: v for k, v in match.groupdict().items() if v is not None}
    try:
        year = int(g["year"])
        if "doy" in g:
            day = datetime(year, 1, 1, tzinfo=UTC) + timedelta(days=int(g["doy"]) - 1)
            if day.year != year or int(g["doy"]) < 1:
                return None
        else:
            day = datetime(year, int(g["month"]), int(g.get("day", 1)), tzinfo=UTC)
        return day.replace(
            hour=int(g.get("hour", 0)),
            minute=int(g.get("minute", 0)),
            second=int(g.get("second", 0)),
        )
    except (ValueError, KeyError):
        return None


def date_from_name(name: str, pattern: re.Pattern[str]) -> datetime | None:
    """The time in a file name: the first match of ``pattern`` that is a real date, else None."""
    for match in pattern.finditer(name):
        when = _date_of(match)
        if when is not None:
            return when
    return None


def parse_time_text(text: str, where: str) -> datetime:
    """A manifest's time (ISO-8601 date or date-time; UTC unless it says otherwise)."""
    value = text.strip()
    if value.endswith(("Z", "z")):
        value = value[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ConvertError(where, f"cannot read the time {text!r} (expected ISO-8601)") from exc
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)


def _band_in_name(name: str, bands: list[str]) -> str | None:
    """The one band name of ``bands`` found in ``name`` as a whole token (``_B04.``)."""
    stem = PurePosixPath(name).stem
    found = [b for b in bands if re.search(rf"(?<![A-Za-z0-9]){re.escape(b)}(?![A-Za-z0-9])", stem)]
    return found[0] if len(found) == 1 else None


def list_rasters(
    source: str, *, date_pattern: str | None = None, band_names: list[str] | None = None
) -> list[RasterFile]:
    """The dated rasters of a folder or a glob, sorted by time (then name).

    A folder lists its ``.tif``/``.tiff`` files (not recursively); a glob (``*``, ``?``, ``[``)
    lists what it matches. With several files per date, each file's band is the ``--bands`` name
    its file name contains. A file without a date in its name is an error naming it.
    """
    pattern = compile_date_pattern(date_pattern)
    if any(ch in source for ch in "*?["):
        paths = sorted(glob.glob(os.path.expanduser(source)))
        what = f"the glob {source}"
    else:
        folder = Path(source).expanduser()
        if not folder.is_dir():
            raise ConvertError(source, "no such folder, raster, manifest or dataset")
        paths = sorted(
            str(p)
            for p in folder.iterdir()
            if p.is_file() and p.suffix.lower() in RASTER_SUFFIXES and not p.name.startswith(".")
        )
        what = f"the folder {source}"
    paths = [p for p in paths if not Path(p).is_dir()]
    if not paths:
        raise ConvertError(source, f"no GeoTIFF in {what} (looked for *.tif, *.tiff)")
    files = []
    for p in paths:
        name = Path(p).name
        when = date_from_name(name, pattern)
        if when is None:
            rule = date_pattern or DEFAULT_DATE_RULE
            raise ConvertError(
                p, f"no date in the file name (date rule: {rule}); see --date-pattern"
            )
        files.append(RasterFile(path=p, time=when))
    return _assign_bands(files, band_names)


def _assign_bands(files: list[RasterFile], band_names: list[str] | None) -> list[RasterFile]:
    """With several files at a date, each names its band (one of ``--bands``) in its file name."""
    by_time: dict[datetime, list[RasterFile]] = {}
    for f in files:
        by_time.setdefault(f.time, []).append(f)
    if all(len(v) == 1 for v in by_time.values()):
        return sorted(files, key=lambda f: (f.time, f.path))
    out: list[RasterFile] = []
    for when, group in by_time.items():
        if len(group) == 1 and not band_names:
            out.extend(group)
            continue
        if not band_names:
            raise ConvertError(
                group[1].path,
                f"has the same date ({when:%Y-%m-%d}) as {group[0].path}: duplicate dates, or "
                "one file per band (then name the bands with --bands, as in the file names)",
            )
        for f in group:
            band = _band_in_name(Path(f.path).name, band_names)
            if band is None:
                raise ConvertError(
                    f.path,
                    f"one of several files dated {when:%Y-%m-%d}, but its name contains no single "
                    f"band of --bands {','.join(band_names)}",
                )
            out.append(RasterFile(path=f.path, time=f.time, band=band, origin=f.origin))
    return sorted(out, key=lambda f: (f.time, f.path))


def _resolve(path: str, base: Path) -> str:
    if is_url(path) or os.path.isabs(path):
        return path
    return str((base / path).resolve())


def read_manifest(path: str) -> list[RasterFile]:
    """A manifest's rasters: CSV with a header ``time,path[,band]`` or JSON (a list of objects
    with ``time``, ``path`` and optionally ``band``, or ``{"items": [...]}``). Relative paths are
    relative to the manifest. Every row error names the manifest and the row."""
    file = Path(path).expanduser()
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConvertError(path, f"cannot read the manifest ({exc})") from exc
    rows = _json_rows(path, text) if file.suffix.lower() == ".json" else _csv_rows(path, text)
    if not rows:
        raise ConvertError(path, "the manifest lists no raster")
    base = file.resolve().parent
    return sorted((_manifest_file(where, row, base) for where, row in rows), key=lambda f: f.time)


Row = tuple[str, dict[str, object]]  # where (the manifest and the row), the row's columns


def _json_rows(path: str, text: str) -> list[Row]:
    """A JSON manifest's rows: a list of objects, or ``{"items": [...]}``."""
    rows: list[Row] = []
    from chronozarr.errors import CorruptStoreError
    from chronozarr.format import load_json

    try:  # the store's bounded JSON loader: nesting, huge numbers, NaN are typed errors
        doc = load_json(text, path)
    except CorruptStoreError as exc:
        raise ConvertError(path, f"not valid JSON ({str(exc).removeprefix(path + ': ')})") from exc
    items = doc.get("items") if isinstance(doc, dict) else doc
    if not isinstance(items, list):
        raise ConvertError(path, 'expected a list of {"time", "path"[, "band"]} objects')
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise ConvertError(f"{path}[{i}]", "expected an object with time and path")
        rows.append((f"{path}[{i}]", item))
    return rows


def _csv_rows(path: str, text: str) -> list[Row]:
    """A CSV manifest's rows (header ``time,path[,band]``), named by their line."""
    rows: list[Row] = []
    reader = csv.DictReader(text.splitlines())
    header = [h.strip() for h in (reader.fieldnames or [])]
    if "time" not in header or "path" not in header:
        raise ConvertError(path, f"expected a CSV header with time and path, got {header}")
    for n, row in enumerate(reader, start=2):
        rows.append((f"{path}:{n}", {(k or "").strip(): v for k, v in row.items()}))
    return rows


def _manifest_file(where: str, row: dict[str, object], base: Path) -> RasterFile:
    """One manifest row as a raster file (a relative path is relative to the manifest)."""
    unknown = set(row) - {"time", "path", "band"}
    if unknown:
        raise ConvertError(where, f"unknown column(s) {sorted(unknown)} (time, path, band)")
    t, p, b = row.get("time"), row.get("path"), row.get("band")
    if not isinstance(t, str) or not t.strip():
        raise ConvertError(where, "a time (ISO-8601) is required")
    if not isinstance(p, str) or not p.strip():
        raise ConvertError(where, "a path is required")
    if b is not None and (not isinstance(b, str) or not b.strip()):
        b = None
    return RasterFile(
        path=_resolve(p.strip(), base),
        time=parse_time_text(t, where),
        band=b.strip() if isinstance(b, str) else None,
        origin=where,
    )

"""Recipes: the declarative YAML that says what store to build (reference: ``docs/recipes.md``).

A recipe is parsed with ``yaml.SafeLoader`` (no Python tags, no code execution) into pydantic v2
models that forbid unknown keys. Every mistake becomes a :class:`~cz.errors.RecipeProblem` that
names the file, the line and column, the field path (``bands[1].resampling``) and what was
expected; a misspelt key or value gets a "did you mean" suggestion. All problems of a recipe are
reported together.

Relative paths: inputs that travel with the recipe (``catalog.path``, ``aoi.file``) resolve
against the recipe's folder; the output ``store.path`` resolves against the working directory,
like ``--out``.
"""

from __future__ import annotations

import difflib
import json
import math
import re
import types
import typing
from collections.abc import Iterable
from datetime import date
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
)

from cz.errors import RecipeError, RecipeProblem

__all__ = [
    "DEFAULT_SCL_KEEP",
    "RESAMPLING",
    "AoiSpec",
    "BandSpec",
    "CatalogSpec",
    "CodecSpec",
    "CompositeSpec",
    "Condition",
    "FiltersSpec",
    "GapFillSpec",
    "GridSpec",
    "MaskSpec",
    "ProvenanceSpec",
    "Recipe",
    "StoreSpec",
    "TimeSpec",
    "load_recipe",
    "parse_recipe",
]

#: SCL classes kept by default: vegetation, not vegetated, water, unclassified, snow/ice.
DEFAULT_SCL_KEEP: tuple[int, ...] = (4, 5, 6, 7, 11)

#: Resampling methods understood by odc-stac / rasterio.
RESAMPLING = (
    "nearest",
    "bilinear",
    "cubic",
    "cubic_spline",
    "lanczos",
    "average",
    "mode",
    "min",
    "max",
    "med",
    "q1",
    "q3",
)

_MONTH_RE = re.compile(r"^(\d{4})-(0[1-9]|1[0-2])$")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")
_NODATA_RANGE = {"uint8": (0, 255), "uint16": (0, 65535), "int16": (-32768, 32767)}


class _Model(BaseModel):
    """Base of every recipe section: unknown keys are errors, defaults are validated too."""

    model_config = ConfigDict(extra="forbid", validate_default=True, populate_by_name=True)


# --------------------------------------------------------------------------------------------
# value normalisers (BeforeValidators keep the models free of unions, so that an error has one
# location instead of one per union member)


def _as_list_of_str(value: Any) -> Any:
    """Accept ``red`` as shorthand for ``[red]`` (asset aliases)."""
    if isinstance(value, str):
        return [value]
    return value


def _as_month(value: Any) -> Any:
    """Months are ``YYYY-MM`` strings; YAML turns ``2020-06-01`` into a date, which we refuse."""
    if isinstance(value, date):
        raise ValueError(
            f"expected a month as YYYY-MM (e.g. {value:%Y-%m}), got the date {value.isoformat()}; "
            "the time range is whole calendar months"
        )
    if isinstance(value, int) and not isinstance(value, bool):
        raise ValueError(f"expected a month as YYYY-MM (e.g. {value}-01), got the number {value}")
    if isinstance(value, str) and not _MONTH_RE.match(value.strip()):
        raise ValueError(f"expected a month as YYYY-MM (e.g. 2024-01), got {value!r}")
    return value.strip() if isinstance(value, str) else value


def _as_crs(value: Any) -> Any:
    """``32633`` and ``epsg:32633`` become ``EPSG:32633``; ``UTM`` becomes ``utm``."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return f"EPSG:{value}"
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == "utm":
            return "utm"
        if text.isdigit():
            return f"EPSG:{text}"
        if text.upper().startswith("EPSG:"):
            return "EPSG:" + text[5:].strip()
    return value


def _as_codec(value: Any) -> Any:
    """``codec: zstd`` is shorthand for ``codec: {name: zstd}``."""
    if isinstance(value, str):
        return {"name": value}
    return value


def _is_url(text: str) -> bool:
    return bool(_URL_RE.match(text))


def _resolve_input(value: str | Path, info: ValidationInfo) -> Path:
    """Resolve a recipe-relative input path against the recipe's folder (context ``base_dir``)."""
    path = Path(str(value)).expanduser()
    base = (info.context or {}).get("base_dir")
    if not path.is_absolute() and base is not None:
        path = Path(base) / path
    return path.resolve()


# --------------------------------------------------------------------------------------------
# sections


class CatalogSpec(_Model):
    """Where the items come from: a STAC API (``url``) or a local file (``path``); one
    collection."""

    url: str | None = None
    path: Path | None = None
    collection: str = Field(min_length=1, description="the STAC collection id, e.g. sentinel-2-l2a")
    sign: Literal["none", "planetary-computer"] = "none"
    timeout: float = Field(30.0, gt=0, le=600)
    max_retries: int = Field(5, ge=0, le=20)
    backoff_factor: float = Field(0.5, ge=0, le=60)
    backoff_max: float = Field(30.0, gt=0, le=600)
    page_size: int = Field(100, ge=1, le=10000)
    max_items: int | None = Field(None, ge=1)

    @field_validator("url")
    @classmethod
    def _url_is_http(cls, value: str | None) -> str | None:
        if value is not None and not re.match(r"^https?://[^/\s]+", value):
            raise ValueError(f"expected an http(s) URL of a STAC API, got {value!r}")
        return value.rstrip("/") if value else value

    @field_validator("path", mode="before")
    @classmethod
    def _path_relative_to_recipe(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        if not isinstance(value, str | Path):
            raise ValueError(f"expected a file path, got {type(value).__name__}")
        if isinstance(value, str) and _is_url(value):
            raise ValueError(
                f"expected a local file path, got the URL {value!r}; use catalog.url for a STAC API"
            )
        return _resolve_input(value, info)


class AoiSpec(_Model):
    """The area of interest in lon/lat (EPSG:4326): a bbox, an inline GeoJSON geometry or a file."""

    bbox: list[float] | None = None
    geometry: dict[str, Any] | None = None
    file: Path | None = None

    _geojson: dict[str, Any] | None = PrivateAttr(default=None)

    @field_validator("bbox")
    @classmethod
    def _bbox_order(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return None
        if len(value) != 4:
            raise ValueError(
                f"expected four numbers [west, south, east, north] in lon/lat; got {len(value)}"
            )
        west, south, east, north = value
        if not all(math.isfinite(v) for v in value):
            raise ValueError("expected four finite numbers [west, south, east, north]")
        if not (-180 <= west <= 180 and -180 <= east <= 180):
            raise ValueError(f"longitudes must lie in [-180, 180], got {west} and {east}")
        if not (-90 <= south <= 90 and -90 <= north <= 90):
            raise ValueError(f"latitudes must lie in [-90, 90], got {south} and {north}")
        if west >= east:
            raise ValueError(
                f"expected west < east, got west {west} and east {east} (an AOI across the "
                "antimeridian is not supported: split it into two recipes)"
            )
        if south >= north:
            raise ValueError(f"expected south < north, got south {south} and north {north}")
        return value

    @field_validator("geometry")
    @classmethod
    def _geometry_is_polygonal(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is None:
            return None
        return _check_geojson_geometry(value)

    @field_validator("file", mode="before")
    @classmethod
    def _file_relative_to_recipe(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        if not isinstance(value, str | Path):
            raise ValueError(f"expected a file path, got {type(value).__name__}")
        path = _resolve_input(value, info)
        if not path.is_file():
            raise ValueError(f"file not found: {path}")
        return path

    def geojson(self) -> dict[str, Any]:
        """The AOI as a lon/lat GeoJSON geometry (a bbox becomes its polygon)."""
        if self._geojson is None:
            if self.bbox is not None:
                w, s, e, n = self.bbox
                self._geojson = {
                    "type": "Polygon",
                    "coordinates": [[[w, s], [e, s], [e, n], [w, n], [w, s]]],
                }
            elif self.geometry is not None:
                self._geojson = self.geometry
            elif self.file is not None:
                self._geojson = _read_geojson_file(self.file)
            else:  # pragma: no cover - excluded by the semantic checks
                raise ValueError("aoi has no bbox, geometry or file")
        return self._geojson


class GridSpec(_Model):
    """The output grid: a projected CRS in metres (or ``utm``) and the pixel size in metres."""

    crs: Annotated[str, BeforeValidator(_as_crs)] = "utm"
    resolution: float = Field(gt=0, le=100000, description="pixel size in metres, e.g. 10")

    @field_validator("crs")
    @classmethod
    def _crs_is_projected_metres(cls, value: str) -> str:
        if value == "utm":
            return value
        if not value.startswith("EPSG:") or not value[5:].isdigit():
            raise ValueError(
                f"expected an EPSG code (e.g. EPSG:32633 or 32633) or 'utm', got {value!r}"
            )
        from pyproj import CRS
        from pyproj.exceptions import CRSError

        try:
            crs = CRS.from_user_input(value)
        except CRSError:
            raise ValueError(f"unknown CRS {value!r}") from None
        if not crs.is_projected:
            raise ValueError(
                f"{value} is not a projected CRS; the resolution is in metres, so use a projected "
                "CRS (e.g. a UTM zone) or 'utm'"
            )
        units = {axis.unit_name for axis in crs.axis_info}
        if units - {"metre"}:
            raise ValueError(f"{value} has axis units {sorted(units)}; expected metres")
        return value


class TimeSpec(_Model):
    """The time range, whole UTC calendar months, both ends included."""

    start: Annotated[str, BeforeValidator(_as_month)] = Field(description="first month, YYYY-MM")
    end: Annotated[str, BeforeValidator(_as_month)] = Field(description="last month, YYYY-MM")


class BandSpec(_Model):
    """One band of the store: where it comes from (asset aliases) and what its numbers mean."""

    name: str = Field(min_length=1, max_length=64, description="the band name in the store")
    asset: Annotated[list[str], BeforeValidator(_as_list_of_str)] = Field(
        min_length=1, description="an asset key or a list of aliases, e.g. [red, B04]"
    )
    common_name: str | None = None
    scale: float = 0.0001
    offset: float | None = None
    units: str | None = None
    resampling: Literal[RESAMPLING] = "nearest"  # type: ignore[valid-type]
    harmonize: bool = True

    @field_validator("name")
    @classmethod
    def _name_chars(cls, value: str) -> str:
        if not _NAME_RE.match(value):
            raise ValueError(
                "expected letters, digits, '_', '.' or '-' (it becomes a Zarr coordinate), "
                f"got {value!r}"
            )
        return value

    @field_validator("asset")
    @classmethod
    def _aliases(cls, value: list[str]) -> list[str]:
        if any(not isinstance(v, str) or not v.strip() for v in value):
            raise ValueError("expected asset keys (non-empty strings)")
        if len(set(value)) != len(value):
            raise ValueError(f"an asset alias is listed twice: {value}")
        return value

    @field_validator("scale")
    @classmethod
    def _scale_nonzero(cls, value: float) -> float:
        if not math.isfinite(value) or value == 0:
            raise ValueError(f"expected a finite, non-zero number, got {value}")
        return value

    @field_validator("offset")
    @classmethod
    def _offset_finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError(f"expected a finite number, got {value}")
        return value

    @property
    def physical_offset(self) -> float:
        """The band's offset: as given, else -1000 x scale when harmonised, else 0."""
        if self.offset is not None:
            return self.offset
        return -1000.0 * self.scale if self.harmonize else 0.0

    @property
    def store_dn_offset(self) -> float:
        """The additive offset carried by stored numbers: physical = (stored - this) * scale."""
        return -self.physical_offset / self.scale


class Condition(_Model):
    """Conditions on one item property, STAC ``query`` style (all given ones must hold)."""

    eq: Any = None
    neq: Any = None
    lt: float | str | None = None
    lte: float | str | None = None
    gt: float | str | None = None
    gte: float | str | None = None
    in_: list[Any] | None = Field(None, alias="in", min_length=1)

    def operators(self) -> dict[str, Any]:
        """The operators given, as ``{op: value}`` in the STAC query spelling (``in``)."""
        return {
            ("in" if name == "in_" else name): value
            for name in ("eq", "neq", "lt", "lte", "gt", "gte", "in_")
            if (value := getattr(self, name)) is not None
        }


class FiltersSpec(_Model):
    """Item filters: the cloud cover ceiling and other property conditions."""

    max_cloud_cover: float | None = Field(None, ge=0, le=100)
    properties: dict[str, Condition] = Field(default_factory=dict)


class MaskSpec(_Model):
    """The scene classification asset and the classes kept (Sentinel-2 SCL by default)."""

    asset: Annotated[list[str], BeforeValidator(_as_list_of_str)] = Field(
        default_factory=lambda: ["scl", "SCL"], min_length=1
    )
    keep: list[Annotated[int, Field(ge=0, le=255)]] = Field(
        default_factory=lambda: list(DEFAULT_SCL_KEEP), min_length=1
    )

    @field_validator("keep")
    @classmethod
    def _unique(cls, value: list[int]) -> list[int]:
        if len(set(value)) != len(value):
            raise ValueError(f"a class is listed twice: {value}")
        return sorted(value)


class CompositeSpec(_Model):
    """The monthly composite. Only the per-pixel median (rounding rule in docs/recipes.md)."""

    method: Literal["median"] = "median"


class GapFillSpec(_Model):
    """Gap-fill: none, or carry the last composite value forward for at most ``max_age`` months."""

    method: Literal["none", "carry-forward"] = "none"
    max_age: int | None = Field(None, ge=1, le=1200)


class CodecSpec(_Model):
    """Compression codec of data, mask and coverage (spec 8)."""

    name: Literal["zstd", "gzip", "blosc"] = "zstd"
    level: int | None = None
    cname: Literal["zstd", "lz4"] | None = None
    shuffle: Literal["shuffle", "noshuffle"] | None = None

    @property
    def effective_level(self) -> int:
        """The level used: as given, else 5 (zstd, blosc) or 6 (gzip)."""
        if self.level is not None:
            return self.level
        return 6 if self.name == "gzip" else 5


class StoreSpec(_Model):
    """The chronozarr store written by ``cz build`` and its layout options."""

    path: str | None = None
    dtype: Literal["uint8", "uint16", "int16", "float32"] = "uint16"
    nodata: float | None = None
    encoding: Literal["auto", "none", "star-delta"] = "auto"
    anchor_interval: int = Field(6, ge=1, le=1000)
    chunk_size: int = Field(512, ge=2, le=8192)
    shard: bool = False
    shard_time: int | None = Field(None, ge=1)
    codec: Annotated[CodecSpec, BeforeValidator(_as_codec)] = Field(default_factory=CodecSpec)

    @field_validator("chunk_size")
    @classmethod
    def _even(cls, value: int) -> int:
        if value % 2:
            raise ValueError(
                f"expected an even number (spec 2.1; 256 or 512 recommended), got {value}"
            )
        return value

    @property
    def effective_nodata(self) -> float | int | None:
        """nodata as given, else the writer default: 0 for uint8/uint16, none for int16/float32."""
        if self.nodata is not None:
            return int(self.nodata) if self.dtype != "float32" else self.nodata
        return 0 if self.dtype in ("uint8", "uint16") else None


class ProvenanceSpec(_Model):
    """Free-text notes recorded in the store's provenance."""

    notes: str | None = None


class Recipe(_Model):
    """A whole recipe. Build with :func:`load_recipe` or :func:`parse_recipe`, not directly."""

    name: str | None = None
    description: str | None = None
    catalog: CatalogSpec = Field(description="catalog: with url or path, and collection")
    aoi: AoiSpec = Field(description="aoi: with bbox, geometry or file")
    grid: GridSpec = Field(description="grid: with crs and resolution")
    time: TimeSpec = Field(description="time: with start and end months")
    bands: list[BandSpec] = Field(min_length=1, description="a list of bands")
    filters: FiltersSpec = Field(default_factory=FiltersSpec)
    mask: MaskSpec | None = Field(default_factory=MaskSpec)
    composite: CompositeSpec = Field(default_factory=CompositeSpec)
    gap_fill: GapFillSpec = Field(default_factory=GapFillSpec)
    store: StoreSpec = Field(default_factory=StoreSpec)
    provenance: ProvenanceSpec = Field(default_factory=ProvenanceSpec)

    _source: str = PrivateAttr(default="<recipe>")
    _marks: dict[tuple[str | int, ...], _Marks] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> str:
        """The file the recipe was read from (or the name given to :func:`parse_recipe`)."""
        return self._source

    def problem(self, field: tuple[str | int, ...], message: str) -> RecipeProblem:
        """A located problem for ``field`` (for checks made after loading, e.g. a missing file)."""
        line, column = _locate(self._marks, field, key=False)
        return RecipeProblem(self._source, line, column, _field_path(field), message)

    @property
    def store_dn_offset(self) -> int:
        """The one additive digital-number offset of the store's harmonised bands (0 or 1000...)."""
        offsets = {round(b.store_dn_offset) for b in self.bands if b.harmonize}
        return offsets.pop() if offsets else 0


# --------------------------------------------------------------------------------------------
# GeoJSON helpers


def _check_geojson_geometry(value: dict[str, Any]) -> dict[str, Any]:
    """Check a lon/lat GeoJSON geometry: Polygon or MultiPolygon, valid, inside lon/lat bounds."""
    from shapely.geometry import shape
    from shapely.validation import explain_validity

    gtype = value.get("type") if isinstance(value, dict) else None
    if gtype not in ("Polygon", "MultiPolygon"):
        raise ValueError(f"expected a GeoJSON Polygon or MultiPolygon, got type {gtype!r}")
    try:
        geom = shape(value)
    except Exception as exc:  # shapely raises several types for malformed coordinates
        raise ValueError(f"malformed GeoJSON {gtype}: {exc}") from None
    if geom.is_empty:
        raise ValueError(f"the {gtype} is empty")
    if not geom.is_valid:
        raise ValueError(f"invalid {gtype}: {explain_validity(geom)}")
    west, south, east, north = geom.bounds
    if west < -180 or east > 180 or south < -90 or north > 90:
        raise ValueError(
            "coordinates must be lon/lat (EPSG:4326); "
            f"the bounds are {west}, {south}, {east}, {north}"
        )
    return value


def _read_geojson_file(path: Path) -> dict[str, Any]:
    """Read a GeoJSON geometry, Feature or FeatureCollection (union of its polygons) from a file."""
    from shapely.geometry import mapping, shape
    from shapely.ops import unary_union

    doc = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a GeoJSON object")
    if doc.get("type") == "Feature":
        doc = doc.get("geometry") or {}
    if doc.get("type") == "FeatureCollection":
        parts = [
            shape(_check_geojson_geometry(f.get("geometry") or {})) for f in doc.get("features", [])
        ]
        if not parts:
            raise ValueError(f"{path}: the FeatureCollection has no features")
        doc = dict(mapping(unary_union(parts)))
        doc = json.loads(json.dumps(doc))  # tuples -> lists: plain GeoJSON
    return _check_geojson_geometry(doc)


# --------------------------------------------------------------------------------------------
# YAML with positions

_Mark = tuple[int, int]  # (line, column), 1-based


class _Marks(typing.NamedTuple):
    key: _Mark | None  # where the key of a mapping entry starts
    value: _Mark  # where the value starts
    container: bool  # the value is a mapping or a list (then its key line is the better anchor)


class _MarkingLoader(yaml.SafeLoader):
    """SafeLoader that keeps the node tree so values can be traced back to lines."""


def _mark(m: yaml.Mark) -> _Mark:
    return (m.line + 1, m.column + 1)


def _walk(
    node: yaml.Node,
    path: tuple[str | int, ...],
    marks: dict[tuple[str | int, ...], _Marks],
    problems: list[tuple[tuple[str | int, ...], _Mark, str]],
    key_mark: _Mark | None = None,
) -> None:
    """Record the marks of every value below ``node``; flag duplicate keys (YAML keeps the last)."""
    container = isinstance(node, yaml.MappingNode | yaml.SequenceNode)
    marks.setdefault(path, _Marks(key_mark, _mark(node.start_mark), container))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = str(key_node.value)
            if key in seen:
                problems.append(
                    ((*path, key), _mark(key_node.start_mark), f"duplicate key {key!r}")
                )
            seen.add(key)
            _walk(value_node, (*path, key), marks, problems, _mark(key_node.start_mark))
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*path, index), marks, problems)


def _load_yaml(text: str, source: str) -> tuple[Any, dict[tuple[str | int, ...], _Marks]]:
    """Parse YAML safely; return the data and the marks of every value."""
    loader = _MarkingLoader(text)
    marks: dict[tuple[str | int, ...], _Marks] = {}
    dups: list[tuple[tuple[str | int, ...], _Mark, str]] = []
    try:
        node = loader.get_single_node()
        if node is None:
            raise RecipeError(
                [RecipeProblem(source, 1, 1, "", "the recipe is empty; expected a mapping")]
            )
        _walk(node, (), marks, dups)
        data = loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = _mark(mark) if mark is not None else (None, None)
        what = str(exc.problem or exc.context or "syntax error")
        if exc.context and exc.problem:
            what += f" ({exc.context}"
            if exc.context_mark is not None:
                what += f" that starts at line {exc.context_mark.line + 1}"
            what += ")"
        raise RecipeError([RecipeProblem(source, line, col, "", f"invalid YAML: {what}")]) from None
    except yaml.YAMLError as exc:
        raise RecipeError([RecipeProblem(source, None, None, "", f"invalid YAML: {exc}")]) from None
    finally:
        loader.dispose()
    if dups:
        raise RecipeError(
            [RecipeProblem(source, m[0], m[1], _field_path(p), msg) for p, m, msg in dups]
        )
    return data, marks


# --------------------------------------------------------------------------------------------
# locating and phrasing validation errors


def _field_path(path: Iterable[str | int]) -> str:
    """``('bands', 1, 'asset')`` -> ``bands[1].asset``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _locate(
    marks: dict[tuple[str | int, ...], _Marks], path: tuple[str | int, ...], *, key: bool
) -> tuple[int | None, int | None]:
    """Line and column of ``path`` (its key if ``key``), else of its nearest located ancestor."""
    for end in range(len(path), -1, -1):
        found = marks.get(path[:end])
        if found is not None:
            use_key = key or end < len(path) or found.container
            return found.key if use_key and found.key else found.value
    return (None, None)


def _data_path(data: Any, loc: tuple[Any, ...]) -> tuple[tuple[str | int, ...], tuple[Any, ...]]:
    """Split a pydantic ``loc`` into the part present in the data and the rest.

    pydantic inserts tags (union members, validator names) into ``loc``; those are skipped.
    """
    path: list[str | int] = []
    current = data
    rest = list(loc)
    while rest:
        part = rest[0]
        if (isinstance(current, dict) and part in current) or (
            isinstance(current, list)
            and isinstance(part, int)
            and not isinstance(part, bool)
            and 0 <= part < len(current)
        ):
            current = current[part]
            path.append(part)
        elif isinstance(part, str) and (
            "[" in part or part in ("function-after", "function-before", "function-wrap")
        ):
            pass  # a pydantic tag such as 'list[str]' or 'function-after[...]'
        else:
            break
        rest.pop(0)
    return tuple(path), tuple(rest)


def _unwrap(annotation: Any) -> list[Any]:
    """The concrete types inside Optional / Union / Annotated / list annotations."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return [t for arg in typing.get_args(annotation) for t in _unwrap(arg)]
    return [annotation]


def _model_at(path: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The recipe model class that describes the mapping at ``path`` (for key suggestions)."""
    current: Any = Recipe
    for part in path:
        candidates = _unwrap(current)
        nxt = None
        for cand in candidates:
            origin = typing.get_origin(cand)
            if isinstance(part, int) and origin is list:
                nxt = typing.get_args(cand)[0]
            elif isinstance(part, str) and origin is dict:
                nxt = typing.get_args(cand)[1]
            elif isinstance(part, str) and isinstance(cand, type) and issubclass(cand, BaseModel):
                field = _field_by_key(cand, part)
                if field is not None:
                    nxt = field.annotation
            if nxt is not None:
                break
        if nxt is None:
            return None
        current = nxt
    for cand in _unwrap(current):
        if isinstance(cand, type) and issubclass(cand, BaseModel):
            return cand
    return None


def _field_by_key(model: type[BaseModel], key: str) -> Any:
    for name, field in model.model_fields.items():
        if key == (field.alias or name):
            return field
    return None


def _keys_of(model: type[BaseModel]) -> list[str]:
    return [field.alias or name for name, field in model.model_fields.items()]


def _suggest(word: str, choices: Iterable[str]) -> str | None:
    """The most likely intended choice for a misspelt ``word``, if any is close enough.

    A permutation of the same letters (``let`` for ``lte``) wins over difflib's ratio, which
    prefers the shorter ``lt``.
    """
    choices = list(choices)
    swapped = [c for c in choices if sorted(c.lower()) == sorted(word.lower()) and c != word]
    if swapped:
        return swapped[0]
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    if not matches:
        lowered = {c.lower(): c for c in choices}
        matches = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
        matches = [lowered[m] for m in matches]
    return matches[0] if matches else None


def _got(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "tuple_type": "a list",
    "dict_type": "a mapping (key: value)",
    "model_type": "a mapping (key: value)",
    "model_attributes_type": "a mapping (key: value)",
    "path_type": "a file path",
}


def _phrase(error: dict[str, Any]) -> str:
    """An error message that says what was expected and what was found."""
    etype = error["type"]
    ctx = error.get("ctx") or {}
    value = error.get("input")
    if etype == "value_error":
        return str(ctx.get("error", error["msg"])).removeprefix("Value error, ")
    if etype == "literal_error":
        choices = re.findall(r"'([^']*)'", str(ctx.get("expected", "")))
        message = f"expected one of {', '.join(choices)}; got {_got(value)}"
        if isinstance(value, str) and (hint := _suggest(value, choices)):
            message += f" (did you mean {hint!r}?)"
        return message
    if etype in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        sign = {"greater_than": ">", "greater_than_equal": ">=", "less_than": "<"}.get(etype, "<=")
        bound = next(iter(ctx.values()))
        if isinstance(bound, float) and bound.is_integer():
            bound = int(bound)
        return f"expected a number {sign} {bound}; got {_got(value)}"
    if etype in ("too_short", "too_long"):
        kind = "at least" if etype == "too_short" else "at most"
        limit = ctx.get("min_length", ctx.get("max_length"))
        return f"expected {kind} {limit} item(s); got {ctx.get('actual_length')}"
    if etype in ("string_too_short", "string_too_long"):
        return "expected a non-empty string" if etype == "string_too_short" else error["msg"]
    if etype in _EXPECTED:
        return f"expected {_EXPECTED[etype]}; got {_got(value)}"
    return f"{error['msg']}; got {_got(value)}"


def _problems_from_validation(
    exc: ValidationError, data: Any, marks: dict[tuple[str | int, ...], _Marks], source: str
) -> list[RecipeProblem]:
    problems: list[RecipeProblem] = []
    seen: set[str] = set()
    for error in exc.errors(include_url=False):
        path, rest = _data_path(data, tuple(error["loc"]))
        etype = error["type"]
        if etype == "missing":
            missing = tuple(p for p in rest if not (isinstance(p, str) and "[" in p))[:1]
            field = path + missing
            line, col = _locate(marks, path, key=True) if path else (1, 1)
            message = "required field is missing"
            model = _model_at(path)
            if model is not None and missing:
                field_info = _field_by_key(model, str(missing[0]))
                if field_info is not None and field_info.description:
                    message += f" ({field_info.description})"
        elif etype == "extra_forbidden":
            field = path
            line, col = _locate(marks, path, key=True)
            key = str(path[-1]) if path else "?"
            model = _model_at(path[:-1])
            allowed = _keys_of(model) if model is not None else []
            message = f"unknown key {key!r}"
            if hint := _suggest(key, allowed):
                message += f"; did you mean {hint!r}?"
            if allowed:
                message += f" (expected one of: {', '.join(allowed)})"
        else:
            field = path + tuple(p for p in rest if isinstance(p, str | int) and "[" not in str(p))
            line, col = _locate(marks, path, key=False)
            message = _phrase(error)
        key = f"{_field_path(field)}|{message}"
        if key in seen:
            continue
        seen.add(key)
        problems.append(RecipeProblem(source, line, col, _field_path(field), message))
    # a misspelt required key shows up twice (unknown 'resolutoin', missing 'resolution'):
    # keep the located suggestion, drop the echo
    suggested = set()
    for problem in problems:
        match = re.match(r"unknown key '.*'; did you mean '(.*)'\?", problem.message)
        if match:
            parent = problem.field.rsplit(".", 1)[0] if "." in problem.field else ""
            suggested.add(f"{parent}.{match.group(1)}" if parent else match.group(1))
    return [
        p
        for p in problems
        if not (p.message.startswith("required field is missing") and p.field in suggested)
    ]


# --------------------------------------------------------------------------------------------
# checks across fields


def _semantic_problems(recipe: Recipe) -> list[tuple[tuple[str | int, ...], str]]:
    """Rules that involve more than one field; each returns the path it is best reported at."""
    found: list[tuple[tuple[str | int, ...], str]] = []
    cat = recipe.catalog
    if (cat.url is None) == (cat.path is None):
        found.append(
            (("catalog",), "expected exactly one of 'url' (a STAC API) or 'path' (a local file)")
        )
    aoi = recipe.aoi
    given = [k for k in ("bbox", "geometry", "file") if getattr(aoi, k) is not None]
    if len(given) != 1:
        which = f"got {', '.join(given)}" if given else "got none"
        found.append((("aoi",), f"expected exactly one of 'bbox', 'geometry' or 'file'; {which}"))
    if recipe.time.start > recipe.time.end:
        found.append(
            (("time", "end"), f"end {recipe.time.end} is before start {recipe.time.start}")
        )
    names: dict[str, int] = {}
    for i, band in enumerate(recipe.bands):
        if band.name in names:
            found.append(
                (
                    (("bands", i, "name")),
                    f"band name {band.name!r} is also used by bands[{names[band.name]}]",
                )
            )
        names.setdefault(band.name, i)
    harmonised = [(i, b) for i, b in enumerate(recipe.bands) if b.harmonize]
    first_offset: tuple[int, float] | None = None
    for i, band in harmonised:
        dn = band.store_dn_offset
        if abs(dn - round(dn)) > 1e-6 * max(1.0, abs(dn)):
            found.append(
                (
                    ("bands", i, "offset" if band.offset is not None else "scale"),
                    f"offset / scale must be a whole number of digital numbers for a harmonised "
                    f"band (offset {band.physical_offset} / scale {band.scale} = {-dn:g})",
                )
            )
            continue
        if first_offset is None:
            first_offset = (i, dn)
        elif round(dn) != round(first_offset[1]):
            found.append(
                (
                    ("bands", i, "offset" if band.offset is not None else "scale"),
                    f"harmonised bands must share one digital-number convention: this band stores "
                    f"numbers with offset {round(dn)}, bands[{first_offset[0]}] with "
                    f"{round(first_offset[1])}",
                )
            )
    store = recipe.store
    if store.encoding == "star-delta" and store.dtype not in ("uint8", "uint16"):
        found.append(
            (
                ("store", "encoding"),
                f"star-delta is only valid for uint8 and uint16 (spec 4.1), not {store.dtype}",
            )
        )
    if store.shard_time is not None and not store.shard:
        found.append((("store", "shard_time"), "shard_time is only used with shard: true"))
    if store.nodata is not None:
        low_high = _NODATA_RANGE.get(store.dtype)
        if low_high is not None:
            low, high = low_high
            if store.nodata != int(store.nodata) or not low <= store.nodata <= high:
                found.append(
                    (
                        ("store", "nodata"),
                        f"expected a whole number in [{low}, {high}] for {store.dtype}; "
                        f"got {store.nodata:g}",
                    )
                )
        elif not math.isfinite(store.nodata):
            found.append((("store", "nodata"), "NaN and infinity are not valid nodata (spec 2.3)"))
    codec = store.codec
    level_range = {"zstd": (-7, 22), "gzip": (0, 9), "blosc": (0, 9)}[codec.name]
    if codec.level is not None and not level_range[0] <= codec.level <= level_range[1]:
        found.append(
            (
                ("store", "codec", "level"),
                f"expected a {codec.name} level in [{level_range[0]}, {level_range[1]}]; "
                f"got {codec.level}",
            )
        )
    if codec.name != "blosc":
        for opt in ("cname", "shuffle"):
            if getattr(codec, opt) is not None:
                found.append(
                    (("store", "codec", opt), f"{opt} is a blosc option; the codec is {codec.name}")
                )
    gap = recipe.gap_fill
    if gap.method == "carry-forward" and gap.max_age is None:
        found.append(
            (("gap_fill", "max_age"), "carry-forward needs max_age (months), e.g. max_age: 2")
        )
    if gap.method == "none" and gap.max_age is not None:
        found.append((("gap_fill", "max_age"), "max_age is only used with method: carry-forward"))
    if recipe.mask is not None:
        band_assets = {a for b in recipe.bands for a in b.asset}
        clash = band_assets & set(recipe.mask.asset)
        if clash:
            found.append(
                (("mask", "asset"), f"asset {sorted(clash)[0]!r} is both a band and the mask")
            )
    return found


# --------------------------------------------------------------------------------------------
# entry points


def parse_recipe(text: str, *, source: str = "<recipe>", base_dir: Path | None = None) -> Recipe:
    """Parse recipe YAML text. ``source`` names it in errors; ``base_dir`` anchors relative inputs.

    Raises :class:`~cz.errors.RecipeError` with every problem found, each located.
    """
    data, marks = _load_yaml(text, source)
    if not isinstance(data, dict):
        raise RecipeError(
            [
                RecipeProblem(
                    source,
                    1,
                    1,
                    "",
                    f"expected a mapping of sections (catalog:, aoi:, ...); got {_got(data)}",
                )
            ]
        )
    context = {"base_dir": base_dir}
    try:
        recipe = Recipe.model_validate(data, context=context)
    except ValidationError as exc:
        problems = _problems_from_validation(exc, data, marks, source)
        problems.sort(key=lambda p: (p.line is None, p.line or 0, p.column or 0))
        raise RecipeError(problems) from None
    except (OSError, ValueError) as exc:  # pragma: no cover - defensive
        raise RecipeError([RecipeProblem(source, None, None, "", str(exc))]) from None
    recipe._source = source
    recipe._marks = marks
    found = _semantic_problems(recipe)
    if recipe.aoi.file is not None and not found:
        try:
            recipe.aoi.geojson()
        except (ValueError, OSError, json.JSONDecodeError) as exc:
            found.append((("aoi", "file"), f"{exc}"))
    if found:
        problems = [recipe.problem(path, message) for path, message in found]
        problems.sort(key=lambda p: (p.line is None, p.line or 0, p.column or 0))
        raise RecipeError(problems)
    return recipe


def load_recipe(path: str | Path) -> Recipe:
    """Read and check a recipe file. Errors name this file, the line and the field."""
    file = Path(path)
    source = str(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecipeError(
            [RecipeProblem(source, None, None, "", "recipe file not found")]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecipeError([RecipeProblem(source, None, None, "", f"cannot read: {exc}")]) from None
    return parse_recipe(text, source=source, base_dir=file.resolve().parent)

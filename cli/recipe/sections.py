"""The recipe's sections as pydantic v2 models that forbid unknown keys (docs/recipes.md)."""

from __future__ import annotations

import math
import re
from datetime import date, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BeforeValidator,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from chronozarr.errors import EncodeError
from chronozarr.format import Codec, StoreLayout, codec_from
from chronozarr.io import is_url
from cz.errors import RecipeProblem
from cz.periods import Period
from cz.recipe.base import SectionModel
from cz.recipe.collections import harmonised_by_default
from cz.recipe.geojson import check_geojson_geometry, read_geojson_file
from cz.recipe.mask import MaskSpec
from cz.recipe.normalise import (
    as_codec,
    as_crs,
    as_list_of_str,
    as_time_bound,
    band_math,
    resolve_input,
)
from cz.recipe.period import PeriodSpec, as_period
from cz.recipe.positions import Marks, field_path, locate

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

NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")

#: The largest cell a recipe may ask for: the toolkit composites one block of it in memory.
MAX_CHUNK_SIZE = 8192

NODATA_RANGE = {"uint8": (0, 255), "uint16": (0, 65535), "int16": (-32768, 32767)}


class CatalogSpec(SectionModel):
    """Where the items come from: a STAC API (``url``) or a local file (``path``); one
    collection."""

    url: str | None = None
    path: Path | None = None
    collection: str = Field(min_length=1, description="the STAC collection id, e.g. sentinel-2-l2a")
    sign: Literal["none", "planetary-computer"] = "none"
    timeout: float = Field(default=30.0, gt=0, le=600)
    max_retries: int = Field(default=5, ge=0, le=20)
    backoff_factor: float = Field(default=0.5, ge=0, le=60)
    backoff_max: float = Field(default=30.0, gt=0, le=600)
    page_size: int = Field(default=100, ge=1, le=10000)
    max_items: int | None = Field(default=None, ge=1)

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
        if isinstance(value, str) and is_url(value):
            raise ValueError(
                f"expected a local file path, got the URL {value!r}; use catalog.url for a STAC API"
            )
        return resolve_input(value, info)


class AoiSpec(SectionModel):
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
        return check_geojson_geometry(value)

    @field_validator("file", mode="before")
    @classmethod
    def _file_relative_to_recipe(cls, value: Any, info: ValidationInfo) -> Any:
        if value is None:
            return None
        if not isinstance(value, str | Path):
            raise ValueError(f"expected a file path, got {type(value).__name__}")
        path = resolve_input(value, info)
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
                self._geojson = read_geojson_file(self.file)
            else:  # pragma: no cover - excluded by the semantic checks
                raise ValueError("aoi has no bbox, geometry or file")
        return self._geojson


class GridSpec(SectionModel):
    """The output grid: a projected CRS in metres (or ``utm``) and the pixel size in metres."""

    crs: Annotated[str, BeforeValidator(as_crs)] = "utm"
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
        except CRSError:  # pyproj does not know it: a recipe problem
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


class TimeSpec(SectionModel):
    """The time range, both ends included: whole UTC calendar months, or days (``YYYY-MM-DD``)
    with a period other than the month. The store's periods are those starting in it."""

    start: Annotated[str, BeforeValidator(as_time_bound)] = Field(
        description="first month, YYYY-MM (or first day, YYYY-MM-DD)"
    )
    end: Annotated[str, BeforeValidator(as_time_bound)] = Field(
        description="last month, YYYY-MM (or last day, YYYY-MM-DD)"
    )

    @property
    def first_day(self) -> date:
        """The first day of the range (a month's first day)."""
        return date.fromisoformat(self.start if len(self.start) == 10 else self.start + "-01")

    @property
    def last_day(self) -> date:
        """The last day of the range, included (a month's last day)."""
        if len(self.end) == 10:
            return date.fromisoformat(self.end)
        year, month = int(self.end[:4]), int(self.end[5:7])
        return date(year + month // 12, month % 12 + 1, 1) - timedelta(days=1)


class BandSpec(SectionModel):
    """One band of the store: where it comes from (asset aliases, or an ``expression`` over the
    other bands: a derived band, cz.composite.derived) and what its numbers mean."""

    name: str = Field(min_length=1, max_length=64, description="the band name in the store")
    asset: Annotated[list[str], BeforeValidator(as_list_of_str), Field(min_length=1)] | None = (
        Field(default=None, description="an asset key or a list of aliases, e.g. [red, B04]")
    )
    expression: str | None = Field(
        default=None,
        min_length=1,
        max_length=500,
        description="a derived band: band math over the other bands, e.g. (nir - red) / (nir + red)",
    )
    when: Literal["observation", "composite"] | None = Field(
        default=None,
        description="a derived band: per observation before the reduction (default) or from the "
        "composite",
    )
    dtype: Literal["uint8", "uint16", "int16", "float32"] | None = Field(
        default=None, description="a derived band: its stored type (the store's dtype)"
    )
    common_name: str | None = None
    scale: float = 0.0001
    offset: float | None = None
    units: str | None = None
    resampling: Literal[RESAMPLING] = "nearest"  # type: ignore[valid-type]
    #: the Sentinel-2 digital-number correction; unset: whether the collection is Sentinel-2 L2A
    #: (cz.recipe.collections), resolved when the recipe is loaded
    harmonize: bool | None = None

    @field_validator("name")
    @classmethod
    def _name_chars(cls, value: str) -> str:
        if not NAME_RE.match(value):
            raise ValueError(
                "expected letters, digits, '_', '.' or '-' (it becomes a Zarr coordinate), "
                f"got {value!r}"
            )
        return value

    _expression_parses = field_validator("expression")(band_math)

    @model_validator(mode="after")
    def _read_or_derived(self) -> BandSpec:
        if (self.asset is None) == (self.expression is None):
            raise ValueError(
                "a band needs asset (read from the items) or expression (derived from the other "
                "bands), one of them"
            )
        if self.expression is None:
            for key in ("when", "dtype"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} goes with a derived band (expression)")
            return self
        if "scale" not in self.model_fields_set:
            raise ValueError(
                "a derived band needs its own scale (stored = (value - offset) / scale), e.g. "
                "scale: 0.0001 and offset: 0 for NDVI in int16, offset: -1 in uint16"
            )
        for key in ("resampling", "harmonize"):
            if key in self.model_fields_set and (key != "harmonize" or self.harmonize):
                raise ValueError(f"{key} applies to bands read from assets, not derived ones")
        return self

    @property
    def derived(self) -> bool:
        """Whether the band is computed from the other bands (``expression``)."""
        return self.expression is not None

    @field_validator("asset")
    @classmethod
    def _aliases(cls, value: list[str] | None) -> list[str] | None:
        if value is None:
            return None
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


class Condition(SectionModel):
    """Conditions on one item property, STAC ``query`` style (all given ones must hold)."""

    eq: Any = None
    neq: Any = None
    lt: float | str | None = None
    lte: float | str | None = None
    gt: float | str | None = None
    gte: float | str | None = None
    in_: list[Any] | None = Field(default=None, alias="in", min_length=1)

    def operators(self) -> dict[str, Any]:
        """The operators given, as ``{op: value}`` in the STAC query spelling (``in``)."""
        return {
            ("in" if name == "in_" else name): value
            for name in ("eq", "neq", "lt", "lte", "gt", "gte", "in_")
            if (value := getattr(self, name)) is not None
        }


class FiltersSpec(SectionModel):
    """Item filters: the cloud cover ceiling and other property conditions."""

    max_cloud_cover: float | None = Field(default=None, ge=0, le=100)
    properties: dict[str, Condition] = Field(default_factory=dict)


#: ``composite.method`` values (docs/recipes.md, "composite"; cz.composite.METHODS).
COMPOSITE_METHODS = ("median", "mean", "min", "max", "percentile", "medoid", "geomedian", "best")


class CompositeSpec(SectionModel):
    """The composite of each period: the method and its parameters (rounding rules in
    docs/recipes.md) and the period (a calendar month by default).

    ``q`` (0..100) goes with ``percentile`` only, ``index`` (an expression over band names or
    common names, e.g. ``(nir - red) / (nir + red)``) with ``best`` only."""

    method: Literal[COMPOSITE_METHODS] = "median"  # type: ignore[valid-type]
    q: float | None = Field(default=None, ge=0, le=100)
    index: str | None = Field(default=None, min_length=1, max_length=500)
    period: Annotated[PeriodSpec, BeforeValidator(as_period)] = Field(
        default_factory=PeriodSpec, description="what one timestep stands for; default month"
    )

    _index_parses = field_validator("index")(band_math)

    @model_validator(mode="after")
    def _parameters_fit_the_method(self) -> CompositeSpec:
        if self.method == "percentile" and self.q is None:
            raise ValueError("method percentile needs q (0..100), e.g. q: 25")
        if self.method != "percentile" and self.q is not None:
            raise ValueError(f"q is a parameter of method percentile, not {self.method}")
        if self.method == "best" and self.index is None:
            raise ValueError("method best needs index, e.g. index: (nir - red) / (nir + red)")
        if self.method != "best" and self.index is not None:
            raise ValueError(f"index is a parameter of method best, not {self.method}")
        return self

    def parameters(self) -> dict[str, Any]:
        """The method's parameters as given (empty for the parameterless methods)."""
        out: dict[str, Any] = {}
        if self.q is not None:
            out["q"] = self.q
        if self.index is not None:
            out["index"] = self.index
        return out


class GapFillSpec(SectionModel):
    """Gap-fill: none, carry the last composite value forward for at most ``max_age`` periods,
    or interpolate linearly between the nearest observed periods within ``max_age`` on each
    side."""

    method: Literal["none", "carry-forward", "linear"] = "none"
    max_age: int | None = Field(default=None, ge=1, le=1200)


class CodecSpec(SectionModel):
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

    def writer_options(self) -> dict[str, Any]:
        """``codec_options`` of ``chronozarr.encode`` (shared by cz build and cz convert)."""
        if self.name == "blosc":
            opts: dict[str, Any] = {"clevel": self.effective_level}
            if self.cname:
                opts["cname"] = self.cname
            if self.shuffle:
                opts["shuffle"] = self.shuffle
            return opts
        return {"level": self.effective_level}

    def compressor(self) -> Codec:
        """The format library's compressor object. The levels a recipe allows are checked with
        the recipe's other cross-field rules (:mod:`cz.recipe.semantic`), within the library's."""
        return codec_from(self.name, self.writer_options())


class StoreSpec(SectionModel):
    """The chronozarr store written by ``cz build`` and its layout options."""

    path: str | None = None
    dtype: Literal["uint8", "uint16", "int16", "float32"] = "uint16"
    nodata: float | None = None
    encoding: Literal["auto", "none", "star-delta"] = "auto"
    # the upper bounds are the toolkit's (a block of chunk_size pixels is composited in memory);
    # every rule of the format is the library's StoreLayout's, applied by _layout_rule below
    anchor_interval: int = Field(default=6, le=1000)
    chunk_size: int = Field(default=512, le=MAX_CHUNK_SIZE)
    shard: bool = False
    shard_time: int | None = None
    codec: Annotated[CodecSpec, BeforeValidator(as_codec)] = Field(default_factory=CodecSpec)
    # the time-series companion at level 0 (docs/spec.md C25; decision 0048)
    history: bool = False

    @field_validator("chunk_size", "anchor_interval", "shard_time")
    @classmethod
    def _layout_rule(cls, value: Any, info: ValidationInfo) -> Any:
        try:
            return StoreLayout.checked(str(info.field_name), value)
        except EncodeError as exc:  # the message without the argument's name (the field's path)
            raise ValueError(exc.message) from None

    @property
    def layout(self) -> StoreLayout:
        """The store's layout as the format library takes it (``chronozarr.encode(layout=...)``)."""
        return StoreLayout(
            chunk_size=self.chunk_size,
            encoding=self.encoding,
            anchor_interval=self.anchor_interval,
            shard=self.shard,
            shard_time=self.shard_time,
            codec=self.codec.compressor(),
            history=self.history,
        )

    @property
    def effective_nodata(self) -> float | int | None:
        """nodata as given, else the writer default: 0 for uint8/uint16, none for int16/float32."""
        if self.nodata is not None:
            return int(self.nodata) if self.dtype != "float32" else self.nodata
        return 0 if self.dtype in ("uint8", "uint16") else None


class ProvenanceSpec(SectionModel):
    """Free-text notes recorded in the store's provenance."""

    notes: str | None = None


class Recipe(SectionModel):
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
    _marks: dict[tuple[str | int, ...], Marks] = PrivateAttr(default_factory=dict)

    @property
    def source(self) -> str:
        """The file the recipe was read from (or the name given to :func:`parse_recipe`)."""
        return self._source

    def problem(self, field: tuple[str | int, ...], message: str) -> RecipeProblem:
        """A located problem for ``field`` (for checks made after loading, e.g. a missing file)."""
        line, column = locate(self._marks, field, key=False)
        return RecipeProblem(self._source, line, column, field_path(field), message)

    @model_validator(mode="after")
    def _harmonise_by_collection(self) -> Recipe:
        """``bands[].harmonize`` left unset: the Sentinel-2 correction for Sentinel-2 L2A
        collections only (Landsat and HLS numbers carry no processing-baseline offset)."""
        default = harmonised_by_default(self.catalog.collection)
        for band in self.bands:
            if band.harmonize is None:
                band.harmonize = default and not band.derived
        return self

    def periods(self) -> list[Period]:
        """The store's periods: those of ``composite.period`` starting in the time range."""
        return self.composite.period.rule().between(self.time.first_day, self.time.last_day)

    @property
    def store_dn_offset(self) -> int:
        """The one additive digital-number offset of the store's harmonised bands (0 or 1000...)."""
        offsets = {round(b.store_dn_offset) for b in self.bands if b.harmonize}
        return offsets.pop() if offsets else 0

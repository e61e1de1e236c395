"""The root ``chronozarr`` block, parsed and serialized (spec 3.2, 3.6, 3.7, 3.9, 4.1, 7.3).

``RootAttrs`` and its parts (``Band``, ``Temporal``, ``LevelInfo``) are frozen dataclasses: strict
where the reader needs a value (a missing or malformed key raises ``CorruptStoreError`` naming
the key), tolerant of extra keys (kept verbatim in ``extra``, forward compatibility)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from chronozarr.errors import CorruptStoreError, UnsupportedError
from chronozarr.format._history import HistoryBlock

__all__ = ["Band", "LevelInfo", "RootAttrs", "Temporal"]

# --- band objects (spec 3.6) ----------------------------------------------------------------------


@dataclass(frozen=True)
class Band:
    """One entry of chronozarr.bands. ``scale``/``offset`` None means absent (reads as 1 and 0)."""

    name: str
    common_name: str | None = None
    scale: float | None = None
    offset: float | None = None
    units: str | None = None

    @classmethod
    def from_json(cls, obj: Any, key: str = "chronozarr.bands") -> Band:
        """Read a band object, or the v0.1 string form as ``{name}`` (spec 3.6, 10.1)."""
        if isinstance(obj, str):
            return cls(name=obj)
        if not isinstance(obj, Mapping) or not isinstance(obj.get("name"), str):
            raise CorruptStoreError(f"{key}: expected a band name or an object with 'name'")
        for num in ("scale", "offset"):
            if obj.get(num) is not None and not isinstance(obj[num], int | float):
                raise CorruptStoreError(f"{key}.{num}: expected a number, got {obj[num]!r}")
        return cls(
            name=obj["name"],
            common_name=obj.get("common_name"),
            scale=None if obj.get("scale") is None else float(obj["scale"]),
            offset=None if obj.get("offset") is None else float(obj["offset"]),
            units=obj.get("units"),
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.common_name is not None:
            out["common_name"] = self.common_name
        if self.scale is not None:
            out["scale"] = self.scale
        if self.offset is not None:
            out["offset"] = self.offset
        if self.units is not None:
            out["units"] = self.units
        return out

    @property
    def effective_scale(self) -> float:
        return 1.0 if self.scale is None else self.scale

    @property
    def effective_offset(self) -> float:
        return 0.0 if self.offset is None else self.offset


# --- temporal block (spec 4) ---------------------------------------------------------------------


@dataclass(frozen=True)
class Temporal:
    """chronozarr.temporal. ``delta_reference`` maps timestep -> anchor index."""

    encoding: str
    anchor_interval: int | None = None
    anchor_indices: tuple[int, ...] = ()
    delta_reference: Mapping[int, int] = field(default_factory=dict)
    selection: Mapping[str, Any] | None = None
    has_encoding_key: bool = True  # False for v0.1 stores (no "encoding" key, star-delta)

    @classmethod
    def from_json(cls, obj: Any) -> Temporal:
        key = "chronozarr.temporal"
        if not isinstance(obj, Mapping):
            raise CorruptStoreError(f"{key}: expected an object")
        has_key = "encoding" in obj
        encoding = obj.get("encoding", "star-delta")  # spec 13: a v0.1 store is star-delta
        if encoding not in ("none", "star-delta"):
            raise UnsupportedError(
                f"{key}.encoding: {encoding!r} is not supported (expected 'none' or 'star-delta')"
            )
        selection = obj.get("selection")
        if encoding == "none":
            return cls(encoding="none", selection=selection, has_encoding_key=has_key)
        try:
            interval = int(obj["anchor_interval"])
            anchors = tuple(int(a) for a in obj["anchor_indices"])
            refs = {int(k): int(v) for k, v in obj.get("delta_reference", {}).items()}
        except (
            KeyError,
            TypeError,
            ValueError,
            AttributeError,
        ) as exc:  # missing or mistyped keys of the block
            raise CorruptStoreError(f"{key}: malformed star-delta block ({exc!r})") from exc
        return cls(
            encoding="star-delta",
            anchor_interval=interval,
            anchor_indices=anchors,
            delta_reference=refs,
            selection=selection,
            has_encoding_key=has_key,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.has_encoding_key:
            out["encoding"] = self.encoding
        if self.encoding == "star-delta":
            out["anchor_interval"] = self.anchor_interval
            out["anchor_indices"] = list(self.anchor_indices)
            out["delta_reference"] = {str(k): v for k, v in sorted(self.delta_reference.items())}
        if self.selection is not None:
            out["selection"] = dict(self.selection)
        return out

    def reference(self, t: int) -> int | None:
        """The anchor timestep t is decoded against, or None when t holds true values (spec 4.2)."""
        if self.encoding == "none" or t in self._anchor_set:
            return None
        try:
            return self.delta_reference[t]
        except KeyError:  # no reference recorded for t
            raise CorruptStoreError(
                f"chronozarr.temporal.delta_reference: no entry for timestep {t}"
            ) from None

    @property
    def _anchor_set(self) -> frozenset[int]:
        cached = self.__dict__.get("_anchors_cache")
        if cached is None:
            cached = frozenset(self.anchor_indices)
            object.__setattr__(self, "_anchors_cache", cached)
        return cached


# --- levels mirror (spec 3.7) --------------------------------------------------------------------


@dataclass(frozen=True)
class LevelInfo:
    """One entry of chronozarr.levels: path, resolution, transform, shape, grid."""

    path: str
    resolution: float
    transform: tuple[float, ...]
    shape: tuple[int, ...]
    grid: tuple[int, int]

    @classmethod
    def from_json(cls, obj: Any, i: int) -> LevelInfo:
        key = f"chronozarr.levels[{i}]"
        try:
            level = cls(
                path=str(obj["path"]),
                resolution=float(obj["resolution"]),
                transform=tuple(float(v) for v in obj["transform"]),
                shape=tuple(int(v) for v in obj["shape"]),
                grid=tuple(int(v) for v in obj["grid"]),  # type: ignore[arg-type]
            )
        except (
            KeyError,
            TypeError,
            ValueError,
            IndexError,
        ) as exc:  # missing or mistyped keys of the entry
            raise CorruptStoreError(f"{key}: malformed level entry ({exc!r})") from exc
        # spec 3.7: shape mirrors the (time, band, y, x) data array, grid the cell grid
        if len(level.shape) != 4 or any(v < 0 for v in level.shape):
            raise CorruptStoreError(
                f"{key}.shape: expected 4 non-negative integers (time, band, y, x), "
                f"got {list(level.shape)}"
            )
        if len(level.grid) != 2 or any(v < 0 for v in level.grid):
            raise CorruptStoreError(
                f"{key}.grid: expected 2 non-negative integers, got {list(level.grid)}"
            )
        if len(level.transform) != 6:
            raise CorruptStoreError(
                f"{key}.transform: expected 6 numbers, got {list(level.transform)}"
            )
        return level

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "resolution": self.resolution,
            "transform": list(self.transform),
            "shape": list(self.shape),
            "grid": list(self.grid),
        }


# --- the chronozarr block (spec 3.2, 3.9) ----------------------------------------------------------


@dataclass(frozen=True)
class RootAttrs:
    """The root ``chronozarr`` attribute block, parsed. ``extra`` keeps unknown keys verbatim."""

    spec_version: str
    variable: str
    times: tuple[str, ...]
    bands: tuple[Band, ...]
    nodata: float | int | None
    crs: str | None
    temporal: Temporal
    band_names: tuple[str, ...] | None = None
    volatility_path: str | None = None
    mask_variable: str | None = None
    coverage_variable: str | None = None
    provenance: Mapping[str, Any] | None = None
    levels: tuple[LevelInfo, ...] | None = None
    shard_bytes: Mapping[str, Mapping[str, int]] | None = None
    history: HistoryBlock | None = None  # the time-series companion (docs/spec.md C25)
    extra: Mapping[str, Any] = field(default_factory=dict)
    bands_as_strings: bool = False  # the v0.1 form, kept on rewrite (append)

    _KNOWN = (
        "spec_version",
        "variable",
        "times",
        "bands",
        "band_names",
        "nodata",
        "crs",
        "temporal",
        "volatility_path",
        "mask_variable",
        "coverage_variable",
        "provenance",
        "levels",
        "shard_bytes",
        "history",
    )

    @classmethod
    def from_json(cls, obj: Any) -> RootAttrs:
        """Parse and check the block (spec 10.1): version, encoding, required keys."""
        if not isinstance(obj, Mapping):
            raise CorruptStoreError("attributes.chronozarr: expected an object")
        version = _spec_version(obj.get("spec_version"))
        temporal = Temporal.from_json(obj.get("temporal"))
        for key in ("times", "bands"):
            if not isinstance(obj.get(key), list):
                raise CorruptStoreError(f"chronozarr.{key}: missing or not a list")
        nodata = obj.get("nodata")
        if nodata is not None and (isinstance(nodata, bool) or not isinstance(nodata, int | float)):
            raise CorruptStoreError(f"chronozarr.nodata: expected a number or null, got {nodata!r}")
        levels = _levels(obj.get("levels"))
        band_names = obj.get("band_names")
        if band_names is not None and not isinstance(band_names, list):
            raise CorruptStoreError("chronozarr.band_names: expected a list of strings")
        if obj.get("shard_bytes") is not None:
            _check_shard_bytes(obj["shard_bytes"])
        _check_times(obj["times"])
        crs = obj.get("crs")
        if crs is not None and not isinstance(crs, str):  # spec 3.2: an EPSG code or WKT text
            raise CorruptStoreError(f"chronozarr.crs: expected a CRS string or null, got {crs!r}")
        raw_bands = obj["bands"]
        return cls(
            spec_version=version,
            variable=str(obj.get("variable", "data")),
            times=tuple(obj["times"]),
            bands=tuple(
                Band.from_json(b, f"chronozarr.bands[{i}]") for i, b in enumerate(raw_bands)
            ),
            band_names=None if band_names is None else tuple(str(b) for b in band_names),
            nodata=nodata,
            crs=crs,
            temporal=temporal,
            volatility_path=obj.get("volatility_path"),
            mask_variable=obj.get("mask_variable"),
            coverage_variable=obj.get("coverage_variable"),
            provenance=obj.get("provenance"),
            levels=levels,
            shard_bytes=obj.get("shard_bytes"),
            history=None if obj.get("history") is None else HistoryBlock.from_json(obj["history"]),
            extra={k: v for k, v in obj.items() if k not in cls._KNOWN},
            bands_as_strings=bool(raw_bands) and all(isinstance(b, str) for b in raw_bands),
        )

    def to_json(self) -> dict[str, Any]:
        """Serialize in the key order of the spec 3.9 example."""
        out: dict[str, Any] = {
            "spec_version": self.spec_version,
            "variable": self.variable,
            "times": list(self.times),
            "bands": [b.name if self.bands_as_strings else b.to_json() for b in self.bands],
        }
        if self.band_names is not None:
            out["band_names"] = list(self.band_names)
        out["nodata"] = self.nodata
        out["crs"] = self.crs
        out["temporal"] = self.temporal.to_json()
        if self.volatility_path is not None:
            out["volatility_path"] = self.volatility_path
        if self.mask_variable is not None:
            out["mask_variable"] = self.mask_variable
        if self.coverage_variable is not None:
            out["coverage_variable"] = self.coverage_variable
        if self.provenance is not None:
            out["provenance"] = self.provenance
        if self.levels is not None:
            out["levels"] = [lv.to_json() for lv in self.levels]
        if self.shard_bytes is not None:
            out["shard_bytes"] = {
                lvl: dict(sorted(v.items(), key=lambda kv: _key_order(kv[0])))
                for lvl, v in self.shard_bytes.items()
            }
        if self.history is not None:
            out["history"] = self.history.to_json()
        out.update(self.extra)
        return out

    def evolve(self, **changes: Any) -> RootAttrs:
        return replace(self, **changes)


def _check_times(times: list[Any]) -> None:
    """Every entry of chronozarr.times is an ISO-8601 string (spec 3.2, 3.5); parsing them is
    the reader's (:attr:`chronozarr.Reader.times`), which names the entry it cannot read."""
    for i, t in enumerate(times):
        if not isinstance(t, str):
            raise CorruptStoreError(
                f"chronozarr.times[{i}]: expected an ISO-8601 string, got {repr(t)[:40]}"
            )


def _spec_version(version: Any) -> str:
    """The block's spec_version: a string this reader reads (0.1.x or 0.2.x, spec 10.1)."""
    if not isinstance(version, str):
        raise CorruptStoreError("chronozarr.spec_version: missing or not a string")
    if not (version.startswith("0.1.") or version.startswith("0.2.")):
        raise UnsupportedError(
            f"chronozarr.spec_version: {version!r} is not supported (expected 0.1.x or 0.2.x)"
        )
    return version


def _levels(value: Any) -> tuple[LevelInfo, ...] | None:
    """The levels mirror (spec 3.7), when present."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise CorruptStoreError("chronozarr.levels: expected a list")
    return tuple(LevelInfo.from_json(v, i) for i, v in enumerate(value))


def _check_shard_bytes(value: Any) -> None:
    """shard_bytes is {level: {"ts/r/c": non-negative length}} (spec 7.3)."""
    key = "chronozarr.shard_bytes"
    if not isinstance(value, Mapping):
        raise CorruptStoreError(f"{key}: expected an object", field="shard_bytes")
    for level, shards in value.items():
        if not isinstance(shards, Mapping):
            raise CorruptStoreError(f"{key}.{level}: expected an object", field="shard_bytes")
        for name, length in shards.items():
            if isinstance(length, bool) or not isinstance(length, int) or length < 0:
                raise CorruptStoreError(
                    f"{key}.{level}.{name}: expected a byte length, got {length!r}",
                    field="shard_bytes",
                )


def _key_order(key: str) -> tuple[int, ...]:
    try:
        return tuple(int(p) for p in key.split("/"))
    except ValueError:  # a non-numeric key sorts last
        return (1 << 62,)

"""The recipe's ``mask`` section: classes kept, bit-flag rules, cloud probability, cleaning
(docs/recipes.md, "mask"; decision 0043)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, BeforeValidator, Field, field_validator, model_validator

from cz.composite.bits import parse_bit_key
from cz.recipe.base import SectionModel
from cz.recipe.normalise import as_list_of_str

__all__ = [
    "CLOUD_PROBABILITY_ASSETS",
    "DEFAULT_SCL_CLEAN",
    "DEFAULT_SCL_KEEP",
    "MAX_MASK_RADIUS",
    "MaskSpec",
]

#: SCL classes kept by default: vegetation, not vegetated, water, unclassified, snow/ice.
DEFAULT_SCL_KEEP: tuple[int, ...] = (4, 5, 6, 7, 11)

#: SCL classes the cleaning (mask.open, mask.dilate) applies to by default: cloud shadows, cloud
#: medium and high probability, thin cirrus (Digital Earth Australia's cloud mask; decision 0043).
DEFAULT_SCL_CLEAN: tuple[int, ...] = (3, 8, 9, 10)

#: Cloud-probability assets (0..100 %) of the collections we know: Earth Search's
#: sentinel-2-c1-l2a ``cloud``, the L2A product's ``MSK_CLDPRB`` (20 m) as some catalogs name it.
CLOUD_PROBABILITY_ASSETS: tuple[str, ...] = ("cloud", "MSK_CLDPRB_20m", "MSK_CLDPRB")

#: The largest opening or dilation radius, in pixels (each is read as a halo around every block).
MAX_MASK_RADIUS = 64

#: A mask class: the whole number of the mask asset (SCL is uint8; a QA band may be uint16).
MaskClass = Annotated[int, Field(ge=0, le=65535)]


def _as_bits(value: Any) -> Any:
    """``{3: 1, cloud_confidence: high}`` -> ``{"3": [1], "cloud_confidence": ["high"]}``: YAML
    gives a bit position as a number key, and one value stands for a list of one."""
    if not isinstance(value, dict):
        return value
    return {
        str(k): (v if isinstance(v, list) else [v])
        for k, v in value.items()
        if not isinstance(k, bool)
    }


def _as_clean(value: Any) -> Any:
    """One class or flag stands for a list of one."""
    return [value] if isinstance(value, int | str) and not isinstance(value, bool) else value


class MaskSpec(SectionModel):
    """Which observations count: the mask asset's classes kept (Sentinel-2 SCL by default), its
    bit-flag rules (``bits``: a QA band such as Landsat ``qa_pixel`` or HLS ``Fmask``), an
    optional cloud-probability ceiling, and the cleaning of the cloud the rules reject (the
    classes and flags of ``clean``; opening, then dilation; pixels of the store's grid)."""

    asset: Annotated[list[str], BeforeValidator(as_list_of_str)] = Field(
        default_factory=lambda: ["scl", "SCL"], min_length=1
    )
    keep: list[MaskClass] | None = Field(
        default=None,
        min_length=1,
        max_length=256,
        description="the classes (whole values of the mask asset) kept; default: SCL 4, 5, 6, "
        "7, 11 without bits, none with bits",
    )
    bits: Annotated[dict[str, list[int | str]], BeforeValidator(_as_bits)] | None = Field(
        default=None,
        description="bit fields of the mask asset and the values that reject a pixel: a field "
        "named in the item's classification:bitfields, or bit positions '3', '8-9'",
    )
    clean: Annotated[list[int | str], BeforeValidator(_as_clean)] | None = Field(
        default=None,
        max_length=256,
        description="what the opening and dilation apply to (cloud): rejected classes (numbers) "
        "and keys of bits (strings); default: SCL 3, 8, 9, 10 less the kept ones (none with bits)",
    )
    open: int = Field(
        default=0, ge=0, le=MAX_MASK_RADIUS, description="opening radius of the cloud mask"
    )
    dilate: int = Field(
        default=0,
        ge=0,
        le=MAX_MASK_RADIUS,
        validation_alias=AliasChoices("dilate", "buffer"),
        description="dilation (buffer) radius of the cloud mask, after the opening",
    )
    cloud_probability_max: float | None = Field(default=None, ge=0, le=100)
    cloud_probability_asset: Annotated[list[str], BeforeValidator(as_list_of_str)] = Field(
        default_factory=lambda: list(CLOUD_PROBABILITY_ASSETS), min_length=1
    )

    @model_validator(mode="before")
    @classmethod
    def _one_buffer_name(cls, data: Any) -> Any:
        if isinstance(data, dict) and "dilate" in data and "buffer" in data:
            raise ValueError("give mask.dilate or mask.buffer (the same setting), not both")
        return data

    @field_validator("keep")
    @classmethod
    def _unique(cls, value: list[int] | None) -> list[int] | None:
        if value is not None and len(set(value)) != len(value):
            raise ValueError(f"a class is listed twice: {value}")
        return None if value is None else sorted(value)

    @field_validator("bits")
    @classmethod
    def _bit_fields(cls, value: dict[str, list[int | str]] | None) -> Any:
        if value is None:
            return None
        if not value:
            raise ValueError("expected at least one bit field, e.g. {cloud: 1} or {'3': 1}")
        for key, values in value.items():
            where = parse_bit_key(key)  # raises ValueError for bits out of order or range
            if not key.strip():
                raise ValueError("a bit field needs a name or bit positions, not ''")
            if not values:
                raise ValueError(f"bits {key!r}: expected the values that reject, e.g. 1")
            if any(isinstance(v, bool) for v in values):
                raise ValueError(f"bits {key!r}: expected numbers or class names, not true/false")
            names = [v for v in values if isinstance(v, str)]
            if where is not None and names:
                raise ValueError(
                    f"bits {key!r}: class name {names[0]!r} needs a field named in the item's "
                    "classification:bitfields; with bit positions give numbers"
                )
            if where is not None:
                top = (1 << where[1]) - 1
                bad = [v for v in values if isinstance(v, int) and not 0 <= v <= top]
                if bad:
                    raise ValueError(
                        f"bits {key!r} is {where[1]} bit(s) wide: {bad[0]} is not in 0..{top}"
                    )
            elif any(isinstance(v, int) and v < 0 for v in values):
                raise ValueError(f"bits {key!r}: values are whole numbers >= 0")
        return value

    @field_validator("clean")
    @classmethod
    def _clean_entries(cls, value: list[int | str] | None) -> list[int | str] | None:
        if value is None:
            return None
        if len(set(value)) != len(value):
            raise ValueError(f"something is listed twice: {value}")
        for entry in value:
            if isinstance(entry, bool) or (isinstance(entry, int) and not 0 <= entry <= 65535):
                raise ValueError(f"expected classes 0..65535 or keys of mask.bits, got {entry!r}")
        return value

    @model_validator(mode="after")
    def _defaults_and_cleaned_classes(self) -> MaskSpec:
        if self.keep is None and self.bits is None:  # the SCL default
            self.keep = list(DEFAULT_SCL_KEEP)
        keep = set(self.keep or ())
        if self.clean is None:  # the default: the SCL cloud classes this recipe does not keep
            self.clean = (
                [c for c in DEFAULT_SCL_CLEAN if c not in keep] if self.bits is None else []
            )
        ints = sorted(c for c in self.clean if isinstance(c, int) and not isinstance(c, bool))
        names = sorted(c for c in self.clean if isinstance(c, str))
        self._check_clean(ints, names, keep)
        self.clean = ints + names
        return self

    def _check_clean(self, ints: list[int], names: list[str], keep: set[Any]) -> None:
        """mask.clean against the rest: no class both kept and cleaned, classes only when the
        mask keeps classes, names only of mask.bits, something to clean for open/dilate."""
        both = sorted(set(ints) & keep)
        if both:
            raise ValueError(
                f"class {both[0]} is both kept and cleaned; mask.clean lists rejected classes "
                "(the cloud the opening and dilation apply to)"
            )
        if ints and self.keep is None:
            raise ValueError(
                f"mask.clean lists class {ints[0]}, but the mask keeps no classes (keep); name a "
                f"bit field of mask.bits as a string instead, e.g. clean: ['{ints[0]}']"
            )
        unknown = [n for n in names if n not in (self.bits or {})]
        if unknown:
            known = ", ".join(sorted(self.bits or {})) or "none: mask.bits is not set"
            raise ValueError(
                f"mask.clean names {unknown[0]!r}, which is no key of mask.bits (keys: {known})"
            )
        if (self.open or self.dilate) and not self.clean and self.cloud_probability_max is None:
            raise ValueError(
                "mask.open and mask.dilate clean the classes and flags of mask.clean, which is "
                "empty: list the cloud, e.g. clean: [cloud, cloud_shadow]"
            )

    @field_validator("cloud_probability_asset")
    @classmethod
    def _cloud_aliases(cls, value: list[str]) -> list[str]:
        if any(not v.strip() for v in value):
            raise ValueError("expected asset keys (non-empty strings)")
        if len(set(value)) != len(value):
            raise ValueError(f"an asset alias is listed twice: {value}")
        return value

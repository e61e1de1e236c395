"""A recipe's bit-flag rules (``mask.bits``) resolved against the items' mask asset: named fields
and class names from the STAC classification extension's ``classification:bitfields``, bit
positions as given (docs/recipes.md, "mask").

Every item of the plan must resolve to the same rules (one rule set serves every block); an
item that declares no such field, or declares it elsewhere, stops the plan with a located
:class:`~cz.errors.RecipeError` that names the flag and lists what the item declares.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from cz.composite.bits import BitRule, parse_bit_key
from cz.errors import RecipeError
from cz.recipe import Recipe

__all__ = ["declared_bitfields", "plan_bit_rules", "resolve_bits"]


class _Unresolved(Exception):
    """A field or class the item does not declare: (recipe key, message)."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key
        self.message = message


def declared_bitfields(asset: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The asset's ``classification:bitfields``: on the asset (STAC 1.0 items, e.g. Earth Search
    and Planetary Computer Landsat), else on its one band (STAC 1.1 ``bands``, ``raster:bands``);
    ``None`` when it declares none."""
    fields = asset.get("classification:bitfields")
    if isinstance(fields, list):
        return [f for f in fields if isinstance(f, dict)]
    for key in ("bands", "raster:bands", "eo:bands"):
        bands = asset.get(key)
        if isinstance(bands, list) and len(bands) == 1 and isinstance(bands[0], dict):
            inner = bands[0].get("classification:bitfields")
            if isinstance(inner, list):
                return [f for f in inner if isinstance(f, dict)]
    return None


def _names(entries: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(str(e.get("name")) for e in entries if e.get("name") is not None) or "none"


def _class_value(field: Mapping[str, Any], key: str, value: int | str) -> int:
    """A value of a named field: a number as it is, a class name by the field's ``classes``."""
    if isinstance(value, int):
        return value
    classes = [c for c in field.get("classes") or [] if isinstance(c, dict)]
    for entry in classes:
        if entry.get("name") == value and isinstance(entry.get("value"), int):
            return int(entry["value"])
    raise _Unresolved(
        key, f"bit field {key!r} declares no class {value!r} (its classes: {_names(classes)})"
    )


def resolve_bits(
    bits: Mapping[str, Sequence[int | str]],
    clean: Sequence[int | str],
    asset: Mapping[str, Any],
    where: str,
) -> tuple[BitRule, ...]:
    """The rules of ``bits`` against one item's mask ``asset`` (``where`` names the item and the
    asset in messages). Raises :class:`_Unresolved`."""
    rules = []
    declared: list[dict[str, Any]] | None = None
    for key, values in bits.items():
        position = parse_bit_key(key)
        if position is not None:
            offset, length = position
            numbers = tuple(sorted({int(v) for v in values}))
            rules.append(BitRule(key, offset, length, numbers, cloud=key in clean))
            continue
        if declared is None:
            declared = declared_bitfields(asset)
        if declared is None:
            raise _Unresolved(
                key,
                f"{where} declares no classification:bitfields, so the flag {key!r} cannot be "
                "found; give bit positions instead, e.g. '3': 1",
            )
        field = next((f for f in declared if f.get("name") == key), None)
        if field is None:
            raise _Unresolved(
                key, f"{where} declares no bit field {key!r} (it declares: {_names(declared)})"
            )
        start, width = field.get("offset"), field.get("length")
        if not isinstance(start, int) or not isinstance(width, int):
            raise _Unresolved(key, f"{where} declares bit field {key!r} without offset/length")
        offset, length = start, width
        numbers = tuple(sorted({_class_value(field, key, v) for v in values}))
        try:
            rules.append(BitRule(key, offset, length, numbers, cloud=key in clean))
        except ValueError as exc:  # a number too wide for the declared field
            raise _Unresolved(key, str(exc)) from None
    return tuple(rules)


def plan_bit_rules(
    recipe: Recipe, items: Sequence[tuple[str, Mapping[str, Any], str]]
) -> tuple[BitRule, ...] | None:
    """The recipe's bit rules, resolved against every ``(item id, mask asset, asset key)``;
    ``None`` without ``mask.bits``. Without items, only bit positions resolve (named flags are
    left out: there is nothing to read). Raises a located :class:`RecipeError`."""
    mask = recipe.mask
    if mask is None or not mask.bits:
        return None
    clean = [c for c in mask.clean or () if isinstance(c, str)]
    if not items:
        numeric = {k: v for k, v in mask.bits.items() if parse_bit_key(k) is not None}
        return resolve_bits(numeric, clean, {}, "no item")
    first: tuple[BitRule, ...] | None = None
    first_id = ""
    for item_id, asset, key in items:
        where = f"asset {key!r} of item {item_id}"
        try:
            rules = resolve_bits(mask.bits, clean, asset, where)
        except _Unresolved as exc:
            raise RecipeError([recipe.problem(("mask", "bits", exc.key), exc.message)]) from None
        if first is None:
            first, first_id = rules, item_id
        elif rules != first:
            differs = next(a.name for a, b in zip(rules, first, strict=True) if a != b)
            raise RecipeError(
                [
                    recipe.problem(
                        ("mask", "bits", differs),
                        f"items {first_id} and {item_id} declare bit field {differs!r} "
                        "differently; one recipe reads one layout (give bit positions, or "
                        "split the recipe)",
                    )
                ]
            )
    return first

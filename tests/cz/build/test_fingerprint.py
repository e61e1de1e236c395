"""``cz append`` refuses a recipe whose fingerprint differs from the store's (decision 0018).

The fingerprint is what makes a month mean what it means: collection, filters, mask rules,
composite, gap-fill, harmonisation, bands, grid, dtype. It is recorded at build time in the
store's provenance, derived from the recipe's section models, so a field added to a model is
covered without a change to the comparison (checked here with a subclass of ``MaskSpec``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import Field
from typer.testing import CliRunner

import chronozarr
from cz.build import BuildOptions, RecipeMismatchError, append_months, build
from cz.build.options import Progress
from cz.build.store_args import recipe_fingerprint
from cz.recipe import load_recipe
from cz.recipe.sections import MaskSpec
from tests.cz.scenes import LOADER_WARNINGS, listing, random_scene, recipe, write_items

pytestmark = LOADER_WARNINGS

MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]


class Notes(Progress):
    def __init__(self) -> None:
        self.notes: list[str] = []

    def note(self, message: str) -> None:
        self.notes.append(message)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A three-month store (Jan..Mar) and its recipe; April is left to append."""
    folder = tmp_path_factory.mktemp("fingerprint")
    scenes = [
        random_scene(f"S2B_31TFJ_2024{m[5:]}10_0_L2A", f"{m}-10T10:30:00Z", 10 + i)
        for i, m in enumerate(MONTHS)
    ]
    write_items(folder, scenes)
    path = recipe(folder, start="2024-01", end="2024-03", name="base.yaml")
    path.write_text(path.read_text() + "filters:\n  max_cloud_cover: 30\n")
    store = folder / "store.zarr"
    build(load_recipe(path), out=str(store), options=BuildOptions(workers=1))
    return path, store


def _variant(base: Path, name: str, old: str, new: str) -> Any:
    text = base.read_text()
    assert old in text, old
    path = base.with_name(f"{name}.yaml")
    path.write_text(text.replace(old, new))
    return load_recipe(path)


def test_the_build_records_the_whole_fingerprint(built: tuple[Path, Path]) -> None:
    base, store = built
    prov = chronozarr.open_store(store).attrs.provenance
    entry = prov["fingerprint"]
    assert entry["version"] == 1
    assert entry["fields"] == json.loads(json.dumps(recipe_fingerprint(load_recipe(base))))
    for key in (
        "catalog.collection",
        "filters.max_cloud_cover",
        "mask.keep",
        "mask.asset",
        "composite.method",
        "gap_fill.method",
        "harmonization.store_dn_offset",
        "bands[red].scale",
        "grid.resolution",
        "store.dtype",
    ):
        assert key in entry["fields"], key
    assert "build" not in prov  # the legacy short form is no longer written


CHANGES = {
    "max_cloud_cover": (
        "max_cloud_cover: 30",
        "max_cloud_cover: 60",
        "filters.max_cloud_cover: recipe 60.0, store built with 30.0",
    ),
    "property": (
        "max_cloud_cover: 30\n",
        "max_cloud_cover: 30\n  properties:\n    platform: {eq: sentinel-2b}\n",
        "filters.properties.platform.eq: recipe 'sentinel-2b', the store recorded nothing",
    ),
    "mask_keep": (
        "keep: [4, 5, 6, 7, 11]",
        "keep: [4, 5, 6, 7]",
        "mask.keep: recipe [4, 5, 6, 7], store built with [4, 5, 6, 7, 11]",
    ),
    "mask_asset": ("  asset: scl\n", "  asset: [scl, SCL]\n", "mask.asset: recipe ['scl', 'SCL']"),
    "collection": (
        "collection: sentinel-2-l2a",
        "collection: sentinel-2-c1-l2a",
        "catalog.collection: recipe 'sentinel-2-c1-l2a', store built with 'sentinel-2-l2a'",
    ),
    "harmonize": (
        "    common_name: nir\n",
        "    common_name: nir\n    harmonize: false\n",
        "bands[nir].harmonize: recipe False, store built with True",
    ),
    "resampling": (
        "    common_name: red\n",
        "    common_name: red\n    resampling: bilinear\n",
        "bands[red].resampling: recipe 'bilinear', store built with 'nearest'",
    ),
    # fields added after the store's kind of recipe existed: each refused by name
    "gap_linear": (
        "gap_fill:\n  method: none\n",
        "gap_fill:\n  method: linear\n  max_age: 2\n",
        "gap_fill.method: recipe 'linear', store built with 'none'",
    ),
    "mask_bits": (
        "keep: [4, 5, 6, 7, 11]\n",
        "keep: [4, 5, 6, 7, 11]\n  bits: {'0': 1}\n",
        "mask.bits.0: recipe [1], the store recorded nothing",
    ),
    "period": (
        "max_cloud_cover: 30\n",
        "max_cloud_cover: 30\ncomposite:\n  period: dekad\n",
        "composite.period.kind: recipe 'dekad', the store recorded nothing",
    ),
    "cleaned_classes": (
        "keep: [4, 5, 6, 7, 11]\n",
        "keep: [4, 5, 6, 7, 11]\n  clean: [9]\n",
        None,  # no cleaning (open, dilate): the field changes nothing and is not compared
    ),
}


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_append_refuses_each_changed_field(
    built: tuple[Path, Path], change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import cz.build.appending

    def no_search(*args: object, **kwargs: object) -> None:
        raise AssertionError("the catalog was searched before the refusal")

    monkeypatch.setattr(cz.build.appending, "plan_recipe", no_search)
    base, store = built
    old, new, message = CHANGES[change]
    before = listing(store)
    if message is None:
        from cz.build.store_args import compare_with_store

        variant = _variant(base, change, old, new)
        assert compare_with_store(variant, chronozarr.open_store(store).attrs.provenance).ok
        return
    with pytest.raises(RecipeMismatchError) as caught:
        append_months(_variant(base, change, old, new), ["2024-04"], store=str(store))
    assert message in str(caught.value)
    assert listing(store) == before  # nothing written


def test_every_differing_field_is_named_at_once(built: tuple[Path, Path]) -> None:
    base, store = built
    text = base.read_text().replace("max_cloud_cover: 30", "max_cloud_cover: 60")
    text = text.replace("keep: [4, 5, 6, 7, 11]", "keep: [4, 5]")
    path = base.with_name("two.yaml")
    path.write_text(text)
    with pytest.raises(RecipeMismatchError) as caught:
        append_months(load_recipe(path), ["2024-04"], store=str(store))
    assert "filters.max_cloud_cover" in str(caught.value) and "mask.keep" in str(caught.value)


class MaskWithClosing(MaskSpec):
    """A field added to the mask model after the store was built (a hypothetical ``closing``; the
    name must not be a real MaskSpec field): covered automatically."""

    closing: int = Field(default=0, ge=0)


def test_a_field_added_to_a_section_model_is_covered(built: tuple[Path, Path]) -> None:
    base, store = built
    rec = load_recipe(base)
    assert rec.mask is not None
    before = listing(store)
    # the store was built before the field existed: its default is what it used ...
    at_default = rec.model_copy(update={"mask": MaskWithClosing(**rec.mask.model_dump())})
    assert recipe_fingerprint(at_default)["mask.closing"] == 0
    # ... so another value is refused, naming the field
    closed = rec.model_copy(update={"mask": MaskWithClosing(**rec.mask.model_dump(), closing=3)})
    with pytest.raises(RecipeMismatchError, match=r"mask\.closing: recipe 3, the store recorded"):
        append_months(closed, ["2024-04"], store=str(store))
    assert listing(store) == before
    # a store built with the field records it, and a different value is refused
    folder = store.parent
    with_field = folder / "closed.zarr"
    build(closed, out=str(with_field), options=BuildOptions(workers=1))
    fields = chronozarr.open_store(with_field).attrs.provenance["fingerprint"]["fields"]
    assert fields["mask.closing"] == 3
    other = rec.model_copy(update={"mask": MaskWithClosing(**rec.mask.model_dump(), closing=2)})
    with pytest.raises(RecipeMismatchError, match=r"mask\.closing: recipe 2, store built with 3"):
        append_months(other, ["2024-04"], store=str(with_field))
    append_months(closed, ["2024-04"], store=str(with_field))
    assert chronozarr.open_store(with_field).n_time == 4


def _as_old_store(store: Path, legacy: dict[str, Any]) -> None:
    """Rewrite the root as a store built before the fingerprint was recorded."""
    root_path = store / "zarr.json"
    root = json.loads(root_path.read_bytes())
    prov = root["attributes"]["chronozarr"]["provenance"]
    del prov["fingerprint"]
    prov["build"] = legacy
    root_path.write_text(json.dumps(root))


def test_old_stores_compare_what_they_recorded_and_warn_once(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    base, store = built
    old = tmp_path / "old.zarr"
    shutil.copytree(store, old)
    legacy = {
        "collection": "sentinel-2-l2a",
        "composite": "median",
        "gap_fill": "none",
        "gap_fill_max_age": None,
        "mask_keep": [4, 5, 6, 7, 11],
        "dn_offset": 1000,
        "harmonized": ["red", "nir"],
        "resampling": {"red": "nearest", "nir": "nearest"},
    }
    _as_old_store(old, legacy)
    # what it recorded is compared
    keep = _variant(base, "old-keep", "keep: [4, 5, 6, 7, 11]", "keep: [4, 5]")
    with pytest.raises(RecipeMismatchError, match=r"mask_keep: recipe \[4, 5\]"):
        append_months(keep, ["2024-04"], store=str(old))
    # what it did not record (the cloud ceiling) cannot be: a warning, once, and the append runs
    notes = Notes()
    cloud = _variant(base, "old-cloud", "max_cloud_cover: 30", "max_cloud_cover: 60")
    append_months(cloud, ["2024-04"], store=str(old), progress=notes)
    warned = [n for n in notes.notes if "records no recipe fingerprint" in n]
    assert len(warned) == 1
    assert chronozarr.open_store(old).n_time == 4


def test_cz_append_exits_2_naming_the_field(built: tuple[Path, Path]) -> None:
    from cz.app import app

    base, store = built
    path = base.with_name("cli.yaml")
    path.write_text(base.read_text().replace("max_cloud_cover: 30", "max_cloud_cover: 60"))
    result = CliRunner().invoke(
        app, ["append", str(path), "--month", "2024-04", "--store", str(store)]
    )
    assert result.exit_code == 2, result.output
    assert "filters.max_cloud_cover: recipe 60.0, store built with 30.0" in result.output
    assert "Traceback" not in result.output


def test_utm_and_its_epsg_zone_are_one_grid(built: tuple[Path, Path]) -> None:
    """``grid.crs: utm`` is recorded as the zone it resolves to: naming the zone is no change."""
    base, _store = built
    utm = _variant(base, "utm", "crs: 32631", "crs: utm")
    explicit = load_recipe(base)
    assert recipe_fingerprint(utm)["grid.crs"] == "EPSG:32631"
    assert recipe_fingerprint(utm) == recipe_fingerprint(explicit)


def test_a_hostile_recorded_fingerprint_gives_a_bounded_message(
    built: tuple[Path, Path], tmp_path: Path
) -> None:
    import shutil

    base, store = built
    copy = tmp_path / "hostile.zarr"
    shutil.copytree(store, copy)
    root_path = copy / "zarr.json"
    root = json.loads(root_path.read_bytes())
    fields = root["attributes"]["chronozarr"]["provenance"]["fingerprint"]["fields"]
    fields["filters.max_cloud_cover"] = "x" * 1_000_000
    for i in range(200):
        fields[f"zz-evil\n[bold]{i}[/]"] = i
    root_path.write_text(json.dumps(root))
    with pytest.raises(RecipeMismatchError) as caught:
        append_months(load_recipe(base), ["2024-04"], store=str(copy))
    text = str(caught.value)
    assert len(text) < 20_000
    assert "filters.max_cloud_cover: recipe 30.0, store built with 'xxx" in text
    assert "more differing fields" in text
    assert "\n[bold]" not in text  # a key with a newline is shown as its repr


def test_the_cleaned_classes_are_recorded_only_with_a_cleaning(built: tuple[Path, Path]) -> None:
    """``mask.clean`` changes nothing without ``open``/``dilate``, so such a fingerprint omits it
    (stores keep their bytes). With a cleaning it is recorded, and a store built with a cleaning
    before the field existed (it opened every rejected class) refuses the recipe."""
    from cz.build.store_args import compare_with_store

    base, _store = built
    plain = load_recipe(base)
    assert "mask.clean" not in recipe_fingerprint(plain)
    cleaned = _variant(
        base, "cleaned", "keep: [4, 5, 6, 7, 11]", "keep: [4, 5, 6, 7, 11]\n  open: 2"
    )
    fields = recipe_fingerprint(cleaned)
    assert fields["mask.clean"] == [3, 8, 9, 10]
    entry = {"version": 1, "fields": fields}
    assert compare_with_store(cleaned, {"fingerprint": entry}).ok
    before = {k: v for k, v in fields.items() if k != "mask.clean"}
    check = compare_with_store(cleaned, {"fingerprint": {"version": 1, "fields": before}})
    assert [d[0] for d in check.differences] == ["mask.clean"]
    other = _variant(
        base,
        "cleaned9",
        "keep: [4, 5, 6, 7, 11]",
        "keep: [4, 5, 6, 7, 11]\n  open: 2\n  clean: [9]",
    )
    check = compare_with_store(other, {"fingerprint": entry})
    assert check.differences == [("mask.clean", [9], [3, 8, 9, 10])]

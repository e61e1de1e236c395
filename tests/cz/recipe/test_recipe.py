"""Recipes: valid ones load with their defaults; every broken one gets a located, helpful error."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from cz.errors import RecipeError
from cz.recipe import DEFAULT_SCL_KEEP, load_recipe, parse_recipe
from cz.stac import resolve_items
from tests.cz.helpers import MINIMAL_RECIPE, RECIPES, write_recipe

GOOD = MINIMAL_RECIPE


def _replace(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new)


# (case id, recipe text, [(line, field, fragment of the message)]) -- every problem expected
BROKEN: list[tuple[str, str, list[tuple[int | None, str, str]]]] = [
    (
        "misspelt-section",
        _replace("bands:\n", "bnads:\n"),
        [
            (12, "bnads", "unknown key 'bnads'; did you mean 'bands'?"),
        ],
    ),
    (
        "misspelt-nested-key",
        _replace("  resolution: 20", "  resolutoin: 20"),
        [(8, "grid.resolutoin", "did you mean 'resolution'?")],
    ),
    (
        "misspelt-value",
        _replace("    asset: [red, B04]\n", "    asset: [red, B04]\n    resampling: bilnear\n"),
        [(15, "bands[0].resampling", "did you mean 'bilinear'?")],
    ),
    (
        "month-as-date",
        _replace("  start: 2020-05", "  start: 2020-05-01"),
        [(10, "time.start", "expected a month as YYYY-MM (e.g. 2020-05)")],
    ),
    (
        "end-before-start",
        _replace("  end: 2020-08", "  end: 2019-08"),
        [(11, "time.end", "end 2019-08 is before start 2020-05")],
    ),
    (
        "bbox-west-east",
        _replace("[27.0, -8.2, 27.3, -7.9]", "[27.3, -8.2, 27.0, -7.9]"),
        [(5, "aoi.bbox", "expected west < east")],
    ),
    (
        "bbox-three-numbers",
        _replace("[27.0, -8.2, 27.3, -7.9]", "[27.0, -8.2, 27.3]"),
        [(5, "aoi.bbox", "expected")],
    ),
    (
        "url-and-path",
        _replace("  path: items.json\n", "  path: items.json\n  url: https://x.test/v1\n"),
        [(1, "catalog", "expected exactly one of 'url' (a STAC API) or 'path'")],
    ),
    (
        "geographic-crs",
        _replace("  crs: utm", "  crs: 4326"),
        [(7, "grid.crs", "EPSG:4326 is not a projected CRS")],
    ),
    (
        "odd-chunk-size",
        GOOD + "store:\n  chunk_size: 511\n",
        [(18, "store.chunk_size", "expected an even number")],
    ),
    (
        "star-delta-float",
        GOOD + "store:\n  dtype: float32\n  encoding: star-delta\n",
        [(19, "store.encoding", "star-delta is only valid for uint8 and uint16")],
    ),
    (
        "duplicate-band-name",
        _replace("  - name: nir", "  - name: red"),
        [(15, "bands[1].name", "band name 'red' is also used by bands[0]")],
    ),
    (
        "duplicate-yaml-key",
        _replace("  crs: utm\n", "  crs: utm\n  crs: 32735\n"),
        [(8, "grid.crs", "duplicate key 'crs'")],
    ),
    (
        "invalid-yaml",
        _replace("  - name: nir\n    asset: [nir, B08]", "  - name: nir\n    asset: [nir, B08"),
        [(17, "", "invalid YAML: expected ',' or ']'")],
    ),
    (
        "missing-collection",
        _replace("  collection: sentinel-2-l2a\n", ""),
        [(1, "catalog.collection", "required field is missing (the STAC collection id")],
    ),
    (
        "carry-forward-without-age",
        GOOD + "gap_fill:\n  method: carry-forward\n",
        [(17, "gap_fill.max_age", "carry-forward needs max_age (periods)")],
    ),
    (
        "scl-class-out-of-range",
        GOOD + "mask:\n  keep: [4, 5, 70000]\n",
        [(18, "mask.keep[2]", "<= 65535; got 70000")],
    ),
    (
        "two-dn-conventions",
        _replace("    asset: [nir, B08]\n", "    asset: [nir, B08]\n    offset: 0\n"),
        [(17, "bands[1].offset", "must share one digital-number convention")],
    ),
    (
        "aoi-file-missing",
        _replace("  bbox: [27.0, -8.2, 27.3, -7.9]", "  file: nowhere.geojson"),
        [(5, "aoi.file", "file not found")],
    ),
    (
        "shard-time-without-shard",
        GOOD + "store:\n  shard_time: 12\n",
        [(18, "store.shard_time", "only used with shard: true")],
    ),
    (
        "codec-typo",
        GOOD + "store:\n  codec: zstdd\n",
        [(18, "store.codec.name", "did you mean 'zstd'?")],
    ),
    (
        "condition-operator-typo",
        GOOD + "filters:\n  properties:\n    s2:nodata_pixel_percentage: {let: 50}\n",
        [(19, "filters.properties.s2:nodata_pixel_percentage.let", "did you mean 'lte'?")],
    ),
    (
        "url-not-http",
        _replace("  path: items.json", "  url: ftp://x.test/v1"),
        [(2, "catalog.url", "expected an http(s) URL")],
    ),
    (
        "not-a-mapping",
        "- catalog\n- aoi\n",
        [(1, "", "expected a mapping of sections")],
    ),
    (
        "empty",
        "# nothing here\n",
        [(1, "", "the recipe is empty")],
    ),
    (
        "no-bands",
        _replace(
            "bands:\n  - name: red\n    asset: [red, B04]\n  - name: nir\n    asset: [nir, B08]\n",
            "bands: []\n",
        ),
        [(12, "bands", "expected at least 1 item(s)")],
    ),
    (
        "band-named-mask",
        _replace("  - name: nir\n", "  - name: mask\n"),
        [(15, "bands[1].name", "'mask' is reserved")],
    ),
    (
        "unknown-band-key",
        _replace("  - name: nir\n", "  - name: nir\n    scael: 0.0001\n"),
        [(16, "bands[1].scael", "did you mean 'scale'?")],
    ),
]


@pytest.mark.parametrize(("text", "expected"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_recipe_is_located(
    tmp_path: Path, text: str, expected: list[tuple[int | None, str, str]]
) -> None:
    path = write_recipe(tmp_path, text)
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    problems = info.value.problems
    got = [(p.line, p.field) for p in problems]
    assert got == [(line, field) for line, field, _ in expected], str(info.value)
    for problem, (_, _, fragment) in zip(problems, expected, strict=True):
        assert problem.file == str(path)
        assert fragment in problem.message, problem.message
        # the rendered message carries file:line and the field path
        rendered = str(problem)
        assert rendered.startswith(f"{path}:{problem.line}:" if problem.line else str(path))
        if problem.field:
            assert f" {problem.field}: " in rendered


def test_at_least_a_dozen_broken_recipes() -> None:
    assert len(BROKEN) >= 12


def test_invalid_yaml_has_a_line(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, "catalog:\n  path: [unclosed\n  collection: x\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert info.value.first.line == 3
    assert "invalid YAML" in info.value.first.message
    assert "while parsing a flow sequence that starts at line 2" in info.value.first.message


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    text = _replace("  resolution: 20", "  resolution: -5").replace(
        "  end: 2020-08", "  end: 2020-13"
    )
    with pytest.raises(RecipeError) as info:
        load_recipe(write_recipe(tmp_path, text))
    fields = [p.field for p in info.value.problems]
    assert fields == ["grid.resolution", "time.end"]
    assert "expected a number > 0; got -5" in info.value.problems[0].message


def test_missing_recipe_file(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="recipe file not found"):
        load_recipe(tmp_path / "nope.yaml")


def test_missing_catalog_file_is_located_at_resolution(tmp_path: Path) -> None:
    recipe = load_recipe(write_recipe(tmp_path, GOOD))  # items.json does not exist (yet)
    with pytest.raises(RecipeError) as info:
        resolve_items(recipe)
    problem = info.value.first
    assert (problem.line, problem.field) == (2, "catalog.path")
    assert f"file not found: {tmp_path / 'items.json'}" in problem.message


def test_defaults_and_normalisation(tmp_path: Path) -> None:
    recipe = load_recipe(write_recipe(tmp_path, GOOD.replace("crs: utm", "crs: epsg:32735")))
    assert recipe.catalog.path == tmp_path / "items.json"  # relative to the recipe's folder
    assert recipe.grid.crs == "EPSG:32735"
    assert recipe.mask is not None and recipe.mask.keep == list(DEFAULT_SCL_KEEP)
    assert recipe.mask.asset == ["scl", "SCL"]
    red = recipe.bands[0]
    assert (red.scale, red.physical_offset, red.resampling, red.harmonize) == (
        0.0001,
        pytest.approx(-0.1),
        "nearest",
        True,
    )
    assert recipe.store_dn_offset == 1000
    assert recipe.store.dtype == "uint16" and recipe.store.effective_nodata == 0
    assert recipe.store.codec.name == "zstd" and recipe.store.codec.effective_level == 5
    assert recipe.gap_fill.method == "none"
    assert recipe.aoi.geojson()["type"] == "Polygon"


def test_store_offset_zero_convention(tmp_path: Path) -> None:
    text = GOOD.replace("    asset: [red, B04]\n", "    asset: [red, B04]\n    offset: 0\n")
    text = text.replace("    asset: [nir, B08]\n", "    asset: [nir, B08]\n    offset: 0.0\n")
    recipe = load_recipe(write_recipe(tmp_path, text))
    assert recipe.store_dn_offset == 0


def test_aoi_from_feature_collection_file(tmp_path: Path) -> None:
    (tmp_path / "aoi.geojson").write_text(
        '{"type": "FeatureCollection", "features": ['
        '{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates":'
        " [[[27, -8.2], [27.1, -8.2], [27.1, -8], [27, -8], [27, -8.2]]]}},"
        '{"type": "Feature", "properties": {}, "geometry": {"type": "Polygon", "coordinates":'
        " [[[27.1, -8.2], [27.3, -8.2], [27.3, -8], [27.1, -8], [27.1, -8.2]]]}}]}"
    )
    text = GOOD.replace("  bbox: [27.0, -8.2, 27.3, -7.9]", "  file: aoi.geojson")
    recipe = load_recipe(write_recipe(tmp_path, text))
    geom = recipe.aoi.geojson()
    assert geom["type"] == "Polygon"  # the union of the two touching squares
    xs = [c[0] for c in geom["coordinates"][0]]
    assert (min(xs), max(xs)) == (27, 27.3)


def test_inline_geometry_must_be_valid(tmp_path: Path) -> None:
    bowtie = "{type: Polygon, coordinates: [[[0, 0], [1, 1], [1, 0], [0, 1], [0, 0]]]}"
    text = GOOD.replace("  bbox: [27.0, -8.2, 27.3, -7.9]", f"  geometry: {bowtie}")
    with pytest.raises(RecipeError) as info:
        load_recipe(write_recipe(tmp_path, text))
    assert (info.value.first.line, info.value.first.field) == (5, "aoi.geometry")
    assert "invalid Polygon: Self-intersection" in info.value.first.message


def test_yaml_is_safe(tmp_path: Path) -> None:
    text = "name: !!python/object/apply:os.system ['echo pwned']\n" + GOOD
    with pytest.raises(RecipeError, match="invalid YAML"):
        load_recipe(write_recipe(tmp_path, text))


def test_parse_recipe_names_its_source() -> None:
    with pytest.raises(RecipeError) as info:
        parse_recipe(textwrap.dedent(GOOD).replace("bands:", "bandz:"), source="inline.yaml")
    assert str(info.value).startswith("inline.yaml:12:1: bandz: unknown key")


@pytest.mark.parametrize(
    "name",
    [
        "earth-search-s2.yaml",
        "planetary-computer-s2.yaml",
        "earth-search-landsat.yaml",
        "planetary-computer-landsat.yaml",
        "planetary-computer-hls.yaml",
    ],
)
def test_ready_recipes_load(name: str) -> None:
    recipe = load_recipe(RECIPES / name)
    assert recipe.catalog.url is not None
    assert recipe.bands[0].name == "red"
    assert recipe.mask is not None
    # the Sentinel-2 correction is for Sentinel-2 L2A collections only
    assert all(b.harmonize is ("-s2" in name) for b in recipe.bands)

"""A local FeatureCollection read item by item (decision 0060): the oracle is the standard
library's ``json.loads`` of the whole file, for any JSON the features hold and any block size."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cz.stac.stream as stream
from cz.errors import StacError
from cz.plan import make_plan, plan_recipe
from cz.recipe import load_recipe
from cz.stac import Resolution, iter_local_items, read_local_items
from tests.cz.helpers import PC_35MNM, RECIPE_35MNM, need, write_recipe

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=60, deadline=None)
@given(
    features=st.lists(JSON, max_size=6),
    extra=st.dictionaries(st.sampled_from(["bbox", "links", "context"]), JSON, max_size=2),
    indent=st.sampled_from([None, 0, 2]),
    block=st.integers(min_value=1, max_value=64),
)
def test_streamed_features_are_json_loads(
    tmp_path_factory: pytest.TempPathFactory,
    features: list[object],
    extra: dict[str, object],
    indent: int | None,
    block: int,
) -> None:
    path = tmp_path_factory.mktemp("fc") / "items.json"
    doc = {"type": "FeatureCollection", "features": features, **extra}
    path.write_text(json.dumps(doc, indent=indent), encoding="utf-8")
    old = stream.BLOCK
    stream.BLOCK = block  # values cut at every place a block can end
    try:
        assert stream.is_streamable(path)
        assert list(stream.stream_features(path)) == json.loads(path.read_text())["features"]
    finally:
        stream.BLOCK = old


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"type": "FeatureCollection", "features": [{"a": 1}, ', "not JSON"),
        ('{"type": "FeatureCollection", "features": [1 2]}', "not JSON"),
        ('{"type": "FeatureCollection", "features": []} []', "extra data"),
        ('{"type": "FeatureCollection", "bbox": [1]}', "without a 'features' list"),
        ('{"type": "FeatureCollection", "features": {"a": 1}}', "without a 'features' list"),
    ],
)
def test_streamed_file_errors_name_the_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "items.json"
    path.write_text(content)
    with pytest.raises(StacError, match=message) as info:
        list(stream.stream_features(path))
    assert str(path) in str(info.value)


def test_only_a_feature_collection_first_is_streamed(tmp_path: Path) -> None:
    path = tmp_path / "items.json"
    for text, streamed in [
        ('{"type": "FeatureCollection", "features": []}', True),
        ('{"features": [], "type": "FeatureCollection"}', False),
        ('{"type": "Feature", "id": "a"}', False),
        ("[1, 2]", False),
        ("not json", False),
    ]:
        path.write_text(text)
        assert stream.is_streamable(path) is streamed, text


def test_streamed_plan_is_the_plan_of_the_whole_file(tmp_path: Path) -> None:
    """The plan made while the items stream (``plan_recipe``) is the plan of the items read
    whole (``read_local_items``, the path every file took before decision 0060)."""
    need(PC_35MNM)
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog=f"path: {PC_35MNM}")))
    whole = read_local_items(PC_35MNM)
    assert [i["id"] for i in iter_local_items(PC_35MNM)] == [i["id"] for i in whole]
    source = {"kind": "file", "path": str(PC_35MNM), "server_filter": "none",
              "max_items": None, "truncated": False}  # fmt: skip
    expected = make_plan(recipe, Resolution(items=whole, source=source))
    assert plan_recipe(recipe).to_dict(include_stac=True) == expected.to_dict(include_stac=True)

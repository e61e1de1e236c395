"""``chronozarr.provenance`` (spec 3.8): the provenance_items array read back by zarr-python,
skipped items, the recorded recipe fingerprint."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronozarr
from chronozarr import provenance
from chronozarr.errors import ChronozarrError
from tests.chronozarr.small_stores import root_document, small_store


@dataclass(frozen=True)
class Skip:
    item: str
    asset: str
    month: str
    error: str


def test_provenance_items_read_by_zarr_python(tmp_path: Path) -> None:
    store = small_store(tmp_path / "s.zarr", n_time=3)
    docs = [
        provenance.items_document(
            f"2024-0{t + 1}",
            items=[f"item-{t}"],
            solar_days=["2024-01-02"],
            corrections={},
            dropped=t,
            skipped=[Skip("x", "red", f"2024-0{t + 1}", "boom"), Skip("y", "nir", "2099-01", "no")],
        )
        for t in range(3)
    ]
    provenance.write_provenance_items(store, docs[:2], first=0, update_root=True)
    provenance.write_provenance_items(store, docs[2:], first=2, update_root=True)
    arr = zarr.open_array(store / provenance.PROVENANCE_ITEMS, mode="r")
    assert arr.shape == (3,)
    assert [json.loads(s) for s in arr[:]] == [json.loads(d) for d in docs]
    got = provenance.read_provenance_items(store)
    assert [g["dropped"] for g in got] == [0, 1, 2]
    assert got[0]["skipped"] == [{"item": "x", "asset": "red", "month": "2024-01", "error": "boom"}]
    cons = root_document(store)["consolidated_metadata"]["metadata"][provenance.PROVENANCE_ITEMS]
    assert cons["shape"] == [3]
    assert chronozarr.validate(store).ok


@given(st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from("xy")), max_size=30))
def test_skipped_entries_keep_the_first_of_each_pair_up_to_the_limit(pairs: list) -> None:
    skipped = [Skip(i, a, "2024-01", f"e{n}") for n, (i, a) in enumerate(pairs)]
    got = provenance.skipped_entries(skipped, limit=4)
    firsts: dict = {}
    for n, pair in enumerate(pairs):
        firsts.setdefault(pair, f"e{n}")
    assert [(g["item"], g["asset"], g["error"]) for g in got] == [
        (*k, v) for k, v in list(firsts.items())[:4]
    ]


def test_record_skipped_items_and_fingerprint(tmp_path: Path) -> None:
    store = tmp_path / "s.zarr"
    rng = np.random.default_rng(1)
    chronozarr.encode(
        rng.integers(0, 9, (2, 1, 8, 8), dtype=np.uint16),
        store,
        times=["2024-01-01", "2024-02-01"],
        bands=["red"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 0.0, 0.0, -10.0, 0.0],
        provenance={"build": {"composite": "median", "gap_fill": "none"}, "skipped_items": []},
    )
    provenance.record_skipped_items(store, [Skip("a", "red", "2024-03", "gone")] * 3)
    prov = chronozarr.open_store(store).attrs.provenance
    assert prov["skipped_items"] == [
        {"item": "a", "asset": "red", "month": "2024-03", "error": "gone"}
    ]
    assert provenance.fingerprint_differences(prov, {"composite": "median", "x": 1}) == []
    assert provenance.fingerprint_differences(prov, {"gap_fill": "carry-forward"}) == [
        ("gap_fill", "carry-forward", "none")
    ]
    assert provenance.fingerprint_differences(None, {"gap_fill": "x"}) == []


# --- the flattened recipe fingerprint (decision 0018) ---------------------------------------------

json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=5),
    st.lists(st.integers(0, 255), max_size=4),
)
names = st.sampled_from(["a", "b", "mask", "keep", "x_y"])
sections_st = st.dictionaries(
    names,
    st.one_of(json_leaf, st.dictionaries(names, json_leaf, min_size=1, max_size=3)),
    max_size=4,
)
#: small inputs; the machine is shared, so no deadline and no slow-generation check
FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_flatten_names_every_field() -> None:
    sections = {
        "filters": {"max_cloud_cover": 20.0, "properties": {}},
        "mask": {"asset": ["scl"], "keep": [4, 5]},
        "bands": [{"name": "red", "scale": 0.0001}, {"name": "nir", "scale": 0.0001}],
        "gap": None,
    }
    assert provenance.flatten_fingerprint(sections) == {
        "bands": ["red", "nir"],
        "bands[nir].scale": 0.0001,
        "bands[red].scale": 0.0001,
        "filters.max_cloud_cover": 20.0,
        "filters.properties": {},
        "gap": None,
        "mask.asset": ["scl"],
        "mask.keep": [4, 5],
    }


@FAST
@given(sections_st)
def test_a_recorded_fingerprint_matches_itself_after_json(sections: dict) -> None:
    fields = provenance.flatten_fingerprint(sections)
    prov = json.loads(json.dumps({"fingerprint": provenance.fingerprint_entry(fields)}))
    check = provenance.compare_fingerprint(prov, fields)
    assert check.ok and not check.legacy and check.unchecked == []


@FAST
@given(sections_st, st.data())
def test_changing_one_field_is_exactly_one_difference(sections: dict, data: st.DataObject) -> None:
    fields = provenance.flatten_fingerprint(sections)
    if not fields:
        return
    key = data.draw(st.sampled_from(sorted(fields)))
    new = data.draw(json_leaf.filter(lambda v: json.loads(json.dumps(v)) != fields[key]))
    prov = {"fingerprint": provenance.fingerprint_entry(fields)}
    changed = {**fields, key: new}
    check = provenance.compare_fingerprint(prov, changed)
    assert check.differences == [(key, json.loads(json.dumps(new)), fields[key])]


def test_fields_the_store_never_recorded_compare_with_their_default() -> None:
    prov = {"fingerprint": provenance.fingerprint_entry({"mask.keep": [4]})}
    given_ = {"mask.keep": [4], "mask.dilate": 0}
    check = provenance.compare_fingerprint(prov, given_, defaults={"mask.dilate": 0})
    assert check.ok
    check = provenance.compare_fingerprint(
        prov, {**given_, "mask.dilate": 3}, defaults={"mask.dilate": 0}
    )
    assert check.differences == [("mask.dilate", 3, provenance.FingerprintCheck.NOT_RECORDED)]
    # a field the recipe lost counts as None
    check = provenance.compare_fingerprint(prov, {})
    assert check.differences == [("mask.keep", None, [4])]


def test_old_stores_compare_their_legacy_build_entries() -> None:
    prov = {"build": {"composite": "median", "gap_fill": "none"}}
    fields = {"composite.method": "median", "filters.max_cloud_cover": 20.0}
    check = provenance.compare_fingerprint(prov, fields, legacy={"gap_fill": "carry-forward"})
    assert check.legacy
    assert check.differences == [("gap_fill", "carry-forward", "none")]
    assert check.unchecked == sorted(fields)
    check = provenance.compare_fingerprint(None, fields, legacy={"gap_fill": "none"})
    assert check.ok and check.legacy


def test_composite_and_mask_fields_record_only_what_is_used() -> None:
    """The median with no cleaning adds nothing (stores built before other methods stay
    byte-identical); parameters and cleaning rules appear when given."""
    assert provenance.composite_fields("median") == {"composite": "monthly median"}
    assert provenance.composite_fields("percentile", {"q": 25.0}) == {
        "composite": "monthly percentile",
        "composite_parameters": {"q": 25.0},
    }
    assert provenance.mask_fields() == {}
    rules = provenance.mask_fields(open_radius=3, dilate_radius=6)["mask_cleaning"]
    assert (rules["open_pixels"], rules["dilate_pixels"]) == (3, 6) and "opening" in rules["order"]
    assert provenance.mask_fields(cloud_probability_max=40.0) == {
        "mask_cleaning": {"cloud_probability_max": 40.0}
    }
    with pytest.raises(ChronozarrError, match="composite method"):
        provenance.composite_fields("")


def test_optional_fingerprint_keys_compare_when_one_side_lacks_them() -> None:
    """A store built with a dilation refuses a recipe without one, and the other way round;
    keys a store from before them never recorded are still not compared."""
    cleaned = {"build": {"composite": "median", "mask_cleaning": {"dilate_pixels": 2}}}
    plain = {"build": {"composite": "median"}}
    assert provenance.fingerprint_differences(cleaned, {"composite": "median"}) == [
        ("mask_cleaning", {}, {"dilate_pixels": 2})
    ]
    given = {"composite": "median", "mask_cleaning": {"dilate_pixels": 2}}
    assert provenance.fingerprint_differences(plain, given) == [
        ("mask_cleaning", {"dilate_pixels": 2}, {})
    ]
    assert provenance.fingerprint_differences(cleaned, given) == []
    assert provenance.fingerprint_differences(plain, {"composite": "median", "new_key": 1}) == []

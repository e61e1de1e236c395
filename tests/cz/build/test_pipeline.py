"""Builds from small synthetic catalogs whose answer is known pixel by pixel.

The scenes hold random numbers and random SCL classes (clouds, shadows, no-data), so any rule
applied wrongly (an overlap or a duplicate counted, a correction applied twice or not at all, a
gap-fill too old, a pixel shifted) changes some pixel. The expected store is computed by
:func:`reference`, a direct per-pixel reading of docs/recipes.md written with ``np.median``,
independent of cz.composite.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build, read_provenance_items
from cz.plan import plan_recipe
from cz.recipe import load_recipe
from tests.cz.scenes import (
    LOADER_WARNINGS,
    SIZE,
    X0,
    Scene,
    grid_offset,
    read_all,
    recipe,
    scenario,
    write_items,
)

pytestmark = LOADER_WARNINGS

KEEP = (4, 5, 6, 7, 11)
MONTHS = ["2024-01", "2024-02", "2024-03", "2024-04"]


def reference(
    scenes: list[Scene],
    corrections: dict[str, int],
    offset: tuple[int, int, int, int],
    max_age: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The expected level 0 (data, mask, coverage), pixel by pixel."""
    row0, col0, h, w = offset
    by_month: dict[str, dict[str, list[Scene]]] = defaultdict(lambda: defaultdict(list))
    for sc in sorted(scenes, key=lambda s: (s.when, s.id)):
        if sc.id in corrections:
            by_month[sc.when[:7]][sc.when[:10]].append(sc)
    n = len(MONTHS)
    raw = np.zeros((n, 2, h, w), dtype=np.int64)
    count = np.zeros((n, h, w), dtype=np.int64)
    for t, month in enumerate(MONTHS):
        for y in range(h):
            for x in range(w):
                obs = []
                for day_scenes in by_month[month].values():
                    for sc in day_scenes:  # the first valid item of the solar day
                        ty = row0 + y
                        tx = col0 + x - round((sc.x0 - X0) / 10)
                        if not (0 <= ty < SIZE and 0 <= tx < SIZE):
                            continue
                        v = sc.values[:, ty, tx].astype(np.int64)
                        if sc.scl[ty, tx] in KEEP and (v != 0).all():
                            obs.append(np.clip(v + corrections[sc.id], 1, 65535))
                            break
                if obs:
                    raw[t, :, y, x] = np.round(np.median(np.array(obs), axis=0))
                    count[t, y, x] = len(obs)
    data = np.zeros_like(raw)
    mask = np.zeros((n, h, w), dtype=np.uint8)
    for t in range(n):
        for age in range(0 if max_age is None else max_age + 1):
            if t - age < 0:
                break
            take = (mask[t] == 0) & (count[t - age] > 0)
            data[t][:, take] = raw[t - age][:, take]
            mask[t][take] = 1
        if max_age is None:
            data[t] = raw[t]
            mask[t] = count[t] > 0
    return data, mask, np.minimum(count, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Scene], dict, set]:
    folder = tmp_path_factory.mktemp("synthetic")
    scenes, corrections, dropped = scenario()
    write_items(folder, scenes)
    return folder, scenes, corrections, dropped


_BUILT: dict[tuple[str, int | None], Path] = {}


def built(catalog: tuple, max_age: int | None) -> Path:
    """The store of the scenario with ``max_age`` (built once per module)."""
    folder = catalog[0]
    key = (str(folder), max_age)
    if key not in _BUILT:
        rec = load_recipe(
            recipe(
                folder, start=MONTHS[0], end=MONTHS[-1], max_age=max_age, name=f"r{max_age}.yaml"
            )
        )
        out = folder / f"store-{max_age}.zarr"
        build(rec, out=str(out), options=BuildOptions(workers=2))
        _BUILT[key] = out
    return _BUILT[key]


def test_the_plan_drops_the_duplicate_and_corrects_each_item(catalog: tuple) -> None:
    folder, _scenes, corrections, dropped = catalog
    plan = plan_recipe(load_recipe(recipe(folder, start=MONTHS[0], end=MONTHS[-1])))
    kept = {p.id: p.correction for m in plan.months for p in m.items}
    assert kept == corrections
    assert {d.id for m in plan.months for d in m.dropped if d.reason == "duplicate"} == dropped
    assert [m.month for m in plan.months if not m.items] == ["2024-02", "2024-04"]


@pytest.mark.parametrize("max_age", [None, 1, 2])
def test_every_pixel_matches_the_rules(catalog: tuple, max_age: int | None) -> None:
    _folder, scenes, corrections, _dropped = catalog
    out = built(catalog, max_age)
    offset = grid_offset(out)
    assert offset[2] > 20 and offset[3] > 20  # the AOI grid, cut into 2 x 2 cells of 16
    data, mask, cov = read_all(out)
    want_data, want_mask, want_cov = reference(scenes, corrections, offset, max_age)
    assert np.array_equal(cov, want_cov)
    assert np.array_equal(mask, want_mask)
    assert np.array_equal(data, want_data)
    # the overlap is counted once: no pixel has more observations than solar days
    assert cov[0].max() == 3
    assert (cov[0][:, offset[3] - 8 :] > 0).any()  # the overlap columns are observed
    # provenance: the month's items, never the dropped duplicate
    docs = read_provenance_items(out)
    assert [d["month"] for d in docs] == MONTHS
    assert set(docs[0]["items"]) == {
        "S2B_31TFJ_20240105_0_L2A",
        "S2B_31TGJ_20240105_0_L2A",
        "S2B_31TFJ_20240115_0_L2A",
        "S2A_31TFJ_20240125_0_L2A",
    }
    assert docs[0]["corrections"] == {
        "S2B_31TFJ_20240105_0_L2A": 1000,
        "S2A_31TFJ_20240125_0_L2A": 1000,
    }
    assert docs[1]["items"] == [] and docs[3]["items"] == []


def test_gap_fill_ages_pixel_by_pixel(catalog: tuple) -> None:
    """A pixel observed only in January: filled in Feb and Mar with max age 2, not in April."""
    data, mask, cov = read_all(built(catalog, 2))
    jan_only = (cov[0] > 0) & (cov[2] == 0)
    assert jan_only.any()
    for t, filled in ((1, True), (2, True), (3, False)):
        assert (mask[t][jan_only] == int(filled)).all()
        assert (cov[t][jan_only] == 0).all()
        if filled:
            assert np.array_equal(data[t][:, jan_only], data[0][:, jan_only])
        else:
            assert (data[t][:, jan_only] == 0).all()
    march = cov[2] > 0  # observed in March: carried into April (age 1)
    assert (mask[3][march] == 1).all()
    assert np.array_equal(data[3][:, march], data[2][:, march])
    # without gap-fill the same pixels are nodata with mask 0
    data0, mask0, _ = read_all(built(catalog, None))
    assert (mask0[1] == 0).all() and (data0[1] == 0).all()  # the empty February


def test_other_dtypes_and_layouts_hold_the_same_composites(catalog: tuple) -> None:
    """int16 (no nodata: the mask decides) sharded with blosc, and float32 (means of two middle
    values kept): the same composites as the uint16 store, written as those layouts."""
    folder = catalog[0]
    base_data, base_mask, base_cov = read_all(built(catalog, 2))
    layouts = {
        "int16": "\n  shard: true\n  shard_time: 2\n  codec: {name: blosc, level: 3, cname: lz4}\n",
        "float32": "\n  codec: {name: gzip, level: 4}\n",
    }
    for dtype, extra in layouts.items():
        path = recipe(
            folder, start=MONTHS[0], end=MONTHS[-1], max_age=2, dtype=dtype, name=f"{dtype}.yaml"
        )
        text = path.read_text().replace("  encoding: none\n", "  encoding: none" + extra)
        path.write_text(text)
        out = folder / f"{dtype}.zarr"
        build(load_recipe(path), out=str(out), options=BuildOptions(workers=2))
        assert chronozarr.validate(out, deep=True).ok
        data, mask, cov = read_all(out)
        assert np.array_equal(mask, base_mask) and np.array_equal(cov, base_cov)
        valid = mask[:, None].astype(bool).repeat(2, axis=1)
        if dtype == "int16":
            assert data.dtype == np.int16
            assert np.array_equal(data[valid], base_data[valid].astype(np.int16))
            assert (data[~valid] == 0).all()  # no nodata declared: the fill value
        else:
            assert data.dtype == np.float32
            diff = np.abs(data[valid].astype(np.float64) - base_data[valid])
            assert diff.max() <= 0.5  # uint16 rounds the .5 means half to even
            assert (diff > 0).any()  # and float32 keeps them
            assert np.all((diff == 0) | (diff == 0.5))
        docs = read_provenance_items(out)
        assert len(docs) == len(MONTHS)


def test_lazy_composites_equal_the_raw_store(catalog: tuple) -> None:
    """The dask-backed Dataset for notebooks computes the same raw composites (no gap-fill)."""
    import dask

    from cz.build import lazy_composites

    folder = catalog[0]
    rec = load_recipe(recipe(folder, start=MONTHS[0], end=MONTHS[-1], name="lazy.yaml"))
    ds = lazy_composites(rec)
    assert ds["data"].chunks[0] == (1,) * len(MONTHS)
    assert ds["data"].chunks[2] == (16, ds.sizes["y"] - 16)
    with dask.config.set(scheduler="threads"):
        data = ds["data"].values
        cov = ds["coverage"].values
    base_data, _mask, base_cov = read_all(built(catalog, None))
    assert np.array_equal(cov, base_cov)
    assert np.array_equal(data, base_data)
    reader = chronozarr.open_store(built(catalog, None))
    assert np.allclose(ds["x"].values[[0, -1]], reader.to_xarray()["x"].values[[0, -1]])

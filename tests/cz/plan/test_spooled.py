"""A cluster build's plan with its items on disk (decision 0065) is the plan.

Oracle: :func:`cz.plan.make_plan` (the in-memory plan, which the dry run prints and the rules'
tests pin) over the same items; and, for the spool itself, the Python list of the records.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cz.plan import Plan, make_plan
from cz.plan.spool import ItemSpool, Spooled
from cz.plan.spooled import make_spooled_plan, plan_recipe_spooled
from cz.recipe import load_recipe
from cz.stac import Resolution
from tests.cz.helpers import AOI, RECIPE_35MNM, s2_item, write_recipe


def _listed(plan: Plan) -> dict[str, Any]:
    """The plan's JSON with its STAC dicts, each month's items read into a list."""
    for month in plan.months:
        month.items = list(month.items)
    return plan.to_dict(include_stac=True)


def _both(tmp_path: Path, items: list[dict[str, Any]], extra: str = "") -> tuple[Any, Any]:
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")
                                      + extra))  # fmt: skip
    memory = make_plan(recipe, Resolution(items=[dict(i) for i in items], source={"k": "t"}))
    spooled = make_spooled_plan(recipe, Resolution(items=iter(items), source={"k": "t"}))
    return memory.to_dict(include_stac=True), _listed(spooled)


w, s, e, n = AOI
_item = st.builds(
    lambda k, day, hour, tile, orbit, baseline, cloud, nodata, half: s2_item(
        f"i{k}",
        f"2020-{5 + day // 4:02d}-{1 + day % 4:02d}T{hour:02d}:06:11Z",
        tile=tile,
        orbit=orbit,
        baseline=baseline,
        cloud=cloud,
        nodata=nodata,
        footprint=(w, s, (w + e) / 2, n) if half else AOI,
    ),
    st.integers(0, 60),  # the same id twice, now and then
    st.integers(0, 11),  # 12 days of 3 months: scenes of many items
    st.sampled_from([8, 9]),
    st.sampled_from(["35MNM", "35MNN"]),
    st.sampled_from([78, 79]),
    st.sampled_from(["02.12", "05.00", "05.09", None]),
    st.sampled_from([1.0, 5.0, 50.0]),  # 50 % is above the recipe's ceiling: a drop
    st.sampled_from([0.0, 2.0, 60.0]),
    st.booleans(),
)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(_item, max_size=30))
def test_the_spooled_plan_is_the_plan(tmp_path_factory: Any, items: list[dict[str, Any]]) -> None:
    """Items of two tiles, two orbits, a few days: duplicates of every kind (baselines, nodata,
    halves of a footprint, the same id twice), drops, ties of datetime."""
    memory, spooled = _both(tmp_path_factory.mktemp("p"), items)
    assert spooled == memory


MASK = "mask:\n  asset: [SCL]\n  keep: [4, 5, 6]\n"


def test_duplicates_with_a_mask(tmp_path: Path) -> None:
    items = [
        s2_item("old", "2020-06-11T08:06:11Z", baseline="02.12"),
        s2_item("new", "2020-06-11T08:06:11Z", baseline="05.00"),
        s2_item("west", "2020-07-11T08:06:11Z", footprint=(w, s, (w + e) / 2, n)),
        s2_item("east", "2020-07-11T08:06:12Z", footprint=((w + e) / 2, s, e, n)),
    ]
    memory, spooled = _both(tmp_path, items, MASK)
    assert spooled == memory
    ids = [[p["id"] for p in m["items"]] for m in spooled["months"]]
    assert ids == [[], ["new"], ["west", "east"], []]  # the rules' own verdicts, spooled


def test_plan_recipe_spooled_reads_the_catalog(tmp_path: Path) -> None:
    import json

    from cz.plan import plan_recipe

    items = [s2_item(f"a{k}", f"2020-06-{1 + k:02d}T08:06:11Z") for k in range(5)]
    (tmp_path / "items.json").write_text(json.dumps({"type": "FeatureCollection",
                                                     "features": items}))  # fmt: skip
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))
    assert _listed(plan_recipe_spooled(recipe)) == plan_recipe(recipe).to_dict(include_stac=True)


@given(st.lists(st.binary(max_size=300), max_size=40), st.data())
def test_spool_reads_back_what_was_written(records: list[bytes], data: Any) -> None:
    spool = ItemSpool()
    try:
        assert [spool.append(r) for r in records] == list(range(len(records)))
        picked = data.draw(st.lists(st.integers(0, max(0, len(records) - 1)), max_size=20))
        picked = picked if records else []
        view = Spooled(spool, np.asarray(picked, dtype=np.int64))
        expected = [records[i] for i in picked]
        assert len(view) == len(expected) and list(view) == expected
        assert view[1:5] == expected[1:5] and view[::-2] == expected[::-2]
        for j in range(-len(expected), len(expected)):
            assert view[j] == expected[j]
        with pytest.raises(IndexError):
            view[len(expected)]
        assert pickle.loads(pickle.dumps(view)) == expected  # another process gets a list
    finally:
        spool.close()


def test_a_spool_is_not_sent_elsewhere() -> None:
    spool = ItemSpool()
    with pytest.raises(TypeError, match="stays in its process"):
        pickle.dumps(spool)
    spool.close()


def test_the_build_fingerprint_of_a_spooled_plan(tmp_path: Path) -> None:
    """The resume key (decision 0017), hashed a month at a time (decision 0065), is the digest
    of the whole text as it was defined: a resumed build keeps finding its partial."""
    import hashlib
    import json

    from cz.build.cluster import build_fingerprint

    items = [s2_item(f"a{k}", f"2020-0{5 + k % 3}-{1 + k:02d}T08:06:11Z") for k in range(7)]
    recipe = load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))
    plan = make_spooled_plan(recipe, Resolution(items=iter(items), source={"k": "t"}))
    doc = recipe.model_dump(mode="json")
    doc["store"].pop("path", None)
    doc["_grid"] = plan.grid.model_dump(mode="json")
    doc["_months"] = [
        [m.month, [(p.id, p.correction, p.solar_day) for p in m.items]] for m in plan.months
    ]
    whole = hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest()
    assert build_fingerprint(recipe, plan) == whole[:16]
    assert sum(len(m.items) for m in plan.months) == 7


def _write_items(tmp_path: Path, n: int) -> Any:
    import json

    items = [s2_item(f"a{k}", f"2020-0{5 + k % 3}-{1 + k % 28:02d}T08:06:11Z") for k in range(n)]
    (tmp_path / "items.json").write_text(json.dumps({"type": "FeatureCollection",
                                                     "features": items}))  # fmt: skip
    return load_recipe(write_recipe(tmp_path, RECIPE_35MNM.format(catalog="path: items.json")))


def test_the_plan_made_in_a_child_is_the_plan(tmp_path: Path) -> None:
    """Decision 0068: the child's plan (its skeleton, the items in this process's file) is the
    plan made here, and :func:`~cz.plan.make_plan`'s."""
    from cz.plan import plan_recipe

    recipe = _write_items(tmp_path, 40)
    child = plan_recipe_spooled(recipe)
    assert isinstance(child.months[1].items, Spooled)  # read from the file, not a list
    here = _listed(plan_recipe_spooled(recipe, child=False))
    assert _listed(child) == here == plan_recipe(recipe).to_dict(include_stac=True)


def test_the_childs_error_is_raised_as_it_was(tmp_path: Path) -> None:
    from cz.errors import CzError

    recipe = _write_items(tmp_path, 3)
    (tmp_path / "items.json").write_text("{not json")
    with pytest.raises(CzError) as here:
        plan_recipe_spooled(recipe, child=False)
    with pytest.raises(CzError) as child:
        plan_recipe_spooled(recipe)
    assert type(child.value) is type(here.value) and str(child.value) == str(here.value)


def _children(pid: int) -> list[int]:
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:  # a process that ended while listed
            continue
        if f"\nPPid:\t{pid}\n" in text:
            found.append(int(status.parent.name))
    return found


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux's /proc")
def test_a_killed_client_leaves_nothing_behind(tmp_path: Path) -> None:
    """A client killed (SIGKILL) while its child plans: the child ends too, and no file is
    left in the temporary folder (the spools' files never had a name)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    _write_items(tmp_path, 3000)
    temp = tmp_path / "tmp"
    temp.mkdir()
    code = (
        "import sys\nfrom cz.plan.spooled import plan_recipe_spooled\n"
        "from cz.recipe import load_recipe\nr = load_recipe(sys.argv[1])\n"
        "print('planning', flush=True)\nplan_recipe_spooled(r)\nprint('planned', flush=True)\n"
    )
    client = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path / "recipe.yaml")],
        stdout=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(temp)},
    )  # fmt: skip
    try:
        assert client.stdout is not None and client.stdout.readline() == "planning\n"
        deadline = time.monotonic() + 60
        while not (kids := _children(client.pid)):
            assert time.monotonic() < deadline and client.poll() is None, "no child planned"
            time.sleep(0.02)
        time.sleep(1.0)  # the child imports and plans (3,000 items: a few seconds)
        assert _children(client.pid) == kids, "the child ended before the client was killed"
        assert list(temp.iterdir()) == []  # mid-plan: the spools' files have no name
        os.kill(client.pid, signal.SIGKILL)
        client.wait(timeout=30)
        deadline = time.monotonic() + 30
        while Path(f"/proc/{kids[0]}").exists():
            state = (
                Path(f"/proc/{kids[0]}/status").read_text()
                if Path(f"/proc/{kids[0]}/status").exists()
                else ""
            )
            if "State:\tZ" in state:  # ended, awaiting its reaper (init)
                break
            assert time.monotonic() < deadline, "the child outlived its client by 30 s"
            time.sleep(0.05)
        assert list(temp.iterdir()) == []
    finally:
        if client.poll() is None:
            client.kill()
            client.wait()
        if client.stdout is not None:
            client.stdout.close()

"""``cz append``: building Jan..Dec then appending Jan equals building the thirteen months.

The scenes are cloudy (half of every scene is masked) and January of the second year is almost
all cloud, so its gap-fill must read December and November back from the store.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import AppendRefusedError, BuildOptions, append_months, build, read_provenance_items
from cz.recipe import load_recipe
from tests.cz.scenes import LOADER_WARNINGS, listing, random_scene, recipe, write_items

pytestmark = LOADER_WARNINGS

MONTHS = [f"2024-{m:02d}" for m in range(1, 13)] + ["2025-01"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("append")
    scenes = []
    for i, month in enumerate(MONTHS):
        cloud = 0.92 if month == "2025-01" else 0.5
        for day in (6, 21):
            year, mon = month.split("-")
            scenes.append(
                random_scene(
                    f"S2B_31TFJ_{year}{mon}{day:02d}_0_L2A",
                    f"{month}-{day:02d}T10:30:00Z",
                    100 + 2 * i + day,
                    cloud=cloud,
                )
            )
    write_items(folder, scenes)
    return folder


def decoded(path: Path) -> dict[str, list[np.ndarray]]:
    reader = chronozarr.open_store(path)
    out: dict[str, list[np.ndarray]] = {"data": [], "mask": [], "coverage": []}
    for level in range(len(reader.levels)):
        for t in range(reader.n_time):
            out["data"].append(reader.read(t, level))
            out["mask"].append(reader.read_mask(t, level))
            out["coverage"].append(reader.read_coverage(t, level))
    return out


@pytest.mark.parametrize("encoding", ["none", "star-delta", "sharded", "history"])
def test_append_equals_the_thirteen_month_build(folder: Path, encoding: str) -> None:
    """``history``: the recipe's ``store.history`` (docs/spec.md C25), and January opens the
    companion's second time block: the grown store's companion objects are the fresh one's."""
    layout = {"sharded": "  shard: true\n  shard_time: 5\n", "history": "  history: true\n"}
    enc = "star-delta" if encoding in layout else encoding

    def write(start: str, end: str, name: str) -> Path:
        path = recipe(folder, start=start, end=end, max_age=2, encoding=enc, name=name)
        path.write_text(path.read_text() + layout.get(encoding, ""))
        return path

    twelve = load_recipe(write("2024-01", "2024-12", f"a-{encoding}.yaml"))
    thirteen = load_recipe(write("2024-01", "2025-01", f"b-{encoding}.yaml"))
    grown = folder / f"grown-{encoding}.zarr"
    fresh = folder / f"fresh-{encoding}.zarr"
    opts = BuildOptions(workers=2)
    build(twelve, out=str(grown), options=opts)
    result = append_months(twelve, ["2025-01"], store=str(grown), options=opts)
    assert result.months == ["2025-01"]
    assert result.gap_filled_fraction > 0.3  # January is mostly filled from the store
    build(thirteen, out=str(fresh), options=opts)

    a, b = decoded(grown), decoded(fresh)
    for kind in ("data", "mask", "coverage"):
        assert len(a[kind]) == len(b[kind])
        for i, (x, y) in enumerate(zip(a[kind], b[kind], strict=True)):
            assert np.array_equal(x, y), (kind, i)
    ra, rb = chronozarr.open_store(grown), chronozarr.open_store(fresh)
    assert ra.array(0).info.sharded == (encoding == "sharded")
    assert ra.attrs.times == rb.attrs.times
    if encoding == "none":  # star-delta: the append keeps its anchors, so references differ
        assert np.allclose(ra.volatility(), rb.volatility(), rtol=1e-5)
    assert read_provenance_items(grown) == read_provenance_items(fresh)
    report = chronozarr.validate(grown, deep=True)
    assert report.ok, [f.message for f in report.findings]
    if encoding == "history":
        companion = sorted(k for k in listing(fresh) if "/history/" in k)
        assert any("/values/c/1/" in k for k in companion)
        assert companion == sorted(k for k in listing(grown) if "/history/" in k)
        for key in companion:
            if not key.endswith("zarr.json"):
                assert (grown / key).read_bytes() == (fresh / key).read_bytes(), key
    if encoding == "none":  # unchanged layout: the very same chunk objects
        files_a, files_b = listing(grown), listing(fresh)
        arrays = ("/data/c/", "/mask/c/", "/coverage/c/", "provenance_items/c/")
        chunks = [k for k in files_b if any(a in k for a in arrays)]
        assert chunks and all(k in files_a for k in chunks)
        for key in chunks:
            assert (grown / key).read_bytes() == (fresh / key).read_bytes(), key


def test_append_refuses_what_does_not_fit(folder: Path) -> None:
    rec = load_recipe(recipe(folder, start="2024-01", end="2024-06", max_age=2, name="c.yaml"))
    store = folder / "refusals.zarr"
    build(rec, out=str(store), options=BuildOptions(workers=1))
    before = listing(store)
    with pytest.raises(AppendRefusedError, match=r"2024-06 are already in the store"):
        append_months(rec, ["2024-06", "2024-07"], store=str(store))
    with pytest.raises(AppendRefusedError, match=r"2024-03 are already in the store"):
        append_months(rec, ["2024-03"], store=str(store))
    with pytest.raises(AppendRefusedError, match=r"the next month is 2024-07, not 2024-09"):
        append_months(rec, ["2024-09"], store=str(store))
    changed = {
        "dtype": ("dtype: uint16", "dtype: int16", r"store.dtype: recipe int16, store uint16"),
        "band": ("    asset: nir\n", "    asset: nir\n    scale: 0.001\n", r"bands\[nir\].scale"),
        "grid": ("resolution: 10", "resolution: 20", r"grid transform"),
        "gap": ("max_age: 2", "max_age: 3", r"gap_fill.max_age: recipe 3, store built with 2"),
        "chunk": ("chunk_size: 16", "chunk_size: 32", r"store.chunk_size: recipe 32, store 16"),
        "history": ("chunk_size: 16", "chunk_size: 16\n  history: true", r"store.history: recipe"),
    }
    base = (folder / "c.yaml").read_text()
    for name, (old, new, message) in changed.items():
        assert old in base, name
        path = folder / f"c-{name}.yaml"
        path.write_text(base.replace(old, new))
        with pytest.raises(AppendRefusedError, match=message):
            append_months(load_recipe(path), ["2024-07"], store=str(store))
    with pytest.raises(AppendRefusedError, match="append works on a local copy"):
        append_months(rec, ["2024-07"], store="s3://bucket/store.zarr")
    assert listing(store) == before  # nothing written by any refusal
    # and the store still takes the next month
    append_months(rec, ["2024-07"], store=str(store))
    assert chronozarr.open_store(store).n_time == 7


def test_provenance_items_never_shorter_than_the_time_axis(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An append interrupted after its provenance step leaves the array longer, never shorter,
    and the store still validates and reads at its old length; re-running completes it."""
    rec = load_recipe(recipe(folder, start="2024-01", end="2024-03", name="d.yaml"))
    store = folder / "interrupted.zarr"
    build(rec, out=str(store))

    def broken_append(*args: object, **kwargs: object) -> None:
        raise OSError("disk full (injected)")

    with monkeypatch.context() as patch:
        patch.setattr(chronozarr, "append", broken_append)
        with pytest.raises(OSError, match="injected"):
            append_months(rec, ["2024-04"], store=str(store))
    reader = chronozarr.open_store(store)
    assert reader.n_time == 3
    items_doc = json.loads((store / "provenance_items" / "zarr.json").read_bytes())
    assert items_doc["shape"] == [4]  # ahead of the time axis
    root = json.loads((store / "zarr.json").read_bytes())
    assert root["consolidated_metadata"]["metadata"]["provenance_items"]["shape"] == [4]
    assert chronozarr.validate(store).ok
    assert len(read_provenance_items(store)) == 3
    append_months(rec, ["2024-04"], store=str(store))
    assert chronozarr.open_store(store).n_time == 4
    assert [d["month"] for d in read_provenance_items(store)] == [
        "2024-01",
        "2024-02",
        "2024-03",
        "2024-04",
    ]

"""Levels 0 to 1 or 2 written by one stage (decisions 0057, 0059) hold the bytes the
level-by-level stages write: the fused task takes level k from the level k-1 planes in memory,
the level-by-level one from level k-1 read back from the store and decoded, the definition of
spec 6. Every object of
both stores is compared, over odd shapes (edge cells, odd level shapes), nodata, mask and
coverage, both encodings and time shards, and a task split in time ranges."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.write import _encode_plan

TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]


def _objects(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _encode(path: Path, data: np.ndarray, **kw: object) -> None:
    n_time = data.shape[0]
    chronozarr.encode(
        data, path, times=[f"2024-01-{d + 1:02d}" for d in range(n_time)],
        bands=[f"b{i}" for i in range(data.shape[1])], crs="EPSG:32631", transform=TRANSFORM,
        chunk_size=16, **kw,
    )  # fmt: skip


CASES = {  # "top": the coarsest level the fused stage writes (decision 0059's rule)
    "uint16 odd shape, auto, 1 worker": dict(shape=(7, 2, 45, 71), workers=1, top=2),
    "uint16 star-delta, nodata, 2 workers (time ranges)": dict(
        shape=(9, 3, 33, 40), encoding="star-delta", nodata=0, workers=2, top=1
    ),
    "uint8 none, mask and coverage, 3 workers": dict(
        shape=(5, 1, 64, 50), dtype=np.uint8, encoding="none", planes=True, workers=3, top=1
    ),
    "uint16 star-delta, mask and coverage, odd level-2 cells, 1 worker": dict(
        shape=(9, 2, 70, 66), encoding="star-delta", planes=True, workers=1, top=2
    ),
    "int16 sharded none": dict(
        shape=(8, 2, 40, 40), dtype=np.int16, encoding="none", shard_time=3, workers=2, top=1
    ),
    "uint16 sharded star-delta with mask": dict(
        shape=(8, 2, 50, 34), encoding="star-delta", shard_time=4, planes=True, workers=2, top=1
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_fused_stage_writes_the_bytes_of_the_stages_by_level(
    case: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case = dict(case)
    shape, dtype = case.pop("shape"), np.dtype(case.pop("dtype", np.uint16))
    top = case.pop("top")
    planes = case.pop("planes", False)
    rng = np.random.default_rng(sum(shape))
    hi = 200 if dtype == np.uint8 else 3000
    data = rng.integers(0 if dtype.kind == "u" else -hi, hi, size=shape).astype(dtype)
    data[:, :, :5, :7] = 0  # a nodata corner when nodata is 0
    if planes:
        t, _b, h, w = shape
        case["mask"] = (rng.random((t, h, w)) > 0.3).astype(np.uint8)
        case["coverage"] = rng.integers(0, 101, size=(t, h, w)).astype(np.uint8)

    taken = []
    fusable = _encode_plan._fusable

    def spy(*args: object) -> bool:
        taken.append(fusable(*args))  # type: ignore[arg-type]
        return taken[-1]

    tops: list[int] = []
    fused_top = _encode_plan._fused_top

    def top_spy(*args: object) -> int:
        tops.append(fused_top(*args))  # type: ignore[arg-type]
        return tops[-1]

    monkeypatch.setattr(_encode_plan, "_fusable", spy)
    monkeypatch.setattr(_encode_plan, "_fused_top", top_spy)
    _encode(tmp_path / "fused.zarr", data, **case)
    assert taken == [True], "the fused stage was not used: the test compares nothing"
    assert tops == [top], f"the fused stage wrote levels 0 to {tops}, expected 0 to {top}"
    monkeypatch.setattr(_encode_plan, "_fusable", lambda *args: False)
    _encode(tmp_path / "levels.zarr", data, **case)

    fused, levels = _objects(tmp_path / "fused.zarr"), _objects(tmp_path / "levels.zarr")
    assert len(chronozarr.open_store(tmp_path / "fused.zarr").levels) >= 3
    assert sorted(fused) == sorted(levels)
    differ = [key for key in fused if fused[key] != levels[key]]
    assert not differ, f"objects that differ: {differ[:5]}"
    assert chronozarr.validate(str(tmp_path / "fused.zarr"), deep=True).ok


def test_a_lazy_or_float_input_keeps_the_stages_by_level(tmp_path: Path) -> None:
    """The fused stage is for integer in-memory inputs only (decision 0057): float volatility
    sums depend on how timesteps are grouped, and a lazy input would hold a batch per cell."""
    da = pytest.importorskip("dask.array")
    taken: list[bool] = []
    fusable = _encode_plan._fusable
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_encode_plan, "_fusable", lambda *a: taken.append(fusable(*a)) or taken[-1])
        data = np.ones((3, 1, 40, 40), dtype=np.uint16)
        _encode(tmp_path / "lazy.zarr", da.from_array(data, chunks=(1, 1, 16, 16)))
        _encode(tmp_path / "float.zarr", data.astype(np.float32))
        _encode(tmp_path / "ints.zarr", data)
    assert taken == [False, False, True]


def test_a_cell_hands_up_the_reduction_of_the_timestep_it_wrote(tmp_path: Path) -> None:
    """A cell below the top keeps the block mean of the timestep it just wrote, made from its
    copy in cache (decision 0063), hands it up once, and for any other timestep (an anchor the
    cell above asks for before it is written) reduces its planes then: both are spec 6's mean of
    the planes, by the oracle of the tests of the pyramid (a 2 x 2 sum floored by 4)."""
    from chronozarr.io import LocalStore
    from chronozarr.write._cells import CellWriter, Layout, Planes

    codecs = [
        {"name": "bytes", "configuration": {"endian": "little"}},
        {"name": "zstd", "configuration": {"level": 1, "checksum": False}},
    ]
    rng = np.random.default_rng(5)
    data = rng.integers(0, 65535, (4, 2, 16, 40), dtype=np.uint16)[..., 3:19]  # strided cells
    layout = Layout(
        store=LocalStore(tmp_path), variable="data", n_time=4, n_band=2, cs=16,
        dtype=np.dtype(np.uint16), nodata=None, encoding="none", anchors=frozenset(), refs={},
        vol_anchors=frozenset({0}), vol_refs={1: 0, 2: 0, 3: 0}, shard_time=None,
        data_codecs=codecs, plane_codecs=codecs,
        has_mask=False, has_coverage=False,
    )  # fmt: skip
    writer = CellWriter(
        layout, "0", 0, 0, Planes(lambda t: (data[t], None, None)), volatility=True,
        keep_reduced=True,
    )  # fmt: skip

    def oracle(t: int) -> np.ndarray:
        v = data[t].astype(np.int64)
        total = v[:, 0::2, 0::2] + v[:, 1::2, 0::2] + v[:, 0::2, 1::2] + v[:, 1::2, 1::2]
        return (total // 4).astype(np.uint16)

    writer.write(0, last_in_shard=True)
    writer.write(1, last_in_shard=True)
    assert writer._reduced is not None and writer._reduced[0] == 1
    kept = writer.reduced(1)[0]
    assert writer._reduced is None  # handed up once: the cell holds no plane it no longer needs
    assert np.array_equal(kept, oracle(1))
    assert np.array_equal(writer.reduced(3)[0], oracle(3))  # not written yet: made from planes
    assert np.array_equal(writer.reduced(0)[0], oracle(0))  # written before the last


HELPED = ["uint16 odd shape, auto, 1 worker", "uint16 star-delta, nodata, 2 workers (time ranges)"]
HELPED += ["uint16 star-delta, mask and coverage, odd level-2 cells, 1 worker"]
HELPED += ["uint16 sharded star-delta with mask"]


@pytest.mark.parametrize("name", HELPED)
def test_the_last_task_shares_its_cells_with_a_helper_and_writes_the_same_bytes(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0067: the last task running shares the cells below its top cell with a helper
    thread. Forced on for every timestep of every task here (both levels 0 to 1 and 0
    to 2, star-delta anchors asked before they are written, mask, coverage, time shards): every
    object is the one the stages by level write."""
    from chronozarr.write import _fused

    case = dict(CASES[name])
    shape, _top = case.pop("shape"), case.pop("top")
    rng = np.random.default_rng(sum(shape) + 1)
    data = rng.integers(0, 3000, size=shape).astype(np.uint16)
    if case.pop("planes", False):
        t, _b, h, w = shape
        case["mask"] = (rng.random((t, h, w)) > 0.3).astype(np.uint8)
        case["coverage"] = rng.integers(0, 101, size=(t, h, w)).astype(np.uint8)
    helped: list[str] = []

    def always(tail: _fused.Tail) -> object:
        if tail.pool is None:
            tail.pool = _fused.ThreadPoolExecutor(1, thread_name_prefix="cz-fused-tail")
        return tail.pool

    written = _fused.CellWriter.write

    def spy(writer: object, t: int, *, last_in_shard: bool) -> None:
        import threading

        helped.append(threading.current_thread().name)
        written(writer, t, last_in_shard=last_in_shard)  # type: ignore[arg-type]

    monkeypatch.setattr(_fused.Tail, "helper", always)
    monkeypatch.setattr(_fused.CellWriter, "write", spy)
    _encode(tmp_path / "fused.zarr", data, **case)
    assert any(n.startswith("cz-fused-tail") for n in helped), "the helper wrote nothing"
    monkeypatch.setattr(_encode_plan, "_fusable", lambda *args: False)
    _encode(tmp_path / "levels.zarr", data, **case)
    fused, levels = _objects(tmp_path / "fused.zarr"), _objects(tmp_path / "levels.zarr")
    assert sorted(fused) == sorted(levels)
    differ = [key for key in fused if fused[key] != levels[key]]
    assert not differ, f"objects that differ: {differ[:5]}"


def test_the_helper_waits_for_the_last_task_alone() -> None:
    """No helper while another task may still start or is running, nor with one thread."""
    from chronozarr.write._fused import Tail

    tail = Tail(tasks=3, threads=2)
    tail.begin()
    tail.begin()
    assert tail.helper() is None  # a task has not started
    tail.begin()
    tail.end()
    assert tail.helper() is None  # every task started, two running
    tail.end()
    assert tail.helper() is not None  # the last one running
    tail.close()
    assert tail.pool is None
    one = Tail(tasks=1, threads=1)
    one.begin()
    assert one.helper() is None

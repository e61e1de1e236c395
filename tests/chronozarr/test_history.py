"""The time-series companion (docs/spec.md C25; decision 0048): its format, what ``encode``
writes, and what the reader reads from it.

The oracle is the input of ``encode`` (level 0 is lossless, spec 1) read back through
zarr-python, a reader we did not write, and the chunk path of spec 10.4 for the reader's answer.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import zarr
from hypothesis import given, settings
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import CorruptStoreError, EncodeError
from chronozarr.format import (
    HistoryBlock,
    HistoryGeometry,
    RootAttrs,
    StoreLayout,
    history_fields,
    pack_history,
)
from chronozarr.io import LocalStore
from tests.conftest import synthetic_series


def _encode(
    path: Path,
    data: np.ndarray,
    *,
    mask: np.ndarray | None = None,
    coverage: np.ndarray | None = None,
    **layout: object,
) -> Path:
    n_time = data.shape[0]
    chronozarr.encode(
        data,
        path,
        times=[f"{2020 + m // 12}-{m % 12 + 1:02d}-01" for m in range(n_time)],
        bands=[f"b{i}" for i in range(data.shape[1])],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 5100000.0],
        mask=mask,
        coverage=coverage,
        **layout,  # type: ignore[arg-type]
    )
    return path


def _planes(n_time: int, h: int, w: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    mask = (rng.random((n_time, h, w)) > 0.25).astype(np.uint8)
    coverage = rng.integers(0, 9, (n_time, h, w), dtype=np.uint8)
    return mask, coverage


# --- the format ------------------------------------------------------------------------------


def test_fields_are_the_bands_then_mask_then_coverage() -> None:
    assert history_fields(["B04", "B08"], True, True) == ["B04", "B08", "mask", "coverage"]
    assert history_fields(["B04"], False, True) == ["B04", "coverage"]
    assert history_fields(["B04"], False, False) == ["B04"]


@pytest.mark.parametrize(
    "block",
    [
        [],
        {"path": "", "levels": ["0"]},
        {"path": "history", "levels": []},
        {"path": "history", "levels": ["0", "0"]},
        {"path": "history", "levels": [0]},
        {"path": "history"},
    ],
)
def test_a_malformed_block_is_refused_naming_it(block: object) -> None:
    with pytest.raises(CorruptStoreError, match=r"chronozarr\.history"):
        HistoryBlock.from_json(block)


def test_the_block_round_trips_through_the_root_attributes() -> None:
    attrs = {
        "spec_version": "0.2.0",
        "times": ["2024-01-01T00:00:00Z"],
        "bands": ["a"],
        "nodata": 0,
        "crs": "EPSG:32631",
        "temporal": {"encoding": "none"},
        "history": {"path": "history", "levels": ["0", "1"]},
    }
    parsed = RootAttrs.from_json(attrs)
    assert parsed.history == HistoryBlock("history", ("0", "1"))
    assert parsed.to_json()["history"] == {"path": "history", "levels": ["0", "1"]}
    assert "history" not in parsed.extra


def test_an_unsafe_group_name_is_refused_before_any_path_is_built(tmp_path: Path) -> None:
    store = _encode(tmp_path / "s", synthetic_series(3, 1, 8, 8), chunk_size=4, history=True)
    from tests.chronozarr.helpers import edit_chronozarr

    edit_chronozarr(store, lambda block: block["history"].update(path="../../etc"))
    with pytest.raises(CorruptStoreError, match=r"chronozarr\.history\.path"):
        chronozarr.open_store(store)


@settings(max_examples=60, deadline=None)
@given(
    n_time=st.integers(1, 40),
    time_block=st.integers(1, 13),
    block=st.integers(1, 9),
    h=st.integers(1, 30),
    w=st.integers(1, 30),
    data=st.data(),
)
def test_blocks_and_time_blocks_cover_exactly_the_window(
    n_time: int, time_block: int, block: int, h: int, w: int, data: st.DataObject
) -> None:
    geo = HistoryGeometry(time_block, block, n_time, h, w)
    t0 = data.draw(st.integers(0, n_time - 1))
    t1 = data.draw(st.integers(t0 + 1, n_time))
    y0, x0 = data.draw(st.integers(0, h - 1)), data.draw(st.integers(0, w - 1))
    y1, x1 = data.draw(st.integers(y0 + 1, h)), data.draw(st.integers(x0 + 1, w))
    # oracle: the chunk index of every element of the window, by integer division
    want_t = sorted({t // time_block for t in range(t0, t1)})
    want_b = sorted({(y // block, x // block) for y in range(y0, y1) for x in range(x0, x1)})
    assert list(geo.time_blocks(t0, t1)) == want_t
    assert geo.blocks(y0, y1, x0, x1) == want_b
    assert geo.n_time_blocks == math.ceil(n_time / time_block)


def test_pack_pads_with_the_fill_value() -> None:
    values = np.arange(2 * 2 * 3 * 2, dtype=np.uint16).reshape(2, 2, 3, 2)
    mask = np.ones((2, 3, 2), np.uint8)
    chunk = pack_history(values, mask, None, 7, (4, 4))
    assert chunk.shape == (4, 3, 4, 4) and chunk.dtype == np.uint16
    assert (chunk[:2, :2, :3, :2] == values).all() and (chunk[:2, 2, :3, :2] == 1).all()
    assert (
        (chunk[2:] == 7).all() and (chunk[:, :, 3:] == 7).all() and (chunk[:, :, :, 2:] == 7).all()
    )


@pytest.mark.parametrize(
    ("option", "value"),
    [("history", "yes"), ("history_time", 0), ("history_block", 3), ("history_block", -2)],
)
def test_bad_layout_options_are_refused_naming_them(option: str, value: object) -> None:
    with pytest.raises(EncodeError, match=option):
        StoreLayout(chunk_size=8, **{option: value})  # type: ignore[arg-type]


def test_the_default_block_divides_the_cell() -> None:
    assert StoreLayout(chunk_size=512).history_block == 16
    assert StoreLayout(chunk_size=8).history_block == 8
    assert StoreLayout(chunk_size=6).history_block == 2


# --- what encode writes ------------------------------------------------------------------------


CASES = [
    # (encoding, chunk_size, history_time, shard_time, planes, n_time)
    ("star-delta", 8, 4, None, True, 14),
    ("none", 8, 5, None, False, 11),
    ("star-delta", 8, 3, 2, True, 7),  # sharded data, time blocks across shards
    ("star-delta", 6, 12, None, True, 5),  # one partial time block, blocks of 2 pixels
]


@pytest.mark.parametrize(("encoding", "cs", "history_time", "shard_time", "planes", "n"), CASES)
def test_the_companion_holds_the_true_values_mask_and_coverage(
    tmp_path: Path,
    encoding: str,
    cs: int,
    history_time: int,
    shard_time: int | None,
    planes: bool,
    n: int,
) -> None:
    data = synthetic_series(n, 3, 21, 17)
    mask, coverage = _planes(n, 21, 17) if planes else (None, None)
    store = _encode(
        tmp_path / "s", data, mask=mask, coverage=coverage, encoding=encoding,
        anchor_interval=3, chunk_size=cs, shard_time=shard_time, history=True,
        history_time=history_time, workers=3,
    )  # fmt: skip
    group = zarr.open_group(store, mode="r")  # an independent reader of the plain arrays
    values = group["0/history/values"]
    assert values.metadata.dimension_names == ("time", "field", "y", "x")
    assert values.chunks == (history_time, 3 + 2 * planes, math.gcd(cs, 16), math.gcd(cs, 16))
    got = values[:]
    assert (got[:, :3] == data).all()  # true values, never residuals
    if planes:
        assert (got[:, 3] == mask).all() and (got[:, 4] == coverage).all()
    fields = ["b0", "b1", "b2", *(["mask", "coverage"] if planes else [])]
    assert list(group["0/history/field"][:]) == fields
    root = group.attrs.asdict()["chronozarr"]
    assert root["history"] == {"path": "history", "levels": ["0"]}
    assert "history" not in group["1"]  # level 0 only (decision 0048)


def test_a_store_without_the_option_has_no_companion(tmp_path: Path) -> None:
    store = _encode(tmp_path / "s", synthetic_series(3, 1, 8, 8), chunk_size=4)
    assert not (store / "0" / "history").exists()
    reader = chronozarr.open_store(store)
    assert reader.attrs.history is None and not reader.has_history(0)
    assert reader.pixel_series(1, 2).source == "chunks"


def test_the_group_name_is_refused_as_the_variable_with_a_companion(tmp_path: Path) -> None:
    with pytest.raises(EncodeError, match="variable"):
        chronozarr.encode(
            synthetic_series(2, 1, 4, 4), tmp_path / "s", times=["2024-01-01", "2024-02-01"],
            bands=["a"], crs=32631, transform=[1, 0, 0, 0, -1, 0], chunk_size=4,
            history=True, variable="history",
        )  # fmt: skip


# --- what the reader reads -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def companion(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, np.ndarray, np.ndarray, np.ndarray]:
    data = synthetic_series(13, 2, 19, 23, seed=5)
    mask, coverage = _planes(13, 19, 23, seed=6)
    store = _encode(
        tmp_path_factory.mktemp("history") / "s", data, mask=mask, coverage=coverage,
        encoding="star-delta", anchor_interval=4, chunk_size=8, history=True, history_time=6,
    )  # fmt: skip
    return store, data, mask, coverage


def test_a_pixel_series_equals_the_chunk_path_and_the_input(companion) -> None:
    store, data, mask, coverage = companion
    reader = chronozarr.open_store(store)
    for row, col in ((0, 0), (18, 22), (9, 16), (7, 8)):
        fast = reader.pixel_series(row, col)
        slow = reader.pixel_series(row, col, use_history=False)
        assert (fast.source, slow.source) == ("history", "chunks")
        assert (fast.stored == data[:, :, row, col]).all()
        assert (slow.stored == fast.stored).all()
        assert (fast.mask == mask[:, row, col]).all() and (slow.mask == fast.mask).all()
        assert (fast.coverage == coverage[:, row, col]).all()
        assert (slow.coverage == fast.coverage).all()
        np.testing.assert_array_equal(fast.physical(), slow.physical())


def test_series_at_a_projected_point(companion) -> None:
    store, data, _mask, _coverage = companion
    reader = chronozarr.open_store(store)
    got = reader.series(500000.0 + 10 * 5 + 3, 5100000.0 - 10 * 11 - 7)
    assert (got.row, got.col) == (11, 5)
    assert (got.x, got.y) == (500055.0, 5099885.0)
    assert (got.stored == data[:, :, 11, 5]).all()
    with pytest.raises(IndexError, match="outside"):
        reader.series(499999.0, 5100000.0)


@pytest.mark.parametrize("use_history", [None, True, False])
def test_a_window_equals_the_input(companion, use_history: bool | None) -> None:
    store, data, mask, coverage = companion
    reader = chronozarr.open_store(store)
    win = reader.read_history(range(2, 11), range(3, 18), range(5, 23), use_history=use_history)
    assert (win.values == data[2:11, :, 3:18, 5:23]).all()
    assert (win.mask == mask[2:11, 3:18, 5:23]).all()
    assert (win.coverage == coverage[2:11, 3:18, 5:23]).all()


def test_a_pixel_costs_one_object_per_time_block_with_the_companion(companion) -> None:
    store, _data, _mask, _coverage = companion
    local = LocalStore(store)
    reader = chronozarr.open_store(local)
    local.stats.reset()
    reader.pixel_series(4, 4)
    keys = [key for _kind, key in local.stats.keys]
    assert sorted(keys) == ["0/history/values/c/0/0/0/0", "0/history/values/c/1/0/0/0",
                            "0/history/values/c/2/0/0/0"]  # fmt: skip
    local.stats.reset()
    reader.pixel_series(4, 4, use_history=False)
    # spec 10.4: each timestep's data chunk (anchors read once), mask and coverage chunks
    assert local.stats.gets == 13 * 3

"""``append`` keeps the time-series companion exact and byte-stable (docs/spec.md C25, spec 14).

Oracles: the appended series itself (level 0 is lossless, spec 1) read back through
zarr-python, a reader we did not write; and a fresh ``encode`` of the whole grown series, whose
companion objects an append must reproduce byte for byte (its chunks hold true values, so the
anchors an append chooses do not matter). What an append may rewrite is spec 14's short-cache
list: of the companion, only the chunk of the time block that held the old last timestep.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr

import chronozarr
from tests.conftest import monthly, synthetic_series

KW: dict[str, Any] = dict(
    bands=["a", "b"], crs="EPSG:32631", transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 5100000.0],
)  # fmt: skip


def _series(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = synthetic_series(n, 2, 21, 19, seed=11)
    rng = np.random.default_rng(12)
    mask = (rng.random((n, 21, 19)) > 0.3).astype(np.uint8)
    coverage = rng.integers(0, 9, (n, 21, 19), dtype=np.uint8)
    return data, mask, coverage


def _companion(store: Path) -> dict[str, str]:
    """key -> sha256 of every object under 0/history."""
    root = store / "0" / "history"
    return {
        str(p.relative_to(store)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def _check_values(store: Path, data: np.ndarray, mask: np.ndarray, cov: np.ndarray) -> None:
    values = zarr.open_group(store, mode="r")["0/history/values"]
    assert values.shape == (data.shape[0], 4, 21, 19)
    got = values[:]
    assert (got[:, :2] == data).all() and (got[:, 2] == mask).all() and (got[:, 3] == cov).all()


LAYOUTS = [
    # (encoding, shard_time, history_time, batches): the batches cross time-block boundaries
    ("star-delta", None, 4, [3, 2, 4, 1, 3]),
    ("none", None, 5, [5, 1, 7]),
    ("star-delta", 3, 4, [2, 3, 4]),  # sharded data, shards and time blocks out of step
]


@pytest.mark.parametrize(("encoding", "shard_time", "history_time", "batches"), LAYOUTS)
def test_appends_keep_the_companion_equal_to_a_fresh_encode(
    tmp_path: Path,
    encoding: str,
    shard_time: int | None,
    history_time: int,
    batches: list[int],
) -> None:
    n = sum(batches)
    data, mask, cov = _series(n)
    layout = dict(
        chunk_size=8, encoding=encoding, anchor_interval=3, shard_time=shard_time,
        history=True, history_time=history_time,
    )  # fmt: skip
    grown = tmp_path / "grown.zarr"
    first = batches[0]
    chronozarr.encode(
        data[:first], grown, times=monthly(first), mask=mask[:first], coverage=cov[:first],
        **KW, **layout,
    )  # fmt: skip
    done = first
    for size in batches[1:]:
        before = _companion(grown)
        part = slice(done, done + size)
        chronozarr.append(
            grown, data[part], times=monthly(done + size)[done:], mask=mask[part],
            coverage=cov[part], workers=2,
        )  # fmt: skip
        after = _companion(grown)
        # spec 14: only the chunks of the time block that held the old last timestep change
        # (when it was partial) and the values' zarr.json; every other object stays
        open_block = done // history_time if done % history_time else None
        changed = {k for k in before if after.get(k) != before[k]}
        allowed = {"0/history/values/zarr.json"}
        if open_block is not None:
            allowed |= {k for k in before if k.startswith(f"0/history/values/c/{open_block}/")}
        assert changed <= allowed, sorted(changed - allowed)
        done += size
        _check_values(grown, data[:done], mask[:done], cov[:done])
    fresh = tmp_path / "fresh.zarr"
    chronozarr.encode(data, fresh, times=monthly(n), mask=mask, coverage=cov, **KW, **layout)
    assert _companion(grown) == _companion(fresh)
    reader = chronozarr.open_store(grown)
    series = reader.pixel_series(13, 17)
    assert series.source == "history" and (series.stored == data[:, :, 13, 17]).all()
    report = chronozarr.validate(grown, deep=True)
    assert report.ok, report


def test_an_append_rewrites_one_companion_chunk_per_block_at_most(tmp_path: Path) -> None:
    """Counting the writes (the local store's stats): one month into an open time block puts
    every B x B block's chunk of that time block once, and nothing of the closed ones."""
    from chronozarr.io import LocalStore

    data, mask, cov = _series(7)
    store = tmp_path / "s.zarr"
    chronozarr.encode(
        data[:6], store, times=monthly(6), mask=mask[:6], coverage=cov[:6], chunk_size=8,
        history=True, history_time=4, history_block=4, **KW,
    )  # fmt: skip
    local = LocalStore(store)
    chronozarr.append(
        local, data[6:], times=monthly(7)[6:], mask=mask[6:], coverage=cov[6:], workers=1
    )
    puts = sorted(k for kind, k in local.stats.keys if kind == "put" and "/history/values/c/" in k)
    blocks = [(by, bx) for by in range(6) for bx in range(5)]  # ceil(21 / 4) x ceil(19 / 4)
    assert puts == sorted(f"0/history/values/c/1/0/{by}/{bx}" for by, bx in blocks)


def test_a_store_without_the_companion_gains_none(tmp_path: Path) -> None:
    data, mask, cov = _series(5)
    store = tmp_path / "s.zarr"
    chronozarr.encode(
        data[:3], store, times=monthly(3), mask=mask[:3], coverage=cov[:3], chunk_size=8, **KW
    )
    chronozarr.append(store, data[3:], times=monthly(5)[3:], mask=mask[3:], coverage=cov[3:])
    assert not (store / "0" / "history").exists()
    assert chronozarr.open_store(store).attrs.history is None


def test_the_trailing_companion_chunk_is_in_the_short_cache_class(tmp_path: Path) -> None:
    """spec 14 "Publishing": the chunk holding the last timestep changes in place; the chunks
    of closed time blocks are immutable (their bytes never change, as shown above)."""
    from chronozarr.io import classify_objects

    data, mask, cov = _series(6)
    store = tmp_path / "s.zarr"
    chronozarr.encode(
        data, store, times=monthly(6), mask=mask, coverage=cov, chunk_size=8, history=True,
        history_time=4, **KW,
    )  # fmt: skip
    objects, skipped = classify_objects(store)
    assert not skipped
    chunks = {o.key: o.in_place for o in objects if o.key.startswith("0/history/values/c/")}
    assert chunks and all(v == k.startswith("0/history/values/c/1/") for k, v in chunks.items())


def test_an_interrupted_append_leaves_the_old_history_readable_and_its_rerun_exact(
    tmp_path: Path,
) -> None:
    """Killed after level 0 (the open block's companion chunks already rewritten with the new
    months): a reader of the old root still reads the old history, since those chunks hold the
    old months unchanged; the re-run gives a fresh encode's companion."""
    data, mask, cov = _series(7)
    store, fresh = tmp_path / "s.zarr", tmp_path / "fresh.zarr"
    layout: dict[str, Any] = dict(chunk_size=8, history=True, history_time=4, **KW)
    chronozarr.encode(data[:5], store, times=monthly(5), mask=mask[:5], coverage=cov[:5], **layout)
    add = dict(times=monthly(7)[5:], mask=mask[5:], coverage=cov[5:])
    with pytest.raises(RuntimeError, match="injected"):
        chronozarr.append(store, data[5:], _fail_after="level0", **add)
    old = chronozarr.open_store(store)
    assert old.n_time == 5
    series = old.pixel_series(20, 18, use_history=True)
    assert (series.stored == data[:5, :, 20, 18]).all() and (series.mask == mask[:5, 20, 18]).all()
    chronozarr.append(store, data[5:], **add)
    chronozarr.encode(data, fresh, times=monthly(7), mask=mask, coverage=cov, **layout)
    assert _companion(store) == _companion(fresh)

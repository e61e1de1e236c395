"""``append(..., resume_key=)`` on local threads (decision 0017, 0022): an interrupted append
re-run with the same key skips the cells it recorded and ends with the bytes of an uninterrupted
append; an append without a key over another append's leftover prefix removes it; the
volatility recount of clipped cells, now done in the level-0 tasks, matches the definition."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.io import LocalStore
from tests.chronozarr.test_append import LAYOUTS, _encode, _hashes, _inputs

N0, N1 = 6, 9


class Puts(LocalStore):
    """A local store that records the keys it writes (this process's puts)."""

    def __init__(self, root: Any) -> None:
        super().__init__(root)
        self.keys: list[str] = []

    def put(self, key: str, data: bytes) -> None:
        self.keys.append(key)
        super().put(key, data)


def _grown(tmp_path: Path, name: str) -> tuple[Path, Path, dict[str, Any]]:
    data, mask, cov, times = _inputs()
    store, reference = tmp_path / "s", tmp_path / "ref"
    _encode(store, data[:N0], mask[:N0], cov[:N0], times[:N0], **LAYOUTS[name])
    shutil.copytree(store, reference)
    new = dict(data=data[N0:N1], times=times[N0:N1], mask=mask[N0:N1], coverage=cov[N0:N1])
    chronozarr.append(reference, new.pop("data"), **new)
    new = dict(data=data[N0:N1], times=times[N0:N1], mask=mask[N0:N1], coverage=cov[N0:N1])
    return store, reference, new


@pytest.mark.parametrize("name", ["unsharded-star", "sharded4-star"])
def test_a_resumed_append_skips_the_recorded_cells_and_gives_the_same_bytes(
    tmp_path: Path, name: str
) -> None:
    store, reference, new = _grown(tmp_path, name)
    data = new.pop("data")
    with pytest.raises(RuntimeError, match="injected"):
        chronozarr.append(store, data, resume_key="k", _fail_after="level1", workers=2, **new)
    recorded = sorted(p.name for p in (store / ".cz-build" / "k" / "0").glob("*.json"))
    rows, cols = chronozarr.open_store(store).levels[0].grid
    assert len(recorded) == rows * cols  # one task per level-0 cell, all new timesteps
    assert chronozarr.open_store(store).n_time == N0
    again = Puts(store)
    chronozarr.append(again, data, resume_key="k", workers=2, **new)
    assert not any(k.startswith(("0/data/c/", "0/mask/c/", "1/data/c/")) for k in again.keys)
    assert any(k.startswith("2/data/c/") for k in again.keys)  # the level not recorded: redone
    assert not (store / ".cz-build").exists()
    assert _hashes(store) == _hashes(reference)


def test_an_append_without_a_key_removes_another_appends_prefix(tmp_path: Path) -> None:
    store, reference, new = _grown(tmp_path, "unsharded-none")
    data = new.pop("data")
    with pytest.raises(RuntimeError, match="injected"):
        chronozarr.append(store, data, resume_key="other", _fail_after="chunks", **new)
    assert (store / ".cz-build" / "other" / "started.json").exists()
    chronozarr.append(store, data, **new)
    assert not (store / ".cz-build").exists()
    assert _hashes(store) == _hashes(reference)


def test_a_bad_resume_key_is_refused_before_any_write(tmp_path: Path) -> None:
    store, _reference, new = _grown(tmp_path, "unsharded-none")
    before = _hashes(store)
    data = new.pop("data")
    for key in ("../x", "a/b", "", "x" * 65):
        with pytest.raises(chronozarr.AppendError, match="resume_key"):
            chronozarr.append(store, data, resume_key=key, **new)
    assert _hashes(store) == before


def test_clipped_cells_are_recounted_in_their_tasks(tmp_path: Path) -> None:
    """Cells whose volatility is clipped at 1.0 lose their sum: their level-0 task recomputes it
    from the store. Here every cell jumps by 30000 between timesteps (mean / 10000 > 1), then a
    quiet batch is appended: the result is the spec 5 value over all references."""
    rng = np.random.default_rng(1)
    h, w, cs = 20, 18, 8
    loud = np.where(np.arange(8)[:, None, None, None] % 2 == 0, 1000, 31000).astype(np.uint16)
    data = np.broadcast_to(loud, (8, 1, h, w)).copy()
    data[5:] = rng.integers(1000, 1010, size=(3, 1, h, w), dtype=np.uint16)  # quiet
    kw: dict[str, Any] = dict(
        bands=["v"], crs="EPSG:32631", transform=[10.0, 0, 0, 0, -10.0, 0], chunk_size=cs,
        encoding="star-delta", anchor_interval=8,
    )  # fmt: skip
    times = [f"2024-{m:02d}-01" for m in range(1, 9)]
    store, fresh = tmp_path / "s", tmp_path / "fresh"
    chronozarr.encode(data[:4], store, times=times[:4], **kw)
    assert np.all(chronozarr.open_store(store).volatility() == 1.0)  # clipped
    chronozarr.append(store, data[4:], times=times[4:], workers=2)
    reader = chronozarr.open_store(store)
    refs = reader.attrs.temporal.delta_reference
    total, count = 0.0, 0
    for t, ref in refs.items():
        diff = np.abs(data[t].astype(np.int64) - data[ref].astype(np.int64))
        total, count = total + diff[:, :cs, :cs].sum(), count + diff[:, :cs, :cs].size
    want = np.float32(min(total / count / 10000.0, 1.0))
    assert reader.volatility()[0, 0] == pytest.approx(want, rel=1e-6)
    chronozarr.encode(data, fresh, times=times, **kw)  # one anchor: the same references
    np.testing.assert_allclose(reader.volatility(), chronozarr.open_store(fresh).volatility())

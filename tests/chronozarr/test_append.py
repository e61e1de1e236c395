"""Appending timesteps (spec 14): equal to a fresh encode, byte-identical where promised, refusals
that leave the store untouched, and interruptions that leave a store valid at its old state."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import AppendError
from tests.conftest import monthly, synthetic_series

T_ALL = 14
H, W, CS = 37, 29, 8

LAYOUTS = {
    "unsharded-star": dict(encoding="star-delta", anchor_interval=3),
    "unsharded-none": dict(encoding="none"),
    "sharded4-star": dict(encoding="star-delta", anchor_interval=2, shard_time=4),
    "sharded12-none": dict(encoding="none", shard_time=12),
    "sharded-gt-ntime": dict(encoding="star-delta", anchor_interval=3, shard_time=20),
}


def _inputs(seed: int = 3):
    data = synthetic_series(T_ALL, 2, H, W, seed=seed)
    rng = np.random.default_rng(seed)
    mask = (rng.random((T_ALL, H, W)) > 0.25).astype(np.uint8)
    cov = rng.integers(0, 12, size=(T_ALL, H, W)).astype(np.uint8)
    return data, mask, cov, monthly(T_ALL)


def _encode(path: Path, data, mask, cov, times, **kw) -> None:
    chronozarr.encode(
        data,
        path,
        times=times,
        bands=[
            {"name": "B04", "scale": 1e-4, "offset": 0.0},
            {"name": "B08", "scale": 1e-4, "offset": 0.0},
        ],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        mask=mask,
        coverage=cov,
        chunk_size=CS,
        **kw,
    )


def _hashes(path: Path) -> dict[str, str]:
    return {
        p.relative_to(path).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(path.rglob("*"))
        if p.is_file()
    }


def _assert_same_content(a: Path, b: Path) -> None:
    ra, rb = chronozarr.open_store(a), chronozarr.open_store(b)
    assert list(ra.attrs.times) == list(rb.attrs.times)
    assert len(ra.levels) == len(rb.levels)
    for k, lv in enumerate(ra.levels):
        assert rb.levels[k].shape == lv.shape
        for t in range(ra.n_time):
            np.testing.assert_array_equal(ra.read(t, k), rb.read(t, k), err_msg=f"level {k} t {t}")
            if ra.has_mask:
                np.testing.assert_array_equal(ra.read_mask(t, k), rb.read_mask(t, k))
            if ra.has_coverage:
                np.testing.assert_array_equal(ra.read_coverage(t, k), rb.read_coverage(t, k))


@pytest.mark.parametrize("name", list(LAYOUTS))
@pytest.mark.parametrize("planes", [True, False], ids=["mask+coverage", "plain"])
def test_append_equals_fresh_encode(tmp_path: Path, name: str, planes: bool) -> None:
    data, mask, cov, times = _inputs()
    kw = LAYOUTS[name]
    m, c = (mask, cov) if planes else (None, None)
    fresh, grown = tmp_path / "fresh", tmp_path / "grown"
    _encode(fresh, data, m, c, times, **kw)
    n0 = 5
    _encode(
        grown,
        data[:n0],
        None if m is None else m[:n0],
        None if c is None else c[:n0],
        times[:n0],
        **kw,
    )
    for a, b in ((n0, n0 + 1), (n0 + 1, 9), (9, T_ALL)):
        chronozarr.append(
            grown,
            data[a:b],
            times=times[a:b],
            mask=None if m is None else m[a:b],
            coverage=None if c is None else c[a:b],
        )
    _assert_same_content(fresh, grown)
    report = chronozarr.validate(grown, deep=True)
    assert report.ok, report.findings
    assert not report.findings, report.findings  # not even a volatility warning
    vf = chronozarr.open_store(fresh).volatility()
    vg = chronozarr.open_store(grown).volatility()
    if kw["encoding"] == "none":
        np.testing.assert_allclose(vg, vf, rtol=1e-5)


@pytest.mark.parametrize("name", ["unsharded-star", "sharded4-star", "sharded12-none"])
def test_append_keeps_immutable_objects(tmp_path: Path, name: str) -> None:
    data, mask, cov, times = _inputs()
    kw = LAYOUTS[name]
    store = tmp_path / "s"
    n0 = 6
    _encode(store, data[:n0], mask[:n0], cov[:n0], times[:n0], **kw)
    before = _hashes(store)
    root_before = json.loads((store / "zarr.json").read_text())
    old_shards = {}
    st = kw.get("shard_time")
    if st:
        for key in before:
            if "/c/" in key and key.split("/")[1] in ("data", "mask", "coverage"):
                old_shards[key] = (store / key).read_bytes()
    chronozarr.append(store, data[n0:9], times=times[n0:9], mask=mask[n0:9], coverage=cov[n0:9])
    after = _hashes(store)
    root_after = json.loads((store / "zarr.json").read_text())
    changed = {k for k in before if before[k] != after.get(k)}
    allowed = {"zarr.json", "volatility/c/0/0"}
    for lv in root_before["attributes"]["chronozarr"]["levels"]:
        p = lv["path"]
        allowed |= {f"{p}/time/c/0", f"{p}/time/zarr.json"}
        allowed |= {f"{p}/{v}/zarr.json" for v in ("data", "mask", "coverage")}
    if "time/zarr.json" in before:  # the root-level time (root_coordinates) follows the levels'
        allowed |= {"time/c/0", "time/zarr.json"}
    if st:
        # spec 14: only the shard holding the old last timestep changes, when it was not full
        last_ts = (n0 - 1) // st
        if n0 % st:
            allowed |= {k for k in old_shards if k.split("/c/")[1].split("/")[0] == str(last_ts)}
        for key in changed & set(old_shards):
            new = (store / key).read_bytes()
            old = old_shards[key]
            assert new[: len(old)] == old, f"{key}: old bytes moved (spec 14: old offsets kept)"
    unexpected = changed - allowed
    assert not unexpected, f"objects spec 14 calls immutable changed: {sorted(unexpected)}"
    assert not (set(before) - set(after)), "an object disappeared"
    # band, x, y and level groups unchanged (they are among the hashed objects); attributes:
    assert root_after["attributes"]["multiscales"] == root_before["attributes"]["multiscales"]
    cz_b, cz_a = root_before["attributes"]["chronozarr"], root_after["attributes"]["chronozarr"]
    for k, v in cz_b["temporal"].get("delta_reference", {}).items():
        assert cz_a["temporal"]["delta_reference"][k] == v
    assert cz_a["temporal"].get("anchor_indices", [])[
        : len(cz_b["temporal"].get("anchor_indices", []))
    ] == cz_b["temporal"].get("anchor_indices", [])
    assert cz_a["times"][:n0] == cz_b["times"]
    assert [lv["shape"][0] for lv in cz_a["levels"]] == [9] * len(cz_a["levels"])


@pytest.mark.parametrize("shard_time", [None, 12], ids=["unsharded", "sharded12"])
def test_twelve_monthly_appends(tmp_path: Path, shard_time: int | None) -> None:
    data = synthetic_series(13, 2, 20, 20, seed=5)
    times = monthly(13)
    kw = dict(encoding="star-delta", anchor_interval=6)
    if shard_time:
        kw["shard_time"] = shard_time
    fresh, grown = tmp_path / "fresh", tmp_path / "grown"
    chronozarr.encode(
        data,
        fresh,
        times=times,
        bands=["a", "b"],
        crs=32631,
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=8,
        **kw,
    )
    chronozarr.encode(
        data[:1],
        grown,
        times=times[:1],
        bands=["a", "b"],
        crs=32631,
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=8,
        **kw,
    )
    for t in range(1, 13):
        chronozarr.append(grown, data[t : t + 1], times=times[t : t + 1])
        assert chronozarr.validate(grown).ok
    _assert_same_content(fresh, grown)
    assert chronozarr.validate(grown, deep=True).ok


def _make_v01(path: Path, data, times) -> None:
    """A v0.1-style store: string bands, no encoding key, whole-axis shards, pixels_per_tile."""
    chronozarr.encode(
        data,
        path,
        times=times,
        bands=["B04", "B08"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=8,
        encoding="star-delta",
        anchor_interval=2,
        shard=True,
    )
    root = json.loads((path / "zarr.json").read_text())
    cz = root["attributes"]["chronozarr"]
    cz["spec_version"] = "0.1.0"
    cz["bands"] = ["B04", "B08"]
    for key in ("band_names", "levels"):
        cz.pop(key)
    cz["temporal"].pop("encoding")
    for d in root["attributes"]["multiscales"][0]["datasets"]:
        d["pixels_per_tile"] = 8
    (path / "zarr.json").write_text(json.dumps(root))


def test_append_to_v01_store_keeps_its_form(tmp_path: Path) -> None:
    data = synthetic_series(7, 2, 20, 18, seed=9)
    times = monthly(7)
    store = tmp_path / "v01"
    _make_v01(store, data[:4], times[:4])
    ms_before = json.loads((store / "zarr.json").read_text())["attributes"]["multiscales"]
    chronozarr.append(store, data[4:], times=times[4:])
    root = json.loads((store / "zarr.json").read_text())
    assert root["attributes"]["multiscales"] == ms_before  # pixels_per_tile kept (spec 13)
    cz = root["attributes"]["chronozarr"]
    assert cz["bands"] == ["B04", "B08"] and "encoding" not in cz["temporal"]
    reader = chronozarr.open_store(store)
    for t in range(7):
        np.testing.assert_array_equal(reader.read(t), data[t])
    assert chronozarr.validate(store, deep=True).ok


PHASES = ["level0", "level1", "chunks", "volatility", "coords", "arrays"]


@pytest.mark.parametrize("phase", PHASES)
@pytest.mark.parametrize("name", ["unsharded-star", "sharded4-star"])
def test_interrupted_append_keeps_old_state_then_completes(
    tmp_path: Path, phase: str, name: str
) -> None:
    data, mask, cov, times = _inputs()
    kw = LAYOUTS[name]
    store, reference = tmp_path / "s", tmp_path / "ref"
    n0, n1 = 6, 10
    _encode(store, data[:n0], mask[:n0], cov[:n0], times[:n0], **kw)
    shutil.copytree(store, reference)
    with pytest.raises(RuntimeError, match="injected"):
        chronozarr.append(
            store,
            data[n0:n1],
            times=times[n0:n1],
            mask=mask[n0:n1],
            coverage=cov[n0:n1],
            _fail_after=phase,
        )
    # the store still validates and decodes every timestep of its previous root
    report = chronozarr.validate(store)
    assert report.ok, [f for f in report.findings if f.severity == "error"]
    reader = chronozarr.open_store(store)
    assert reader.n_time == n0
    for k in range(len(reader.levels)):
        old = chronozarr.open_store(reference)
        for t in range(n0):
            np.testing.assert_array_equal(reader.read(t, k), old.read(t, k))
    # re-running the same append completes it, with the same objects as an uninterrupted one
    chronozarr.append(store, data[n0:n1], times=times[n0:n1], mask=mask[n0:n1], coverage=cov[n0:n1])
    chronozarr.append(
        reference, data[n0:n1], times=times[n0:n1], mask=mask[n0:n1], coverage=cov[n0:n1]
    )
    assert _hashes(store) == _hashes(reference)
    assert chronozarr.validate(store, deep=True).ok


def _refusals(data, mask, cov, times):
    n0 = 5
    ok = dict(
        data=data[n0 : n0 + 2],
        times=times[n0 : n0 + 2],
        mask=mask[n0 : n0 + 2],
        coverage=cov[n0 : n0 + 2],
    )
    return [
        ("times", dict(ok, times=times[n0 - 1 : n0 + 1])),  # first new time not after the last
        ("times", dict(ok, times=[times[n0 + 1], times[n0]])),
        ("times", dict(ok, times=times[n0 : n0 + 1])),
        ("dtype", dict(ok, data=data[n0 : n0 + 2].astype(np.int16))),
        ("grid", dict(ok, data=data[n0 : n0 + 2, :, :-1])),
        ("grid", dict(ok, data=data[n0 : n0 + 2, :1])),
        ("mask", dict(ok, mask=None)),
        ("coverage", dict(ok, coverage=None)),
        ("mask", dict(ok, mask=mask[n0 : n0 + 2, :-1])),
        ("mask", dict(ok, mask=mask[n0 : n0 + 2] * 2)),
        ("bands", dict(ok, bands=["B04", "B03"])),
        ("crs", dict(ok, crs="EPSG:32632")),
        ("grid", dict(ok, transform=[10.0, 0.0, 500010.0, 0.0, -10.0, 4000000.0])),
        ("nodata", dict(ok, nodata=7)),
    ]


@pytest.mark.parametrize("case", range(14))
def test_refusals_leave_store_byte_identical(tmp_path: Path, case: int) -> None:
    data, mask, cov, times = _inputs()
    store = tmp_path / "s"
    _encode(store, data[:5], mask[:5], cov[:5], times[:5], **LAYOUTS["sharded4-star"])
    condition, kwargs = _refusals(data, mask, cov, times)[case]
    before = _hashes(store)
    arr = kwargs.pop("data")
    with pytest.raises(AppendError) as info:
        chronozarr.append(store, arr, **kwargs)
    assert info.value.condition == condition, str(info.value)
    assert str(info.value).startswith(condition + ":")
    assert _hashes(store) == before


def test_refuses_planes_on_a_store_without_them(tmp_path: Path) -> None:
    data, mask, cov, times = _inputs()
    store = tmp_path / "s"
    _encode(store, data[:5], None, None, times[:5])
    before = _hashes(store)
    with pytest.raises(AppendError, match="cannot gain"):
        chronozarr.append(store, data[5:6], times=times[5:6], mask=mask[5:6])
    with pytest.raises(AppendError, match="cannot gain"):
        chronozarr.append(store, data[5:6], times=times[5:6], coverage=cov[5:6])
    assert _hashes(store) == before


def test_refuses_xarray_with_other_coordinates(tmp_path: Path) -> None:
    xr = pytest.importorskip("xarray")
    data, _mask, _cov, times = _inputs()
    store = tmp_path / "s"
    _encode(store, data[:5], None, None, times[:5])
    reader = chronozarr.open_store(store)
    da = reader.to_xarray().isel(time=slice(0, 1)).load()
    before = _hashes(store)
    shifted = xr.DataArray(
        data[5:6],
        dims=da.dims,
        coords={"band": ["B04", "B08"], "y": da.y.values + 10, "x": da.x.values},
    )
    with pytest.raises(AppendError, match=r"^grid:"):
        chronozarr.append(store, shifted, times=times[5:6])
    renamed = xr.DataArray(
        data[5:6], dims=da.dims, coords={"band": ["B02", "B08"], "y": da.y.values, "x": da.x.values}
    )
    with pytest.raises(AppendError, match=r"^bands:"):
        chronozarr.append(store, renamed, times=times[5:6])
    assert _hashes(store) == before
    good = xr.DataArray(
        data[5:6], dims=da.dims, coords={"band": ["B04", "B08"], "y": da.y.values, "x": da.x.values}
    )
    chronozarr.append(store, good, times=times[5:6])
    np.testing.assert_array_equal(chronozarr.open_store(store).read(5), data[5])


class _Killed(BaseException):
    """Stands for a kill: not an Exception, so nothing on the way catches it."""


@pytest.mark.parametrize("name", ["unsharded-none", "sharded4-star"])
def test_append_interrupted_between_volatility_and_time_applies_deltas_once(
    tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decision 0020: a kill after volatility/c/0/0, before 0/time/c/0, then a re-run, used to add
    the batch's deltas to the volatility twice (the re-run saw the old time axis, took the
    stored volatility for the old one)."""
    from chronozarr.io import LocalStore

    data, mask, cov, times = _inputs()
    kw = LAYOUTS[name]
    store, reference = tmp_path / "s", tmp_path / "ref"
    n0, n1 = 6, 10
    _encode(store, data[:n0], mask[:n0], cov[:n0], times[:n0], **kw)
    shutil.copytree(store, reference)
    batch = dict(times=times[n0:n1], mask=mask[n0:n1], coverage=cov[n0:n1])
    real_put = LocalStore.put

    def put(self: LocalStore, key: str, blob: bytes) -> None:
        if key == "0/time/c/0":
            raise _Killed
        real_put(self, key, blob)

    monkeypatch.setattr(LocalStore, "put", put)
    with pytest.raises(_Killed):
        chronozarr.append(store, data[n0:n1], **batch)
    monkeypatch.setattr(LocalStore, "put", real_put)
    assert chronozarr.open_store(store).n_time == n0
    chronozarr.append(store, data[n0:n1], **batch)
    chronozarr.append(reference, data[n0:n1], **batch)
    np.testing.assert_array_equal(
        chronozarr.open_store(store).volatility(), chronozarr.open_store(reference).volatility()
    )
    assert _hashes(store) == _hashes(reference)

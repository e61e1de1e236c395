"""Composite methods against independent numpy computations (np.nanmean, np.nanpercentile, ...).

Each reference below is written from the rule in docs/recipes.md ("composite"), per pixel where
that is the plainest way to say it, never from cz.composite's code.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cz.composite import (
    BandTerms,
    CompositeRules,
    fill_value,
    reduce_observations,
    value_bounds,
    work_dtype,
)

DTYPES = ("uint16", "uint8", "int16", "float32")


@st.composite
def observations(draw: st.DrawFn, dtype: str | None = None) -> tuple:
    """(obs_values (n, nb, h, w) in the work dtype, obs_valid (n, h, w), store dtype, nodata)."""
    dt = dtype or draw(st.sampled_from(DTYPES))
    n = draw(st.integers(0, 7))
    nb = draw(st.integers(1, 3))
    h = draw(st.integers(1, 3))
    w = draw(st.integers(1, 3))
    nodata = {"uint16": 0, "uint8": 0, "int16": None, "float32": None}[dt]
    low, high = value_bounds(dt, nodata)
    if dt == "float32":
        low, high = -1000.0, 20000.0
    # a narrow range makes ties and equal neighbours (the rounding cases) common
    span = draw(st.sampled_from([(low, min(high, low + 4)), (low, high)]))
    size = n * nb * h * w
    if dt == "float32":
        vals = draw(st.lists(st.floats(span[0], span[1], width=32), min_size=size, max_size=size))
    else:
        vals = draw(st.lists(st.integers(int(span[0]), int(span[1])), min_size=size, max_size=size))
    values = np.array(vals, dtype=work_dtype(dt)).reshape(n, nb, h, w)
    valid = np.array(
        draw(st.lists(st.booleans(), min_size=n * h * w, max_size=n * h * w)), dtype=bool
    ).reshape(n, h, w)
    return values, valid, dt, nodata


def _nan_stack(values: np.ndarray, valid: np.ndarray) -> np.ndarray:
    out = values.astype(np.float64)
    out[~np.broadcast_to(valid[:, None], out.shape)] = np.nan
    return out


def _to_store(ref: np.ndarray, count: np.ndarray, dt: str, nodata: float | None) -> np.ndarray:
    """The documented rounding: half to even, clip to the valid range; fill without observations."""
    fill = fill_value(dt, nodata)
    if np.dtype(dt).kind == "f":
        out = np.where(count[None] > 0, ref, fill).astype(dt)
    else:
        low, high = value_bounds(dt, nodata)
        out = np.where(count[None] > 0, np.clip(np.round(np.nan_to_num(ref)), low, high), fill)
        out = out.astype(dt)
    return out


def _run(values, valid, dt, nodata, **rules):
    out, count = reduce_observations(values.copy(), valid, CompositeRules(**rules), dt, nodata)
    assert out.dtype == np.dtype(dt)
    np.testing.assert_array_equal(count, valid.sum(axis=0))  # coverage: the valid count
    return out, count


def _quiet(fn, *args, **kwargs):
    """numpy's nan-reductions warn on all-NaN pixels (those are fill in both computations)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return fn(*args, **kwargs)


@settings(max_examples=150, deadline=None)
@given(observations())
def test_mean_is_numpy_nanmean_rounded_half_to_even(case: tuple) -> None:
    values, valid, dt, nodata = case
    out, count = _run(values, valid, dt, nodata, method="mean")
    if values.shape[0] == 0:
        assert (out == fill_value(dt, nodata)).all()
        return
    ref = _quiet(np.nanmean, _nan_stack(values, valid), axis=0)
    np.testing.assert_array_equal(out, _to_store(ref, count, dt, nodata))


@settings(max_examples=100, deadline=None)
@given(observations(), st.sampled_from(["min", "max"]))
def test_min_and_max_are_numpy_nanmin_nanmax(case: tuple, method: str) -> None:
    values, valid, dt, nodata = case
    out, count = _run(values, valid, dt, nodata, method=method)
    if values.shape[0] == 0:
        return
    fn = np.nanmax if method == "max" else np.nanmin
    ref = _quiet(fn, _nan_stack(values, valid), axis=0)
    np.testing.assert_array_equal(out, _to_store(ref, count, dt, nodata))


def test_percentile_rounds_like_numpy_at_a_half() -> None:
    """1 and 246 at q 90: numpy's virtual index (n - 1) q is exactly 0.9, so 221.5 rounds to 222;
    the algebraically equal n q + (1 - q) - 1 is 0.8999999999999999 and gave 221 (CI found it)."""
    values = np.array([1, 246], dtype=work_dtype("uint16")).reshape(2, 1, 1, 1)
    valid = np.ones((2, 1, 1), dtype=bool)
    out, _ = _run(values, valid, "uint16", 0, method="percentile", q=90.0)
    assert out.ravel().tolist() == [222]
    assert np.round(np.percentile([1.0, 246.0], 90.0)) == 222


@settings(max_examples=200, deadline=None)
@given(
    observations(), st.one_of(st.sampled_from([0.0, 25.0, 50.0, 90.0, 100.0]), st.floats(0, 100))
)
def test_percentile_is_numpy_nanpercentile(case: tuple, q: float) -> None:
    values, valid, dt, nodata = case
    out, count = _run(values, valid, dt, nodata, method="percentile", q=q)
    if values.shape[0] == 0:
        return
    ref = _quiet(np.nanpercentile, _nan_stack(values, valid), q, axis=0)
    np.testing.assert_array_equal(out, _to_store(ref, count, dt, nodata))


@settings(max_examples=100, deadline=None)
@given(observations(dtype="uint16"))
def test_percentile_50_is_the_median(case: tuple) -> None:
    values, valid, dt, nodata = case
    p50, _ = _run(values, valid, dt, nodata, method="percentile", q=50.0)
    median, _ = _run(values, valid, dt, nodata, method="median")
    np.testing.assert_array_equal(p50, median)


def _per_pixel_choice(values, valid, score_of) -> np.ndarray:
    """Reference of the one-observation methods: per pixel, the valid observation with the
    highest score (the first one on a tie); -1 without one."""
    n, _nb, h, w = values.shape
    choice = np.full((h, w), -1)
    for y in range(h):
        for x in range(w):
            idx = [g for g in range(n) if valid[g, y, x]]
            if not idx:
                continue
            scores = [score_of(values[idx, :, y, x].astype(np.float64), k) for k in range(len(idx))]
            scores = [s if np.isfinite(s) else -np.inf for s in scores]
            choice[y, x] = idx[int(np.argmax(scores))]  # argmax: the first maximum
    return choice


def _pick(values, choice, dt, nodata) -> np.ndarray:
    nb, h, w = values.shape[1:]
    out = np.full((nb, h, w), fill_value(dt, nodata), dtype=dt)
    for y in range(h):
        for x in range(w):
            if choice[y, x] >= 0:
                out[:, y, x] = values[choice[y, x], :, y, x]
    return out


@settings(max_examples=150, deadline=None)
@given(observations())
def test_medoid_is_the_observation_nearest_the_per_band_median(case: tuple) -> None:
    values, valid, dt, nodata = case
    out, _count = _run(values, valid, dt, nodata, method="medoid")

    def score(obs: np.ndarray, k: int) -> float:
        median = np.median(obs, axis=0)  # numpy's median of the valid observations, per band
        return -float(((obs[k] - median) ** 2).sum())

    choice = _per_pixel_choice(values, valid, score)
    np.testing.assert_array_equal(out, _pick(values, choice, dt, nodata))


BANDS = (
    BandTerms("B04", "red", 0.0001, -0.1),
    BandTerms("B08", "nir", 0.0001, -0.1),
    BandTerms("swir", None, 0.0001, 0.0),
)


@settings(max_examples=150, deadline=None)
@given(observations(dtype="uint16"))
def test_best_is_the_observation_with_the_highest_index(case: tuple) -> None:
    values, valid, dt, nodata = case
    nb = values.shape[1]
    if nb < 2:
        return
    index = "(nir - red) / (nir + red)"
    out, _ = _run(values, valid, dt, nodata, method="best", index=index, bands=BANDS[:nb])

    def ndvi(obs: np.ndarray, k: int) -> float:
        red = obs[k, 0] * 0.0001 - 0.1
        nir = obs[k, 1] * 0.0001 - 0.1
        with np.errstate(divide="ignore", invalid="ignore"):
            return float((nir - red) / (nir + red))

    choice = _per_pixel_choice(values, valid, ndvi)
    np.testing.assert_array_equal(out, _pick(values, choice, dt, nodata))


def test_best_takes_the_band_name_where_there_is_no_common_name() -> None:
    values = np.array([[[[10]], [[0]], [[5]]], [[[1]], [[0]], [[9]]]], dtype=np.int32)
    valid = np.ones((2, 1, 1), dtype=bool)
    out, _ = _run(values, valid, "uint16", 0, method="best", index="swir", bands=BANDS)
    assert out[:, 0, 0].tolist() == [1, 0, 9]  # swir 9 beats 5; all bands from that date


def _objective(point: np.ndarray, obs: np.ndarray) -> float:
    return float(np.sqrt(((obs - point) ** 2).sum(axis=1)).sum())


def _weiszfeld(obs: np.ndarray, iterations: int = 3000) -> np.ndarray:
    """An independent geometric median: Weiszfeld's iteration from the mean, in float64."""
    point = obs.mean(axis=0)
    for _ in range(iterations):
        dist = np.sqrt(((obs - point) ** 2).sum(axis=1))
        if (dist < 1e-9).any():  # on an observation: Weiszfeld's step is undefined there
            break
        weights = 1.0 / dist
        point = (obs * weights[:, None]).sum(axis=0) / weights.sum()
    return point


@settings(max_examples=80, deadline=None)
@given(observations(dtype="float32"))
def test_geomedian_minimises_the_sum_of_distances(case: tuple) -> None:
    """The sum of Euclidean distances at the geomedian is no more than at an independent
    Weiszfeld solution, at any observation or at the per-band median, plus what geomad's
    tolerance allows: a result within 0.5 stored number of the optimum adds at most 0.5 per
    observation (the tolerance is 0.1 stored number)."""
    pytest.importorskip("geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed")
    values, valid, dt, nodata = case
    out, count = _run(values, valid, dt, nodata, method="geomedian")
    h, w = count.shape
    for y in range(h):
        for x in range(w):
            if count[y, x] == 0:
                assert (out[:, y, x] == 0).all()  # the fill of a float32 store without nodata
                continue
            obs = values[valid[:, y, x], :, y, x].astype(np.float64)
            got = _objective(out[:, y, x].astype(np.float64), obs)
            candidates = [*obs, np.median(obs, axis=0), _weiszfeld(obs)]
            best = min(_objective(c, obs) for c in candidates)
            assert got <= best + 0.5 * len(obs), (got, best, obs)


def test_geomedian_of_an_equilateral_triangle_is_its_centre() -> None:
    """Known answer: the Fermat point of an equilateral triangle is its centroid (the per-band
    median, (500, 0), is not)."""
    pytest.importorskip("geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed")
    corners = [[1000, 1000], [3000, 1000], [2000, 1000 + round(1000 * 3**0.5)]]
    values = np.array(corners, dtype=np.int32).reshape(3, 2, 1, 1)
    valid = np.ones((3, 1, 1), dtype=bool)
    out, _ = _run(values, valid, "uint16", 0, method="geomedian")
    centre = np.mean(np.array(corners, dtype=np.float64), axis=0)
    assert np.abs(out[:, 0, 0] - centre).max() <= 1, (out[:, 0, 0], centre)


def test_geomedian_of_a_pixel_does_not_depend_on_its_neighbours() -> None:
    """The same observations give the same geomedian wherever the pixel sits in the block (so a
    region built as one block or many gets the same numbers). Hypothesis found this pair: after
    a pixel with one observation at 0, geomad started the next pixel of the row elsewhere than
    at its mean and stopped at 0.09 instead of about 2."""
    pytest.importorskip("geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed")
    values = np.zeros((3, 1, 1, 2), dtype=np.float64)
    valid = np.zeros((3, 1, 2), dtype=bool)
    values[:, 0, 0, 1] = [0.03125, 2.0, 2.0]
    valid[:, 0, 1] = True
    valid[0, 0, 0] = True  # the neighbour: one observation, 0
    alone, _ = _run(values[..., 1:], valid[..., 1:], "float32", None, method="geomedian")
    beside, _ = _run(values, valid, "float32", None, method="geomedian")
    assert beside[0, 0, 1] == alone[0, 0, 0]
    assert abs(float(alone[0, 0, 0]) - 2.0) < 0.1  # two of three observations: the optimum is 2


def test_geomedian_of_a_majority_is_that_observation() -> None:
    """Known answer: a point holding half the weight or more is the geometric median."""
    pytest.importorskip("geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed")
    a, b = [1200, 3400], [5000, 100]
    values = np.array([a, b, a], dtype=np.int32).reshape(3, 2, 1, 1)
    valid = np.ones((3, 1, 1), dtype=bool)
    out, _ = _run(values, valid, "uint16", 0, method="geomedian")
    assert out[:, 0, 0].tolist() == a


def test_geomedian_without_geomad_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from chronozarr.errors import MissingExtraError
    from cz.composite.methods import require_geomad

    monkeypatch.setitem(sys.modules, "geomad", None)  # import geomad now raises ImportError
    with pytest.raises(MissingExtraError, match=r"pip install 'chronozarr-tools\[geomedian\]'"):
        require_geomad()


def test_geomedian_falls_back_to_the_medoid_where_geomad_gives_nan() -> None:
    """Two observations 1e-38 apart (hypothesis found them): geomad's 1/distance overflows and
    it returns NaN; the pixel takes the medoid, a finite observation, and stays valid."""
    pytest.importorskip("geomad", reason="geomad (chronozarr-tools[geomedian]) is not installed")
    values = np.array([0.0, 1.1754943508222875e-38]).reshape(2, 1, 1, 1)
    valid = np.ones((2, 1, 1), dtype=bool)
    out, count = _run(values, valid, "float32", None, method="geomedian")
    assert count[0, 0] == 2 and out[0, 0, 0] == 0.0  # the earlier of two equidistant ones

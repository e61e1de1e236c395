"""``gap_fill: linear`` (docs/recipes.md, "gap_fill") against a reference computed from the raw
composites of the same recipe built without gap-fill: an unobserved pixel takes the value
``v_before + (v_after - v_before) x b / (b + a)`` between the nearest observed periods ``b``
before and ``a`` after it, both within ``max_age``, rounded half to even; coverage stays 0."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, append_months, build
from cz.recipe import load_recipe
from tests.cz.scenes import LOADER_WARNINGS, random_scene, read_all, recipe, write_items

pytestmark = LOADER_WARNINGS

MONTHS = ("2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06")
MAX_AGE = 2


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("linear")
    scenes = [
        random_scene(
            f"S2B_31TFJ_{m.replace('-', '')}10_0_L2A", f"{m}-10T10:30:00Z", 90 + i, cloud=0.5
        )
        for i, m in enumerate(MONTHS)
        if m != "2024-03"  # March: no item at all
    ]
    write_items(root, scenes)
    return root


def _build(folder: Path, name: str, gap: str, end: str = "2024-06") -> Path:
    path = recipe(folder, start="2024-01", end=end, name=f"{name}.yaml")
    text = path.read_text().replace("gap_fill:\n  method: none\n", f"gap_fill:\n{gap}")
    path.write_text(text)
    out = folder / f"{name}.zarr"
    build(load_recipe(path), out=str(out), options=BuildOptions(workers=2))
    assert chronozarr.validate(out, deep=True).ok
    return out


def reference(raw: np.ndarray, cov: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Linear gap-fill of the first ``n`` periods of the raw composites, pixel by pixel."""
    out = np.zeros_like(raw[:n])
    valid = np.zeros(cov[:n].shape, dtype=bool)
    for t in range(n):
        for y in range(cov.shape[1]):
            for x in range(cov.shape[2]):
                if cov[t, y, x] > 0:
                    out[t, :, y, x], valid[t, y, x] = raw[t, :, y, x], True
                    continue
                back = next(
                    (k for k in range(1, MAX_AGE + 1) if t - k >= 0 and cov[t - k, y, x]), 0
                )
                ahead = next(
                    (k for k in range(1, MAX_AGE + 1) if t + k < n and cov[t + k, y, x]), 0
                )
                if back and ahead:
                    v0 = raw[t - back, :, y, x].astype(np.float64)
                    v1 = raw[t + ahead, :, y, x].astype(np.float64)
                    out[t, :, y, x] = np.rint(v0 + (v1 - v0) * back / (back + ahead))
                    valid[t, y, x] = True
    return out, valid


def test_linear_is_the_reference_and_an_append_looks_back_only(folder: Path) -> None:
    plain = _build(folder, "plain", "  method: none\n")
    raw, _raw_mask, raw_cov = read_all(plain)
    linear = _build(folder, "linear", f"  method: linear\n  max_age: {MAX_AGE}\n")
    data, mask, cov = read_all(linear)
    want, want_valid = reference(raw, raw_cov, len(MONTHS))
    np.testing.assert_array_equal(cov, raw_cov)  # filled pixels keep coverage 0
    np.testing.assert_array_equal(mask.astype(bool), want_valid)
    np.testing.assert_array_equal(data, want)
    filled = want_valid & (raw_cov == 0)
    assert (raw_cov[2] == 0).all() and filled[2].any()  # March has no item: interpolated
    assert filled.sum() > filled[2].sum()  # and cloudy pixels of other months too
    prov = chronozarr.open_store(linear).attrs.provenance
    assert (prov["gap_fill"], prov["gap_fill_max_age"]) == ("linear", MAX_AGE)

    # January..May, then June appended: June interpolates nothing (no period after it), and May
    # keeps what it had when it was the last period (an append never rewrites a timestep)
    path = folder / "linear-part.yaml"
    path.write_text((folder / "linear.yaml").read_text().replace("end: 2024-06", "end: 2024-05"))
    part = folder / "linear-part.zarr"
    build(load_recipe(path), out=str(part), options=BuildOptions(workers=2))
    append_months(load_recipe(path), ["2024-06"], store=str(part))
    got, got_mask, got_cov = read_all(part)
    first, first_valid = reference(raw, raw_cov, 5)
    np.testing.assert_array_equal(got[:5], first)
    np.testing.assert_array_equal(got_mask[:5].astype(bool), first_valid)
    last_valid = raw_cov[5] > 0
    np.testing.assert_array_equal(got_mask[5].astype(bool), last_valid)
    np.testing.assert_array_equal(got[5][:, last_valid], raw[5][:, last_valid])
    np.testing.assert_array_equal(got_cov, raw_cov)
    # the whole build interpolated May's gaps towards June; the store built in two runs did not
    may = (raw_cov[4] == 0) & want_valid[4]
    assert may.any() and not got_mask[4][may].any()

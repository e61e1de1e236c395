"""``cz build`` with derived bands (``bands[].expression``; docs/recipes.md, "bands") against numpy
from the scenes' own numbers: NDVI per observation then the median, and NDVI of the composite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, RecipeMismatchError, append_months, build
from cz.recipe import load_recipe
from tests.cz.scenes import (
    LOADER_WARNINGS,
    grid_offset,
    random_scene,
    read_all,
    recipe,
    write_items,
)

pytestmark = LOADER_WARNINGS

DATES = ("2024-01-05", "2024-01-15", "2024-01-25")
KEEP = (4, 5, 6, 7, 11)
BANDS = """\
  - name: red
    asset: red
    common_name: red
  - name: ndvi
    expression: (nir - red) / (nir + red)
    scale: 0.0001
    offset: -1
    dtype: uint16
  - name: nir
    asset: nir
    common_name: nir
  - name: ndvi_of_medians
    expression: (nir - red) / (nir + red)
    scale: 0.0001
    offset: -1
    when: composite
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("derived")
    scenes = [
        random_scene(f"S2B_31TFJ_{d.replace('-', '')}_0_L2A", f"{d}T10:30:00Z", 70 + i)
        for i, d in enumerate(DATES)
    ]
    write_items(root, scenes)
    np.save(root / "values.npy", np.stack([s.values for s in scenes]))
    np.save(root / "scl.npy", np.stack([s.scl for s in scenes]))
    return root


def _recipe(folder: Path, name: str, bands: str = BANDS, end: str = "2024-01") -> Path:
    path = recipe(folder, start="2024-01", end=end, name=f"{name}.yaml")
    text = path.read_text()
    start = text.index("bands:\n") + len("bands:\n")
    stop = text.index("mask:\n")
    path.write_text(text[:start] + bands + text[stop:])
    return path


def _ndvi_number(red: np.ndarray, nir: np.ndarray) -> np.ndarray:
    """NDVI of stored numbers (scale 1e-4, offset -0.1) as a uint16 number (scale 1e-4, offset
    -1), rounded half to even and clipped to 1..65535."""
    r, n = red * 1e-4 - 0.1, nir * 1e-4 - 0.1
    value = (n - r) / (n + r)
    return np.clip(np.rint((value + 1.0) / 1e-4), 1, 65535)


def test_derived_bands_per_observation_and_from_the_composite(folder: Path) -> None:
    store = folder / "derived.zarr"
    build(load_recipe(_recipe(folder, "derived")), out=str(store), options=BuildOptions(workers=2))
    assert chronozarr.validate(store, deep=True).ok
    reader = chronozarr.open_store(store)
    bands = [b.to_json() for b in reader.attrs.bands]
    assert [b["name"] for b in bands] == ["red", "ndvi", "nir", "ndvi_of_medians"]
    assert (bands[1]["scale"], bands[1]["offset"]) == (0.0001, -1.0)
    prov = reader.attrs.provenance
    assert prov["derived_bands"]["ndvi"] == {
        "expression": "(nir - red) / (nir + red)",
        "when": "observation",
    }
    assert prov["fingerprint"]["fields"]["bands[ndvi_of_medians].when"] == "composite"
    assert "bands[red].expression" not in prov["fingerprint"]["fields"]

    values = np.load(folder / "values.npy").astype(np.float64)
    scl = np.load(folder / "scl.npy")
    valid = np.isin(scl, KEEP) & (values != 0).all(axis=1)
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    checked = 0
    for y in range(h):
        for x in range(w):
            ok = valid[:, row0 + y, col0 + x]
            assert cov[0, y, x] == ok.sum()
            if not ok.any():
                assert (data[0, :, y, x] == 0).all()
                continue
            obs = values[ok, :, row0 + y, col0 + x]  # (k, 2): red, nir
            red, nir = np.rint(np.median(obs, axis=0))
            ndvi = np.rint(np.median(_ndvi_number(obs[:, 0], obs[:, 1])))
            of_medians = _ndvi_number(red, nir)
            assert data[0, :, y, x].tolist() == [red, ndvi, nir, of_medians]
            checked += 1
    assert checked > 500


def test_append_refuses_a_changed_expression(folder: Path) -> None:
    store = folder / "derived-append.zarr"
    build(
        load_recipe(_recipe(folder, "derived-a")), out=str(store), options=BuildOptions(workers=1)
    )
    changed = BANDS.replace(
        "expression: (nir - red) / (nir + red)\n    scale: 0.0001\n    offset: -1\n    dtype",
        "expression: (nir - red) / (nir + red + 0.5)\n    scale: 0.0001\n    offset: -1\n    dtype",
    )
    other = load_recipe(_recipe(folder, "derived-b", changed, end="2024-02"))
    with pytest.raises(RecipeMismatchError, match=r"bands\[ndvi\]\.expression: recipe"):
        append_months(other, ["2024-02"], store=str(store))

"""Derived bands in a block's composite (cz.composite.derived; docs/recipes.md, "bands") against a
per-pixel reference written from the docs' words with numpy: the expression on physical values of
each valid observation, stored as ``(value - offset) / scale`` rounded half to even and clipped,
then the median; or, ``when: composite``, the expression on the composite's own values."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from cz.composite import BandTerms, CompositeRules, composite_block
from cz.composite.derived import DerivedBand

SCALE, OFFSET = 0.0001, -0.1  # the read bands: Sentinel-2 numbers with the +1000
NDVI = DerivedBand("ndvi", "(nir - red) / (nir + red)", 0.0001, -1.0)  # uint16: offset -1
LOW, HIGH = 1, 65535  # a uint16 store with nodata 0 keeps 1..65535


def _store(value: float, scale: float, offset: float) -> int | None:
    number = (value - offset) / scale
    if not np.isfinite(number):
        return None
    return int(np.clip(np.rint(number), LOW, HIGH))


def _median(numbers: list[int]) -> int:
    return int(np.rint(np.median(np.asarray(numbers, dtype=np.float64))))


def _rules(after: bool) -> CompositeRules:
    """Store bands (red, ndvi, nir): the block holds red, nir, ndvi; store_order puts ndvi 2nd."""
    band = DerivedBand(NDVI.name, NDVI.expression, NDVI.scale, NDVI.offset, after=after)
    return CompositeRules(
        bands=(
            BandTerms("red", "red", SCALE, OFFSET),
            BandTerms("nir", "nir", SCALE, OFFSET),
            BandTerms("ndvi", None, NDVI.scale, NDVI.offset),
        ),
        derived=(band,),
        store_order=(0, 2, 1),
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6), st.integers(0, 2**32 - 1), st.booleans())
def test_derived_bands_are_the_reference(n: int, seed: int, after: bool) -> None:
    rng = np.random.default_rng(seed)
    h, w = 3, 4
    values = rng.integers(1, 4000, size=(n, 2, h, w)).astype(np.uint16)
    values[rng.random((n, 2, h, w)) < 0.1] = 0  # nodata in one band: no observation
    values[:, :, 0, 0] = 1000  # physical red = nir = 0: NDVI 0/0 on every date
    scl = rng.choice(np.array([4, 9], np.uint8), p=[0.8, 0.2], size=(n, h, w))
    out, cov = composite_block(
        values,
        scl,
        corrections=[0] * n,
        solar_days=[f"d{i}" for i in range(n)],
        keep=(4,),
        src_nodata=[[0, 0]] * n,
        harmonized=[True, True],
        dtype="uint16",
        nodata=0,
        rules=_rules(after),
    )
    assert out.shape == (3, h, w)
    for y in range(h):
        for x in range(w):
            ok = [i for i in range(n) if scl[i, y, x] == 4 and (values[i, :, y, x] != 0).all()]
            red = [int(values[i, 0, y, x]) for i in ok]
            nir = [int(values[i, 1, y, x]) for i in ok]
            phys = [
                ((r * SCALE + OFFSET), (v * SCALE + OFFSET)) for r, v in zip(red, nir, strict=True)
            ]
            if not after:
                with np.errstate(divide="ignore", invalid="ignore"):
                    ndvi = [
                        _store((b - a) / np.float64(b + a), NDVI.scale, NDVI.offset)
                        for a, b in phys
                    ]
                keep = [k for k, v in enumerate(ndvi) if v is not None]  # 0/0: no observation
                count = len(keep)
                if keep:
                    want = [
                        _median([red[k] for k in keep]),
                        _median([ndvi[k] for k in keep]),  # type: ignore[misc]
                        _median([nir[k] for k in keep]),
                    ]
            else:
                count = len(ok)
                want = [_median(red), None, _median(nir)] if ok else [0, 0, 0]
                if ok:
                    a, b = want[0] * SCALE + OFFSET, want[2] * SCALE + OFFSET  # type: ignore[operator]
                    with np.errstate(divide="ignore", invalid="ignore"):
                        want[1] = _store((b - a) / np.float64(b + a), NDVI.scale, NDVI.offset)
                    if want[1] is None:  # the composite's NDVI is 0/0: no observation at all
                        count, want = 0, [0, 0, 0]
            if count == 0:
                want = [0, 0, 0]
            assert cov[y, x] == count, (y, x)
            assert out[:, y, x].tolist() == want, (y, x, after)
    assert cov[0, 0] == 0  # the 0/0 pixel is never valid

"""The mask cleaning of ``cz build`` against an independent definition (docs/recipes.md, "mask").

The catalog has the traps the cleaning must not fall into: two MGRS tiles of one overpass that
meet at a seam with a cloud across it (each tile holds a strip of it narrower than the opening's
disk), isolated saturated or defective pixels (SCL 1) and dark pixels (SCL 2) with numbers no
composite may show, nodata holes, one-pixel cloud specks and a cloud shadow.

The reference is written from the recipe reference's words, with scipy.ndimage, not with the
toolkit's code: per solar day the mosaic of the SCL (per pixel the first item, in plan order,
that keeps the pixel, else the first whose class is cleaned, else none), the cloud of that
mosaic opened and dilated with a Euclidean disk (``dy² + dx² <= r²``), the valid pixels being
the kept ones and the cloud the opening removed, less the dilated cloud; then the median of
the valid days, rounded half to even.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from cz.build import BuildOptions, build
from cz.recipe import load_recipe
from tests.cz.scenes import (
    AOI,
    LOADER_WARNINGS,
    SIZE,
    X0,
    Y1,
    Scene,
    grid_offset,
    lonlat_bbox,
    read_all,
    recipe,
    write_items,
)

pytestmark = LOADER_WARNINGS
ndimage = pytest.importorskip("scipy.ndimage", reason="scipy (the test extra) is not installed")

KEEP = (4, 5, 6, 7, 11)
CLEAN = (3, 8, 9, 10)  # the default of mask.clean
SATURATED = 30000  # the numbers of SCL 1 pixels: no composite may show them
DARK = 3  # the numbers of SCL 2 pixels
WIDTH = 2 * SIZE  # tile A covers canvas columns 0..31, tile B 32..63 (the seam at 31 | 32)
#: the AOI over both tiles, 3 pixels inside their outer edges
SEAM_AOI = lonlat_bbox(X0 + 30, Y1 - SIZE * 10 + 30, X0 + WIDTH * 10 - 30, Y1 - 30)

#: (id, datetime, tile, canvas column of the tile's first pixel)
ITEMS = (
    ("S2B_31TFJ_20240105_0_L2A", "2024-01-05T10:30:00Z", "31TFJ", 0),
    ("S2B_31TGJ_20240105_0_L2A", "2024-01-05T10:30:00Z", "31TGJ", SIZE),
    ("S2B_31TFJ_20240115_0_L2A", "2024-01-15T10:30:00Z", "31TFJ", 0),
    ("S2B_31TGJ_20240115_0_L2A", "2024-01-15T10:30:00Z", "31TGJ", SIZE),
    ("S2B_31TFJ_20240125_0_L2A", "2024-01-25T10:30:00Z", "31TFJ", 0),
    ("S2B_31TGJ_20240125_0_L2A", "2024-01-25T10:30:00Z", "31TGJ", SIZE),
)


def _canvas() -> tuple[np.ndarray, np.ndarray]:
    """Per date, the (2, SIZE, WIDTH) numbers and (SIZE, WIDTH) SCL of both tiles' ground."""
    rng = np.random.default_rng(30)
    values = np.empty((3, 2, SIZE, WIDTH), dtype=np.uint16)
    values[:, 0] = rng.integers(500, 3000, size=(3, SIZE, WIDTH))
    values[:, 1] = rng.integers(1500, 5000, size=(3, SIZE, WIDTH))
    scl = rng.choice(np.array([4, 5, 6], np.uint8), size=(3, SIZE, WIDTH))
    # the 5th: a cloud 8 columns wide across the seam (4 columns in each tile), rows 6..15
    scl[0, 6:16, SIZE - 4 : SIZE + 4] = 9
    values[0, :, 6:16, SIZE - 4 : SIZE + 4] = 8000
    # the 15th: the same across the seam a little lower, and a shadow inside tile A
    scl[1, 12:22, SIZE - 4 : SIZE + 4] = 8
    values[1, :, 12:22, SIZE - 4 : SIZE + 4] = 7000
    scl[1, 24:29, 4:10] = 3
    # every date: isolated specks of cloud, saturated, dark and nodata pixels
    for t in range(3):
        spots = rng.choice(SIZE * WIDTH, size=60, replace=False)
        ys, xs = np.unravel_index(spots, (SIZE, WIDTH))
        for k, (y, x) in enumerate(zip(ys, xs, strict=True)):
            if scl[t, y, x] not in (4, 5, 6):
                continue
            kind = k % 4
            if kind == 0:
                scl[t, y, x] = 9
                values[t, :, y, x] = 9000
            elif kind == 1:
                scl[t, y, x] = 1
                values[t, :, y, x] = SATURATED
            elif kind == 2:
                scl[t, y, x] = 2
                values[t, :, y, x] = DARK
            else:
                values[t, :, y, x] = 0  # nodata in the numbers, SCL says vegetation
    # a saturated 4 x 4 patch inside a cloud's reach on the 25th, and next to a speck
    scl[2, 20:24, 40:44] = 1
    values[2, :, 20:24, 40:44] = SATURATED
    return values, scl


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("seam")
    values, scl = _canvas()
    scenes = []
    for k, (item_id, at, tile, col) in enumerate(ITEMS):
        t = k // 2
        scenes.append(
            Scene(
                item_id,
                at,
                values[t, :, :, col : col + SIZE].copy(),
                scl[t, :, col : col + SIZE].copy(),
                tile=tile,
                x0=X0 + col * 10.0,
            )
        )
    write_items(root, scenes)
    np.save(root / "values.npy", values)
    np.save(root / "scl.npy", scl)
    return root


def _build(folder: Path, name: str, mask: str, chunk: int = 16) -> Path:
    path = recipe(folder, start="2024-01", end="2024-01", chunk=chunk, name=f"{name}.yaml")
    text = path.read_text().replace(json.dumps(AOI), json.dumps(SEAM_AOI))
    text = text.replace("  keep: [4, 5, 6, 7, 11]\n", "  keep: [4, 5, 6, 7, 11]\n" + mask)
    path.write_text(text)
    out = folder / f"{name}.zarr"
    build(load_recipe(path), out=str(out), options=BuildOptions(workers=2))
    assert chronozarr.validate(out, deep=True).ok
    return out


def _disk(r: int) -> np.ndarray:
    yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
    return yy * yy + xx * xx <= r * r


def reference(folder: Path, open_r: int, dilate_r: int) -> tuple[np.ndarray, np.ndarray]:
    """The composite (2, SIZE, WIDTH) and coverage of the canvas, from the recipe reference's
    words: each date here is one solar day whose items (tile A, tile B) do not overlap, so the
    day's mosaicked SCL is the canvas itself; its cloud is opened and dilated by scipy."""
    values = np.load(folder / "values.npy").astype(np.int64)
    scl = np.load(folder / "scl.npy")
    pad = 2 * open_r + dilate_r + 1  # no data around the tiles: scipy's border is no cloud
    valid_days = []
    for t in range(3):
        has_data = (values[t] != 0).all(axis=0)
        kept = has_data & np.isin(scl[t], KEEP)
        cloud = has_data & np.isin(scl[t], CLEAN)
        padded = np.pad(cloud, pad)
        if open_r:
            padded = ndimage.binary_opening(padded, structure=_disk(open_r))
        if dilate_r:
            padded = ndimage.binary_dilation(padded, structure=_disk(dilate_r))
        remaining = padded[pad:-pad, pad:-pad]
        valid_days.append((kept | cloud) & ~remaining)
    valid = np.stack(valid_days)
    count = valid.sum(axis=0)
    out = np.zeros((2, SIZE, WIDTH), dtype=np.int64)
    for y in range(SIZE):
        for x in range(WIDTH):
            days = valid[:, y, x]
            if days.any():
                out[:, y, x] = np.rint(np.median(values[days, :, y, x], axis=0))
    return out, count


CASES = {"open3_dilate6": (3, 6), "open2": (2, 0), "open1_dilate2": (1, 2)}


@pytest.mark.parametrize("name", list(CASES))
def test_the_cleaning_is_the_reference_on_the_days_mosaic(folder: Path, name: str) -> None:
    """Exact against scipy on the mosaicked SCL, the seam's cloud included (the opening sees
    it whole: per tile, each 4-column strip is narrower than the disk and would be opened away,
    and cloud numbers would enter the composite)."""
    open_r, dilate_r = CASES[name]
    store = _build(folder, name, f"  open: {open_r}\n  dilate: {dilate_r}\n")
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    want, want_cov = reference(folder, open_r, dilate_r)
    np.testing.assert_array_equal(cov[0], want_cov[row0 : row0 + h, col0 : col0 + w])
    np.testing.assert_array_equal(data[0], want[:, row0 : row0 + h, col0 : col0 + w])
    seam = slice(SIZE - 4 - col0, SIZE + 4 - col0)
    assert data[0][:, 6 - row0 : 16 - row0, seam].max() < 7000  # no cloud numbers at the seam
    cleaning = chronozarr.open_store(store).attrs.provenance["mask_cleaning"]
    assert cleaning["cleaned"] == list(CLEAN) and cleaning["open_pixels"] == open_r


def test_the_recommended_cleaning_admits_no_saturated_or_dark_pixel(folder: Path) -> None:
    """docs/recipes.md recommends ``open: 3, dilate: 6``: no date on which a pixel is SCL 1
    (saturated or defective) or SCL 2 (dark) counts as its observation (coverage is at most the
    number of other dates with data), and no composite shows their numbers."""
    store = _build(folder, "recommended", "  open: 3\n  dilate: 6\n")
    data, _mask, cov = read_all(store)
    row0, col0, h, w = grid_offset(store)
    scl = np.load(folder / "scl.npy")[:, row0 : row0 + h, col0 : col0 + w]
    values = np.load(folder / "values.npy")[:, :, row0 : row0 + h, col0 : col0 + w]
    bad = np.isin(scl, (1, 2))
    assert bad.sum() > 50  # the traps are inside the grid
    possible = (~bad & (values != 0).all(axis=1)).sum(axis=0)
    assert (cov[0] <= possible).all()
    alone = bad.all(axis=0)  # pixels bad on every date: never an observation
    assert (cov[0][alone] == 0).all()
    one_left = (possible == 1) & (cov[0] == 1)  # the composite is that one date's numbers
    assert one_left.any()
    assert not np.isin(data[0][:, one_left], (SATURATED, DARK)).any()
    assert data[0].max() < SATURATED

"""Real Sentinel-2 pixels (the shared rio-tiler-pds fixture, read with rasterio): a store of them
with the scene's own cloud mask (SCL) draws exactly the values rasterio reads, clouds transparent;
a pixel history found by rasterio's own inverse transform equals the file's value."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.conftest import SHARED_FIXTURES
from tests.cz.look.helpers import data_pixels, levels, read_png, run

S2 = SHARED_FIXTURES / "raster" / "rio-tiler-pds" / "S2A_29RKH_20200219_0_L2A"
KEEP = (4, 5, 6, 7, 11)  # SCL classes kept (vegetation, bare, water, unclassified, snow)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict:
    if not S2.is_dir():
        print(f"SKIP: shared fixture {S2} is absent")
        pytest.skip(f"shared fixture {S2} is absent")
    import rasterio

    bands = {}
    for name in ("B02", "B03", "B04", "B08"):
        with rasterio.open(S2 / f"{name}.tif") as src:
            bands[name] = src.read(1)
            transform, crs = src.transform, src.crs
    with rasterio.open(S2 / "SCL.tif") as src:  # 200 m: nearest to 100 m
        scl = np.repeat(np.repeat(src.read(1), 2, axis=0), 2, axis=1)
    mask = np.isin(scl, KEEP).astype(np.uint8)
    data = np.stack([bands[n] for n in ("B02", "B03", "B04", "B08")])[None]
    data = np.where(mask[None, None] == 1, data, 0).astype(np.uint16)  # nodata under mask 0
    path = tmp_path_factory.mktemp("real") / "s2.zarr"
    common = {"B02": "blue", "B03": "green", "B04": "red", "B08": "nir"}
    chronozarr.encode(
        data,
        path,
        times=["2020-02-19T00:00:00Z"],
        bands=[
            {"name": n, "common_name": common[n], "scale": 0.0001, "units": "reflectance"}
            for n in common
        ],
        crs=str(crs),
        transform=list(transform)[:6],
        nodata=0,
        mask=mask[None],
        chunk_size=512,
    )
    return {"path": path, "bands": bands, "mask": mask, "transform": transform, "crs": crs}


def test_true_colour_equals_rasterio_values_and_clouds_are_transparent(
    tmp_path: Path, real: dict
) -> None:
    out = tmp_path / "s2.png"
    result = run(
        "quicklook", real["path"], "--level", "0", "--stretch", "0,0.3", "--out", out, "--json"
    )
    assert result.exit_code == 0, result.stderr
    info = json.loads(result.stdout)
    h, w = real["mask"].shape
    px = data_pixels(read_png(out), info["image_box"], h, w)
    clear = real["mask"] == 1
    assert 0.01 < (~clear).mean() < 0.99, "the scene should have clouds and clear land"
    for ch, name in enumerate(("B04", "B03", "B02")):
        want = levels(real["bands"][name] * 0.0001, 0, 0.3)
        np.testing.assert_array_equal(px[..., ch][clear], want[clear])
    assert (px[..., 3][~clear] == 0).all() and (px[..., 3][clear] == 255).all()


def test_auto_level_of_a_1098_pixel_scene_is_level_1(tmp_path: Path, real: dict) -> None:
    result = run("quicklook", real["path"], "--band", "nir", "--out", tmp_path / "n.png", "--json")
    info = json.loads(result.stdout)
    assert info["level"] == 1 and info["data_shape"] == [549, 549]


def test_series_at_a_lon_lat_equals_the_file(real: dict) -> None:
    import rasterio.transform
    from pyproj import Transformer

    row, col = 700, 321
    while real["mask"][row, col] == 0:  # a clear pixel
        col += 1
    x, y = rasterio.transform.xy(real["transform"], row, col)  # the pixel centre, by rasterio
    lon, lat = Transformer.from_crs(real["crs"], "EPSG:4326", always_xy=True).transform(x, y)
    result = run("series", real["path"], "--lon", lon, "--lat", lat, "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["row"], doc["col"]) == rasterio.transform.rowcol(real["transform"], x, y)
    (step,) = doc["timesteps"]
    for name, band in real["bands"].items():
        assert step["values"][name]["stored"] == int(band[row, col])
        assert step["values"][name]["physical"] == pytest.approx(band[row, col] * 0.0001)

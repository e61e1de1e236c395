"""Sources over HTTP (a Range server on 127.0.0.1, GDAL /vsicurl/) and real Sentinel-2 COGs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import chronozarr
from tests.conftest import SHARED_FIXTURES
from tests.cz.convert.helpers import cz, read_tif, series, write_series
from tests.remote.rangeserver import RangeServer

REAL = SHARED_FIXTURES / "raster" / "rio-tiler-pds" / "S2A_29RKH_20200219_0_L2A"


def _cogs(folder: Path, values: np.ndarray, dates: list[str]) -> list[Path]:
    """Tiled, deflated GeoTIFFs (COG layout) so windows are byte ranges."""
    import rasterio
    from rasterio.shutil import copy

    plain = write_series(folder / "plain", values, dates, nodata=0)
    out = []
    for p in plain:
        dst = folder / p.name
        with rasterio.open(p) as src:
            copy(src, dst, driver="COG", compress="DEFLATE", blocksize=256)
        out.append(dst)
    return out


def test_a_manifest_of_http_urls(tmp_path: Path) -> None:
    values = series(3, 1, 600, 520, "uint16", seed=61)
    dates = ["2024-01-01", "2024-02-01", "2024-03-01"]
    files = _cogs(tmp_path / "www", values, dates)
    with RangeServer(tmp_path / "www") as server:
        rows = ["time,path"] + [
            f"{d},{server.url}/{f.name}" for d, f in zip(dates, files, strict=True)
        ]
        (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
        store = tmp_path / "s.zarr"
        result = cz(
            "convert", tmp_path / "m.csv", store, "--chunk-size", "256", "--encoding", "none"
        )
        assert result.exit_code == 0, result.output
        log = server.log
        single = cz("convert", f"{server.url}/{files[0].name}", tmp_path / "one.zarr")
        assert single.exit_code == 0, single.output
        missing = cz("convert", f"{server.url}/absent_2024-01-01.tif", tmp_path / "no.zarr")
    reader = chronozarr.open_store(store)
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))
    assert reader.attrs.provenance["source_files"][0].startswith("http://127.0.0.1:")
    gets = [r for r in log if r.method == "GET"]
    assert gets and all(r.range is not None for r in gets), "whole-file GETs: not windowed"
    size = sum(f.stat().st_size for f in files)
    assert sum(r.nbytes for r in gets) < 3 * size  # windows and headers, not repeated files
    np.testing.assert_array_equal(
        chronozarr.open_store(tmp_path / "one.zarr").read(0), read_tif(files[0])
    )
    assert missing.exit_code == 1
    assert f"error: {server.url}/absent_2024-01-01.tif: cannot read" in " ".join(
        missing.output.split()
    )
    assert not (tmp_path / "no.zarr").exists()


@pytest.mark.skipif(not REAL.is_dir(), reason=f"shared fixtures absent ({REAL})")
def test_real_sentinel2_cogs_with_a_resampled_band(tmp_path: Path) -> None:
    """B04 and B08 (100 m) and B11 (200 m, resampled with nearest onto B04's grid) of a real
    scene, listed twice in a manifest: the 100 m bands are stored as the files hold them, and
    B11 pixel (r, c) is B11 file pixel (r // 2, c // 2)."""
    rows = ["time,path,band"]
    for when in ("2020-02-19T11:20:00Z", "2020-03-20T11:20:00Z"):
        rows += [f"{when},{REAL / b}.tif,{b}" for b in ("B04", "B08", "B11")]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    store = tmp_path / "s2.zarr"
    result = cz(
        "convert", tmp_path / "m.csv", store, "--grid", REAL / "B04.tif", "--encoding", "none"
    )
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(store)
    assert reader.band_names == ("B04", "B08", "B11") and reader.nodata == 0
    assert reader.attrs.crs == "EPSG:32629"
    got = reader.read(1)
    np.testing.assert_array_equal(got[0], read_tif(REAL / "B04.tif")[0])
    np.testing.assert_array_equal(got[1], read_tif(REAL / "B08.tif")[0])
    b11 = read_tif(REAL / "B11.tif")[0]
    np.testing.assert_array_equal(got[2], np.repeat(np.repeat(b11, 2, axis=0), 2, axis=1))


def test_s3_urls_through_gdal_vsis3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """COGs in a bucket of moto's S3 server on 127.0.0.1, listed as s3:// URLs in a manifest;
    GDAL reads them with its usual AWS_* settings (what a user sets for a real endpoint)."""
    pytest.importorskip("moto", reason="moto (test extra) is not installed")
    import boto3
    from moto.server import ThreadedMotoServer

    values = series(2, 2, 300, 260, "int16", seed=62)
    dates = ["2024-06-01", "2024-07-01"]
    files = _cogs(tmp_path / "cogs", values, dates)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_REGION": "us-east-1",
            "AWS_S3_ENDPOINT": f"{host}:{port}",
            "AWS_HTTPS": "NO",
            "AWS_VIRTUAL_HOSTING": "FALSE",
        }.items():
            monkeypatch.setenv(name, value)
        s3 = boto3.client("s3", endpoint_url=f"http://{host}:{port}", region_name="us-east-1")
        s3.create_bucket(Bucket="cz-convert")
        rows = ["time,path"]
        for d, f in zip(dates, files, strict=True):
            s3.upload_file(str(f), "cz-convert", f"series/{f.name}")
            rows.append(f"{d},s3://cz-convert/series/{f.name}")
        s3.close()  # its pooled sockets now, not at a later test's garbage collection
        (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
        result = cz("convert", tmp_path / "m.csv", tmp_path / "s.zarr", "--chunk-size", "128")
        missing = cz("convert", "s3://cz-convert/series/none_2024-01-01.tif", tmp_path / "n.zarr")
    finally:
        server.stop()
    assert result.exit_code == 0, result.output
    reader = chronozarr.open_store(tmp_path / "s.zarr")
    for t, f in enumerate(files):
        np.testing.assert_array_equal(reader.read(t), read_tif(f))
    assert missing.exit_code == 1 and "s3://cz-convert/series/none_2024-01-01.tif" in missing.output

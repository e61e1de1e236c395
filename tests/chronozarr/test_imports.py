"""House rule: ``import chronozarr`` loads none of the toolkit's heavy dependencies."""

import subprocess
import sys


def test_import_chronozarr_is_light() -> None:
    code = (
        "import sys, chronozarr\n"
        "bad = [m for m in ('rasterio', 'pystac_client', 'odc.stac', 'odc', 'typer', 'rich',"
        " 'pystac', 'cz', 'xarray', 'dask') if m in sys.modules]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"import chronozarr pulled in: {out.stdout.strip()}"


def test_public_api_names() -> None:
    import chronozarr

    for name in ("encode", "open_store", "validate", "Reader", "EncodeError"):
        assert hasattr(chronozarr, name), name

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


def test_xarray_entry_point_loads_the_backend() -> None:
    """pyproject registers the backend under ``xarray.backends``; the name it gives must load
    (a module moved without its entry point leaves ``engine="chronozarr"`` unknown to xarray)."""
    from importlib.metadata import entry_points

    import pytest

    pytest.importorskip("xarray", reason="the backend needs the 'xarray' extra")
    (entry,) = [e for e in entry_points(group="xarray.backends") if e.name == "chronozarr"]
    from chronozarr.read.xarray_backend import ChronozarrBackendEntrypoint

    assert entry.load() is ChronozarrBackendEntrypoint


def test_subpackages_export_what_they_list() -> None:
    """Each subpackage's ``__all__`` names exist, and no public name is a private module's."""
    import importlib

    for name in ("format", "io", "read", "write", "provenance", "validate"):
        module = importlib.import_module(f"chronozarr.{name}")
        listed = module.__all__
        assert listed, name
        missing = [n for n in listed if not hasattr(module, n)]
        assert not missing, f"chronozarr.{name} lists {missing} but does not define them"
        assert not [n for n in listed if n.startswith("_")], name

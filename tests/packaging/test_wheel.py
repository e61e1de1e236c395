"""The built wheel, installed in fresh venvs with each install set (decision 0012).

``pip install chronozarr`` must give the format library alone: encode, read and validate a local
store with numpy, numcodecs and crc32c, and a one-line message naming the extra for everything
else. The ``[remote]``/``[xarray]`` extras are added to that venv one at a time, and ``[cli]`` gets a
venv of its own. pip's cache is warm on this machine, so the whole test takes about a minute or two;
it is marked ``slow`` and runs in scripts/test.sh with the rest.
"""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow

#: What the wheel needs from the source tree (a copy keeps build/ and egg-info out of the worktree).
SOURCES = ("pyproject.toml", "README.md", "chronozarr", "cli", "recipes")

#: A store written, re-opened and validated by the bare install: the format library's whole job.
ROUND_TRIP = """
import sys, numpy as np, chronozarr
data = (np.arange(3 * 2 * 20 * 24, dtype=np.uint16).reshape(3, 2, 20, 24) % 97).astype(np.uint16)
chronozarr.encode(data, sys.argv[1], times=["2024-01-01", "2024-02-01", "2024-03-01"],
                  bands=["B04", "B08"], crs=32631, transform=[10, 0, 600000, 0, -10, 5100000],
                  chunk_size=8)
reader = chronozarr.open_store(sys.argv[1])
assert (reader.read(2) == data[2]).all()
assert chronozarr.validate(sys.argv[1], deep=True).ok
heavy = [m for m in ("zarr", "obstore", "dask", "xarray", "pyproj", "typer", "rich", "rasterio")
         if m in sys.modules]
assert not heavy, heavy
print("ROUND-TRIP-OK")
"""

MISSING = """
import sys, chronozarr
from chronozarr.errors import MissingExtraError
try:
    {call}
except MissingExtraError as exc:
    print("MISSING", exc.extra, "|", exc)
else:
    print("NO-ERROR")
"""

XARRAY = """
import sys, numpy as np, xarray as xr, chronozarr
ds = xr.open_dataset(sys.argv[1], engine="chronozarr", physical=False)
reader = chronozarr.open_store(sys.argv[1])
assert (ds["data"].isel(time=1).values == reader.read(1)).all()
print("XARRAY-OK", ds.spatial_ref.attrs["crs_wkt"][:6])
"""


def _run(args: list[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=600, **kw)  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    src = tmp_path_factory.mktemp("src")
    for name in (*SOURCES, *(p.name for p in REPO.glob("LICEN[CS]E*"))):
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    done = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)])
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("chronozarr-*.whl")
    return built


def _venv(path: Path) -> Path:
    done = _run([sys.executable, "-m", "venv", str(path)])
    assert done.returncode == 0, done.stderr
    return path / "bin"


def _pip(bin_: Path, *reqs: str) -> None:
    done = _run([str(bin_ / "python"), "-m", "pip", "install", "-q", *reqs])
    assert done.returncode == 0, done.stderr[-3000:]


def test_wheel_metadata_and_files(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(zf.read(meta_name))
        entry_points = zf.read(meta_name.replace("METADATA", "entry_points.txt")).decode()
    requires = meta.get_all("Requires-Dist") or []
    bare = sorted(
        r.split(";")[0].split(">")[0].split("[")[0].strip() for r in requires if "extra" not in r
    )
    assert bare == ["google-crc32c", "numcodecs", "numpy"], bare  # zarr-python is not a dependency
    assert set(meta.get_all("Provides-Extra") or []) >= {
        "remote",
        "xarray",
        "cli",
        "distributed",
        "planetary-computer",
        "all",
        "test",
    }
    assert meta["License-Expression"] == "Apache-2.0"
    assert any(
        c.startswith("Topic :: Scientific/Engineering :: GIS")
        for c in meta.get_all("Classifier") or []
    )
    urls = meta.get_all("Project-URL") or []
    assert any(u.startswith("Source") for u in urls) and any(
        u.startswith("Issues") for u in urls
    ), urls
    for recipe in (REPO / "recipes").glob("*.yaml"):
        assert f"cz/recipes/{recipe.name}" in names, f"recipe {recipe.name} is not in the wheel"
    assert "chronozarr/py.typed" in names and "cz/py.typed" in names
    assert "chronozarr/__main__.py" in names and "cz/__main__.py" in names
    assert "chronozarr = chronozarr.xarray_backend:ChronozarrBackendEntrypoint" in entry_points
    assert "cz = cz._entry:main" in entry_points
    licenses = list(REPO.glob("LICEN[CS]E*"))
    if licenses:  # the licence text travels in the wheel (PEP 639: .dist-info/licenses/)
        for lic in licenses:
            assert any(n.endswith(f".dist-info/licenses/{lic.name}") for n in names), names
    else:
        print("no LICENSE file in the repository yet: only the License-Expression is checked")


def test_bare_install_then_each_extra(wheel: Path, tmp_path: Path) -> None:
    bin_ = _venv(tmp_path / "venv")
    _pip(bin_, str(wheel))
    py = str(bin_ / "python")
    store = tmp_path / "s.zarr"
    done = _run([py, "-c", ROUND_TRIP, str(store)])
    assert "ROUND-TRIP-OK" in done.stdout, done.stderr[-3000:]

    # every missing extra: one line naming it, through the library's typed error
    remote = _run([py, "-c", MISSING.format(call="chronozarr.open_store('http://127.0.0.1:9/s')")])
    assert remote.stdout.startswith("MISSING remote |"), remote.stdout + remote.stderr
    assert "pip install 'chronozarr[remote]'" in remote.stdout
    lazy = _run(
        [
            py,
            "-c",
            MISSING.format(call="chronozarr.open_store(sys.argv[1]).to_xarray()"),
            str(store),
        ]
    )
    assert lazy.stdout.startswith("MISSING xarray |"), lazy.stdout + lazy.stderr
    # the commands are installed too, and say which extra they need, without a traceback
    for cmd in (
        [str(bin_ / "cz"), "validate", str(store)],
        [py, "-m", "chronozarr", "inspect", str(store)],
        [py, "-m", "cz", "-h"],
    ):
        done = _run(cmd)
        assert done.returncode == 1, (cmd, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, (
            done.stderr
        )
        assert "pip install 'chronozarr[cli]'" in done.stderr
    version = _run([str(bin_ / "cz"), "--version"])
    assert version.returncode == 0 and version.stdout.strip() == "chronozarr 0.2.0", version

    _pip(bin_, f"{wheel}[remote]")
    remote = _run([py, "-c", MISSING.format(call="chronozarr.open_store('http://127.0.0.1:9/s')")])
    assert "MISSING" not in remote.stdout and "RemoteStoreError" in remote.stderr, (
        remote.stdout + remote.stderr
    )

    _pip(bin_, f"{wheel}[xarray]")
    done = _run([py, "-c", XARRAY, str(store)])
    assert "XARRAY-OK PROJCR" in done.stdout, done.stdout + done.stderr[-3000:]


def test_cli_extra(wheel: Path, tmp_path: Path) -> None:
    bin_ = _venv(tmp_path / "venv")
    _pip(bin_, f"{wheel}[cli]")
    py = str(bin_ / "python")
    store = tmp_path / "s.zarr"
    done = _run([py, "-c", ROUND_TRIP.replace("assert not heavy, heavy", ""), str(store)])
    assert "ROUND-TRIP-OK" in done.stdout, done.stderr[-3000:]
    for cmd in (
        [str(bin_ / "cz"), "validate", str(store)],
        [py, "-m", "chronozarr", "validate", str(store)],
    ):
        done = _run(cmd)
        assert done.returncode == 0, (cmd, done.stdout, done.stderr[-3000:])
    recipe = _run(
        [
            py,
            "-c",
            "import importlib.resources as r; print((r.files('cz.recipes') / 'demo.yaml').read_text()[:200])",
        ]
    )
    assert recipe.returncode == 0 and "demo" in recipe.stdout, recipe.stderr

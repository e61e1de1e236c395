"""The built wheel, installed in a fresh venv per extra, runs the commands the docs give for it.

What a user installs is what this tests: the wheel is built once from the sources (a copy, so
build/ and egg-info stay out of the worktree), and each extra gets a venv of its own with only
``chronozarr-tools[EXTRA]`` in it, so a module an extra forgets to declare fails here even when the
development venv has it. Then the documented commands of that extra run in it (README.md,
docs/python.md, docs/convert.md, docs/look.md, docs/recipes.md), not only ``--help``:

- bare: encode, open, read, validate a local store; no heavy module imported; the other extras
  and the command line say in one line which extra they need; ``cz --version``;
- ``[remote]``: a store read and validated over http from a Range server on 127.0.0.1;
- ``[xarray]``: ``engine="chronozarr"`` with xarray's usual arguments, ``open_datatree``,
  ``.rio`` and ``.odc`` on the Dataset, per-band variables reprojected by rioxarray;
- ``[cli]``: the offline demo built from the installed recipe, a folder of GeoTIFFs and a NetCDF
  converted, export, quicklook, series, share;
- ``[distributed]``: the demo built on a dask scheduler with one ``cz worker`` (127.0.0.1).

The venvs are made by uv (``uv venv``, ``uv pip install``: the same wheel metadata pip reads,
resolved against the same index, installed from uv's cache by hard links, so a venv costs
seconds, not a minute). Without uv the test falls back to ``python -m venv`` and pip (slower).
Measured cost on the 2-core machine: see docs/benchmarks.md ("Install test").

``CZ_INSTALL_SOURCE=/path/to/checkout`` builds the wheel from another tree (that is how the test
was shown to fail on the tree before the extras were complete).
"""

from __future__ import annotations

import email
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.remote.rangeserver import RangeServer

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

SOURCE = Path(os.environ.get("CZ_INSTALL_SOURCE", REPO))
#: What the wheel needs from the source tree.
SOURCES = ("pyproject.toml", "README.md", "chronozarr", "cli", "recipes")


def _uv() -> str | None:
    try:
        from uv import find_uv_bin
    except ImportError:  # uv is in the test extra; without it, pip (slower) does the same
        return None
    return str(find_uv_bin())


@dataclass
class Venv:
    """A fresh venv holding the wheel with one extra."""

    root: Path

    @property
    def bin(self) -> Path:
        return self.root / "bin"

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["PATH"] = f"{self.bin}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.root)
        env["CZ_LOG_LEVEL"] = "WARNING"
        return env

    def run(
        self, *args: str | Path, cwd: Path, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """A command of the venv (``cz ...``, ``python ...``), in ``cwd`` (never the checkout:
        ``python -c`` puts the working folder first on sys.path)."""
        argv = [str(a) for a in args]
        if (self.bin / argv[0]).exists():
            argv[0] = str(self.bin / argv[0])
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=self.env()
        )

    def ok(self, *args: str | Path, cwd: Path, timeout: float = 300) -> str:
        """Run, expect exit 0 and no traceback; the stdout."""
        done = self.run(*args, cwd=cwd, timeout=timeout)
        shown = " ".join(str(a) for a in args)
        assert done.returncode == 0, (
            f"{shown}: exit {done.returncode}\n{done.stdout}\n{done.stderr[-4000:]}"
        )
        assert "Traceback" not in done.stderr, f"{shown}:\n{done.stderr[-4000:]}"
        return done.stdout

    def python(self, code: str, *args: str | Path, cwd: Path) -> str:
        return self.ok("python", "-c", textwrap.dedent(code), *args, cwd=cwd)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel, built once for every venv of this module (its tests share one xdist worker:
    tests/conftest.py)."""
    src = tmp_path_factory.mktemp("src")
    for name in (*SOURCES, *(p.name for p in SOURCE.glob("LICEN[CS]E*"))):
        path = SOURCE / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(path, src / name)
    out = tmp_path_factory.mktemp("dist")
    uv = _uv()
    # uv build runs the same PEP 517 backend (setuptools) as pip wheel, from a cached build
    # environment: the same wheel, file for file, in half the time (docs/benchmarks-archive.md
    # "Test suite")
    argv = (
        [uv, "build", "-q", "--wheel", "-o", str(out), "--python", sys.executable, str(src)]
        if uv is not None
        else [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)]
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    (built,) = out.glob("*.whl")
    return built


def make_venv(path: Path, requirement: str) -> Venv:
    """``path``: a new venv with ``requirement`` installed (uv, else venv + pip)."""
    uv = _uv()
    started = time.perf_counter()
    if uv is not None:
        steps = [
            [uv, "venv", "-q", "--python", sys.executable, str(path)],
            [uv, "pip", "install", "-q", "--python", str(path / "bin" / "python"), requirement],
        ]
    else:
        steps = [
            [sys.executable, "-m", "venv", str(path)],
            [str(path / "bin" / "python"), "-m", "pip", "install", "-q", requirement],
        ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, f"{step}: {done.stderr[-3000:]}"
    print(f"venv {requirement.split('/')[-1]}: {time.perf_counter() - started:.1f} s")
    return Venv(path)


@pytest.fixture
def venv_for(wheel: Path, tmp_path: Path) -> Iterator[object]:
    def make(extra: str | None) -> Venv:
        return make_venv(tmp_path / "venv", f"{wheel}[{extra}]" if extra else str(wheel))

    yield make


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
    assert meta["Name"] == "chronozarr-tools"  # the PyPI name chronozarr is another project's
    assert not meta.get_all("Project-URL"), "no project URLs until the project owns some"
    for recipe in (SOURCE / "recipes").glob("*.yaml"):
        assert f"cz/recipes/{recipe.name}" in names, f"recipe {recipe.name} is not in the wheel"
    assert "chronozarr/py.typed" in names and "cz/py.typed" in names
    assert "chronozarr/__main__.py" in names and "cz/__main__.py" in names
    assert "chronozarr = chronozarr.read.xarray_backend:ChronozarrBackendEntrypoint" in entry_points
    assert "cz = cz._entry:main" in entry_points
    licenses = list(SOURCE.glob("LICEN[CS]E*"))
    if licenses:  # the licence text travels in the wheel (PEP 639: .dist-info/licenses/)
        for lic in licenses:
            assert any(n.endswith(f".dist-info/licenses/{lic.name}") for n in names), names
    else:
        print("no LICENSE file in the repository yet: only the License-Expression is checked")


#: encode, open, read, validate: the bare install's whole job (README "Use it from Python").
ROUND_TRIP = """
import sys, numpy as np, chronozarr
data = (np.arange(4 * 2 * 20 * 24, dtype=np.uint16).reshape(4, 2, 20, 24) % 97 + 1).astype(np.uint16)
mask = np.ones((4, 20, 24), dtype=np.uint8)
mask[1, :5, :5] = 0
bands = [{"name": "B04", "common_name": "red", "scale": 0.0001, "offset": -0.1},
         {"name": "B08", "common_name": "nir", "scale": 0.0001, "offset": -0.1}]
chronozarr.encode(data, sys.argv[1], times=["2024-01-01", "2024-02-01", "2024-03-01", "2024-04-01"],
                  bands=bands, crs="EPSG:32631", transform=[10, 0, 600000, 0, -10, 5100000],
                  mask=mask, coverage=mask * 2, chunk_size=8)
reader = chronozarr.open_store(sys.argv[1])
assert (reader.read(2) == data[2]).all()
assert reader.read_cell(1, 0, 0).shape == (2, 8, 8)
assert chronozarr.validate(sys.argv[1], deep=True).ok
heavy = [m for m in ("zarr", "obstore", "dask", "xarray", "pyproj", "typer", "rich", "rasterio")
         if m in sys.modules]
print("HEAVY", heavy)
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


def test_bare(venv_for: object, tmp_path: Path) -> None:
    venv = venv_for(None)  # type: ignore[operator]
    out = venv.python(ROUND_TRIP, "s.zarr", cwd=tmp_path)
    assert "ROUND-TRIP-OK" in out and "HEAVY []" in out, out
    remote = venv.python(
        MISSING.format(call="chronozarr.open_store('http://127.0.0.1:9/s')"), cwd=tmp_path
    )
    assert remote.startswith("MISSING remote |"), remote
    assert "pip install 'chronozarr-tools[remote]'" in remote
    lazy = venv.python(
        MISSING.format(call="chronozarr.open_store('s.zarr').to_xarray()"), cwd=tmp_path
    )
    assert lazy.startswith("MISSING xarray |"), lazy
    for cmd in (("cz", "validate", "s.zarr"), ("python", "-m", "chronozarr", "-h")):
        done = venv.run(*cmd, cwd=tmp_path)
        assert done.returncode == 1, (cmd, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
        assert "pip install 'chronozarr-tools[cli]'" in done.stderr, done.stderr
    assert venv.ok("cz", "--version", cwd=tmp_path).startswith("chronozarr 0.")


def test_remote(venv_for: object, tmp_path: Path) -> None:
    venv = venv_for("remote")  # type: ignore[operator]
    venv.python(ROUND_TRIP, "site/s.zarr", cwd=tmp_path)
    with RangeServer(tmp_path / "site") as server:
        out = venv.python(
            """
            import sys, numpy as np, chronozarr
            url = sys.argv[1]
            local, remote = chronozarr.open_store("site/s.zarr"), chronozarr.open_store(url)
            assert remote.n_time == 4 and (remote.read(3) == local.read(3)).all()
            assert chronozarr.validate(url, deep=True).ok
            print("REMOTE-OK", type(remote.store).__name__)
            """,
            f"{server.url}/s.zarr",
            cwd=tmp_path,
        )
    assert "REMOTE-OK" in out, out


XARRAY = """
import sys, numpy as np, xarray as xr, chronozarr
import rioxarray  # noqa: F401
import odc.geo.xr  # noqa: F401
store = sys.argv[1]
reader = chronozarr.open_store(store)
ds = xr.open_dataset(store, engine="chronozarr")
assert ds["data"].dims == ("time", "band", "y", "x") and ds["data"].dtype == np.float32
assert ds.rio.crs.to_epsg() == 32631 and ds["data"].odc.geobox.shape == (20, 24)
assert np.isnan(ds["data"].isel(time=1, y=0, x=0)).all()  # the masked corner
raw = xr.open_dataset(store, engine="chronozarr", physical=False)
assert (raw["data"].isel(time=1).values == reader.read(1)).all()
stored = xr.open_dataset(store, engine="chronozarr", mask_and_scale=False, decode_times=False)
assert stored["data"].dtype == np.uint16 and stored["data"].attrs["_FillValue"] == 0
assert stored.time.dtype == np.int64
bands = xr.open_dataset(store, engine="chronozarr", bands_as_variables=True)
assert bands.rio.reproject("EPSG:4326").red.dims == ("time", "y", "x")
tree = xr.open_datatree(store, engine="chronozarr")
assert list(tree.children) == [lv.path for lv in reader.levels]
print("XARRAY-OK")
"""


def test_xarray(venv_for: object, tmp_path: Path) -> None:
    venv = venv_for("xarray")  # type: ignore[operator]
    venv.python(ROUND_TRIP, "s.zarr", cwd=tmp_path)
    assert "XARRAY-OK" in venv.python(XARRAY, "s.zarr", cwd=tmp_path)


#: GeoTIFFs (rasterio) and a NetCDF (xarray, h5netcdf) as a user would have them.
SOURCES_SCRIPT = """
import numpy as np, rasterio, xarray as xr
from rasterio.transform import Affine
rng = np.random.default_rng(0)
for month in (1, 2, 3):
    with rasterio.open(f"tifs/ndvi_2024{month:02d}01.tif", "w", driver="GTiff", width=24,
                       height=20, count=2, dtype="uint16", crs="EPSG:32631",
                       transform=Affine(10, 0, 600000, 0, -10, 5100000)) as ds:
        ds.write(rng.integers(1, 5000, size=(2, 20, 24), dtype=np.uint16))
times = np.array(["2024-01-01", "2024-02-01", "2024-03-01"], dtype="datetime64[ns]")
ds = xr.Dataset(
    {"refl": (("time", "y", "x"), rng.integers(0, 9000, size=(3, 20, 24)).astype("int16"))},
    coords={"time": times, "y": 5100000 - 5 - 10 * np.arange(20.0),
            "x": 600005 + 10 * np.arange(24.0)},
)
ds["refl"].attrs["_FillValue"] = np.int16(-1)
ds.to_netcdf("series.nc", engine="h5netcdf")
print("SOURCES-OK")
"""


def test_cli(venv_for: object, tmp_path: Path) -> None:
    venv = venv_for("cli")  # type: ignore[operator]
    run = tmp_path
    # the offline demo from the installed recipe (docs/recipes.md)
    assert "demo/demo.yaml" in venv.ok("python", "-m", "cz.demo", "demo", cwd=run)
    # docs/recipes.md, "the dry run's last lines": the build's size before it starts
    size = venv.ok("cz", "build", "demo/demo.yaml", "--dry-run", cwd=run)
    assert "2 cells at level 0" in size and "152 PUTs" in size, size[-2000:]
    venv.ok("cz", "build", "demo/demo.yaml", "--out", "demo.zarr", cwd=run)
    venv.ok("cz", "validate", "demo.zarr", "--deep", cwd=run)
    assert "2023-01" in venv.ok("cz", "inspect", "demo.zarr", cwd=run)
    # docs/look.md
    venv.ok("cz", "quicklook", "demo.zarr", "--time", "2023-06", "--out", "q.png", cwd=run)
    assert (run / "q.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    venv.ok(
        "cz", "series", "demo.zarr", "--x", "500565", "--y", "5098715", "--out", "px.csv", cwd=run
    )
    assert (run / "px.csv").read_text().startswith("time,")
    venv.ok("cz", "share", "demo.zarr", "viewer", cwd=run)
    assert (run / "viewer" / "index.html").is_file()
    # docs/convert.md: a folder of GeoTIFFs, a NetCDF, then COGs back out
    (run / "tifs").mkdir()
    assert "SOURCES-OK" in venv.python(SOURCES_SCRIPT, cwd=run)
    venv.ok("cz", "convert", "tifs/", "ndvi.zarr", cwd=run)
    venv.ok("cz", "convert", "series.nc", "nc.zarr", "--crs", "EPSG:32631", cwd=run)
    venv.ok("cz", "export", "ndvi.zarr", "cogs/", "--times", "2024-02..2024-03", cwd=run)
    assert len(list((run / "cogs").glob("*.tif"))) == 2
    check = venv.python(
        """
        import numpy as np, rasterio, xarray as xr, chronozarr
        store = chronozarr.open_store("ndvi.zarr")
        with rasterio.open("tifs/ndvi_20240201.tif") as src:
            assert (store.read(1) == src.read()).all()
        nc = xr.open_dataset("series.nc", engine="h5netcdf", mask_and_scale=False)["refl"].values
        assert (chronozarr.open_store("nc.zarr").read(2)[0] == nc[2]).all()
        print("CONVERT-OK")
        """,
        cwd=run,
    )
    assert "CONVERT-OK" in check


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_distributed(venv_for: object, tmp_path: Path) -> None:
    """docs/recipes.md "On a dask.distributed cluster": a scheduler, a ``cz worker``, a build."""
    venv = venv_for("distributed")  # type: ignore[operator]
    venv.ok("python", "-m", "cz.demo", "demo", cwd=tmp_path)
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    procs = [
        subprocess.Popen(
            [
                venv.bin / "dask",
                "scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--no-dashboard",
            ],
            cwd=tmp_path,
            env=venv.env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    ]
    try:
        procs.append(
            subprocess.Popen(
                [
                    venv.bin / "cz",
                    "worker",
                    address,
                    "--nthreads",
                    "1",
                    "--memory-limit",
                    "2GiB",
                    "--no-dashboard",
                ],
                cwd=tmp_path,
                env=venv.env(),
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
        )
        venv.ok(
            "cz",
            "build",
            "demo/demo.yaml",
            "--out",
            "demo.zarr",
            "--scheduler",
            address,
            cwd=tmp_path,
            timeout=600,
        )
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=20)
    venv.ok("cz", "validate", "demo.zarr", "--deep", cwd=tmp_path)
    import chronozarr

    built = chronozarr.open_store(tmp_path / "demo.zarr")  # the cluster wrote a whole store
    assert built.n_time > 0 and len(built.bands) > 0

"""A missing extra is one line naming it (decision 0012), tested in-process by hiding a module.

``sys.modules[name] = None`` makes ``import name`` fail as it does when the package is absent. The
fresh-venv version of these checks, with a built wheel, is tests/packaging/test_wheel.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import ChronozarrError, MissingExtraError
from tests.conftest import REPO


def _store(path: Path) -> Path:
    chronozarr.encode(
        np.ones((1, 1, 4, 4), dtype=np.uint8),
        path,
        times=["2024-01-01"],
        bands=["b"],
        crs=32631,
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
    )
    return path


def test_remote_needs_the_remote_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "obstore", None)
    monkeypatch.setitem(sys.modules, "obstore.store", None)
    with pytest.raises(MissingExtraError) as info:
        chronozarr.open_store("https://example.invalid/s.zarr")
    assert info.value.extra == "remote"
    assert str(info.value) == (
        "reading https:// stores needs the 'remote' extra (obstore is not installed): "
        "pip install 'chronozarr-tools[remote]'"
    )
    assert isinstance(info.value, ChronozarrError) and isinstance(info.value, ImportError)


def test_to_xarray_needs_the_xarray_extra(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reader = chronozarr.open_store(_store(tmp_path / "s.zarr"))
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingExtraError, match=r"'xarray' extra \(dask is not installed\)"):
        reader.to_xarray()


def test_a_broken_dependency_is_not_reported_as_a_missing_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from chronozarr._optional import require

    # the package is there but one of *its* imports is not: a real error, shown as it is
    (tmp_path / "czfakepkg.py").write_text("import czmissingdep\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as info:
        require("czfakepkg", "xarray", "x")
    assert info.value.name == "czmissingdep" and not isinstance(info.value, MissingExtraError)
    with pytest.raises(MissingExtraError):
        require("czabsentpkg.sub", "xarray", "x")


@pytest.mark.parametrize("module", ["typer", "rich"])
def test_the_cli_without_its_extra_says_so_in_one_line(tmp_path: Path, module: str) -> None:
    store = _store(tmp_path / "s.zarr")
    code = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"
        "sys.argv = ['cz', 'validate', sys.argv[1]]\n"
        "from cz._entry import main\n"
        "main()\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(store)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 1, done
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines == [
        f"cz: the command line needs the 'cli' extra ({module.split('.')[0]} is not installed): "
        "pip install 'chronozarr-tools[cli]'"
    ], done.stderr


def test_version_needs_no_extra(tmp_path: Path) -> None:
    code = "import sys\nsys.modules['typer'] = None\nsys.argv = ['cz', '--version']\nfrom cz._entry import main\nmain()\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip() == f"chronozarr {chronozarr.__version__}"


@pytest.mark.parametrize("args", [["-m", "chronozarr", "--version"], ["-m", "cz", "--version"]])
def test_python_dash_m(args: list[str]) -> None:
    done = subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"chronozarr {chronozarr.__version__}"


@pytest.mark.parametrize("module", ["chronozarr", "cz"])
def test_python_dash_m_runs_the_cli(tmp_path: Path, module: str) -> None:
    store = _store(tmp_path / "s.zarr")
    done = subprocess.run(
        [sys.executable, "-m", module, "validate", str(store)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    assert "valid" in done.stdout


def test_import_chronozarr_loads_no_extra() -> None:
    code = (
        "import sys, chronozarr, chronozarr.format, chronozarr.io, chronozarr.write\n"
        "print(','.join(m for m in ('zarr', 'obstore', 'pyproj', 'xarray', 'dask', 'typer')"
        " if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "", done.stdout

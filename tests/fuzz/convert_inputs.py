"""Hostile ``cz convert`` inputs of the fuzz harness: sources and options that once escaped as
internal errors or ran out of memory (docs/reliability.md, "Named inputs").

Each case makes its source under a folder (GeoTIFFs written by rasterio, a NetCDF by xarray, a
manifest as text) and gives the command's arguments; :func:`convert_slice` runs each through
the CLI in a child with a memory limit (tests/fuzz/limited.py) and records every case that
does not end in exit 1 or 2 with one ``error:`` line naming what was refused.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["CASES", "convert_slice"]

DATES = ("2024-01-01", "2024-02-01", "2024-03-01")


def _tifs(folder: Path, side: int = 8, *, sparse: bool = False) -> Path:
    import rasterio
    from rasterio.transform import Affine

    folder.mkdir(parents=True, exist_ok=True)
    for date in DATES:
        options: dict[str, Any] = {}
        if sparse:  # declared side x side px, no pixel written (the size is the hostile part)
            options = dict(tiled=True, blockxsize=16384, blockysize=16384, sparse_ok=True, BIGTIFF="YES")  # fmt: skip
        with rasterio.open(
            folder / f"s_{date}.tif", "w", driver="GTiff", width=side, height=side, count=1,
            dtype="uint16", crs="EPSG:32631", transform=Affine(10, 0, 600000, 0, -10, 5100000),
            **options,
        ) as ds:  # fmt: skip
            if not sparse:
                ds.write(np.arange(side * side, dtype="uint16").reshape(1, side, side))
    return folder


def _manifest(text: str) -> Callable[[Path], list[str]]:
    def make(tmp: Path) -> list[str]:
        (tmp / "m.json").write_text(text)
        return [str(tmp / "m.json")]

    return make


def _netcdf_empty_time(tmp: Path) -> list[str]:
    import xarray as xr

    ds = xr.Dataset(
        {"v": (("time", "y", "x"), np.zeros((0, 4, 5), "uint16"))},
        coords={
            "time": np.array([], "datetime64[ns]"),
            "y": np.arange(4.0) * -10,
            "x": np.arange(5.0) * 10,
        },
    )
    ds.to_netcdf(tmp / "zero.nc", engine="h5netcdf")
    return [str(tmp / "zero.nc"), "--crs", "EPSG:32631"]


def _options(*args: str) -> Callable[[Path], list[str]]:
    return lambda tmp: [str(_tifs(tmp / "src")), *args]


#: name -> (make the source under a folder and return the arguments before the store).
CASES: dict[str, Callable[[Path], list[str]]] = {
    "manifest nested 10^5 deep": _manifest("[" * 100_000 + "]" * 100_000),
    "manifest with a 5,000-digit number": _manifest('[{"time": ' + "9" * 5000 + "}]"),
    "manifest with NaN": _manifest('[{"time": NaN, "path": "a.tif"}]'),
    "NetCDF with a zero-length time axis": _netcdf_empty_time,
    "three 10^6 x 10^6 px GeoTIFFs": lambda tmp: [str(_tifs(tmp / "h", 1_000_000, sparse=True))],
    "--resolution 1e-9": _options("--resolution", "1e-9"),
    "--resolution 0.0002 (10^11 px, no --yes)": _options("--resolution", "0.0002"),
    "--shard-time 10^9": _options("--shard", "--shard-time", "1000000000"),
    "--nodata nan": _options("--nodata", "nan"),
    "--nodata -inf": _options("--nodata", "-inf"),
    "--chunk-size 10^9": _options("--chunk-size", "1000000000"),
    "--workers 10^5": _options("--workers", "100000"),
    "--resolution nan": _options("--resolution", "nan"),
}


def convert_slice(folder: str) -> dict[str, Any]:
    """Every case through ``cz convert SOURCE STORE ARGS`` (and with ``--dry-run``): the bad
    outcomes (an exit other than 1 or 2, an internal error, a traceback, no error line, more
    than 20 s) with their output. Meant for a memory-limited child (tests.fuzz.limited)."""
    from typer.testing import CliRunner

    from cz.app import app

    bad: list[list[str]] = []
    runs = 0
    for i, (name, make) in enumerate(CASES.items()):
        tmp = Path(folder) / f"case-{i}"
        tmp.mkdir(parents=True)
        args = make(tmp)
        for extra in ((), ("--dry-run",)):
            started = time.perf_counter()
            result = CliRunner().invoke(
                app, ["convert", args[0], str(tmp / "s.zarr"), *args[1:], *extra]
            )
            runs += 1
            text = result.output
            errors = [ln for ln in text.splitlines() if ln.lower().startswith("error")]
            if result.exit_code == 2 and "Invalid value for" in text:  # typer's usage error
                errors.append(text)
            why = None
            if result.exit_code not in (1, 2):
                why = f"exit {result.exit_code}"
            elif "internal error" in text or "Traceback" in text or not errors:
                why = "untyped"
            elif time.perf_counter() - started > 20:
                why = "slow"
            if why is not None:
                bad.append([name, " ".join(extra), why, text[-400:]])
    return {"runs": runs, "bad": bad}

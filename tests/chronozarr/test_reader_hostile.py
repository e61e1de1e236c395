"""Hostile root metadata that used to escape the reader untyped (decision 0013): each input is
refused with a :class:`~chronozarr.errors.CorruptStoreError` naming the key, by ``open_store``,
and by the xarray backend, and the validator reports it as a finding (the CLI side is
``tests/cz/test_hostile_roots.py``).

What escaped before: a ``null`` in ``chronozarr.times`` (ValueError from the xarray backend, an
internal error from ``cz export``), a data array whose consolidated ``chunk_shape`` holds 0 in
a store without the ``levels`` mirror (ZeroDivisionError in ``open_store``), a volatility array
whose shape has one entry (IndexError in ``cz inspect``), ``chronozarr.crs`` given as a list
(TypeError in the xarray backend).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import CorruptStoreError
from tests.chronozarr.helpers import edit_chronozarr, edit_root
from tests.conftest import monthly, synthetic_series


def make_store(path: Path) -> Path:
    chronozarr.encode(
        synthetic_series(n_time=3, n_band=1, height=20, width=20, seed=3),
        path,
        times=monthly(3),
        bands=["b"],
        crs="EPSG:32631",
        transform=[10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0],
        chunk_size=8,
    )
    return path


def _times_null(store: Path) -> None:
    edit_chronozarr(store, lambda cz: cz["times"].__setitem__(1, None))


def _crs_list(store: Path) -> None:
    edit_chronozarr(store, lambda cz: cz.__setitem__("crs", ["EPSG:32631"]))


def _chunk_zero_no_levels(store: Path) -> None:
    def edit(root: dict[str, Any]) -> None:
        del root["attributes"]["chronozarr"]["levels"]  # cs comes from the array (spec 10.2)
        meta = root["consolidated_metadata"]["metadata"]
        meta["0/data"]["chunk_grid"]["configuration"]["chunk_shape"][2] = 0

    edit_root(store, edit)


def short_volatility(store: Path) -> None:
    edit_root(
        store,
        lambda root: root["consolidated_metadata"]["metadata"]["volatility"].__setitem__(
            "shape", [1]
        ),
    )


#: (id, breaker, what the message names)
CASES: list[tuple[str, Callable[[Path], None], str]] = [
    ("times-null", _times_null, r"chronozarr\.times\[1\]"),
    ("crs-list", _crs_list, r"chronozarr\.crs"),
    ("chunk-shape-zero", _chunk_zero_no_levels, r"0/data: chunk_shape \[1, 1, 0, 8\]"),
    ("volatility-1d", short_volatility, r"volatility"),
]


def _open_and_read(store: Path) -> None:
    reader = chronozarr.open_store(store)
    reader.times  # noqa: B018  (parses every entry of the mirror)
    reader.volatility()
    reader.read(0)


@pytest.mark.parametrize(("breaker", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_open_store_refuses_with_a_typed_error(
    tmp_path: Path, breaker: Callable[[Path], None], names: str
) -> None:
    store = make_store(tmp_path / "s.zarr")
    breaker(store)
    with pytest.raises(CorruptStoreError, match=names):
        _open_and_read(store)


@pytest.mark.parametrize(("breaker", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_xarray_backend_refuses_with_a_typed_error(
    tmp_path: Path, breaker: Callable[[Path], None], names: str
) -> None:
    xr = pytest.importorskip("xarray", reason="the xarray extra is not installed")
    store = make_store(tmp_path / "s.zarr")
    breaker(store)
    try:
        ds = xr.open_dataset(store, engine="chronozarr")
        ds.load()
    except CorruptStoreError as exc:
        assert exc.__class__ is CorruptStoreError
        return
    # the backend does not read the volatility: the one case it may open, with right values
    assert breaker is short_volatility
    want = chronozarr.open_store(make_store(tmp_path / "ref.zarr")).read(2)
    np.testing.assert_array_equal(ds["data"].isel(time=2).values, want.astype(np.float32))


@pytest.mark.parametrize(("breaker", "names"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_reports_a_finding(
    tmp_path: Path, breaker: Callable[[Path], None], names: str
) -> None:
    store = make_store(tmp_path / "s.zarr")
    breaker(store)
    report = chronozarr.validate(store, deep=True)
    assert not report.ok
    assert {f.rule for f in report.findings}.isdisjoint({"metadata.malformed"}), report.findings

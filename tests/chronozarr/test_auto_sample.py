"""The auto sample (spec 4.3) of an in-memory input, one task per timestep (decision 0067): the
recorded ratio is star-delta bytes over plain bytes of the sampled chunks, computed here with
numcodecs directly, and the store is the one a lazy input (tasks of several timesteps) writes."""

from __future__ import annotations

from pathlib import Path

import numcodecs
import numpy as np
import pytest

import chronozarr
from chronozarr.write._auto import sample_cells, sample_window
from tests.chronozarr.helpers import modular_residual, ref_schedule


def _objects(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _encode(data: object, path: Path, n_time: int) -> None:
    chronozarr.encode(
        data, path, times=[f"{2020 + t // 12}-{t % 12 + 1:02d}-01" for t in range(n_time)],
        bands=["a", "b"], crs="EPSG:32631", transform=[10, 0, 0, 0, -10, 0], chunk_size=8,
        anchor_interval=3, workers=2,
    )  # fmt: skip


def _ratio(data: np.ndarray, cs: int, k: int) -> float:
    """star-delta / plain bytes over the sampled cells and window, zstd 5 (the default codec),
    each chunk padded to the cell size (fill 0 for values without nodata, 0 for residuals)."""
    n_time, n_band, height, width = data.shape
    anchors, refs = ref_schedule(n_time, k)
    zstd = numcodecs.Zstd(level=5)
    plain = delta = 0
    rows, cols = -(-height // cs), -(-width // cs)
    for r, c in sample_cells(rows, cols):
        for t in sample_window(n_time, k):

            def chunk(values: np.ndarray) -> np.ndarray:
                out = np.zeros((1, n_band, cs, cs), dtype=data.dtype)
                out[0, :, : values.shape[1], : values.shape[2]] = values
                return out

            cell = (slice(None), slice(r * cs, (r + 1) * cs), slice(c * cs, (c + 1) * cs))
            size = len(zstd.encode(chunk(data[(t, *cell)])))
            plain += size
            delta += (
                size
                if t in anchors
                else len(
                    zstd.encode(chunk(modular_residual(data[(t, *cell)], data[(refs[t], *cell)])))
                )
            )
    return delta / plain


@pytest.mark.parametrize("static", [True, False])
def test_the_sample_of_an_in_memory_input_records_the_ratio_of_its_chunks(
    tmp_path: Path, static: bool
) -> None:
    """Both choices (a static scene: star-delta; noise: none); an edge cell trimmed (20 px)."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    n_time = 14
    if static:
        data = np.repeat(rng.integers(0, 3000, size=(1, 2, 20, 28), dtype=np.uint16), n_time, 0)
        data[:, :, ::3] += np.arange(n_time, dtype=np.uint16)[:, None, None, None]
    else:
        data = rng.integers(0, 65535, size=(n_time, 2, 20, 28), dtype=np.uint16)
    _encode(data, tmp_path / "np.zarr", n_time)
    _encode(da.from_array(data, chunks=(5, 2, 20, 28)), tmp_path / "lazy.zarr", n_time)
    reader = chronozarr.open_store(tmp_path / "np.zarr")
    selection = reader.attrs.temporal.selection
    assert selection is not None
    assert selection["ratio"] == round(_ratio(data, 8, 3), 4)
    assert reader.encoding == ("star-delta" if static else "none")
    assert _objects(tmp_path / "np.zarr") == _objects(tmp_path / "lazy.zarr")

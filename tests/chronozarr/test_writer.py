"""Property-based round trips (spec 1, 6): encode then read equals the input at level 0 and
an independent block mean at every coarser level, over dtype x encoding x layout x codec x chunk
size x ragged edges x mask/coverage x nodata x anchor_interval (spec 1, 2, 4, 5, 6, 7, 8)."""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import zarr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import chronozarr
from chronozarr.errors import EncodeError
from tests.chronozarr.helpers import (
    float_mean_close,
    modular_residual,
    ref_level_shapes,
    ref_pyramid,
    ref_reduce,
    ref_schedule,
    ref_validity,
    ref_volatility,
    same_bits,
)

CODECS = [
    ("zstd", None),
    ("zstd", {"level": 1}),
    ("gzip", None),
    ("gzip", {"level": 9}),
    ("blosc", {"cname": "zstd", "shuffle": "shuffle"}),
    ("blosc", {"cname": "zstd", "shuffle": "noshuffle"}),
    ("blosc", {"cname": "lz4", "shuffle": "shuffle"}),
    ("blosc", {"cname": "lz4", "shuffle": "noshuffle"}),
]
EXPLICIT_NODATA = {"uint8": 255, "uint16": 65535, "int16": -32768, "float32": -9999.0}
F32 = np.finfo(np.float32)
# float32 specials except NaN (spec 2.3: NaN is not interpreted; everything else is stored)
FLOAT_SPECIALS = np.array(
    [np.inf, -np.inf, -0.0, 0.0, F32.max, -F32.max, F32.tiny, 1e-45, -1e-45, F32.tiny / 2, 1.0],
    dtype=np.float32,
)
TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]


@dataclass
class Case:
    dtype: str
    n_time: int
    n_band: int
    height: int
    width: int
    cs: int
    encoding: str
    layout: str
    shard_time: int | None
    codec: str
    codec_options: dict[str, Any] | None
    nodata_mode: str
    anchor_interval: int
    values: str
    with_mask: bool
    with_coverage: bool
    seed: int
    data: np.ndarray = field(repr=False, default=None)  # type: ignore[assignment]
    mask: np.ndarray | None = field(repr=False, default=None)
    coverage: np.ndarray | None = field(repr=False, default=None)
    nodata: Any = None

    def kwargs(self) -> dict[str, Any]:
        kw: dict[str, Any] = dict(
            times=[f"2020-{m + 1:02d}-15T12:00:00Z" for m in range(self.n_time)],
            bands=[f"b{i}" for i in range(self.n_band)],
            crs="EPSG:32633",
            transform=TRANSFORM,
            mask=self.mask,
            coverage=self.coverage,
            encoding=self.encoding,
            anchor_interval=self.anchor_interval,
            chunk_size=self.cs,
            codec=self.codec,
            codec_options=self.codec_options,
        )
        if self.nodata_mode != "default":
            kw["nodata"] = self.nodata
        if self.layout == "whole":
            kw["shard"] = True
        elif self.layout != "unsharded":
            kw["shard_time"] = self.shard_time
        return kw


def _values(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], mode: str) -> np.ndarray:
    n_time = shape[0]
    if dtype == "float32":
        if mode == "adversarial":
            return rng.choice(FLOAT_SPECIALS, size=shape).astype(np.float32)
        base = rng.normal(0.2, 0.1, size=(1, *shape[1:]))
        noise = 0.0 if mode == "constant" else rng.normal(0, 0.01, size=shape)
        out = base + noise if mode != "random" else rng.normal(0, 1e3, size=shape)
        return np.broadcast_to(out, shape).astype(np.float32)
    info = np.iinfo(dtype)
    if mode == "adversarial":
        # min and max alternating across time (and a checkerboard in space): the residuals wrap
        t = np.arange(n_time)[:, None, None, None]
        yy, xx = np.indices(shape[2:])
        phase = (t + yy[None, None] + xx[None, None]) % 2
        return np.where(phase == 1, info.max, info.min).astype(dtype) + np.zeros(shape, dtype)
    if mode == "random":
        return rng.integers(info.min, int(info.max) + 1, size=shape, dtype=dtype)
    lo, hi = max(info.min, -2000), min(info.max, 4000)
    base = rng.integers(lo, hi, size=(1, *shape[1:]))
    step = 0 if mode == "constant" else rng.integers(-3, 4, size=shape)
    return np.broadcast_to(np.clip(base + step, info.min, info.max), shape).astype(dtype)


@st.composite
def cases(draw: st.DrawFn) -> Case:
    dtype = draw(st.sampled_from(["uint8", "uint16", "int16", "float32"]))
    encodings = ["none", "star-delta", "auto"] if dtype in ("uint8", "uint16") else ["none", "auto"]
    cs = draw(st.sampled_from([2, 4, 6, 8, 10, 12, 14, 16]))
    n_time = draw(st.integers(1, 7))
    layout = draw(st.sampled_from(["unsharded", "whole", "n_time", "several", "over"]))
    if layout == "several" and n_time == 1:
        layout = "over"
    shard_time = {
        "unsharded": None,
        "whole": None,
        "n_time": n_time,
        "several": draw(st.integers(1, max(1, n_time - 1))),
        "over": n_time + draw(st.integers(1, 3)),
    }[layout]
    # ragged edges: sizes rarely multiples of cs, including 1-pixel-wide arrays
    sizes = {
        "one": st.just(1),
        "multi": st.integers(cs + 1, 3 * cs + 3),
        "any": st.integers(1, 2 * cs + 3),
    }
    height = draw(sizes[draw(st.sampled_from(["one", "multi", "multi", "any"]))])
    width = draw(sizes[draw(st.sampled_from(["one", "multi", "multi", "any"]))])
    codec, opts = draw(st.sampled_from(CODECS))
    case = Case(
        dtype=dtype,
        n_time=n_time,
        n_band=draw(st.integers(1, 3)),
        height=height,
        width=width,
        cs=cs,
        encoding=draw(st.sampled_from(encodings)),
        layout=layout,
        shard_time=shard_time,
        codec=codec,
        codec_options=opts,
        nodata_mode=draw(st.sampled_from(["default", "none", "explicit", "present"])),
        anchor_interval=draw(st.integers(1, 5)),
        values=draw(st.sampled_from(["smooth", "random", "constant", "adversarial"])),
        with_mask=draw(st.booleans()),
        with_coverage=draw(st.booleans()),
        seed=draw(st.integers(0, 2**32 - 1)),
    )
    rng = np.random.default_rng(case.seed)
    shape = (case.n_time, case.n_band, case.height, case.width)
    case.data = _values(rng, dtype, shape, case.values)
    if case.nodata_mode == "none":
        case.nodata = None
    elif case.nodata_mode == "explicit":
        case.nodata = EXPLICIT_NODATA[dtype]
    elif case.nodata_mode == "present":
        case.nodata = case.data.flat[int(rng.integers(case.data.size))].item()
        if dtype == "float32" and not np.isfinite(case.nodata):
            case.nodata = 0.0
    else:
        case.nodata = 0 if dtype in ("uint8", "uint16") else None
    if case.nodata is not None:  # sprinkle nodata so that validity matters
        holes = rng.random(shape) < 0.2
        case.data[holes] = np.asarray(case.nodata, dtype=dtype)
    if case.with_mask:
        case.mask = (rng.random((n_time, height, width)) < 0.7).astype(np.uint8)
    if case.with_coverage:
        case.coverage = rng.integers(0, 256, size=(n_time, height, width), dtype=np.uint8)
    return case


def _effective_nodata(case: Case) -> Any:
    return case.nodata


def check_store(path: Path, case: Case) -> None:
    """Every level of the store against the independent reference; raw bytes through zarr."""
    reader = chronozarr.open_store(path)
    nodata = _effective_nodata(case)
    want = ref_pyramid(case.data, nodata, case.mask, case.coverage, case.cs)
    shapes = ref_level_shapes(case.height, case.width, case.cs)
    assert [tuple(lv.shape[2:]) for lv in reader.levels] == shapes
    assert reader.nodata == nodata
    assert reader.dtype == np.dtype(case.dtype)
    assert [b.name for b in reader.bands] == [f"b{i}" for i in range(case.n_band)]

    # temporal block (spec 4.1-4.3)
    temporal = reader.attrs.temporal
    if case.encoding == "auto" and case.dtype in ("uint8", "uint16"):
        sel = temporal.selection
        assert sel is not None and sel["mode"] == "auto"
        rows, cols = -(-case.height // case.cs), -(-case.width // case.cs)
        assert sel["sampled_cells"] == min(3, rows * cols)
        assert (temporal.encoding == "star-delta") == (sel["ratio"] <= 0.85)
    else:
        assert temporal.selection is None
        expected = "none" if case.encoding == "auto" else case.encoding
        assert temporal.encoding == expected
    anchors, refs = ref_schedule(case.n_time, case.anchor_interval)
    if temporal.encoding == "star-delta":
        assert list(temporal.anchor_indices) == anchors
        assert dict(temporal.delta_reference) == refs

    below = None  # the store's level k-1, as read (already checked)
    for k, (data_k, mask_k, cov_k) in enumerate(want):
        level = np.stack([reader.read(t, level=k) for t in range(case.n_time)])
        if k == 0:
            assert same_bits(level, case.data), "level 0 differs from the input"
        elif case.dtype == "float32" and case.values == "adversarial":
            # extreme magnitudes: float64 sums depend on the order; check the step with a bound
            step = ref_reduce(below, ref_validity(below, nodata, want[k - 1][1]), nodata)
            assert level.dtype == step.dtype
            assert float_mean_close(level, step, below), f"level {k} is not the block mean"
            data_k = level
        else:
            assert level.dtype == data_k.dtype
            assert np.array_equal(level, data_k, equal_nan=level.dtype.kind == "f"), (
                f"level {k} is not the block mean"
            )
        below = level
        for t in range(case.n_time):
            if case.with_mask:
                assert np.array_equal(reader.read_mask(t, k), mask_k[t]), f"mask level {k} t={t}"
            else:
                assert reader.read_mask(t, k) is None
            if case.with_coverage:
                assert np.array_equal(reader.read_coverage(t, k), cov_k[t]), f"cov level {k} t={t}"
            else:
                assert reader.read_coverage(t, k) is None
        # read_cell: trimmed to the array shape at every cell
        cs = reader.chunk_size(k)
        assert cs == case.cs
        rows, cols = reader.levels[k].grid
        t = case.n_time - 1
        for r in range(rows):
            for c in range(cols):
                cell = reader.read_cell(t, r, c, level=k)
                expect = data_k[t, :, r * cs : (r + 1) * cs, c * cs : (c + 1) * cs]
                assert cell.shape == expect.shape
                assert np.array_equal(cell, expect, equal_nan=cell.dtype.kind == "f")

    # layout (spec 7.1): unsharded by default; shard_time n_time when sharding is asked for
    info = reader.array(0).info
    assert info.sharded == (case.layout != "unsharded")
    if info.sharded:
        assert info.shard_time == (case.n_time if case.layout == "whole" else case.shard_time)
        assert info.chunk_shape == (info.shard_time, case.n_band, case.cs, case.cs)
    assert info.inner_chunk_shape == (1, case.n_band, case.cs, case.cs)
    names = [c["name"] for c in info.codecs]
    assert names == ["bytes", case.codec]  # spec 8: bytes, then exactly one compressor

    # to_xarray: lazy, same values, coordinates
    da = reader.to_xarray(0)
    assert da.dims == ("time", "band", "y", "x")
    assert same_bits(da.values, case.data)
    assert list(da["band"].values) == [f"b{i}" for i in range(case.n_band)]
    top = reader.to_xarray(len(want) - 1)  # the top level, as read() returned it above
    assert np.array_equal(top.values, below, equal_nan=case.dtype == "float32")

    # volatility (spec 5): recorded references, or the nominal schedule of anchor_interval
    if case.values != "adversarial" or case.dtype != "float32":
        vol = reader.volatility()
        ref = ref_volatility(case.data, case.cs, refs)
        np.testing.assert_allclose(vol, ref, rtol=1e-5, atol=1e-7)

    # plain Zarr (zarr-python) sees anchors as values and deltas as modular residuals (spec 0)
    raw = zarr.open_array(str(path / "0" / "data"), mode="r")[:]
    for t in range(case.n_time):
        ref_t = None if temporal.encoding == "none" else temporal.delta_reference.get(t)
        expect = case.data[t] if ref_t is None else modular_residual(case.data[t], case.data[ref_t])
        assert same_bits(raw[t], expect)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)
@given(case=cases())
def test_roundtrip_property(case: Case) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="cz-rt-"))
    try:
        path = tmp / "s.zarr"
        chronozarr.encode(case.data, path, **case.kwargs())
        check_store(path, case)
        report = chronozarr.validate(path, deep=True)
        assert report.ok, [f for f in report.findings if f.severity == "error"]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# --- fixed adversarial cases ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["uint8", "uint16"])
@pytest.mark.parametrize("layout", [{}, {"shard_time": 3}])
def test_modular_residuals_wrap_without_clamping(tmp_path: Path, dtype: str, layout: dict) -> None:
    """0 and max alternating across time: every residual is +-max, which wraps (spec 4.2)."""
    info = np.iinfo(dtype)
    n_time = 7
    yy, xx = np.indices((9, 7))
    planes = []
    for t in range(n_time):
        phase = (t + yy + xx) % 2 if t % 3 else (yy * xx) % 2
        planes.append(np.where(phase == 1, info.max, 0))
    data = np.stack([np.stack(planes), np.stack(planes[::-1])], axis=1).astype(dtype)
    data[:, :, 0, 0] = [[info.max, 1]] * n_time  # residual 0 - max = 1 mod 2^bits at some t
    data[3, :, 0, 0] = [0, info.max]
    path = tmp_path / "s.zarr"
    chronozarr.encode(
        data,
        path,
        times=[f"2021-01-{d + 1:02d}" for d in range(n_time)],
        bands=["a", "b"],
        crs="EPSG:4326",
        transform=[0.1, 0, 10, 0, -0.1, 50],
        encoding="star-delta",
        anchor_interval=3,
        chunk_size=4,
        nodata=None,
        **layout,
    )
    reader = chronozarr.open_store(path)
    for t in range(n_time):
        assert np.array_equal(reader.read(t), data[t])
    raw = zarr.open_array(str(path / "0" / "data"), mode="r")[:]
    refs = reader.attrs.temporal.delta_reference
    assert refs == {1: 0, 2: 3, 4: 3, 5: 6}
    for t, a in refs.items():
        want = ((data[t].astype(np.int64) - data[a].astype(np.int64)) % (int(info.max) + 1)).astype(
            dtype
        )
        assert np.array_equal(raw[t], want)
        # the wrap is visible: some residual is max (0 - 1) and some is 1 (0 - max)
    assert (raw[[1, 2, 4, 5]] == info.max).any()


def test_float32_specials_roundtrip_bit_exact(tmp_path: Path) -> None:
    """inf, -inf, -0.0, subnormals and the extremes come back bit for bit (Invariant 1)."""
    rng = np.random.default_rng(3)
    data = rng.choice(FLOAT_SPECIALS, size=(4, 2, 11, 9)).astype(np.float32)
    path = tmp_path / "f.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2022-01-01", "2022-02-01", "2022-03-01", "2022-04-01"],
        bands=["x", "y"],
        crs="EPSG:3857",
        transform=[1, 0, 0, 0, -1, 0],
        chunk_size=4,
        shard_time=3,
    )
    reader = chronozarr.open_store(path)
    assert reader.encoding == "none"
    assert reader.nodata is None
    below = np.stack([reader.read(t) for t in range(4)])
    assert same_bits(below, data)
    for k in range(1, len(reader.levels)):
        level = np.stack([reader.read(t, k) for t in range(4)])
        step = ref_reduce(below, np.ones(below.shape, dtype=bool), None)
        assert float_mean_close(level, step, below)
        below = level


def test_float32_infinities_roundtrip(tmp_path: Path) -> None:
    """+inf and -inf are valid float32 values (only NaN is discouraged, spec 2.3): stored exactly,
    no warning, volatility clipped into [0, 1] (spec 5), coarse levels NaN where inf meets -inf."""
    data = np.zeros((3, 1, 4, 4), dtype=np.float32)
    data[:, 0, 0, 0] = [np.inf, np.inf, -np.inf]  # inf - inf across time
    data[0, 0, 2, 2], data[0, 0, 2, 3] = np.inf, -np.inf  # inf + -inf inside one 2 x 2 block
    path = tmp_path / "inf.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2022-01-01", "2022-02-01", "2022-03-01"],
        bands=["x"],
        crs="EPSG:3857",
        transform=[1, 0, 0, 0, -1, 0],
        chunk_size=2,
        anchor_interval=3,
    )
    reader = chronozarr.open_store(path)
    for t in range(3):
        assert same_bits(reader.read(t), data[t])
    vol = reader.volatility()
    assert np.all((vol >= 0) & (vol <= 1)), vol
    assert np.isnan(reader.read(0, 1)[0, 1, 1])
    report = chronozarr.validate(path, deep=True)  # a NaN block mean equals its recomputation
    assert report.ok, report.findings


def test_level_values_hand_computed(tmp_path: Path) -> None:
    """A 3 x 3 uint16 grid with nodata: edge replication and floor of the valid mean, by hand."""
    data = np.array([[[[1, 2, 7], [4, 0, 9], [10, 0, 0]]]], dtype=np.uint16)
    path = tmp_path / "h.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 30],
        chunk_size=2,
    )
    reader = chronozarr.open_store(path)
    # block (0,0): 1 2 4 [0 invalid] -> 7 // 3 = 2; block (0,1): 7 7 9 9 -> 8
    # block (1,0): 10 [0] 10 [0] (row replicated) -> 10; block (1,1): all nodata -> 0
    assert reader.read(0, 1).tolist() == [[[2, 8], [10, 0]]]
    assert len(reader.levels) == 2  # level 1 is 2 x 2: a 1 x 1 grid at cs 2, the last level


def test_int16_negative_mean_floors(tmp_path: Path) -> None:
    """int16 means floor toward minus infinity: (-1 + -2 + 0 + 0) // 4 = -1, not 0 (spec 6)."""
    data = np.array([[[[-1, -2], [0, 0]]]], dtype=np.int16)
    path = tmp_path / "i.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 20],
        chunk_size=2,
        nodata=None,
    )
    reader = chronozarr.open_store(path)
    assert len(reader.levels) == 1  # a 2 x 2 array at cs 2 is already a 1 x 1 grid
    path2 = tmp_path / "i2.zarr"
    chronozarr.encode(
        np.tile(data, (1, 1, 2, 2)),
        path2,
        times=["2024-01-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 40],
        chunk_size=2,
        nodata=None,
    )
    assert chronozarr.open_store(path2).read(0, 1).tolist() == [[[-1, -1], [-1, -1]]]


def test_mask_zero_pixels_stored_exactly(tmp_path: Path) -> None:
    """Invariant 1 holds under mask 0 too (DESIGN: encode stores its input exactly)."""
    data = np.arange(2 * 1 * 5 * 5, dtype=np.uint16).reshape(2, 1, 5, 5) + 100
    mask = np.zeros((2, 5, 5), dtype=np.uint8)
    mask[:, ::2] = 1
    path = tmp_path / "m.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01", "2024-02-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 50],
        chunk_size=2,
        mask=mask,
    )
    reader = chronozarr.open_store(path)
    for t in range(2):
        assert np.array_equal(reader.read(t), data[t])
        assert np.array_equal(reader.valid(t), mask[t] == 1)
    want = ref_pyramid(data, 0, mask, None, 2)
    for k in range(1, len(want)):
        assert np.array_equal(reader.read(0, k), want[k][0][0])
        assert np.array_equal(reader.read_mask(0, k), want[k][1][0])


def test_bool_mask_accepted(tmp_path: Path) -> None:
    data = np.full((1, 1, 3, 3), 7, dtype=np.uint8)
    mask = np.eye(3, dtype=bool)[None]
    path = tmp_path / "b.zarr"
    chronozarr.encode(
        data,
        path,
        times=["2024-01-01"],
        bands=["b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 30],
        chunk_size=2,
        mask=mask,
    )
    assert np.array_equal(chronozarr.open_store(path).read_mask(0), mask[0].astype(np.uint8))


def test_dask_and_xarray_inputs(tmp_path: Path) -> None:
    """The streaming writer takes dask and xarray inputs and stores the same values."""
    da = pytest.importorskip("dask.array")
    xr = pytest.importorskip("xarray")
    rng = np.random.default_rng(5)
    data = rng.integers(0, 3000, size=(5, 2, 13, 11), dtype=np.uint16)
    cov = rng.integers(0, 5, size=(5, 13, 11), dtype=np.uint8)
    times = [f"2024-{m:02d}-01" for m in range(1, 6)]
    kw = dict(times=times, bands=["a", "b"], crs="EPSG:32631", transform=[10, 0, 0, 0, -10, 0])
    lazy = da.from_array(data, chunks=(2, 2, 5, 5))
    chronozarr.encode(
        lazy, tmp_path / "d", coverage=da.from_array(cov, chunks=(1, 7, 7)), chunk_size=4, **kw
    )
    arr = xr.DataArray(data, dims=("time", "band", "y", "x"))
    chronozarr.encode(arr, tmp_path / "x", chunk_size=4, shard_time=2, **kw)
    for name in ("d", "x"):
        reader = chronozarr.open_store(tmp_path / name)
        for t in range(5):
            assert np.array_equal(reader.read(t), data[t])
    want = ref_pyramid(data, 0, None, cov, 4)
    reader = chronozarr.open_store(tmp_path / "d")
    for k in range(1, len(want)):
        assert np.array_equal(reader.read(4, k), want[k][0][4])
        assert np.array_equal(reader.read_coverage(4, k), want[k][2][4])


def test_auto_chooses_star_delta_on_static_scene(tmp_path: Path) -> None:
    """A scene that does not change compresses far better as deltas: auto keeps star-delta."""
    rng = np.random.default_rng(1)
    base = rng.integers(0, 10000, size=(1, 2, 24, 24), dtype=np.uint16)
    data = np.repeat(base, 6, axis=0)
    path = tmp_path / "a.zarr"
    chronozarr.encode(
        data,
        path,
        times=[f"2024-{m:02d}-01" for m in range(1, 7)],
        bands=["a", "b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=8,
        anchor_interval=3,
    )
    reader = chronozarr.open_store(path)
    sel = reader.attrs.temporal.selection
    assert reader.encoding == "star-delta"
    assert sel["mode"] == "auto" and sel["sampled_cells"] == 3 and sel["ratio"] <= 0.85
    for t in range(6):
        assert np.array_equal(reader.read(t), data[t])


def test_auto_chooses_none_on_noise(tmp_path: Path) -> None:
    """Independent noise per timestep: deltas do not help, auto writes none with its ratio."""
    rng = np.random.default_rng(2)
    data = rng.integers(0, 256, size=(4, 1, 16, 16), dtype=np.uint8)
    path = tmp_path / "n.zarr"
    chronozarr.encode(
        data,
        path,
        times=[f"2024-{m:02d}-01" for m in range(1, 5)],
        bands=["a"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=16,
    )
    reader = chronozarr.open_store(path)
    sel = reader.attrs.temporal.selection
    assert reader.encoding == "none"
    assert sel["sampled_cells"] == 1 and sel["ratio"] > 0.85
    raw = chronozarr.open_store(path).attrs.temporal.to_json()
    assert set(raw) == {"encoding", "selection"}  # spec 4.1: no anchors under none


def test_encode_refuses_before_writing_on_bad_late_mask(tmp_path: Path) -> None:
    """A dask mask with a 2 is found while writing: no root zarr.json is left behind (spec 9)."""
    da = pytest.importorskip("dask.array")
    data = np.ones((2, 1, 4, 4), dtype=np.uint8)
    mask = np.ones((2, 4, 4), dtype=np.uint8)
    mask[1, 3, 3] = 2
    path = tmp_path / "late.zarr"
    with pytest.raises(EncodeError, match="mask"):
        chronozarr.encode(
            data,
            path,
            times=["2024-01-01", "2024-02-01"],
            bands=["a"],
            crs="EPSG:32631",
            transform=[10, 0, 0, 0, -10, 0],
            chunk_size=2,
            mask=da.from_array(mask),
        )
    assert not (path / "zarr.json").exists()


# --- write order (spec 9) ------------------------------------------------------------------------


def _record_puts(monkeypatch: pytest.MonkeyPatch, fail_after: int | None = None) -> list[str]:
    from chronozarr.io import LocalStore

    keys: list[str] = []
    real_put = LocalStore.put

    def put(self: LocalStore, key: str, data: bytes) -> None:
        if fail_after is not None and len(keys) >= fail_after:
            raise OSError("disk full (simulated)")
        keys.append(key)
        real_put(self, key, data)

    monkeypatch.setattr(LocalStore, "put", put)
    from chronozarr.io import LEASE_KEY, _cas

    real_put_if = _cas._put_if_local

    def put_if(self: LocalStore, key: str, data: bytes, expected: Any) -> Any:
        # the root's conditional create (decision 0051) is a write too; the lease is no object
        if key != LEASE_KEY:
            if fail_after is not None and len(keys) >= fail_after:
                raise OSError("disk full (simulated)")
            keys.append(key)
        return real_put_if(self, key, data, expected)

    monkeypatch.setattr(_cas, "_put_if_local", put_if)
    return keys


@pytest.mark.parametrize("layout", [{}, {"shard_time": 2}])
def test_write_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, layout: dict) -> None:
    """Chunks and shards first, then coordinates and volatility, then the zarr.json below the
    root, the root zarr.json last (spec 9, DESIGN)."""
    keys = _record_puts(monkeypatch)
    data = np.arange(5 * 2 * 9 * 7, dtype=np.uint16).reshape(5, 2, 9, 7)
    chronozarr.encode(
        data,
        tmp_path / "o.zarr",
        times=[f"2024-0{m}-01" for m in range(1, 6)],
        bands=["a", "b"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=4,
        mask=np.ones((5, 9, 7), np.uint8),
        coverage=np.ones((5, 9, 7), np.uint8),
        **layout,
    )
    assert keys[-1] == "zarr.json" and keys.count("zarr.json") == 1
    assert len(keys) == len(set(keys))  # every object written once

    def kind(key: str) -> int:
        if key == "zarr.json":
            return 3
        if key.endswith("zarr.json"):
            return 2
        parts = key.split("/")
        if parts[0] in ("volatility", "time", "band") or parts[1] in ("time", "band", "x", "y"):
            return 1
        return 0

    kinds = [kind(k) for k in keys]
    assert kinds == sorted(kinds), "write order: chunks, coordinates, zarr.json, root"
    assert sum(1 for k in kinds if k == 0) > 0


def test_crash_leaves_no_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure mid-encode leaves no root zarr.json: the store does not exist (spec 9)."""
    _record_puts(monkeypatch, fail_after=7)
    path = tmp_path / "crash.zarr"
    with pytest.raises(OSError, match="simulated"):
        chronozarr.encode(
            np.ones((3, 1, 9, 9), dtype=np.uint8),
            path,
            times=["2024-01-01", "2024-02-01", "2024-03-01"],
            bands=["a"],
            crs="EPSG:32631",
            transform=[10, 0, 0, 0, -10, 0],
            chunk_size=4,
            workers=1,
        )
    assert not (path / "zarr.json").exists()
    with pytest.raises(chronozarr.StoreNotFoundError):
        chronozarr.open_store(path)

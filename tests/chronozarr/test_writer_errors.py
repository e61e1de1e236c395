"""``encode`` refuses bad input with an EncodeError naming the argument, before writing anything
(spec 2.1, 2.3, 2.4, 4.1, 7.1, 8, 9)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import chronozarr
from chronozarr.errors import EncodeError
from tests.chronozarr.helpers import files_under

T, B, H, W = 3, 2, 5, 4


def _data(dtype: str = "uint16") -> np.ndarray:
    return (np.arange(T * B * H * W) % 200).reshape(T, B, H, W).astype(dtype)


def _kwargs(**over: Any) -> dict[str, Any]:
    kw: dict[str, Any] = dict(
        times=["2024-01-01", "2024-02-01", "2024-03-01"],
        bands=["red", "nir"],
        crs="EPSG:32631",
        transform=[10, 0, 0, 0, -10, 0],
        chunk_size=2,
    )
    kw.update(over)
    return kw


def assert_refused(tmp_path: Path, argument: str, data: Any = None, **over: Any) -> EncodeError:
    store = tmp_path / "out.zarr"
    with pytest.raises(EncodeError) as info:
        chronozarr.encode(_data() if data is None else data, store, **_kwargs(**over))
    assert info.value.argument == argument, str(info.value)
    assert str(info.value).startswith(f"{argument}: ")
    assert files_under(store) == []  # refused before writing: not even a chunk (spec 9)
    return info.value


@pytest.mark.parametrize("cs", [3, 1, 0, -2, 513, 2.0, True, "512"])
def test_chunk_size_must_be_even_integer(tmp_path: Path, cs: Any) -> None:
    assert_refused(tmp_path, "chunk_size", chunk_size=cs)


def test_chunk_size_small_even_accepted(tmp_path: Path) -> None:
    chronozarr.encode(_data(), tmp_path / "ok.zarr", **_kwargs(chunk_size=np.int64(4)))
    assert chronozarr.open_store(tmp_path / "ok.zarr").chunk_size() == 4


@pytest.mark.parametrize("dtype", ["float32"])
@pytest.mark.parametrize("nodata", [float("nan"), np.float32("nan"), float("inf"), -np.inf])
def test_nan_and_inf_nodata(tmp_path: Path, dtype: str, nodata: Any) -> None:
    err = assert_refused(tmp_path, "nodata", data=_data(dtype), nodata=nodata)
    assert "NaN" in str(err) or "inf" in str(err).lower()


@pytest.mark.parametrize(
    ("dtype", "nodata"),
    [("uint8", 256), ("uint8", -1), ("uint16", 70000), ("int16", 40000), ("uint16", 1.5)],
)
def test_nodata_must_fit_dtype(tmp_path: Path, dtype: str, nodata: Any) -> None:
    assert_refused(tmp_path, "nodata", data=_data(dtype), nodata=nodata)


@pytest.mark.parametrize("nodata", ["0", True, [0]])
def test_nodata_must_be_a_number(tmp_path: Path, nodata: Any) -> None:
    assert_refused(tmp_path, "nodata", nodata=nodata)


@pytest.mark.parametrize("dtype", ["int16", "float32"])
def test_star_delta_only_for_unsigned(tmp_path: Path, dtype: str) -> None:
    err = assert_refused(tmp_path, "encoding", data=_data(dtype), encoding="star-delta")
    assert dtype in str(err)


@pytest.mark.parametrize("encoding", ["chain", "delta", None, "AUTO"])
def test_unknown_encoding(tmp_path: Path, encoding: Any) -> None:
    assert_refused(tmp_path, "encoding", encoding=encoding)


@pytest.mark.parametrize("dtype", ["int32", "uint32", "float64", "int8", "bool", "uint64"])
def test_unsupported_dtype(tmp_path: Path, dtype: str) -> None:
    err = assert_refused(tmp_path, "data", data=_data("uint8").astype(dtype))
    assert dtype in str(err)


@pytest.mark.parametrize(
    "shape", [(B, H, W), (T, B, H, W, 1), (0, B, H, W), (T, 0, H, W), (T, B, 0, W)]
)
def test_data_shape(tmp_path: Path, shape: tuple[int, ...]) -> None:
    assert_refused(tmp_path, "data", data=np.zeros(shape, dtype=np.uint16))


def test_times_length(tmp_path: Path) -> None:
    err = assert_refused(tmp_path, "times", times=["2024-01-01", "2024-02-01"])
    assert "3" in str(err)


@pytest.mark.parametrize(
    "times",
    [
        ["2024-01-01", "2024-01-01", "2024-03-01"],
        ["2024-03-01", "2024-02-01", "2024-04-01"],
        ["2024-01-01T00:00:00Z", "2024-01-01T01:00:00+02:00", "2024-02-01"],  # 23:00 the day before
    ],
)
def test_times_strictly_increasing(tmp_path: Path, times: list[str]) -> None:
    err = assert_refused(tmp_path, "times", times=times)
    assert "increasing" in str(err)


@pytest.mark.parametrize("times", [["not a date", "2024-02-01", "2024-03-01"], "2024-01-01"])
def test_times_unreadable(tmp_path: Path, times: Any) -> None:
    assert_refused(tmp_path, "times", times=times)


@pytest.mark.parametrize("bands", [["red"], ["red", "nir", "swir"], "rn"])
def test_bands_length(tmp_path: Path, bands: Any) -> None:
    assert_refused(tmp_path, "bands", bands=bands)


def test_bands_unique(tmp_path: Path) -> None:
    assert_refused(tmp_path, "bands", bands=["red", "red"])


@pytest.mark.parametrize(
    ("band", "argument"),
    [
        ({"common_name": "red"}, "bands[1]"),
        ({"name": "nir", "scale": "0.1"}, "bands[1].scale"),
        ({"name": "nir", "offset": float("nan")}, "bands[1].offset"),
        ({"name": "nir", "colour": "red"}, "bands[1]"),
        (42, "bands[1]"),
    ],
)
def test_band_objects(tmp_path: Path, band: Any, argument: str) -> None:
    assert_refused(tmp_path, argument, bands=["red", band])


@pytest.mark.parametrize(
    ("name", "shape"),
    [("mask", (T, H, W + 1)), ("mask", (T - 1, H, W)), ("coverage", (T, H)), ("coverage", (H, W))],
)
def test_plane_shape(tmp_path: Path, name: str, shape: tuple[int, ...]) -> None:
    err = assert_refused(tmp_path, name, **{name: np.ones(shape, dtype=np.uint8)})
    assert "shape" in str(err)


@pytest.mark.parametrize("name", ["mask", "coverage"])
@pytest.mark.parametrize("dtype", ["uint16", "float32", "int8"])
def test_plane_dtype(tmp_path: Path, name: str, dtype: str) -> None:
    assert_refused(tmp_path, name, **{name: np.ones((T, H, W), dtype=dtype)})


def test_mask_values_above_one(tmp_path: Path) -> None:
    mask = np.ones((T, H, W), dtype=np.uint8)
    mask[2, 4, 3] = 2
    err = assert_refused(tmp_path, "mask", mask=mask)
    assert "0" in str(err) and "1" in str(err)


@pytest.mark.parametrize(
    ("codec", "options", "argument"),
    [
        ("lzma", None, "codec"),
        ("lz4", None, "codec"),
        ("zstd", {"level": 99}, "codec_options"),
        ("gzip", {"level": 10}, "codec_options"),
        ("blosc", {"cname": "lz4hc"}, "codec_options"),
        ("blosc", {"cname": "zlib"}, "codec_options"),
        ("blosc", {"shuffle": "bitshuffle"}, "codec_options"),
        ("blosc", {"clevel": 12}, "codec_options"),
        ("zstd", {"checksum": True}, "codec_options"),
        ("gzip", {"cname": "zstd"}, "codec_options"),
    ],
)
def test_codecs(tmp_path: Path, codec: str, options: Any, argument: str) -> None:
    assert_refused(tmp_path, argument, codec=codec, codec_options=options)


def test_codec_option_of_wrong_type_names_codec_options(tmp_path: Path) -> None:
    assert_refused(tmp_path, "codec_options", codec="zstd", codec_options={"level": "high"})


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_anchor_interval(tmp_path: Path, value: Any) -> None:
    assert_refused(tmp_path, "anchor_interval", anchor_interval=value)


@pytest.mark.parametrize("value", [0, -3, 2.5, True, 65_537, 10**9])
def test_shard_time(tmp_path: Path, value: Any) -> None:
    # 10**9: a shard index of 16 GB, and a MemoryError on main (the shard's chunk list)
    assert_refused(tmp_path, "shard_time", shard_time=value)


@pytest.mark.parametrize(
    "transform",
    [
        [10, 0, 0, 0, -10],  # five numbers
        [10, 1, 0, 0, -10, 0],  # rotated
        [10, 0, 0, 0, 10, 0],  # south-up
        [10, 0, 0, 0, -20, 0],  # non-square
        [10, 0, float("nan"), 0, -10, 0],
        "10 0 0 0 -10 0",
    ],
)
def test_transform(tmp_path: Path, transform: Any) -> None:
    assert_refused(tmp_path, "transform", transform=transform)


@pytest.mark.parametrize("crs", [None, "", 3.5])
def test_crs(tmp_path: Path, crs: Any) -> None:
    assert_refused(tmp_path, "crs", crs=crs)


@pytest.mark.parametrize("variable", ["mask", "time", "a/b", "", "../x", 3])
def test_variable(tmp_path: Path, variable: Any) -> None:
    assert_refused(tmp_path, "variable", variable=variable)


def test_provenance(tmp_path: Path) -> None:
    assert_refused(tmp_path, "provenance", provenance=["sentinel-2"])


def test_existing_store_is_not_overwritten(tmp_path: Path) -> None:
    store = tmp_path / "out.zarr"
    chronozarr.encode(_data(), store, **_kwargs())
    before = {f: (store / f).read_bytes() for f in files_under(store)}
    with pytest.raises(EncodeError) as info:
        chronozarr.encode(_data() + 1, store, **_kwargs())
    assert info.value.argument == "store"
    assert {f: (store / f).read_bytes() for f in files_under(store)} == before


def test_encode_error_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        chronozarr.encode(_data(), tmp_path / "x", **_kwargs(chunk_size=3))


def test_accepted_variants(tmp_path: Path) -> None:
    """The documented input forms: datetimes, EPSG ints, band objects, a custom variable name."""
    import datetime as dt

    times = [dt.datetime(2024, m, 1, tzinfo=dt.UTC) for m in (1, 2, 3)]
    chronozarr.encode(
        _data("uint8"),
        tmp_path / "v.zarr",
        **_kwargs(
            times=times,
            crs=32631,
            bands=[{"name": "red", "scale": 1}, chronozarr.Band(name="nir")],
            variable="reflectance",
            nodata=None,
        ),
    )
    reader = chronozarr.open_store(tmp_path / "v.zarr")
    assert reader.attrs.variable == "reflectance"
    assert reader.attrs.crs == "EPSG:32631"
    assert reader.attrs.times == (
        "2024-01-01T00:00:00Z",
        "2024-02-01T00:00:00Z",
        "2024-03-01T00:00:00Z",
    )
    assert (tmp_path / "v.zarr" / "0" / "reflectance" / "zarr.json").exists()
    assert np.array_equal(reader.read(2), _data("uint8")[2])
    assert chronozarr.validate(tmp_path / "v.zarr").ok


@pytest.mark.parametrize("url", ["s3://bucket/cz.zarr", "http://example.com/cz.zarr", "file:"])
def test_store_url_is_not_a_local_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    monkeypatch.chdir(tmp_path)
    if url == "file:":
        url = (tmp_path / "target.zarr").as_uri()
    try:
        chronozarr.encode(_data(), url, **_kwargs())
    except EncodeError as exc:
        assert exc.argument == "store"
    else:  # written: then it must be where the URL says (file://), readable from the URL
        assert url.startswith("file:")
        assert chronozarr.open_store(url).n_time == T
    assert not any(p.name in ("s3:", "http:", "file:") for p in tmp_path.iterdir())

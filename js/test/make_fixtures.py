"""Write the JS reader's test stores with the Python writer, and the Python reader's answers.

    python make_fixtures.py OUT_DIR

Writes OUT_DIR/stores/<name>.zarr for the matrix dtype x encoding x layout x codec (with mask and
coverage, ragged edges, several time shards and shard_time > n_time), a few derived stores
(v0.1 form, no consolidated metadata, start-located index, missing shard and empty inner chunk)
and broken stores for the error tests. For each readable store OUT_DIR/expected/<name>.bin holds
what ``chronozarr.open_store(path)`` returns, little-endian, level by level and timestep by
timestep: read(t, level) (band, H, W) in the stored dtype, then read_mask, read_coverage (uint8,
when present), then valid_bands (uint8). OUT_DIR/manifest.json describes every store.
Nothing here is committed: the tests run it into a temporary folder.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crc32c import crc32c  # noqa: E402

import chronozarr  # noqa: E402

DTYPES = ["uint8", "uint16", "int16", "float32"]
LAYOUTS = {
    "unsharded": {},
    "shard4": {"shard": True, "shard_time": 4},  # several time shards (n_time 7 or 9)
    "shard12": {"shard": True, "shard_time": 12},  # shard_time > n_time: one partial shard
}
CODECS = {
    "zstd": ("zstd", {"level": 5}),
    "gzip": ("gzip", {"level": 5}),
    "blosc-zstd-shuffle": ("blosc", {"cname": "zstd", "clevel": 3, "shuffle": "shuffle"}),
    "blosc-zstd-noshuffle": ("blosc", {"cname": "zstd", "clevel": 3, "shuffle": "noshuffle"}),
    "blosc-lz4-shuffle": ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": "shuffle"}),
    "blosc-lz4-noshuffle": ("blosc", {"cname": "lz4", "clevel": 5, "shuffle": "noshuffle"}),
}
BAND_SETS = {
    2: [
        {
            "name": "B04",
            "common_name": "red",
            "scale": 0.0001,
            "offset": -0.1,
            "units": "reflectance",
        },
        {
            "name": "B08",
            "common_name": "nir",
            "scale": 0.0001,
            "offset": -0.1,
            "units": "reflectance",
        },
    ],
    3: [
        {"name": "R", "common_name": "red", "scale": 1.0, "offset": 0.0},
        {"name": "G", "common_name": "green", "scale": 1.0, "offset": 0.0},
        {"name": "B", "common_name": "blue", "scale": 1.0, "offset": 0.0},
    ],
}
TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 4000000.0]


def times_for(n: int) -> list[str]:
    return [f"{2020 + m // 12}-{m % 12 + 1:02d}-01T00:00:00Z" for m in range(n)]


def make_data(rng: np.random.Generator, dtype: str, shape: tuple[int, ...], nodata):
    """Smooth fields with noise, full-range outliers (so residuals wrap) and nodata holes."""
    nt, nb, h, w = shape
    yy, xx = np.mgrid[0:h, 0:w]
    base = np.stack([np.sin(yy / 7 + b) * np.cos(xx / 9 - b) for b in range(nb)])
    drift = np.linspace(0, 1, nt)[:, None, None, None]
    field = base[None] + drift + rng.normal(0, 0.2, size=shape)
    if dtype == "float32":
        out = (field * 1000).astype(np.float32)
        out[rng.random(shape) < 0.05] = np.float32(3.4e38)
        out[rng.random(shape) < 0.05] = np.float32(-1.5e-7)
    else:
        info = np.iinfo(dtype)
        lo, hi = int(info.min), int(info.max)
        scaled = (field - field.min()) / (field.max() - field.min() + 1e-9)
        out = (lo + scaled * (hi - lo) * 0.6 + (hi - lo) * 0.2).astype(np.int64)
        wild = rng.random(shape) < 0.15
        out[wild] = rng.integers(lo, hi + 1, size=int(wild.sum()))
        out = out.astype(dtype)
    if nodata is not None:
        holes = rng.random((nt, 1, h, w)) < 0.06
        out[np.broadcast_to(holes, shape)] = nodata
    # One timestep where a whole cell is nodata/fill (exercises fill-equal chunks).
    out[min(2, nt - 1), :, :16, :16] = 0 if nodata is None else nodata
    return out


def _root_attrs(path: Path) -> dict:
    return json.loads((path / "zarr.json").read_text())["attributes"]["chronozarr"]


def _plane(r, path: Path, name: str | None, t: int, k: int):
    """A mask or coverage plane: the Python reader's, or zarr-python's read of the array."""
    if name is None:
        return None
    reader_fn = getattr(r, f"read_{name}", None)
    if reader_fn is not None:
        return reader_fn(t, k)
    import zarr

    return zarr.open_array(str(path / r.levels[k].path / name), mode="r")[t]


def _valid_bands(values, mask, nodata):
    """Per-band validity by the rule of spec 2.3 (when the reader has no valid_bands)."""
    if mask is not None:
        return np.broadcast_to(mask.astype(bool)[None], values.shape)
    if nodata is None:
        return np.ones(values.shape, dtype=bool)
    return values != np.asarray(nodata).astype(values.dtype)


def dump_expected(path: Path, dest: Path) -> dict:
    """What the Python reader returns for every level and timestep (see module doc)."""
    r = chronozarr.open_store(str(path))
    attrs = _root_attrs(path)
    mask_name = "mask" if attrs.get("mask_variable") else None
    coverage_name = "coverage" if attrs.get("coverage_variable") else None
    nodata = attrs.get("nodata")
    n_time = len(attrs["times"])
    levels = []
    dtype = None
    with open(dest, "wb") as fh:
        for k, lv in enumerate(r.levels):
            for t in range(n_time):
                values = np.ascontiguousarray(r.read(t, k))
                dtype = values.dtype
                fh.write(values.astype(values.dtype.newbyteorder("<")).tobytes())
                m = _plane(r, path, mask_name, t, k)
                if m is not None:
                    fh.write(np.ascontiguousarray(m, dtype=np.uint8).tobytes())
                c = _plane(r, path, coverage_name, t, k)
                if c is not None:
                    fh.write(np.ascontiguousarray(c, dtype=np.uint8).tobytes())
                if hasattr(r, "valid_bands"):
                    valid = r.valid_bands(t, k)
                else:
                    valid = _valid_bands(values, m, nodata)
                fh.write(np.ascontiguousarray(valid, dtype=np.uint8).tobytes())
            levels.append(
                {"shape": list(lv.shape), "grid": list(lv.grid), "resolution": lv.resolution}
            )
    return {
        "levels": levels,
        "n_time": n_time,
        "dtype": str(dtype),
        "has_mask": mask_name is not None,
        "has_coverage": coverage_name is not None,
        "nodata": nodata,
        "encoding": attrs["temporal"].get("encoding", "star-delta"),
    }


def encode_case(
    out: Path, name: str, dtype: str, encoding: str, layout: str, codec: str, i: int
) -> dict:
    rng = np.random.default_rng(1000 + i)
    # Vary size, bands and planes so that both encodings of a dtype meet every variant.
    cs = 16 if (i // 2) % 2 == 0 else 32
    nt = 7 if i % 3 else 9
    nb = 2 if i % 4 < 2 else 3
    h, w = (24, 40) if cs == 16 else (45, 70)  # ragged at both edges either way
    nodata = {"uint8": 0, "uint16": 0, "int16": -9999 if i % 2 else None, "float32": None}[dtype]
    data = make_data(rng, dtype, (nt, nb, h, w), nodata)
    with_planes = (i + i // 2) % 2 == 0
    mask = (rng.random((nt, h, w)) > 0.1).astype(np.uint8) if with_planes else None
    coverage = rng.integers(0, 30, size=(nt, h, w), dtype=np.uint8) if with_planes else None
    name_codec, options = CODECS[codec]
    kwargs = dict(LAYOUTS[layout])
    if nodata is not None or dtype in ("uint8", "uint16"):
        kwargs["nodata"] = nodata
    store = out / "stores" / f"{name}.zarr"
    chronozarr.encode(
        data,
        str(store),
        times=times_for(nt),
        bands=BAND_SETS[nb],
        crs="EPSG:32631",
        transform=TRANSFORM,
        mask=mask,
        coverage=coverage,
        encoding=encoding,
        anchor_interval=3,
        chunk_size=cs,
        codec=name_codec,
        codec_options=options,
        **kwargs,
    )
    # Invariant 1, checked here so that a writer/reader disagreement is not blamed on JS.
    r = chronozarr.open_store(str(store))
    for t in range(nt):
        if not np.array_equal(r.read(t, 0), data[t]):
            raise SystemExit(f"{name}: the Python reader does not return the input at t={t}")
    info = dump_expected(store, out / "expected" / f"{name}.bin")
    info.update(
        name=name,
        path=f"stores/{name}.zarr",
        expected=f"expected/{name}.bin",
        case={"dtype": dtype, "encoding": encoding, "layout": layout, "codec": codec, "cs": cs},
    )
    return info


# --- derived and broken stores -----------------------------------------------------------------


def load(p: Path) -> dict:
    return json.loads(p.read_text())


def save(p: Path, doc: dict) -> None:
    p.write_text(json.dumps(doc, indent=2))


def edit_array(store: Path, array_path: str, fn) -> None:
    """Apply fn to an array's zarr.json and to its copy in the consolidated metadata."""
    fn_doc = store / array_path / "zarr.json"
    save(fn_doc, fn(load(fn_doc)))
    root = load(store / "zarr.json")
    cm = root.get("consolidated_metadata", {}).get("metadata", {})
    if array_path in cm:
        cm[array_path] = fn(cm[array_path])
    save(store / "zarr.json", root)


def edit_root(store: Path, fn) -> None:
    save(store / "zarr.json", fn(load(store / "zarr.json")))


def shard_files(store: Path, levels: int, variables: list[str]):
    for k in range(levels):
        for var in variables:
            base = store / str(k) / var / "c"
            if base.exists():
                yield from (p for p in sorted(base.rglob("*")) if p.is_file())


def move_index_to_start(store: Path, info: dict, variables: list[str]) -> None:
    """Rewrite every shard with its index first (spec 7.2 index_location "start")."""
    for p in shard_files(store, len(info["levels"]), variables):
        raw = p.read_bytes()
        # The number of index entries comes from the array doc: shard shape / inner chunk shape.
        arr_dir = next(a for a in p.parents if (a / "zarr.json").exists() and a.name in variables)
        conf = load(arr_dir / "zarr.json")["codecs"][0]["configuration"]
        n = (
            load(arr_dir / "zarr.json")["chunk_grid"]["configuration"]["chunk_shape"][0]
            // conf["chunk_shape"][0]
        )
        N = 16 * n + 4
        index = np.frombuffer(raw[-N:-4], dtype="<u8").reshape(n, 2).copy()
        payload = raw[:-N]
        empty = index[:, 0] == np.uint64(2**64 - 1)
        index[~empty, 0] += np.uint64(N)
        ib = index.tobytes()
        p.write_bytes(ib + int(crc32c(ib)).to_bytes(4, "little") + payload)
    for k in range(len(info["levels"])):
        for var in variables:
            if (store / str(k) / var).exists():

                def fix(doc):
                    doc["codecs"][0]["configuration"]["index_location"] = "start"
                    return doc

                edit_array(store, f"{k}/{var}", fix)


def set_index_entry_empty(shard: Path, entry: int, n: int) -> None:
    raw = bytearray(shard.read_bytes())
    N = 16 * n + 4
    index = np.frombuffer(bytes(raw[-N:-4]), dtype="<u8").reshape(n, 2).copy()
    index[entry] = np.uint64(2**64 - 1)
    ib = index.tobytes()
    raw[-N:] = ib + int(crc32c(ib)).to_bytes(4, "little")
    shard.write_bytes(bytes(raw))


def expected_from(src: Path, dst: Path, patch=None) -> None:
    """Copy a .bin, optionally patching the decoded arrays (for stores whose values we derive)."""
    shutil.copyfile(src, dst)
    if patch:
        patch(dst)


def landscape(rng: np.random.Generator, nt: int, h: int, w: int):
    """A synthetic Sentinel-2-like scene: fields with crop cycles, a river, a town, clouds.

    Returns (data (t, 4, h, w) uint16 reflectance * 10000 for B02 B03 B04 B08, mask, coverage).
    """
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float64)
    seeds = rng.random((48, 2)) * [h, w]
    dist = (yy[..., None] - seeds[:, 0]) ** 2 + (xx[..., None] - seeds[:, 1]) ** 2
    field = np.argmin(dist, axis=-1)
    phase = rng.random(48) * 2 * np.pi
    amp = 0.25 + 0.45 * rng.random(48)
    base = 0.15 + 0.2 * rng.random(48)
    river = np.abs(
        yy - (h * 0.55 + 14 * np.sin(xx / 23.0) + 6 * np.sin(xx / 7.0))
    ) < 3.2 + 1.5 * np.sin(xx / 31.0)
    town = ((yy - h * 0.25) ** 2 / 300 + (xx - w * 0.7) ** 2 / 500) < 1
    texture = rng.normal(0, 0.015, size=(h, w))
    data = np.zeros((nt, 4, h, w), dtype=np.float64)
    mask = np.ones((nt, h, w), dtype=np.uint8)
    coverage = np.zeros((nt, h, w), dtype=np.uint8)
    for t in range(nt):
        season = np.sin(2 * np.pi * t / 12 + phase[field])
        ndvi = np.clip(base[field] + amp[field] * (0.5 + 0.5 * season) + texture, 0.02, 0.92)
        soil = np.array([0.085, 0.115, 0.155, 0.23])[:, None, None]  # B02 B03 B04 B08
        crop = np.array([0.025, 0.065, 0.03, 0.46])[:, None, None]
        f = ((ndvi - 0.02) / 0.9)[None]
        bands = soil * (1 - f) + crop * f + texture[None]
        bands[:, town] = np.array([0.1, 0.105, 0.11, 0.18])[:, None] + texture[town]
        bands[:, river] = np.array([0.05, 0.06, 0.035, 0.02])[:, None]
        data[t] = bands
        cov = rng.integers(2, 7, size=(h, w))
        if t % 3 == 1:  # a cloudy month: blobs without valid observations
            cy, cx = rng.random(2) * [h, w]
            cloud = ((yy - cy) ** 2 + (xx - cx) ** 2) < (min(h, w) * 0.22) ** 2
            mask[t][cloud] = 0
            cov[cloud] = 0
        coverage[t] = cov
    out = np.clip(np.round(data * 10000), 1, 10000).astype(np.uint16)
    out[np.broadcast_to(mask[:, None] == 0, out.shape)] = 0  # fill where invalid (spec 2.3)
    return out, mask, coverage


def viewer_store(out: Path) -> dict:
    """The store the browser test opens in the viewer: 4 Sentinel-2 bands, 12 months, sharded."""
    rng = np.random.default_rng(7)
    nt, h, w = 12, 192, 256
    data, mask, coverage = landscape(rng, nt, h, w)
    bands = [
        {
            "name": "B02",
            "common_name": "blue",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
        {
            "name": "B03",
            "common_name": "green",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
        {
            "name": "B04",
            "common_name": "red",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
        {
            "name": "B08",
            "common_name": "nir",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
    ]
    store = out / "stores" / "viewer.zarr"
    chronozarr.encode(
        data,
        str(store),
        times=[f"2024-{m + 1:02d}-01" for m in range(nt)],
        bands=bands,
        crs="EPSG:32631",
        transform=[10.0, 0.0, 600000.0, 0.0, -10.0, 5000000.0],
        mask=mask,
        coverage=coverage,
        encoding="star-delta",
        anchor_interval=4,
        chunk_size=64,
        shard_time=6,
        provenance={"sources": ["synthetic"], "composite": "monthly median", "gap_fill": "none"},
    )
    info = dump_expected(store, out / "expected" / "viewer.bin")
    info.update(
        name="viewer", path="stores/viewer.zarr", expected="expected/viewer.bin", case={"cs": 64}
    )
    return info


def prefix_store(out: Path) -> dict:
    """Chunks of several zstd blocks (3 bands x 256 x 256 uint16 = 3 blocks of 128 KiB), star-delta,
    ragged at both edges: the store on which the reader decodes only a chunk's first bands."""
    rng = np.random.default_rng(11)
    nt, nb, h, w = 7, 3, 300, 300
    data = make_data(rng, "uint16", (nt, nb, h, w), 0)
    store = out / "stores" / "prefix.zarr"
    chronozarr.encode(
        data,
        str(store),
        times=times_for(nt),
        bands=BAND_SETS[nb],
        crs="EPSG:32631",
        transform=TRANSFORM,
        encoding="star-delta",
        anchor_interval=3,
        chunk_size=256,
        nodata=0,
    )
    info = dump_expected(store, out / "expected" / "prefix.bin")
    info.update(
        name="prefix", path="stores/prefix.zarr", expected="expected/prefix.bin", case={"cs": 256}
    )
    return info


def map_stores(out: Path) -> dict:
    """The same data written star-delta (sharded) and none (unsharded), for the map-library tests:
    whatever a map library shows of the first through the store adapter must equal what it shows
    of the second read plainly. 2 bands, 7 months, 96 x 128 pixels of 30 m in UTM 31N."""
    rng = np.random.default_rng(11)
    nt, h, w = 7, 96, 128
    data, _, _ = landscape(rng, nt, h, w)
    data = np.ascontiguousarray(data[:, 2:4])  # red, nir
    bands = [
        {
            "name": "B04",
            "common_name": "red",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
        {
            "name": "B08",
            "common_name": "nir",
            "scale": 0.0001,
            "offset": 0.0,
            "units": "reflectance",
        },
    ]
    common = dict(
        times=[f"2024-{m + 1:02d}-01" for m in range(nt)],
        bands=bands,
        crs="EPSG:32631",
        transform=[30.0, 0.0, 600000.0, 0.0, -30.0, 5000000.0],
        nodata=0,
        anchor_interval=3,
        chunk_size=64,
    )
    info = {}
    for encoding, extra in (("star-delta", {"shard_time": 4}), ("none", {})):
        name = f"map-{encoding}"
        store = out / "stores" / f"{name}.zarr"
        chronozarr.encode(data, str(store), encoding=encoding, **common, **extra)
        entry = dump_expected(store, out / "expected" / f"{name}.bin")
        entry.update(
            name=name, path=f"stores/{name}.zarr", expected=f"expected/{name}.bin", case={"cs": 64}
        )
        info[encoding] = entry
    return info


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    (out / "stores").mkdir(parents=True)
    (out / "expected").mkdir()
    manifest = {"stores": [], "derived": [], "broken": {}}

    i = 0
    for dtype, layout, codec in itertools.product(DTYPES, LAYOUTS, CODECS):
        encodings = ["none", "star-delta"] if dtype in ("uint8", "uint16") else ["none"]
        for encoding in encodings:
            name = f"{dtype}-{encoding}-{layout}-{codec}"
            manifest["stores"].append(encode_case(out, name, dtype, encoding, layout, codec, i))
            i += 1

    by_name = {s["name"]: s for s in manifest["stores"]}

    def derive(src_name: str, new_name: str, fn, note: str, patch=None) -> None:
        src = by_name[src_name]
        dst = out / "stores" / f"{new_name}.zarr"
        shutil.copytree(out / src["path"], dst)
        fn(dst, src)
        expected_from(out / src["expected"], out / "expected" / f"{new_name}.bin", patch)
        entry = {
            **src,
            "name": new_name,
            "path": f"stores/{new_name}.zarr",
            "expected": f"expected/{new_name}.bin",
        }
        entry["derived_from"] = src_name
        entry["note"] = note
        manifest["derived"].append(entry)
        return entry

    # v0.1 form (spec 13): string bands, no encoding key, no mirrors, pixels_per_tile present.
    def to_v01(store, src):
        def fn(root):
            cz = root["attributes"]["chronozarr"]
            cz["spec_version"] = "0.1.0"
            cz["bands"] = [b["name"] for b in cz["bands"]]
            for key in ("band_names", "levels", "mask_variable", "coverage_variable"):
                cz.pop(key, None)
            cz["temporal"].pop("encoding", None)
            cz["temporal"].pop("selection", None)
            for d in root["attributes"]["multiscales"][0]["datasets"]:
                d["pixels_per_tile"] = 512
            return root

        edit_root(store, fn)

    # v0.1 stores have no mask or coverage: derive from one without them.
    v01_src = next(
        s["name"]
        for s in manifest["stores"]
        if s["case"]["dtype"] == "uint16"
        and s["case"]["encoding"] == "star-delta"
        and s["case"]["layout"] == "shard12"
        and not s["has_mask"]
    )
    derive(v01_src, "v01-uint16", to_v01, "v0.1 root attributes")

    # Per-array fallback: no consolidated metadata and no levels mirror (spec 3.1, 10.2).
    def no_consolidated(store, src):
        def fn(root):
            root.pop("consolidated_metadata", None)
            root["attributes"]["chronozarr"].pop("levels", None)
            return root

        edit_root(store, fn)

    derive(
        "uint8-star-delta-shard4-gzip", "nocons-uint8", no_consolidated, "no consolidated metadata"
    )

    # index_location "start" (spec 7.2).
    def index_start(store, src):
        move_index_to_start(store, src, ["data", "mask", "coverage"])

    derive(
        "uint16-star-delta-shard4-blosc-lz4-shuffle",
        "index-start-uint16",
        index_start,
        "start-located index",
    )

    # Holes (spec 7.2, 7.3): a missing data shard (unlisted), a listed-but-missing check via HEAD,
    # a shard present but not listed (HEAD fallback), an empty inner chunk.
    hole_src = by_name["uint16-none-shard4-zstd"]
    cs = hole_src["case"]["cs"]

    def holes(store, src):
        (store / "0" / "data" / "c" / "1" / "0" / "0" / "1").unlink()  # time shard 1, cell (0, 1)
        set_index_entry_empty(
            store / "0" / "data" / "c" / "0" / "0" / "0" / "0", 2, 4
        )  # t=2, cell (0,0)

        def fn(root):
            sb = root["attributes"]["chronozarr"]["shard_bytes"]["0"]
            del sb["1/0/1"]
            del sb["0/1/1"]  # exists, but unlisted: read through the HEAD fallback
            return root

        edit_root(store, fn)

    def blanker(src: dict, holes_at: list):
        """Patch a copied .bin: level-0 cells (t, ys, xs) become fill, as a missing chunk reads."""

        def patch(dst: Path):
            _, nb, h, w = src["levels"][0]["shape"]
            dtype = np.dtype(src["dtype"]).newbyteorder("<")
            nbytes = nb * h * w * dtype.itemsize
            planes = (h * w if src["has_mask"] else 0) + (h * w if src["has_coverage"] else 0)
            per_t = nbytes + planes + nb * h * w
            raw = bytearray(dst.read_bytes())
            nodata = src["nodata"]
            fill = 0 if nodata is None else nodata
            for t, ys, xs in holes_at:
                arr = np.frombuffer(bytes(raw[t * per_t : t * per_t + nbytes]), dtype=dtype)
                arr = arr.reshape(nb, h, w).copy()
                arr[:, ys, xs] = fill
                raw[t * per_t : t * per_t + nbytes] = arr.tobytes()
                if not src["has_mask"] and nodata is not None:  # validity follows nodata (2.3)
                    vb = (arr != nodata).astype(np.uint8)
                    raw[t * per_t + nbytes + planes : (t + 1) * per_t] = vb.tobytes()
            dst.write_bytes(bytes(raw))

        return patch

    nt_hole = hole_src["levels"][0]["shape"][0]
    derive(
        "uint16-none-shard4-zstd",
        "holes-uint16",
        holes,
        "missing shard, empty inner chunk",
        blanker(
            hole_src,
            [(t, slice(0, cs), slice(cs, 2 * cs)) for t in range(4, min(8, nt_hole))]
            + [(2, slice(0, cs), slice(0, cs))],
        ),
    )

    # A missing chunk object of an unsharded store reads as fill (Zarr; spec 9: 404 for absent keys).
    gap_src = by_name["int16-none-unsharded-zstd"]
    gcs = gap_src["case"]["cs"]

    def gap(store, src):
        (store / "0" / "data" / "c" / "3" / "0" / "0" / "1").unlink()

    derive(
        "int16-none-unsharded-zstd",
        "missing-chunk-int16",
        gap,
        "a missing chunk object",
        blanker(gap_src, [(3, slice(0, gcs), slice(gcs, 2 * gcs))]),
    )

    # Broken stores for the error tests.
    broken = out / "broken"
    broken.mkdir()

    def copy(src_name: str, name: str) -> Path:
        dst = broken / f"{name}.zarr"
        shutil.copytree(out / by_name[src_name]["path"], dst)
        manifest["broken"][name] = f"broken/{name}.zarr"
        return dst

    def set_codec(name, cfg):
        def fn(doc):
            doc["codecs"][1] = cfg
            return doc

        return fn

    s = copy("uint16-none-unsharded-zstd", "bad-codec")
    for k in range(len(by_name["uint16-none-unsharded-zstd"]["levels"])):
        edit_array(
            s, f"{k}/data", set_codec("x", {"name": "lz4", "configuration": {"acceleration": 1}})
        )
    s = copy("uint16-none-unsharded-zstd", "bad-blosc")
    for k in range(len(by_name["uint16-none-unsharded-zstd"]["levels"])):
        edit_array(
            s,
            f"{k}/data",
            set_codec(
                "x",
                {
                    "name": "blosc",
                    "configuration": {
                        "cname": "zstd",
                        "clevel": 3,
                        "shuffle": "bitshuffle",
                        "typesize": 2,
                        "blocksize": 0,
                    },
                },
            ),
        )
    s = copy("uint16-none-unsharded-zstd", "bad-dtype")
    for k in range(len(by_name["uint16-none-unsharded-zstd"]["levels"])):

        def dt(doc):
            doc["data_type"] = "int32"
            return doc

        edit_array(s, f"{k}/data", dt)
    s = copy("uint16-none-unsharded-zstd", "bad-version")
    edit_root(
        s, lambda r: (r["attributes"]["chronozarr"].__setitem__("spec_version", "0.3.0"), r)[1]
    )
    s = copy("uint16-none-unsharded-zstd", "bad-encoding")
    edit_root(
        s,
        lambda r: (
            r["attributes"]["chronozarr"]["temporal"].__setitem__("encoding", "chain-delta"),
            r,
        )[1],
    )
    s = copy("uint16-none-unsharded-zstd", "not-chronozarr")
    edit_root(s, lambda r: (r["attributes"].pop("chronozarr"), r)[1])
    s = copy("uint16-star-delta-shard4-zstd", "corrupt-crc")
    shard = s / "0" / "data" / "c" / "0" / "0" / "0" / "0"
    raw = bytearray(shard.read_bytes())
    raw[-1] ^= 0xFF
    shard.write_bytes(bytes(raw))
    s = copy("uint16-star-delta-shard4-zstd", "stale-shard-bytes")
    edit_root(
        s,
        lambda r: (
            r["attributes"]["chronozarr"]["shard_bytes"]["0"].__setitem__(
                "0/0/0", r["attributes"]["chronozarr"]["shard_bytes"]["0"]["0/0/0"] - 7
            ),
            r,
        )[1],
    )
    s = copy("uint16-none-unsharded-zstd", "corrupt-chunk")
    chunk = s / "0" / "data" / "c" / "1" / "0" / "0" / "0"
    chunk.write_bytes(b"\x00garbage" * 5)

    manifest["viewer"] = viewer_store(out)
    manifest["prefix"] = prefix_store(out)
    manifest["map"] = map_stores(out)
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1))
    print(
        f"{len(manifest['stores'])} stores, {len(manifest['derived'])} derived, {len(manifest['broken'])} broken -> {out}"
    )


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]))

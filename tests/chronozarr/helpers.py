"""Independent references and store surgery for the format tests.

Nothing here imports chronozarr's pyramid, temporal or codec code: the references are written
from the spec text (sections 2.3-2.5, 4.2, 5, 6, 7.2) so that a bug in the library cannot hide
behind the same bug in its test. Store surgery edits zarr.json files and shard objects on disk,
keeping the consolidated copy in the root zarr.json in step (readers read that copy first).
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c
import numpy as np

EMPTY = 2**64 - 1

# --- references ------------------------------------------------------------------------------------


def ref_level_shapes(height: int, width: int, cs: int) -> list[tuple[int, int]]:
    """(H_k, W_k) of every level: halve with ceil until the cell grid is 1 x 1 (spec 6)."""
    shapes = [(height, width)]
    while math.ceil(shapes[-1][0] / cs) > 1 or math.ceil(shapes[-1][1] / cs) > 1:
        h, w = shapes[-1]
        shapes.append((-(-h // 2), -(-w // 2)))
    return shapes


def _gather(a: np.ndarray) -> np.ndarray:
    """(..., H, W) -> (..., ceil(H/2), 2, ceil(W/2), 2) with edge replication by clamped indices."""
    h, w = a.shape[-2:]
    rows = np.minimum(2 * np.arange(-(-h // 2))[:, None] + np.arange(2)[None, :], h - 1)
    cols = np.minimum(2 * np.arange(-(-w // 2))[:, None] + np.arange(2)[None, :], w - 1)
    return a[..., rows[:, :, None, None], cols[None, None, :, :]]


def ref_validity(values: np.ndarray, nodata: Any, mask: np.ndarray | None) -> np.ndarray:
    """(time, band, h, w) validity: the mask when present, else per band value != nodata."""
    if mask is not None:
        return np.repeat((mask == 1)[:, None], values.shape[1], axis=1)
    if nodata is None:
        return np.ones(values.shape, dtype=bool)
    return values != np.asarray(nodata, dtype=values.dtype)


def ref_reduce(values: np.ndarray, valid: np.ndarray, nodata: Any) -> np.ndarray:
    """One pyramid step of (time, band, h, w) data: validity-aware 2 x 2 mean (spec 6)."""
    v = _gather(values)
    ok = _gather(valid)
    count = ok.sum(axis=(-3, -1))
    fill = np.asarray(0 if nodata is None else nodata, dtype=values.dtype)
    if values.dtype.kind == "f":
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):  # inf + -inf = NaN
            total = np.where(ok, v.astype(np.float64), 0.0).sum(axis=(-3, -1))
            mean = (total / np.where(count == 0, 1, count)).astype(values.dtype)
    else:
        total = np.where(ok, v.astype(np.int64), 0).sum(axis=(-3, -1))
        mean = (total // np.where(count == 0, 1, count)).astype(values.dtype)
    return np.where(count == 0, fill, mean).astype(values.dtype)


def float_mean_close(got: np.ndarray, want: np.ndarray, values: np.ndarray) -> bool:
    """float32 block means equal up to the order of the float64 accumulation (spec 6 fixes the
    accumulation type, not the order): |got - want| <= 2 * max|block| * 2^-50 + |want| * 2^-23,
    NaN where the other is NaN. ``values`` is the (time, band, h, w) level below."""
    maxabs = np.abs(_gather(values.astype(np.float64))).max(axis=(-3, -1))
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    with np.errstate(invalid="ignore", over="ignore"):
        bound = 2 * maxabs * 2.0**-50 + np.abs(w) * 2.0**-23 + 2.0**-149
        ok = both_nan | (g == w) | (np.abs(g - w) <= bound)
    return bool(ok.all())


def ref_mask_reduce(mask: np.ndarray) -> np.ndarray:
    return _gather(mask).max(axis=(-3, -1)).astype(np.uint8)


def ref_coverage_reduce(coverage: np.ndarray) -> np.ndarray:
    s = _gather(coverage.astype(np.int64)).sum(axis=(-3, -1))
    return ((s + 2) // 4).astype(np.uint8)


def ref_pyramid(
    data: np.ndarray,
    nodata: Any,
    mask: np.ndarray | None,
    coverage: np.ndarray | None,
    cs: int,
) -> list[tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
    """(data, mask, coverage) of every level, each level reduced from the one below."""
    levels = [(data, mask, coverage)]
    shapes = ref_level_shapes(data.shape[2], data.shape[3], cs)
    for _ in shapes[1:]:
        d, m, c = levels[-1]
        valid = ref_validity(d, nodata, m)
        levels.append(
            (
                ref_reduce(d, valid, nodata),
                None if m is None else ref_mask_reduce(m),
                None if c is None else ref_coverage_reduce(c),
            )
        )
    return levels


def ref_schedule(n_time: int, k: int) -> tuple[list[int], dict[int, int]]:
    """Anchors [0, k, 2k, ...] and nearest-anchor references, ties toward the earlier (4.2)."""
    anchors = list(range(0, n_time, k))
    refs = {}
    for t in range(n_time):
        if t % k:
            below, above = t - t % k, t - t % k + k
            refs[t] = above if above < n_time and above - t < t - below else below
    return anchors, refs


def ref_volatility(data: np.ndarray, cs: int, refs: dict[int, int]) -> np.ndarray:
    """clip(mean |src[t] - src[ref(t)]| / 10000, 0, 1) per level-0 cell (spec 5)."""
    _, _, h, w = data.shape
    rows, cols = math.ceil(h / cs), math.ceil(w / cs)
    out = np.zeros((rows, cols), dtype=np.float32)
    wide = np.float64 if data.dtype.kind == "f" else np.int64
    for r in range(rows):
        for c in range(cols):
            cell = data[:, :, r * cs : (r + 1) * cs, c * cs : (c + 1) * cs].astype(wide)
            diffs = [np.abs(cell[t] - cell[a]) for t, a in refs.items()]
            if diffs:
                mean = float(np.mean(np.stack(diffs)))
                out[r, c] = np.float32(min(max(mean / 10000.0, 0.0), 1.0))
    return out


def modular_residual(source: np.ndarray, anchor: np.ndarray) -> np.ndarray:
    bits = source.dtype.itemsize * 8
    diff = source.astype(np.int64) - anchor.astype(np.int64)
    return (diff % (1 << bits)).astype(source.dtype)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    """Exact equality of stored values (float32 compared bit for bit, -0.0 != 0.0)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind == "f":
        return bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))
    return bool(np.array_equal(a, b))


# --- store surgery ---------------------------------------------------------------------------------


def read_json(path: Path) -> dict[str, Any]:
    return json.loads(Path(path).read_text())


def write_json(path: Path, doc: Any) -> None:
    Path(path).write_text(json.dumps(doc, indent=2))


def edit_root(store: Path, fn: Callable[[dict[str, Any]], Any]) -> None:
    """Apply ``fn`` to the root zarr.json document (in place) and write it back."""
    doc = read_json(Path(store) / "zarr.json")
    fn(doc)
    write_json(Path(store) / "zarr.json", doc)


def edit_chronozarr(store: Path, fn: Callable[[dict[str, Any]], Any]) -> None:
    edit_root(store, lambda doc: fn(doc["attributes"]["chronozarr"]))


def edit_doc(store: Path, node: str, fn: Callable[[dict[str, Any]], Any]) -> None:
    """Apply ``fn`` to ``{node}/zarr.json`` and to its consolidated copy in the root."""
    path = Path(store) / node / "zarr.json"
    doc = read_json(path)
    fn(doc)
    write_json(path, doc)

    def cons(root: dict[str, Any]) -> None:
        meta = (root.get("consolidated_metadata") or {}).get("metadata") or {}
        if node in meta:
            fn(meta[node])

    edit_root(store, cons)


def drop_consolidated(store: Path) -> None:
    edit_root(store, lambda doc: doc.pop("consolidated_metadata", None))


def shard_index(blob: bytes, n: int, location: str = "end") -> np.ndarray:
    """(n, 2) uint64 (offset, nbytes) of a shard object, crc checked (Zarr sharding_indexed)."""
    size = 16 * n + 4
    raw = blob[-size:] if location == "end" else blob[:size]
    (crc,) = struct.unpack("<I", raw[-4:])
    assert crc == crc32c.crc32c(raw[:-4]), "shard index crc mismatch"
    return np.frombuffer(raw[:-4], dtype="<u8").reshape(n, 2)


def make_shard(chunks: list[bytes | None], location: str = "end") -> bytes:
    """A shard object with an independent implementation of the index layout."""
    n = len(chunks)
    size = 16 * n + 4
    offset = size if location == "start" else 0
    entries, payload = [], b""
    for c in chunks:
        if c is None:
            entries.append((EMPTY, EMPTY))
            continue
        entries.append((offset, len(c)))
        payload += c
        offset += len(c)
    raw = b"".join(struct.pack("<QQ", a, b) for a, b in entries)
    index = raw + struct.pack("<I", crc32c.crc32c(raw))
    return index + payload if location == "start" else payload + index


def shard_chunks(blob: bytes, n: int, location: str = "end") -> list[bytes | None]:
    index = shard_index(blob, n, location)
    out: list[bytes | None] = []
    for offset, nbytes in index.tolist():
        out.append(None if offset == EMPTY and nbytes == EMPTY else blob[offset : offset + nbytes])
    return out


def rewrite_index_location(store: Path, array_path: str, location: str = "start") -> None:
    """Move every shard index of an array to ``location`` and say so in its zarr.json."""
    doc = read_json(Path(store) / array_path / "zarr.json")
    conf = doc["codecs"][0]["configuration"]
    n = doc["chunk_grid"]["configuration"]["chunk_shape"][0] // conf["chunk_shape"][0]
    for f in sorted((Path(store) / array_path / "c").rglob("*")):
        if f.is_file():
            f.write_bytes(make_shard(shard_chunks(f.read_bytes(), n, "end"), location))
    edit_doc(
        store,
        array_path,
        lambda d: d["codecs"][0]["configuration"].__setitem__("index_location", location),
    )


def files_under(path: Path) -> list[str]:
    p = Path(path)
    if not p.exists():
        return []
    return sorted(str(f.relative_to(p)) for f in p.rglob("*") if f.is_file())


class RangeLog:
    """Wraps a chronozarr Store and records every byte-range request as (key, start, end)."""

    def __init__(self, store: Any):
        self._store = store
        self.ranges: list[tuple[str, int, int]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def get_range(self, key: str, start: int, end: int) -> bytes | None:
        self.ranges.append((key, start, end))
        return self._store.get_range(key, start, end)


def serve_directory(directory: Path) -> tuple[Any, str, list[tuple[str, str, str | None]]]:
    """A threaded HTTP server over ``directory`` that honours Range (bounded and suffix) and
    HEAD, as static hosts do (spec 9). Returns (server, base URL, request log). The caller
    calls ``server.shutdown()`` and ``server.server_close()``."""
    import io
    import re
    import threading
    from functools import partial
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    log: list[tuple[str, str, str | None]] = []

    class Handler(SimpleHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def send_head(self) -> Any:
            log.append((self.command, self.path, self.headers.get("Range")))
            path = self.translate_path(self.path)
            if not Path(path).is_file():
                self.send_error(404)
                return None
            data = Path(path).read_bytes()
            rng = self.headers.get("Range")
            if rng:
                m = re.fullmatch(r"bytes=(\d*)-(\d*)", rng)
                assert m, rng
                if m.group(1) == "":
                    start, end = len(data) - int(m.group(2)), len(data) - 1
                else:
                    start = int(m.group(1))
                    end = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
                body = data[start : end + 1]
                self.send_response(206)
                self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
            else:
                body = data
                self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Type", "application/octet-stream")
            self.end_headers()
            return io.BytesIO(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(Handler, directory=str(directory)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", log

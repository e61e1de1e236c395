"""Benchmark of the time-series companion (docs/spec.md C25, decision 0048), each figure against
today's path (the chunks of every timestep, spec 10.4) in the same run.

- One pixel's full history over HTTP (a logging HTTP/1.1 server with byte ranges on 127.0.0.1,
  no added latency): requests and bytes the ``Reader`` makes after the open, with the companion
  (several chunkings) and without it; ``cz series`` and the xarray backend's
  ``isel(x, y).values``: requests and wall time, with the companion and with the chunks.
- Bytes written per monthly append over a year (MONTHS - APPENDS months encoded, then APPENDS
  appends of one month): without the companion, with it per year (T 12), and with one time block
  spanning the whole axis and its future (T 240).
- Storage: the companion's share of the store, per chunking.
- A sharded companion (one shard per B x B block holding every time block) is not written by the
  writer; its figures are derived from the measured objects: a history is its index plus one
  contiguous range (2 requests), and an append rewrites every shard whole.

Store: MONTHS x BANDS x SIZE x SIZE uint16 (bench.common.series_block), cs CHUNK, star-delta with
anchor_interval 6, a mask and a coverage plane, zstd (the writer's default codec).

Usage: python bench/bench_history.py [--months 120] [--size 512] [--chunk 256] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np

import chronozarr
from bench.common import series_block, update_section
from chronozarr.io import LocalStore

TRANSFORM = [10.0, 0.0, 500000.0, 0.0, -10.0, 5100000.0]


class LoggingServer:
    """Files of ``root`` over HTTP/1.1 with single byte ranges; counts requests and body bytes."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.requests = 0
        self.bytes = 0
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                path = (server.root / self.path.split("?", 1)[0].lstrip("/")).resolve()
                if server.root not in path.parents or not path.is_file():
                    body, status, extra = b"", 404, {}
                else:
                    data = path.read_bytes()
                    rng = self.headers.get("Range")
                    status, body, extra = 200, data, {}
                    if rng and rng.startswith("bytes=") and "," not in rng:
                        a, _, b = rng[6:].partition("-")
                        n = len(data)
                        start, end = (
                            (n - int(b), n - 1)
                            if a == ""
                            else (int(a), min(int(b or n - 1), n - 1))
                        )
                        start = max(start, 0)
                        body, status = data[start : end + 1], 206
                        extra = {"Content-Range": f"bytes {start}-{end}/{n}"}
                with server.lock:
                    server.requests += 1
                    server.bytes += len(body)
                self.send_response(status)
                for k, v in {"Accept-Ranges": "bytes", **extra}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def reset(self) -> None:
        with self.lock:
            self.requests = self.bytes = 0

    def count(self) -> tuple[int, int]:
        with self.lock:
            return self.requests, self.bytes

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def make_input(months: int, bands: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    data = series_block(0, months, bands, 0, size, 0, size)
    rng = np.random.default_rng(3)
    mask = (rng.random((months, size, size)) > 0.2).astype(np.uint8)
    coverage = rng.integers(0, 12, (months, size, size), dtype=np.uint8)
    return data, mask, coverage


def times(n: int) -> list[str]:
    return [f"{2015 + m // 12}-{m % 12 + 1:02d}-01" for m in range(n)]


def encode(path: Path, arrays, n: int, chunk: int, history: tuple[int, int] | None) -> None:
    data, mask, cov = arrays
    opts: dict[str, Any] = {}
    if history is not None:
        opts = dict(history=True, history_time=history[0], history_block=history[1])
    chronozarr.encode(
        data[:n], path, times=times(n), bands=[f"b{i}" for i in range(data.shape[1])],
        crs="EPSG:32631", transform=TRANSFORM, mask=mask[:n], coverage=cov[:n],
        chunk_size=chunk, encoding="star-delta", anchor_interval=6, workers=2, **opts,
    )  # fmt: skip


def tree_bytes(path: Path, part: str | None = None) -> int:
    return sum(
        p.stat().st_size
        for p in path.rglob("*")
        if p.is_file() and (part is None or part in p.relative_to(path).parts)
    )


def appends(path: Path, arrays, start: int, count: int) -> list[int]:
    """Bytes written by each of ``count`` one-month appends (the store's own put counter)."""
    data, mask, cov = arrays
    out = []
    for t in range(start, start + count):
        store = LocalStore(path)
        chronozarr.append(
            store, data[t : t + 1], times=times(t + 1)[t:], mask=mask[t : t + 1],
            coverage=cov[t : t + 1], workers=2,
        )  # fmt: skip
        out.append(store.stats.bytes_written)
    return out


def timed(server: LoggingServer, fn) -> tuple[int, int, float]:
    server.reset()
    t0 = time.perf_counter()
    fn()
    wall = time.perf_counter() - t0
    return (*server.count(), wall)


def read_figures(server: LoggingServer, name: str, row: int, col: int) -> dict[str, Any]:
    url = f"{server.url}/{name}"
    out: dict[str, Any] = {}
    for label, use in (("reader", None), ("reader_chunks", False)):
        reader = chronozarr.open_store(url)  # the open (root zarr.json) is not counted
        reader.levels  # noqa: B018
        server.reset()
        t0 = time.perf_counter()
        series = reader.pixel_series(row, col, use_history=use)
        wall = time.perf_counter() - t0
        req, nbytes = server.count()
        out[label] = {"requests": req, "bytes": nbytes, "wall_s": wall, "source": series.source}
    x = TRANSFORM[2] + TRANSFORM[0] * (col + 0.5)
    y = TRANSFORM[5] + TRANSFORM[4] * (row + 0.5)
    cz = [sys.executable, "-m", "cz", "series", url, "--x", str(x), "--y", str(y), "--json"]
    for label, extra in (("cz_series", []), ("cz_series_no_history", ["--no-history"])):
        req, nbytes, wall = timed(
            server, lambda e=extra: subprocess.run([*cz, *e], check=True, capture_output=True)
        )
        out[label] = {"requests": req, "bytes": nbytes, "wall_s": wall}

    def xr_pixel() -> None:
        import xarray as xr

        ds = xr.open_dataset(url, engine="chronozarr")
        var = next(iter(ds.data_vars))
        ds[var].isel(x=col, y=row).values  # noqa: B018
        ds.close()

    req, nbytes, wall = timed(server, xr_pixel)
    out["xarray"] = {"requests": req, "bytes": nbytes, "wall_s": wall}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--months", type=int, default=120)
    ap.add_argument("--appends", type=int, default=12)
    ap.add_argument("--size", type=int, default=512)
    ap.add_argument("--chunk", type=int, default=256)
    ap.add_argument("--bands", type=int, default=4)
    ap.add_argument("--out", type=Path, default=None, help="keep the stores here")
    ap.add_argument("--no-doc", action="store_true")
    ap.add_argument(
        "--reuse", action="store_true", help="read the stores an earlier run left at --out"
    )
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    work = args.out or Path(tempfile.mkdtemp(prefix="cz-history-"))
    work.mkdir(parents=True, exist_ok=True)
    reuse = args.reuse and (work / "appends.json").exists()
    arrays = None if reuse else make_input(args.months, args.bands, args.size)
    first = args.months - args.appends
    results: dict[str, Any] = {"appends": {}, "sizes": {}, "reads": {}}
    # appended stores: no companion, per year (T 12), one block over the axis and its future
    grown = {"none": None, "T12-B16": (12, 16), "T240-B16": (240, 16)}
    kept = work / "appends.json"
    if reuse:  # the stores of an earlier run at --out, and its appends
        results["appends"] = json.loads(kept.read_text())
    else:
        for name, hist in grown.items():
            path = work / name
            shutil.rmtree(path, ignore_errors=True)
            encode(path, arrays, first, args.chunk, hist)
            results["appends"][name] = appends(path, arrays, first, args.appends)
            print(name, "append bytes", results["appends"][name], flush=True)
        for name, hist in {"T12-B8": (12, 8), "T12-B32": (12, 32)}.items():
            path = work / name
            shutil.rmtree(path, ignore_errors=True)
            encode(path, arrays, args.months, args.chunk, hist)
        kept.write_text(json.dumps(results["appends"]))
    names = ["none", "T12-B8", "T12-B16", "T12-B32", "T240-B16"]
    for name in names:
        total = tree_bytes(work / name)
        comp = tree_bytes(work / name, "history")
        results["sizes"][name] = {"total": total, "companion": comp}
    server = LoggingServer(work)
    row, col = args.size // 2 + 3, args.size // 2 + 5
    try:
        for name in names:
            results["reads"][name] = read_figures(server, name, row, col)
            print(name, json.dumps(results["reads"][name]), flush=True)
    finally:
        server.close()
    load1 = os.getloadavg()[0]
    results["load"] = [load0, load1]
    print(json.dumps(results, indent=1))
    if not args.no_doc:
        update_section("Time-series companion", report(results, args))
    if args.out is None:
        shutil.rmtree(work, ignore_errors=True)


def report(res: dict[str, Any], args: argparse.Namespace) -> str:
    mb = 1e6
    lines = [
        f"Command: `python bench/bench_history.py --months {args.months} --size {args.size} "
        f"--chunk {args.chunk} --bands {args.bands}`. Load {res['load'][0]:.1f} -> "
        f"{res['load'][1]:.1f}. HTTP: a logging Python server on 127.0.0.1 (no added latency;"
        " requests and body bytes counted at the server).",
        "",
        "One pixel's full history after the open (Reader.pixel_series):",
        "",
        "| layout | path | requests | bytes | wall |",
        "|---|---|---|---|---|",
    ]
    for name, r in res["reads"].items():
        for label in ("reader", "reader_chunks"):
            f = r[label]
            if label == "reader_chunks" and name != "T12-B16":  # one use_history=False row
                continue
            lines.append(
                f"| {name} | {f['source']} | {f['requests']} | {f['bytes']:,} | "
                f"{f['wall_s'] * 1000:.0f} ms |"
            )
    lines += [
        "",
        "`cz series` (a process: open + series + print) and the xarray backend (open_dataset +"
        " isel(x, y).values):",
        "",
        "| layout | command | requests | bytes | wall |",
        "|---|---|---|---|---|",
    ]
    for name in ("none", "T12-B16", "T240-B16"):
        r = res["reads"][name]
        for label in ("cz_series", "cz_series_no_history", "xarray"):
            if name == "none" and label == "cz_series_no_history":
                continue
            f = r[label]
            lines.append(
                f"| {name} | {label} | {f['requests']} | {f['bytes']:,} | {f['wall_s']:.2f} s |"
            )
    lines += ["", "Bytes written per monthly append (a year of appends):", ""]
    lines += ["| layout | per append (MB) | mean | vs none |", "|---|---|---|---|"]
    base = float(np.mean(res["appends"]["none"]))
    for name, per in res["appends"].items():
        mean = float(np.mean(per))
        lines.append(
            f"| {name} | {' '.join(f'{b / mb:.2f}' for b in per)} | {mean / mb:.2f} | "
            f"{mean / base:.2f}x |"
        )
    lines += [
        "",
        "Storage:",
        "",
        "| layout | store MB | companion MB | share |",
        "|---|---|---|---|",
    ]
    for name, s in res["sizes"].items():
        lines.append(
            f"| {name} | {s['total'] / mb:.1f} | {s['companion'] / mb:.1f} | "
            f"{s['companion'] / max(1, s['total']):.1%} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()

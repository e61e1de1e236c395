"""Benchmark of remote reading and publishing (docs/hosting.md).

1. Cold open plus first timestep over HTTP on loopback (nginx with the docs/hosting.md server
   block when /usr/sbin/nginx exists, else a Range-capable Python server): requests made and
   bytes transferred, unsharded vs sharded, sharded with and without ``shard_bytes`` (without it
   the reader learns each shard's length with a HEAD, spec 7.3). "First timestep" is timestep 0
   at level 0, every cell; a delta timestep (timestep 1, its anchor cached) follows on the same
   reader.
2. ``cz publish`` throughput to moto's S3 server on 127.0.0.1 (objects/s, MB/s), fresh target,
   then a re-publish of the same store (nothing to send: one LIST).

Requests and bytes are counted by the reader's store (every GET, range GET and HEAD, payload
bytes) and, with nginx, checked against its access log. Wall times are medians of ``--repeat``
cold runs (a new reader each time, same host; loopback, so they measure request count and
decode, not a network).

Usage: python bench/bench_remote.py [--months 12] [--size 1024] [--bands 4] [--no-doc]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import chronozarr
from bench.common import series_block, update_section
from cz.publish import publish
from tests.remote.nginxserver import NGINX, NginxServer
from tests.remote.rangeserver import RangeServer

CS = 512


def build(work: Path, months: int, size: int, bands: int) -> dict[str, Path]:
    """unsharded, sharded (shard_time = months) and sharded without shard_bytes."""
    data = series_block(0, months, bands, 0, size, 0, size)
    kw: dict[str, Any] = dict(
        times=[f"{2020 + m // 12}-{m % 12 + 1:02d}-01" for m in range(months)],
        bands=[f"B{i}" for i in range(bands)],
        crs="EPSG:32631",
        transform=[10.0, 0, 600000.0, 0, -10.0, 5000000.0],
        encoding="star-delta",
        anchor_interval=6,
        chunk_size=CS,
    )
    out = {"unsharded": work / "unsharded", "sharded": work / "sharded"}
    chronozarr.encode(data, out["unsharded"], **kw)
    chronozarr.encode(data, out["sharded"], shard_time=months, **kw)
    bare = work / "sharded-no-shard_bytes"
    shutil.copytree(out["sharded"], bare)
    root = json.loads((bare / "zarr.json").read_text())
    del root["attributes"]["chronozarr"]["shard_bytes"]
    (bare / "zarr.json").write_text(json.dumps(root))
    out["sharded, no shard_bytes"] = bare
    return out


def cold_read(url: str) -> dict[str, Any]:
    """Open, read timestep 0 (level 0, every cell), then timestep 1; requests and bytes of each."""
    t0 = time.perf_counter()
    reader = chronozarr.open_store(url)
    reader.read(0, 0)
    first = time.perf_counter() - t0
    s = reader.store.stats
    cold = {
        "gets": s.gets,
        "ranges": s.range_gets,
        "heads": s.heads,
        "requests": s.gets + s.range_gets + s.heads,
        "bytes": s.bytes_read,
        "seconds": first,
    }
    s.reset()
    t1 = time.perf_counter()
    reader.read(1, 0)
    cold["delta_requests"] = s.gets + s.range_gets + s.heads
    cold["delta_bytes"] = s.bytes_read
    cold["delta_seconds"] = time.perf_counter() - t1
    return cold


def bench_reading(stores: dict[str, Path], serve_root: Path, repeat: int) -> tuple[str, list]:
    for name, path in stores.items():
        shutil.copytree(path, serve_root / name.replace(", ", "-").replace(" ", "-"))
    rows = []
    if NGINX.exists():
        server: Any = NginxServer(serve_root, serve_root.parent / "nginx-prefix")
        host = "nginx (docs/hosting.md server block)"
    else:
        server = RangeServer(serve_root)
        host = "Python Range server (nginx absent)"
    with server:
        for name in stores:
            url = f"{server.url}/{name.replace(', ', '-').replace(' ', '-')}"
            cold_read(url)  # warm-up, not measured: page cache, codec set-up
            runs = [cold_read(url) for _ in range(repeat)]
            row = dict(runs[0])
            row["seconds"] = statistics.median(r["seconds"] for r in runs)
            row["delta_seconds"] = statistics.median(r["delta_seconds"] for r in runs)
            if isinstance(server, NginxServer):  # the server saw what the reader counted
                before = len(server.log())
                cold_read(url)
                seen = server.log()[before:]
                assert len(seen) == row["requests"] + row["delta_requests"], (name, len(seen))
            rows.append((name, row))
    return host, rows


def bench_publish(stores: dict[str, Path], workers: int) -> list:
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    rows = []
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        os.environ.update(
            AWS_ACCESS_KEY_ID="bench",
            AWS_SECRET_ACCESS_KEY="bench",
            AWS_REGION="us-east-1",
            AWS_ENDPOINT_URL=endpoint,
        )
        import boto3

        s3 = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        for name in ("unsharded", "sharded"):
            bucket = f"bench-{uuid.uuid4().hex[:10]}"
            s3.create_bucket(Bucket=bucket)
            url = f"s3://{bucket}/{name}"
            t0 = time.perf_counter()
            result = publish(stores[name], url, workers=workers)
            seconds = time.perf_counter() - t0
            t1 = time.perf_counter()
            again = publish(stores[name], url, workers=workers)
            noop = time.perf_counter() - t1
            assert again.uploaded == []
            rows.append((name, len(result.uploaded), result.bytes, seconds, noop))
    finally:
        server.stop()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--months", type=int, default=12)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--bands", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument(
        "--no-doc", action="store_true", help="print only; leave docs/benchmarks-archive.md"
    )
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="cz-bench-remote-") as tmp:
        work = Path(tmp)
        stores = build(work / "stores", args.months, args.size, args.bands)
        serve_root = work / "www"
        serve_root.mkdir()
        host, reads = bench_reading(stores, serve_root, args.repeat)
        pubs = bench_publish(stores, args.workers)

    grid = -(-args.size // CS)
    lines = [
        "Command: `python bench/bench_remote.py"
        f" --months {args.months} --size {args.size} --bands {args.bands}`",
        "",
        f"Store: {args.months} months x {args.bands} bands x {args.size} x {args.size} uint16,"
        f" cs {CS} (level 0 grid {grid} x {grid}), star-delta every 6, zstd 5; sharded:"
        f" shard_time {args.months}. Host: {host} on 127.0.0.1. Reader: `chronozarr.open_store`"
        " (obstore, keep-alive). Requests and bytes counted by the reader's store"
        + (" and equal to nginx's access log." if NGINX.exists() else "."),
        "",
        "| store | cold open + timestep 0 (level 0): requests | GET / range / HEAD | bytes |"
        " time (median) | then timestep 1 (delta): requests | bytes |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in reads:
        lines.append(
            f"| {name} | {r['requests']} | {r['gets']} / {r['ranges']} / {r['heads']} |"
            f" {r['bytes']:,} | {r['seconds'] * 1000:.1f} ms | {r['delta_requests']} |"
            f" {r['delta_bytes']:,} |"
        )
    lines += [
        "",
        "Unsharded: one GET per cell (the root zarr.json carries every array's metadata);"
        " sharded with shard_bytes: one bounded index range plus one chunk range per cell;"
        " without shard_bytes: a HEAD per shard first (spec 7.3). A delta timestep costs one"
        " read per cell once its anchor is cached (at most two without, spec 10).",
        "",
        f"`cz publish` to moto's S3 server on 127.0.0.1 ({args.workers} workers; moto, a Python"
        " server in the same process, is the bottleneck, so these are lower bounds):",
        "",
        "| store | objects | MB | time | objects/s | MB/s | re-publish, nothing changed |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, n, nbytes, seconds, noop in pubs:
        lines.append(
            f"| {name} | {n} | {nbytes / 1e6:.1f} | {seconds:.2f} s | {n / seconds:.0f} |"
            f" {nbytes / 1e6 / seconds:.1f} | {noop:.2f} s |"
        )
    body = "\n".join(lines)
    print(body)
    if not args.no_doc:
        update_section("Remote reading and publishing", body)


if __name__ == "__main__":
    main()

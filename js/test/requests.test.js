// What the reader asks the host for: one GET to open, at most two chunk reads per cell-timestep
// (Invariant 2), bounded ranges and no HEAD when shard_bytes lists the shard (7.3), the HEAD
// fallback when it does not, prefetch order (anchors first, volatile cells first), caches within
// their byte budget, and AbortSignal on every read.

import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import http from "node:http";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { gzipSync } from "node:zlib";
import { CorruptStoreError, openStore } from "../chronozarr/decoder.js";
import { HttpSource } from "../chronozarr/http.js";
import { countingFetch, fileSize, servedFixtures } from "./fixtures.js";

const { dir, manifest, server } = servedFixtures();

const byName = Object.fromEntries([...manifest.stores, ...manifest.derived].map((s) => [s.name, s]));
const urlOf = (entry) => `${server.url}/${entry.path}`;

/** Classify a logged request: root/meta, index read, chunk read, HEAD. */
function classify(entry, req, store) {
  const rel = decodeURIComponent(new URL(req.url).pathname).slice(`/${entry.path}/`.length);
  if (req.method === "HEAD") return { kind: "head", rel };
  if (rel.endsWith("zarr.json")) return { kind: "meta", rel };
  const m = /^(\d+)\/(data|mask|coverage)\/c\//.exec(rel);
  if (!m) return { kind: "other", rel };
  const arr = store.levels[Number(m[1])][m[2]];
  if (arr.sharding && req.range) {
    const size = fileSize(path.join(dir, entry.path, rel));
    const N = arr.sharding.indexBytes;
    const want = arr.sharding.indexLocation === "end" ? `bytes=${size - N}-${size - 1}` : `bytes=0-${N - 1}`;
    if (req.range === want) return { kind: "index", rel, variable: m[2] };
  }
  return { kind: "chunk", rel, variable: m[2] };
}

describe("requests", () => {
  test("open costs one GET when the root carries consolidated metadata", async () => {
    const entry = byName["uint16-star-delta-shard4-zstd"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f });
    assert.equal(f.log.length, 1);
    assert.match(f.log[0].url, /zarr\.json$/);
    assert.ok(store.levels.length > 1);
  });

  test("a chunk's decoder is built while its GET is in flight, not after the bytes arrive", async () => {
    const entry = byName["uint16-star-delta-shard4-zstd"];
    const events = [];
    const slow = async (url, init) => {
      const r = await fetch(url, init);
      if (/\/c\//.test(url)) {
        events.push(`got ${new URL(url).pathname.split("/c/")[1]}`);
        await new Promise((res) => setTimeout(res, 30)); // the body still on the wire
      }
      return r;
    };
    const store = await openStore(urlOf(entry), {
      fetch: slow,
      makeDecoder: (array, fallback) => {
        events.push(`decoder ${array.path}`);
        return fallback(array);
      },
    });
    await store.readCell({ t: 0, row: 0, col: 0 });
    const first = events.findIndex((e) => e.startsWith("got "));
    const dec = events.indexOf(`decoder ${store.levels[0].data.path}`);
    assert.ok(dec >= 0 && first >= 0 && dec < first, `decoder requested before the first chunk response: ${events.join(", ")}`);
  });

  test("without consolidated metadata the reader falls back to per-array zarr.json", async () => {
    const entry = byName["nocons-uint8"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f });
    const metas = f.log.map((r) => new URL(r.url).pathname.slice(`/${entry.path}/`.length));
    assert.ok(metas.includes("0/zarr.json") && metas.includes("0/data/zarr.json"), metas.join(" "));
    assert.equal(store.levels.length, entry.levels.length);
  });

  for (const name of [
    "uint16-star-delta-shard4-zstd",
    "uint8-star-delta-shard12-blosc-lz4-noshuffle",
    "uint16-star-delta-unsharded-gzip",
    "uint8-star-delta-shard4-blosc-zstd-shuffle",
  ]) {
    test(`<= 2 chunk reads per cell-timestep, no HEAD, bounded ranges: ${name}`, async () => {
      const entry = byName[name];
      const f = countingFetch();
      // cacheBytes 0: no anchor stays resident, so every delta pays both reads (the worst case).
      const store = await openStore(urlOf(entry), { fetch: f, cacheBytes: 0, rawCacheBytes: 0 });
      const indexReads = new Map();
      let checked = 0;
      for (const L of store.levels) {
        for (let t = 0; t < store.nTime; t++) {
          for (let r = 0; r < L.grid[0]; r++) {
            for (let c = 0; c < L.grid[1]; c++) {
              f.log.length = 0;
              await store.readCell({ t, level: L.index, row: r, col: c });
              const kinds = f.log.map((q) => ({ ...classify(entry, q, store), range: q.range }));
              const chunks = kinds.filter((k) => k.kind === "chunk");
              const where = `level ${L.index} t ${t} cell (${r}, ${c})`;
              assert.equal(kinds.filter((k) => k.kind === "head").length, 0, `${where}: HEAD issued`);
              const want = store.temporal.reference(t) === null ? 1 : 2;
              assert.ok(chunks.length <= want, `${where}: ${chunks.length} chunk reads (${chunks.map((k) => k.rel)})`);
              for (const q of f.log) if (q.range) assert.match(q.range, /^bytes=\d+-\d+$/, `${where}: unbounded range`);
              for (const k of kinds.filter((x) => x.kind === "index")) {
                indexReads.set(k.rel, (indexReads.get(k.rel) ?? 0) + 1);
              }
              assert.equal(kinds.filter((k) => k.kind === "other" || k.kind === "meta").length, 0, where);
              checked++;
            }
          }
        }
      }
      for (const [rel, n] of indexReads) assert.equal(n, 1, `index of ${rel} read ${n} times (must be cached)`);
      if (store.levels[0].sharded) assert.ok(indexReads.size > 0);
      else assert.equal(indexReads.size, 0);
      assert.ok(checked > 20);
    });
  }

  test("with the anchor resident a delta timestep costs exactly one chunk read", async () => {
    const entry = byName["uint16-star-delta-shard4-zstd"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f, rawCacheBytes: 0 });
    const delta = [...Array(store.nTime).keys()].find((t) => store.temporal.reference(t) !== null);
    await store.readCell({ t: store.temporal.reference(delta), row: 0, col: 0 });
    f.log.length = 0;
    await store.readCell({ t: delta, row: 0, col: 0 });
    const kinds = f.log.map((q) => classify(entry, q, store).kind).filter((k) => k !== "index");
    assert.deepEqual(kinds, ["chunk"]);
  });

  test("HEAD fallback for a shard shard_bytes does not list; a missing shard reads as fill", async () => {
    const entry = byName["holes-uint16"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f });
    f.log.length = 0;
    await store.readCell({ t: 0, level: 0, row: 1, col: 1 }); // listed? no: "0/1/1" was removed
    assert.deepEqual(
      f.log.map((q) => q.method),
      ["HEAD", "GET", "GET"],
    );
    f.log.length = 0;
    const cell = await store.readCell({ t: 4, level: 0, row: 0, col: 1 }); // shard deleted
    assert.deepEqual(
      f.log.map((q) => q.method),
      ["HEAD"],
    );
    assert.ok(cell.data.every((v) => v === (store.nodata ?? 0)));
    f.log.length = 0;
    await store.readCell({ t: 5, level: 0, row: 0, col: 1 }); // same missing shard: cached
    assert.equal(f.log.length, 0);
  });

  test("prefetch loads anchors first, most volatile cells first, then deltas; scrubbing is then free", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f });
    const vol = await store.volatility();
    assert.equal(vol.rows, store.levels[0].grid[0]);
    f.log.length = 0;
    const progress = [];
    const result = await store.prefetch({ level: 0, concurrency: 1, onProgress: (d, n) => progress.push([d, n]) });
    const reads = f.log.map((q) => decodeURIComponent(new URL(q.url).pathname).slice(`/${entry.path}/`.length));
    const parsed = reads.map((r) => r.split("/").slice(3).map(Number)); // [t, 0, row, col]
    const isAnchor = (p) => store.temporal.isAnchor(p[0]);
    const firstDelta = parsed.findIndex((p) => !isAnchor(p));
    assert.ok(firstDelta > 0);
    assert.ok(
      parsed.slice(firstDelta).every((p) => !isAnchor(p)),
      "an anchor was read after a delta",
    );
    const L = store.levels[0];
    const nCells = L.grid[0] * L.grid[1];
    assert.equal(result.anchors, store.temporal.anchorIndices.length * nCells);
    assert.equal(result.deltas, (store.nTime - store.temporal.anchorIndices.length) * nCells);
    assert.equal(progress.at(-1)[0], progress.at(-1)[1]);
    // Cells of the first anchor in descending volatility.
    const firstCells = parsed.slice(0, nCells).map((p) => vol.data[p[2] * vol.cols + p[3]]);
    for (let i = 1; i < firstCells.length; i++) assert.ok(firstCells[i - 1] >= firstCells[i], "volatility order");
    f.log.length = 0;
    for (let t = 0; t < store.nTime; t++) {
      for (let r = 0; r < L.grid[0]; r++) for (let c = 0; c < L.grid[1]; c++) await store.readCell({ t, row: r, col: c });
    }
    assert.equal(f.log.length, 0, "after prefetch every timestep is served from the caches");
    assert.ok(store.isResident({ level: 0, cells: [{ row: 0, col: 0 }], t: 1 }));
  });

  test("caches stay within their byte budget", async () => {
    const entry = byName["uint16-none-unsharded-zstd"];
    const store = await openStore(urlOf(entry), { cacheBytes: 3000, rawCacheBytes: 1000 });
    const L = store.levels[0];
    for (let t = 0; t < store.nTime; t++) {
      for (let r = 0; r < L.grid[0]; r++) for (let c = 0; c < L.grid[1]; c++) await store.readCell({ t, row: r, col: c });
    }
    assert.ok(store.chunkCache.bytes <= 3000, `${store.chunkCache.bytes}`);
    assert.ok(store.chunkCache.size >= 1);
  });

  test("levelFor picks the largest level whose resolution does not exceed the gsd (10.3)", async () => {
    const store = await openStore(urlOf(manifest.viewer));
    assert.deepEqual(store.resolutions, [10, 20, 40]);
    assert.equal(store.levelFor(5), 0);
    assert.equal(store.levelFor(10), 0);
    assert.equal(store.levelFor(39.9), 1);
    assert.equal(store.levelFor(40), 2);
    assert.equal(store.levelFor(1e9), 2);
  });
});

describe("AbortSignal", () => {
  const slow = (ms) => {
    const inner = countingFetch();
    const f = async (url, init) => {
      await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        init.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(init.signal.reason);
        });
      });
      return inner(url, init);
    };
    f.log = inner.log;
    return f;
  };

  test("an aborted signal rejects at once, without a request", async () => {
    const entry = byName["uint16-star-delta-shard4-zstd"];
    const f = countingFetch();
    const store = await openStore(urlOf(entry), { fetch: f });
    const n = f.log.length;
    const ctrl = new AbortController();
    ctrl.abort();
    await assert.rejects(store.readCell({ t: 1, row: 0, col: 0, signal: ctrl.signal }), { name: "AbortError" });
    await assert.rejects(store.valueAt({ row: 0, col: 0, t: 1, signal: ctrl.signal }), { name: "AbortError" });
    await assert.rejects(store.prefetch({ signal: ctrl.signal }), { name: "AbortError" });
    assert.equal(f.log.length, n);
  });

  test("aborting a read in flight rejects promptly; a shared anchor load survives for other readers", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    const store = await openStore(urlOf(entry), { fetch: slow(300) });
    const ctrl = new AbortController();
    const t0 = Date.now();
    const a = store.readCell({ t: 1, row: 0, col: 0, signal: ctrl.signal });
    const b = store.readCell({ t: 0, row: 0, col: 0 }); // the same anchor as t=1 (delta_reference)
    setTimeout(() => ctrl.abort(), 20);
    await assert.rejects(a, { name: "AbortError" });
    assert.ok(Date.now() - t0 < 250, "abort did not wait for the request");
    const cell = await b;
    assert.equal(cell.t, 0);
    const all = new AbortController();
    const p = store.series({ row: 1, col: 1, signal: all.signal });
    setTimeout(() => all.abort(), 20);
    await assert.rejects(p, { name: "AbortError" });
    const q = store.prefetch({ signal: all.signal });
    await assert.rejects(q, { name: "AbortError" });
  });

  test("a stalled host fails with a timeout instead of hanging", async () => {
    const entry = byName["uint16-none-unsharded-zstd"];
    const store = await openStore(urlOf(entry), { timeout: 200 });
    store.source.fetch = (url, init) => new Promise((_, reject) => init.signal.addEventListener("abort", () => reject(init.signal.reason)));
    const t0 = Date.now();
    await assert.rejects(store.readCell({ t: 0, row: 0, col: 0 }), { name: "FetchError", message: /timed out after 200 ms/ });
    assert.ok(Date.now() - t0 < 2000);
  });
});

/** A fetch that logs each request's URL, kind (classify) and RequestInit.cache. */
function cacheLog() {
  const log = [];
  const f = (url, init = {}) => {
    log.push({ url: String(url), method: init.method ?? "GET", range: init.headers?.Range ?? null, cache: init.cache });
    return fetch(url, init);
  };
  f.log = log;
  return f;
}

describe("deltaCache: the cache mode of delta chunk GETs", () => {
  test("unsharded: every delta GET and no other request carries it; absent, no request names a mode", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    for (const mode of ["no-store", undefined]) {
      const f = cacheLog();
      const store = await openStore(urlOf(entry), { fetch: f, deltaCache: mode });
      for (let t = 0; t < store.nTime; t++) await store.readCell({ t, row: 0, col: 0 });
      let deltas = 0;
      for (const req of f.log) {
        const c = classify(entry, req, store);
        const m = /^0\/data\/c\/(\d+)\//.exec(c.rel);
        const isDelta = c.kind === "chunk" && m !== null && store.temporal.reference(Number(m[1])) !== null;
        deltas += isDelta;
        assert.equal(req.cache, isDelta ? mode : undefined, `${c.rel}: cache ${req.cache}`);
      }
      const expected = [...Array(store.nTime).keys()].filter((t) => store.temporal.reference(t) !== null).length;
      assert.ok(expected > 0, "the store has deltas");
      assert.equal(deltas, expected);
    }
  });

  test("sharded: the delta ranges carry it, the shard indices and anchors do not", async () => {
    const entry = byName["uint16-star-delta-shard4-zstd"];
    const f = cacheLog();
    const store = await openStore(urlOf(entry), { fetch: f, deltaCache: "no-store" });
    for (let t = 0; t < store.nTime; t++) await store.readCell({ t, row: 0, col: 0 });
    const kinds = f.log.map((req) => ({ ...classify(entry, req, store), cache: req.cache }));
    const marked = kinds.filter((k) => k.cache === "no-store");
    assert.ok(
      marked.every((k) => k.kind === "chunk" && k.variable === "data"),
      JSON.stringify(marked),
    );
    assert.ok(
      kinds.some((k) => k.kind === "index" && k.cache === undefined),
      "shard indices keep the default",
    );
    const deltas = [...Array(store.nTime).keys()].filter((t) => store.temporal.reference(t) !== null).length;
    assert.equal(marked.length, deltas);
    const anchors = kinds.filter((k) => k.kind === "chunk" && k.variable === "data" && k.cache === undefined);
    assert.equal(anchors.length, store.nTime - deltas);
  });
});

describe("response bodies (http.js readBounded)", () => {
  const big = randomBytes(3 * 1024 * 1024 + 17);
  const small = randomBytes(200_000);
  const gz = gzipSync(Buffer.alloc(900_000, 7)); // compresses ~1000x: the body outgrows Content-Length
  let host;
  before(async () => {
    host = http.createServer(async (req, res) => {
      if (req.url === "/big") {
        res.writeHead(200, { "content-length": big.byteLength });
        for (let at = 0; at < big.byteLength; at += 65536) {
          res.write(big.subarray(at, at + 65536)); // many pieces: the body arrives in many reads
          await new Promise((r) => setImmediate(r));
        }
        return res.end();
      }
      if (req.url === "/gz") {
        res.writeHead(200, { "content-length": gz.byteLength, "content-encoding": "gzip" });
        return res.end(gz);
      }
      res.writeHead(200, { "content-length": small.byteLength });
      res.end(small);
    });
    await new Promise((r) => host.listen(0, "127.0.0.1", r));
  });
  after(() => new Promise((r) => host.close(r)));
  const source = () => new HttpSource(`http://127.0.0.1:${host.address().port}/`, { timeout: 10_000 });

  test("Node's fetch gives byte streams, so these reads take the one-buffer path", async () => {
    const res = await fetch(`http://127.0.0.1:${host.address().port}/small`);
    const reader = res.body.getReader({ mode: "byob" });
    assert.ok((await reader.read(new Uint8Array(16))).value.byteLength > 0);
    await reader.cancel();
  });

  test("a body read in many pieces into its declared length is the body, byte for byte", async () => {
    const bytes = await source().request("big");
    assert.equal(bytes.byteLength, big.byteLength);
    assert.ok(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).equals(big));
    const again = await source().request("small", { maxBytes: small.byteLength });
    assert.ok(Buffer.from(again.buffer, again.byteOffset, again.byteLength).equals(small));
  });

  test("a body longer than its Content-Length (decompressed) is read whole, and still bounded", async () => {
    const bytes = await source().request("gz");
    assert.equal(bytes.byteLength, 900_000);
    assert.ok(bytes.every((b) => b === 7));
    await assert.rejects(
      source().request("gz", { maxBytes: 500_000 }),
      (err) => err instanceof CorruptStoreError && /longer than the 500000 bytes/.test(err.message),
    );
  });
});

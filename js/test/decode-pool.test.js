// Headless Chromium: the reader with its chunks decoded in Web Workers (map/decode-pool.js and
// map/decode-worker.js, as the viewer runs it) equals the Python reader bit for bit, for every
// dtype, encoding, layout and codec the browser test covers; a corrupt chunk is still a
// CorruptStoreError naming the object and the codec; and the decodes did run in the workers.
//
// Without /usr/bin/chromium these tests are skipped with the reason printed (a failure under CI=true).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { digestOfExpected } from "./digest-node.js";
import { HERE, cellOf, fixtures, loadExpected } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkip } from "./chromium.js";
import { startServer } from "./server.js";

const skip = chromiumSkip("decode pool");

const { buildViewer } = await import("../tools/build-viewer.mjs");

describe("chunks decoded in a Worker pool", { skip, timeout: 170_000 }, () => {
  const { dir, manifest } = fixtures();
  let server;
  let browser;
  let page;
  let bundleDir;
  const pageErrors = [];

  before(async () => {
    const { chromium } = await import("playwright-core");
    const { build } = await import("esbuild");
    bundleDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-pool-"));
    const common = { bundle: true, format: "esm", target: "es2022", logLevel: "error" };
    // The decode worker as the viewer ships it (build-viewer.mjs: zstd inlined, blosc and lz4
    // imported from their sibling numcodecs-*.js files on first use).
    await buildViewer(bundleDir);
    await build({
      ...common,
      stdin: {
        contents: `import * as cz from "../chronozarr/decoder.js";
          import { DecodePool } from "../chronozarr/map/decode-pool.js";
          import { digestStore } from "./digest.js";
          const pool = new DecodePool(new URL("decode-worker.js", import.meta.url), { size: 2 });
          const pooled = { ...cz, openStore: (url, o = {}) => {
            let store = null;
            const p = cz.openStore(url, { ...o, makeDecoder: pool.makeDecoder(() => store?.rootDocument) });
            return p.then((s) => (store = s));
          } };
          window.pool = pool;
          // A pool whose Worker script is missing (404) decodes on the page's thread instead.
          const broken = new DecodePool(new URL("no-such-worker.js", import.meta.url), { size: 1 });
          window.brokenPool = broken;
          window.digestBroken = (url) => {
            let store = null;
            const open = (u, o = {}) => cz.openStore(u, { ...o, makeDecoder: broken.makeDecoder(() => store?.rootDocument) }).then((s) => (store = s));
            return digestStore({ ...cz, openStore: open }, url);
          };
          window.digestPooled = (url) => digestStore(pooled, url);
          // The first bands of every cell-timestep (readCell bands), as FNV-1a hashes of their
          // bytes, and how many Worker answers were shorter than a whole chunk (cut zstd frames).
          let short = 0;
          const post = pool._post.bind(pool);
          pool._post = (msg, transfer) => post(msg, transfer).then((res) => {
            // (the prefix store is unsharded: its chunk is the chunk grid's shape)
            const whole = msg.doc?.chunk_grid?.configuration?.chunk_shape?.reduce((a, b) => a * b, 1);
            if (res.ok && msg.prefix !== undefined && res.data.length < whole) short++;
            return res;
          });
          window.readBandsPooled = async (url, bands) => {
            const s = await pooled.openStore(url);
            const out = [];
            for (let k = 0; k < s.levels.length; k++) {
              for (let t = 0; t < s.nTime; t++) {
                for (let r = 0; r < s.levels[k].grid[0]; r++) {
                  for (let c = 0; c < s.levels[k].grid[1]; c++) {
                    const cell = await s.readCell({ t, level: k, row: r, col: c, bands });
                    const b = new Uint8Array(cell.data.buffer, cell.data.byteOffset, cell.data.byteLength);
                    let h = 0x811c9dc5;
                    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 16777619) >>> 0;
                    out.push(h);
                  }
                }
              }
            }
            return { hashes: out, short };
          };
          window.readPooled = async (url, at) => {
            const s = await pooled.openStore(url);
            try { await s.readCell(at); return { ok: true }; }
            catch (err) { return { ok: false, name: err.name, message: err.message }; }
          };
          window.ready = true;`,
        resolveDir: HERE,
        loader: "js",
      },
      outfile: path.join(bundleDir, "page.js"),
    });
    writeFileSync(path.join(bundleDir, "index.html"), `<!doctype html><meta charset="utf-8"><script type="module" src="page.js"></script>`);
    server = await startServer({ mounts: { "/fixtures/": dir, "/pool/": bundleDir } });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    page = await browser.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/pool/index.html`);
    await page.waitForFunction(() => window.ready === true, null, { timeout: 30000 });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
  });

  test("every cell-timestep equals the Python reader, decoded in the workers (zstd by zstddec)", async () => {
    const stores = manifest.stores.filter(
      (s) =>
        (s.case.dtype === "uint16" && s.case.encoding === "star-delta" && ["shard4", "unsharded"].includes(s.case.layout)) ||
        (s.case.dtype === "uint8" && s.case.encoding === "star-delta" && s.case.layout === "unsharded") ||
        (s.case.dtype === "float32" && s.case.layout === "shard12" && s.case.codec.startsWith("blosc")) ||
        (s.case.dtype === "int16" && s.case.layout === "unsharded" && s.case.codec === "gzip"),
    );
    const codecs = new Set(stores.map((s) => s.case.codec));
    assert.ok(codecs.has("zstd") && codecs.has("gzip") && [...codecs].some((c) => c.startsWith("blosc")), [...codecs].join(", "));
    for (const entry of [...stores, manifest.viewer]) {
      const before = await page.evaluate(() => window.pool.stats.decoded);
      const got = await page.evaluate((u) => window.digestPooled(u), `${server.url}/fixtures/${entry.path}`);
      const want = digestOfExpected(entry, loadExpected(dir, entry));
      assert.equal(got.cells, want.cells, `${entry.name}: cells`);
      assert.equal(got.digest, want.digest, `${entry.name}: digest through the pool differs from the Python reader`);
      const after = await page.evaluate(() => window.pool.stats.decoded);
      assert.ok(after > before, `${entry.name}: no chunk was decoded in the workers`);
    }
    assert.deepEqual(pageErrors, []);
  });

  test("the first bands of multi-block zstd chunks, decoded only that far in the workers, equal the Python reader", async () => {
    const entry = manifest.prefix;
    const expected = loadExpected(dir, entry);
    const fnv = (a) => {
      const b = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
      let h = 0x811c9dc5;
      for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i], 16777619) >>> 0;
      return h;
    };
    const got = await page.evaluate((u) => window.readBandsPooled(u, 1), `${server.url}/fixtures/${entry.path}`);
    const want = [];
    for (let k = 0; k < entry.levels.length; k++) {
      const [nt, nb, h, w] = entry.levels[k].shape;
      const cs = entry.case.cs;
      const grid = entry.levels[k].grid;
      for (let t = 0; t < nt; t++) {
        for (let r = 0; r < grid[0]; r++) {
          for (let c = 0; c < grid[1]; c++) {
            const cell = cellOf(expected[k][t].data, nb, h, w, cs, r, c, Uint16Array);
            want.push(fnv(cell.subarray(0, cell.length / nb)));
          }
        }
      }
    }
    assert.deepEqual(got.hashes, want, "the first band through the pool differs from the Python reader");
    assert.ok(got.short >= 8, `only ${got.short} Worker answers were cut to the first band`);
  });

  test("a pool whose Worker failed to load decodes on the page's thread, with the same values", async () => {
    const entry = manifest.viewer;
    const got = await page.evaluate((u) => window.digestBroken(u), `${server.url}/fixtures/${entry.path}`);
    const want = digestOfExpected(entry, loadExpected(dir, entry));
    assert.equal(got.digest, want.digest, "digest with a failed pool differs from the Python reader");
    assert.equal(await page.evaluate(() => window.brokenPool.broken), true, "the pool noticed its Worker failed");
  });

  test("a corrupt chunk decoded in a worker is a CorruptStoreError naming the object and codec", async () => {
    const url = `${server.url}/fixtures/${manifest.broken["corrupt-chunk"]}`;
    const got = await page.evaluate(({ u }) => window.readPooled(u, { t: 1, level: 0, row: 0, col: 0 }), { u: url });
    assert.equal(got.ok, false);
    assert.equal(got.name, "CorruptStoreError");
    assert.match(got.message, /0\/data\/c\/1\/0\/0\/0: zstd decoding failed/);
  });
});

// One fuzz case in a child process (harness.js starts it with --max-old-space-size and kills it
// at a timeout or an RSS cap):  node case.js STORE_URL [READER_MODULE]
//
// Runs the reader's entry points on the store one after the other and prints one JSON line per
// entry: {entry, class: "ok" | "typed" | "untyped", digest | sig, msg}. "typed" is a
// ChronozarrError (the reader's typed errors); anything else that escapes is "untyped", with the
// error's type and the innermost reader frame. Every URL the reader fetches is checked against
// the store's prefix here too (the server's log is the other check): a URL elsewhere is recorded
// as an escape and refused, so a case never reaches another host.

import { createHash } from "node:crypto";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [storeUrl, readerPath] = process.argv.slice(2);
const here = path.dirname(new URL(import.meta.url).pathname);
const reader = await import(pathToFileURL(readerPath ?? path.join(here, "..", "..", "chronozarr", "decoder.js")).href);
const { ChronozarrError, openStore } = reader;

const escapes = [];
const guardedFetch = (url, init) => {
  const href = new URL(String(url)).href;
  if (!href.startsWith(storeUrl)) {
    escapes.push(href.slice(0, 200));
    return Promise.reject(new Error(`fuzz: refused a URL outside the store: ${href.slice(0, 200)}`));
  }
  return fetch(href, init);
};

/** A digest of what an entry returned (typed arrays by their bytes), compared to the baseline. */
function digest(value) {
  const h = createHash("sha256");
  const walk = (v) => {
    if (ArrayBuffer.isView(v)) {
      h.update(`${v.constructor.name}:`);
      h.update(new Uint8Array(v.buffer, v.byteOffset, v.byteLength));
    } else if (Array.isArray(v)) {
      h.update("[");
      v.forEach(walk);
      h.update("]");
    } else if (v !== null && typeof v === "object") {
      for (const k of Object.keys(v).sort()) {
        h.update(`${k}=`);
        walk(v[k]);
      }
    } else {
      h.update(`${typeof v}:${String(v)};`);
    }
  };
  walk(value);
  return h.digest("hex").slice(0, 16);
}

function signature(err) {
  const frames = String(err?.stack ?? "")
    .split("\n")
    .slice(1);
  const mine = frames.find((f) => f.includes("/chronozarr/")) ?? frames[0] ?? "";
  const loc = /([\w.-]+\.js):(\d+)/.exec(mine);
  return `${err?.name ?? typeof err} at ${loc ? `${loc[1]}:${loc[2]}` : "?"}`;
}

// At most this many cells per level and timesteps are read: the base stores have 2 x 2 cells at
// level 0 and 4 timesteps, and a mutated size must not make the harness itself loop for ever.
const MAX_CELLS = 3;
const MAX_T = 6;

let store = null;
const entries = {
  async open() {
    store = await openStore(storeUrl, { fetch: guardedFetch, timeout: 5000 });
    const levels = store.levels.map((L) => ({ path: L.path, shape: L.shape, cs: L.cs, grid: L.grid, dtype: L.dtype, t: L.transform }));
    return { times: store.times, bands: store.bands, nodata: store.nodata, encoding: store.encoding, levels };
  },
  async read() {
    const out = [];
    for (const L of store.levels) {
      for (let t = 0; t < Math.min(store.nTime, MAX_T); t++) {
        for (let row = 0; row < Math.min(L.grid[0], MAX_CELLS); row++) {
          for (let col = 0; col < Math.min(L.grid[1], MAX_CELLS); col++) {
            const cell = await store.readCell({ t, level: L.index, row, col });
            const valid = await store.validity({ t, level: L.index, row, col, cell });
            const mask = await store.readPlane("mask", { t, level: L.index, row, col });
            const coverage = await store.readPlane("coverage", { t, level: L.index, row, col });
            out.push(cell.data, valid, mask, coverage);
          }
        }
      }
    }
    return out;
  },
  async pixel() {
    const L = store.levels[0];
    const last = { row: Math.min(L.height, 64) - 1, col: Math.min(L.width, 64) - 1 };
    const v = await store.valueAt({ row: 0, col: 0, t: 0 });
    const s = await store.series(last);
    return [v, s];
  },
  async volatility() {
    const vol = await store.volatility();
    const order = await store.cellsByVolatility({
      level: 0,
      cells: [
        { row: 0, col: 0 },
        { row: 0, col: 1 },
      ],
    });
    const got = await store.prefetch({ level: store.levels.length - 1, cells: [{ row: 0, col: 0 }] });
    return [vol, order, got.anchors, got.deltas];
  },
};

for (const [entry, run] of Object.entries(entries)) {
  let result;
  try {
    if (entry !== "open" && store === null) break;
    result = { entry, class: "ok", digest: digest(await run()) };
  } catch (err) {
    const typed = err instanceof ChronozarrError;
    result = {
      entry,
      class: typed ? "typed" : "untyped",
      sig: typed ? err.name : signature(err),
      msg: String(err?.message ?? err).slice(0, 300),
    };
  }
  if (escapes.length) result = { entry, class: "escape", sig: `fetched ${escapes[0]}`, was: result.class };
  escapes.length = 0;
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (entry === "open" && result.class !== "ok") break;
}
store?.close();
const rss = process.resourceUsage().maxRSS * 1024;
process.stdout.write(`${JSON.stringify({ entry: "_end", maxRSS: rss })}\n`);
process.exit(0);

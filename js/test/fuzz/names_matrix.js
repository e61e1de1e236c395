// Crafted-name stores (decision 0016): every hostile name of tests/fuzz/mutate.py (and a few more) in
// every name field of a real fixture store, read by a reader through a fetch that serves the
// store at http://h.test/case/store/ and a decoy copy of it at http://h.test/case/secret/ (what a
// ".." reaches). Counts, per reader: escape (a URL outside the store was requested), decoy (the
// read succeeded with data fetched from outside), typed, untyped, ok.
//
//   node test/fuzz/names_matrix.js [path/to/decoder.js]     (default: this checkout's reader)

import { readFileSync, readdirSync, statSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { fixtures } from "../fixtures.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const readerPath = process.argv[2] ?? path.join(HERE, "..", "..", "chronozarr", "decoder.js");
const { ChronozarrError, openStore } = await import(pathToFileURL(path.resolve(readerPath)).href);
const { dir, manifest } = fixtures();

const STORE = "http://h.test/case/store/";
const DECOY = "http://h.test/case/secret/";
const NAMES = [
  "..",
  "../secret",
  "../secret/0",
  "0/../../secret/0",
  "../../case/secret/0",
  "/etc",
  "/case/secret/0",
  "file:///etc",
  "http://127.0.0.1:9/x",
  "s3://bucket/x",
  "C:\\secret",
  "..\\secret\\0",
  "%2e%2e",
  "%2e%2e/secret/0",
  ".",
  "",
  "a\u0000b",
  "0/",
  "x".repeat(5000),
];
const FIELDS = {
  variable: (cz, v) => (cz.variable = v),
  mask_variable: (cz, v) => (cz.mask_variable = v),
  coverage_variable: (cz, v) => (cz.coverage_variable = v),
  volatility_path: (cz, v) => (cz.volatility_path = v),
  "levels[0].path": (cz, v) => (cz.levels[0].path = v),
  "levels[1].path": (cz, v) => (cz.levels[1].path = v),
};

function load(name) {
  const root = path.join(dir, manifest.stores.find((s) => s.name === name).path);
  const files = new Map();
  const walk = (d) => {
    for (const f of readdirSync(d)) {
      const p = path.join(d, f);
      if (statSync(p).isDirectory()) walk(p);
      else files.set(path.relative(root, p).split(path.sep).join("/"), new Uint8Array(readFileSync(p)));
    }
  };
  walk(root);
  return files;
}

const base = load("uint16-star-delta-shard4-gzip");
const counts = { stores: 0, escape: 0, decoy: 0, typed: 0, untyped: 0, ok: 0 };
for (const set of Object.values(FIELDS)) {
  for (const value of NAMES) {
    const files = new Map(base);
    const doc = JSON.parse(new TextDecoder().decode(files.get("zarr.json")));
    set(doc.attributes.chronozarr, value);
    files.set("zarr.json", new TextEncoder().encode(JSON.stringify(doc)));
    const outside = [];
    let decoyBytes = 0;
    const fetch = async (url, init = {}) => {
      const href = new URL(String(url)).href;
      let key = null;
      if (href.startsWith(STORE)) key = href.slice(STORE.length);
      else {
        outside.push(href);
        if (href.startsWith(DECOY)) key = href.slice(DECOY.length);
      }
      const body = key === null ? undefined : href.startsWith(STORE) ? files.get(key) : base.get(key);
      if (body === undefined) return new Response("", { status: 404 });
      if (!href.startsWith(STORE)) decoyBytes += body.byteLength;
      const r = init.headers?.Range;
      if (init.method === "HEAD") return new Response(null, { headers: { "content-length": String(body.byteLength) } });
      if (r) {
        const m = /^bytes=(\d*)-(\d*)$/.exec(r);
        const s = m[1] === "" ? body.byteLength - Number(m[2]) : Number(m[1]);
        const e = m[1] === "" ? body.byteLength - 1 : Number(m[2]);
        return new Response(body.slice(s, e + 1), { status: 206 });
      }
      return new Response(body, { headers: { "content-length": String(body.byteLength) } });
    };
    counts.stores++;
    let cls;
    try {
      const store = await openStore(STORE, { fetch, timeout: 5000 });
      for (const L of store.levels) {
        await store.readCell({ t: 1, level: L.index, row: 0, col: 0 });
        await store.readPlane("mask", { t: 1, level: L.index, row: 0, col: 0 });
        await store.readPlane("coverage", { t: 1, level: L.index, row: 0, col: 0 });
      }
      await store.volatility();
      cls = "ok";
    } catch (err) {
      cls = err instanceof ChronozarrError ? "typed" : "untyped";
    }
    counts[cls]++;
    if (outside.length) counts.escape++;
    if (cls === "ok" && decoyBytes > 0) counts.decoy++;
  }
}
console.log(JSON.stringify({ reader: path.relative(process.cwd(), path.resolve(readerPath)), ...counts }));

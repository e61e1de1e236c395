// Store adapter benchmark (Node): stock zarrita reading whole timesteps of a 2 x 2 cell store
// through chronozarrStore (true values) against stock zarrita reading the same store plainly
// (stored values: residuals at delta timesteps), over the Range-capable test server on 127.0.0.1.
// Prints a table and replaces the "Store adapter" section of docs/benchmarks-archive.md.
//
//   cd js && npm ci && node ../bench/js/adapter.mjs [--reps 9] [--no-write]

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const JS = path.join(REPO, "js");
// zarrita is import-only (no "require" condition): load the entry its package.json exports.
const zarritaDir = path.join(JS, "node_modules", "zarrita");
const zexp = JSON.parse(readFileSync(path.join(zarritaDir, "package.json"), "utf8")).exports["."];
const zarr = await import(pathToFileURL(path.join(zarritaDir, typeof zexp === "string" ? zexp : (zexp.import ?? zexp.default))).href);
const { startServer } = await import(pathToFileURL(path.join(JS, "test", "server.js")).href);
const { chronozarrStore } = await import(pathToFileURL(path.join(JS, "chronozarr", "store-adapter.js")).href);
const { writeSection } = await import(pathToFileURL(path.join(HERE, "report.mjs")).href);

const args = process.argv.slice(2);
const reps = Number(args[args.indexOf("--reps") + 1]) || 9;
const write = !args.includes("--no-write");
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
function counting() {
  const log = { requests: 0, bytes: 0 };
  const f = async (url, init) => {
    log.requests++;
    const res = await fetch(url, { ...init, cache: "no-store" });
    const len = Number(res.headers.get("content-length") ?? 0);
    log.bytes += len;
    return res;
  };
  return { f, log };
}

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-bench-adapter-"));
const loadBefore = os.loadavg()[0];
let server;
try {
  const store = path.join(work, "bench.zarr");
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), store, "--timesteps", "12"], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  server = await startServer({ mounts: { "/": work } });
  const url = `${server.url}/bench.zarr`;

  // Open: the adapter (one GET of the root) against zarrita with v3 consolidated metadata.
  const openAdapter = [];
  const openPlain = [];
  let adapterOpenRequests = 0;
  let plainOpenRequests = 0;
  for (let i = 0; i < reps; i++) {
    const a = counting();
    let t0 = performance.now();
    const s = await chronozarrStore(url, { fetch: a.f });
    await zarr.open.v3(zarr.root(s).resolve("0/data"), { kind: "array" });
    openAdapter.push(performance.now() - t0);
    adapterOpenRequests = a.log.requests;
    const p = counting();
    t0 = performance.now();
    const fs = await zarr.withConsolidatedMetadata(new zarr.FetchStore(url, { fetch: p.f }), { format: "v3" });
    await zarr.open.v3(zarr.root(fs).resolve("0/data"), { kind: "array" });
    openPlain.push(performance.now() - t0);
    plainOpenRequests = p.log.requests;
  }

  // Whole timesteps (2 bands x 1024 x 1024 = 4 chunks), anchors resident in the adapter.
  const a = counting();
  const adapter = await chronozarrStore(url, { fetch: a.f });
  const arrA = await zarr.open.v3(zarr.root(adapter).resolve("0/data"), { kind: "array" });
  const p = counting();
  const plainStore = await zarr.withConsolidatedMetadata(new zarr.FetchStore(url, { fetch: p.f }), { format: "v3" });
  const arrP = await zarr.open.v3(zarr.root(plainStore).resolve("0/data"), { kind: "array" });
  const temporal = adapter.reader.temporal;
  const deltas = [...Array(adapter.reader.nTime).keys()].filter((t) => temporal.reference(t) !== null);
  const anchors = [...Array(adapter.reader.nTime).keys()].filter((t) => temporal.reference(t) === null);
  for (const t of anchors) await zarr.get(arrA, [t, null, null, null]); // anchors resident
  // Adapter and plain reads alternate frame by frame, so load drift on a shared machine hits
  // both alike.
  const timePair = async (ts) => {
    const out = { a: [], p: [] };
    const r0 = [a.log.requests, p.log.requests];
    const b0 = [a.log.bytes, p.log.bytes];
    for (let i = 0; i < reps; i++) {
      for (const t of ts) {
        let t0 = performance.now();
        await zarr.get(arrA, [t, null, null, null]);
        out.a.push(performance.now() - t0);
        t0 = performance.now();
        await zarr.get(arrP, [t, null, null, null]);
        out.p.push(performance.now() - t0);
      }
    }
    const frames = reps * ts.length;
    const stat = (k, j, log) => ({
      ms: median(out[k]),
      requests: (log.requests - r0[j]) / frames,
      bytes: (log.bytes - b0[j]) / frames,
    });
    return [stat("a", 0, a.log), stat("p", 1, p.log)];
  };
  // zarrita's get keeps no decoded chunks; the adapter keeps decoded anchors (as under a map
  // library) but its raw-delta cache is disabled, so every delta frame pays its 4 GETs.
  adapter.reader.rawCache.clear();
  adapter.reader.rawCache.maxBytes = 0;
  const [dA, dP] = await timePair(deltas);
  const [aA, aP] = await timePair(anchors);
  const ms = (v) => `${v.toFixed(1)} ms`;
  const ratio = (x, y) => `${(x / y).toFixed(2)}x`;
  const rows = [
    ["Open (root zarr.json + data array metadata): adapter", `${ms(median(openAdapter))}, ${adapterOpenRequests} request(s)`],
    ["Open: plain zarrita with v3 consolidated metadata", `${ms(median(openPlain))}, ${plainOpenRequests} request(s)`],
    ["Delta timestep, 2 x 2 cells, through the adapter (true values; anchors resident)", `${ms(dA.ms)}, ${dA.requests} requests, ${Math.round(dA.bytes).toLocaleString("en")} bytes`],
    ["Delta timestep, plain zarrita (residuals)", `${ms(dP.ms)}, ${dP.requests} requests, ${Math.round(dP.bytes).toLocaleString("en")} bytes`],
    ["Delta timestep: adapter / plain", ratio(dA.ms, dP.ms)],
    ["Anchor timestep through the adapter (decoded anchors resident: no request)", `${ms(aA.ms)}, ${aA.requests} requests`],
    ["Anchor timestep, plain zarrita", `${ms(aP.ms)}, ${aP.requests} requests`],
  ];
  const width = Math.max(...rows.map((x) => x[0].length));
  const shape = adapter.reader.levels[0].shape;
  console.log(`chronozarr store adapter under zarrita 0.7.5 in Node ${process.version}, ${shape.join(" x ")} uint16 cs 512 star-delta, median of ${reps}`);
  for (const [k, v] of rows) console.log(`${k.padEnd(width)}  ${v}`);
  if (write) {
    const date = new Date().toISOString().slice(0, 10);
    const section = [
      "## Store adapter (zarrita)",
      "",
      "`chronozarrStore` (js/chronozarr/store-adapter.js) under stock zarrita 0.7.5 in Node, against plain",
      "zarrita reading the same store, over the Range-capable test server on 127.0.0.1 (`cache: \"no-store\"`).",
      `Store: ${shape.join(" x ")} uint16 (a 2 x 2 cell viewport at cs 512), star-delta, anchor_interval 6,`,
      "zstd level 5, unsharded (bench/js/make_store.py). A timestep is `zarr.get(arr, [t, null, null, null])`:",
      "4 chunks. The adapter's raw-delta cache is disabled, so each delta frame pays its 4 GETs; decoded",
      "anchors stay resident, as they do under a map library.",
      `Node ${process.version}, ${os.cpus().length} cores (${os.cpus()[0]?.model ?? "unknown CPU"}), load average ${loadBefore.toFixed(1)} at the start`,
      `(shared with other work), median of ${reps} runs, ${date}.`,
      "",
      "Command: `cd js && npm ci && node ../bench/js/adapter.mjs`.",
      "",
      "| measurement | result |",
      "|---|---|",
      ...rows.map(([k, v]) => `| ${k} | ${v} |`),
      "",
      "Reading the figures: plain zarrita is the floor of fetching and decoding the same delta bytes",
      "(and returns residuals); the adapter adds the modular addition against the resident anchor (about",
      "0.3 ms per chunk in the browser benchmark above) and its own request bookkeeping. Under load the",
      "delta ratio varies from run to run (1.13x to 1.20x at a load average of 12 to 15 on 2 cores):",
      "compare runs on a quiet machine. An anchor timestep through the adapter costs no request once",
      "the anchor is decoded, where plain zarrita fetches it again.",
      "",
    ].join("\n");
    const file = path.join(REPO, "docs", "benchmarks-archive.md");
    writeSection(file, section);
    console.log(`updated ${path.relative(REPO, file)}`);
  }
} finally {
  await server?.close();
  rmSync(work, { recursive: true, force: true });
}

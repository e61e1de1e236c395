// The two zstd decoders of the viewer's decode Worker (decision 0027), on the browser bench's own
// chunks, in Node: zstddec (decode-only WebAssembly, 75 kB, what a Worker decodes with from its
// start) against numcodecs' zstd (0.75 MB, loaded on the pool's first job), in the same run.
//
//   cd js && npm ci && node ../bench/js/zstd_decoders.mjs [--repeats 20]
//
// Prints, per decoder: the time to load and compile it (import + init, cold process: each
// decoder is loaded first in a child process of its own), and the decode time per chunk of the 8
// chunks of timesteps 0 and 1 (an anchor and a delta residual) of the bench store
// (bench/js/make_store.py), with the ratio numcodecs / zstddec, and checks that both decode
// every chunk to the same bytes. Nothing is written: the figures go into docs/benchmarks-archive.md by hand.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const MODULES = path.join(REPO, "js", "node_modules");
const args = process.argv.slice(2);
const repeats = args.includes("--repeats") ? Number(args[args.indexOf("--repeats") + 1]) : 20;

const loaders = {
  zstddec: async () => {
    const { ZSTDDecoder } = await import(pathToFileURL(path.join(MODULES, "zstddec", "dist", "zstddec.mjs")).href);
    const d = new ZSTDDecoder();
    await d.init();
    return (bytes, n) => d.decode(bytes, n);
  },
  numcodecs: async () => {
    const Zstd = (await import(pathToFileURL(path.join(MODULES, "numcodecs", "dist", "zstd.js")).href)).default;
    const z = Zstd.fromConfig({ level: 1 });
    return (bytes) => z.decode(bytes);
  },
};

if (args[0] === "--load-only") {
  // Child process: the cold load of one decoder, and its first decode of one chunk.
  const t0 = performance.now();
  const decode = await loaders[args[1]]();
  const t1 = performance.now();
  await decode(new Uint8Array(readFileSync(args[2])), Number(args[3]));
  console.log(JSON.stringify({ load: t1 - t0, first: performance.now() - t1 }));
  process.exit(0);
}

const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-zstd-bench-"));
try {
  const store = path.join(work, "store.zarr");
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), store, "--timesteps", "2"], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  const chunkShape = JSON.parse(readFileSync(path.join(store, "0", "data", "zarr.json"), "utf8")).chunk_grid.configuration.chunk_shape;
  const raw = chunkShape.reduce((a, b) => a * b, 2); // uint16
  const files = [];
  for (const t of [0, 1]) for (const r of [0, 1]) for (const c of [0, 1]) files.push(path.join(store, "0", "data", "c", String(t), "0", String(r), String(c)));
  const chunks = files.map((f) => new Uint8Array(readFileSync(f)));
  const rows = {};
  const outputs = {};
  for (const name of Object.keys(loaders)) {
    const cold = spawnSync(process.execPath, [fileURLToPath(import.meta.url), "--load-only", name, files[0], String(raw)], { encoding: "utf8" });
    if (cold.status !== 0) throw new Error(`${name} cold load failed:\n${cold.stderr}`);
    const { load, first } = JSON.parse(cold.stdout);
    const decode = await loaders[name]();
    for (const b of chunks) await decode(b, raw); // warm
    const t0 = performance.now();
    for (let i = 0; i < repeats; i++) for (const b of chunks) await decode(b, raw);
    const per = (performance.now() - t0) / (repeats * chunks.length);
    outputs[name] = await Promise.all(chunks.map((b) => decode(b, raw)));
    rows[name] = { load, first, per };
  }
  const same = outputs.zstddec.every((a, i) => {
    const b = outputs.numcodecs[i];
    return a.length === b.length && a.every((v, k) => v === b[k]);
  });
  if (!same) throw new Error("zstddec and numcodecs decoded a chunk to different bytes");
  const mb = (chunks.reduce((a, b) => a + b.byteLength, 0) / chunks.length / 1e6).toFixed(2);
  for (const [name, r] of Object.entries(rows)) {
    console.log(`${name}: cold load + compile ${r.load.toFixed(1)} ms, first decode ${r.first.toFixed(1)} ms; ${r.per.toFixed(2)} ms per chunk (${chunks.length} chunks of ${mb} MB mean, ${repeats} repeats)`);
  }
  console.log(`numcodecs / zstddec per chunk: ${(rows.numcodecs.per / rows.zstddec.per).toFixed(2)}; same bytes: ${same}; load average ${os.loadavg()[0].toFixed(1)}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}

// Cost of the bounded decoders (decision 0016, js/chronozarr/bounded.js) against the plain ones
// replace, in the same run, in Node:  node bench/js/bounded.mjs [reps]
//
// One 4 x 512 x 512 uint16 chunk (2,097,152 bytes, the size of spec 8's measured chunk) of smooth
// synthetic reflectances plus noise. gzip: zarrita's GzipCodec (DecompressionStream, whole
// stream) vs gunzipBounded (DecompressionStream fed 4 KiB at a time, counted); zstd: numcodecs'
// decode vs checkZstd + the same decode. Median of `reps` runs interleaved ABBA; prints JSON.

import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { gzipSync } from "node:zlib";
import { checkZstd, gunzipBounded } from "../../js/chronozarr/bounded.js";

// zarrita is import-only (no "require" condition): load the entry its package.json exports.
const zarritaDir = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "js", "node_modules", "zarrita");
const zexp = JSON.parse(readFileSync(path.join(zarritaDir, "package.json"), "utf8")).exports["."];
const { registry } = await import(pathToFileURL(path.join(zarritaDir, typeof zexp === "string" ? zexp : (zexp.import ?? zexp.default))).href);

const reps = Number(process.argv[2] ?? 30);
const n = 4 * 512 * 512;
const data = new Uint16Array(n);
let seed = 1;
for (let i = 0; i < n; i++) {
  seed = (seed * 1103515245 + 12345) >>> 0;
  const x = i % 512;
  const y = (i >> 9) % 512;
  data[i] = 1500 + 400 * Math.sin(x / 40) * Math.cos(y / 55) + (seed >>> 26);
}
const raw = new Uint8Array(data.buffer);
const gz = new Uint8Array(gzipSync(raw, { level: 5 }));
const Zstd = await (await registry.get("zstd"))();
const zcodec = Zstd.fromConfig({ level: 5 });
const zs = await zcodec.encode(raw);
const Gzip = await (await registry.get("gzip"))();
const gcodec = Gzip.fromConfig({});

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
async function timeEach(fns) {
  const out = fns.map(() => []);
  for (let i = 0; i < reps; i++) {
    // ABBA: the first decode after a switch pays for the previous one's garbage, so alternate
    for (const k of i % 2 ? [...fns.keys()].reverse() : fns.keys()) {
      const t0 = performance.now();
      const got = await fns[k]();
      out[k].push(performance.now() - t0);
      if (got.byteLength !== raw.byteLength) throw new Error("wrong size");
    }
  }
  return out.map((xs) => Math.round(median(xs) * 100) / 100);
}

const [gzPlain, gzBounded] = await timeEach([() => gcodec.decode(gz), () => gunzipBounded(gz, raw.byteLength)]);
const [zPlain, zBounded] = await timeEach([
  () => zcodec.decode(zs),
  () => {
    checkZstd(zs, raw.byteLength);
    return zcodec.decode(zs);
  },
]);
console.log(
  JSON.stringify({
    chunk_bytes: raw.byteLength,
    gzip_bytes: gz.byteLength,
    zstd_bytes: zs.byteLength,
    reps,
    gzip_plain_ms: gzPlain,
    gzip_bounded_ms: gzBounded,
    gzip_ratio: Math.round((gzBounded / gzPlain) * 100) / 100,
    zstd_plain_ms: zPlain,
    zstd_bounded_ms: zBounded,
    zstd_ratio: Math.round((zBounded / zPlain) * 100) / 100,
  }),
);

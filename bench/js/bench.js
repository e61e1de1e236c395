// The browser reader benchmark, run inside headless Chromium by bench/js/run.mjs.
// Every figure is the median of `reps` runs; all reads go over HTTP to 127.0.0.1 with the
// browser cache bypassed (cache: "no-store").

import * as zarr from "zarrita";
import { addWrappedInPlace, openStore } from "../../js/chronozarr/decoder.js";

const noStore = (url, init) => fetch(url, { ...init, cache: "no-store" });
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** Time `fns` in interleaved rounds (a, b, a, b, ...) so that background load hits each alike. */
async function timeEach(reps, fns) {
  const out = fns.map(() => []);
  for (let i = 0; i < reps; i++) {
    for (let k = 0; k < fns.length; k++) {
      const t0 = performance.now();
      await fns[k](i);
      out[k].push(performance.now() - t0);
    }
  }
  return out.map(median);
}

async function timeIt(reps, fn) {
  const out = [];
  for (let i = 0; i < reps; i++) {
    const t0 = performance.now();
    await fn(i);
    out.push(performance.now() - t0);
  }
  return median(out);
}

/** Draw band 0 of a (band, h, w) array as grey into the frame canvas at (x, y): what a viewer pays. */
const ctx = () => document.getElementById("frame").getContext("2d");
function render(data, w, h, x, y, lo = 300, hi = 2000) {
  const img = new ImageData(w, h);
  const px = img.data;
  const k = 255 / (hi - lo);
  for (let i = 0; i < w * h; i++) {
    const v = (data[i] - lo) * k;
    px[i * 4] = v;
    px[i * 4 + 1] = v;
    px[i * 4 + 2] = v;
    px[i * 4 + 3] = 255;
  }
  ctx().putImageData(img, x, y);
}

export async function run(url, { reps = 15, passes = 3 } = {}) {
  const out = { userAgent: navigator.userAgent, reps };
  const base = await openStore(url, { fetch: noStore });
  const L = base.levels[0];
  const cs = L.cs;
  const nb = base.nBands;
  const deltaT = [...Array(base.nTime).keys()].find((t) => base.temporal.reference(t) !== null);
  const anchorT = base.temporal.reference(deltaT);
  out.store = { shape: L.shape, cs, dtype: base.dtype, encoding: base.encoding, sharded: L.sharded, nTime: base.nTime };
  const cells = [0, 1].flatMap((r) => [0, 1].map((c) => ({ row: r, col: c })));

  // --- 1. decode only: one chunk's bytes in memory (2 bands x 512 x 512 uint16 zstd) -------------
  const got = await base._chunkBytes(L.data, [deltaT, 0, 0, 0]);
  const anchorBytes = await base._chunkBytes(L.data, [anchorT, 0, 0, 0]);
  out.chunkBytes = got.bytes.byteLength;
  out.chunkRawBytes = nb * cs * cs * 2;
  const zstd = new (await zarr.registry.get("zstd")())(5);
  for (let i = 0; i < 3; i++) await zstd.decode(got.bytes); // WASM warm-up
  const decode = await base._decoder(L.data);
  const anchor = await decode(anchorBytes.bytes, "bench");
  [out.decodeZarritaCodecMs, out.decodeMs, out.decodeReconstructMs] = await timeEach(reps * 2, [
    () => zstd.decode(got.bytes),
    () => decode(got.bytes, "bench"),
    async () => addWrappedInPlace(anchor, await decode(got.bytes, "bench")),
  ]);
  const deltaDecoded = await decode(got.bytes, "bench");
  out.reconstructOnlyMs = await timeIt(reps * 2, () => addWrappedInPlace(anchor, deltaDecoded));

  // --- 2. one delta timestep of one cell, anchor cached, over HTTP -------------------------------
  const s2 = await openStore(url, { fetch: noStore, rawCacheBytes: 0 });
  await s2.readCell({ t: anchorT, row: 0, col: 0 });
  await s2.readCell({ t: deltaT, row: 0, col: 0 });
  const zstore = new zarr.FetchStore(url, { overrides: { cache: "no-store" } });
  const zarr0 = await zarr.open.v3(zarr.root(zstore).resolve(`${L.path}/${base.variable}`), { kind: "array" });
  await zarr0.getChunk([deltaT, 0, 0, 0]);
  [out.deltaReadMs, out.zarritaChunkMs] = await timeEach(reps * 2, [
    () => s2.readCell({ t: deltaT, row: 0, col: 0 }),
    () => zarr0.getChunk([deltaT, 0, 0, 0]),
  ]);
  out.reconstructOverhead = out.deltaReadMs / out.zarritaChunkMs - 1;
  out.reconstructOverheadDecodeOnly = out.decodeReconstructMs / out.decodeMs - 1;

  // --- 3. time to first frame, 2 x 2 cells, cold (open + anchors + deltas + render) --------------
  out.firstFrameMs = await timeIt(Math.min(reps, 7), async () => {
    const s = await openStore(url, { fetch: noStore });
    const got4 = await Promise.all(cells.map((c) => s.readCell({ t: deltaT, ...c })));
    got4.forEach((cell, i) => render(cell.data, cell.width, cell.height, cells[i].col * cs, cells[i].row * cs));
  });
  out.firstFrameZarritaMs = await timeIt(Math.min(reps, 7), async () => {
    const zs = new zarr.FetchStore(url, { overrides: { cache: "no-store" } });
    const a = await zarr.open.v3(zarr.root(zs).resolve(`${L.path}/${base.variable}`), { kind: "array" });
    const got4 = await Promise.all(cells.map((c) => a.getChunk([deltaT, 0, c.row, c.col])));
    got4.forEach((chunk, i) => render(chunk.data, cs, cs, cells[i].col * cs, cells[i].row * cs));
  });

  // --- 4. scrub frame rate, 2 x 2 cells ----------------------------------------------------------
  const scrub = async (frame) => {
    const t0 = performance.now();
    let frames = 0;
    for (let p = 0; p < passes; p++) {
      for (let t = 0; t < base.nTime; t++) {
        await frame(t);
        frames++;
      }
    }
    return (frames * 1000) / (performance.now() - t0);
  };
  // Anchors resident (prefetch without deltas): every frame fetches 4 delta chunks over HTTP.
  const s4 = await openStore(url, { fetch: noStore, rawCacheBytes: 0 });
  const pf = await s4.prefetch({ level: 0, cells, deltas: false });
  out.prefetchAnchorsMs = pf.ms;
  const frameFrom = (s) => async (t) => {
    const got4 = await Promise.all(cells.map((c) => s.readCell({ t, ...c })));
    got4.forEach((cell, i) => render(cell.data, cell.width, cell.height, cells[i].col * cs, cells[i].row * cs));
  };
  out.scrubFpsAnchorsResident = await scrub(frameFrom(s4));
  // The same, with the viewer's read-ahead: the next 2 frames' deltas are fetched while this one
  // decodes and draws (the raw cache holds them), so network and decode overlap.
  const s4b = await openStore(url, { fetch: noStore });
  await s4b.prefetch({ level: 0, cells, deltas: false });
  const ahead = frameFrom(s4b);
  out.scrubFpsReadAhead = await scrub(async (t) => {
    const times = [1, 2].map((k) => (t + k) % base.nTime);
    s4b.prefetch({ level: 0, cells, times, concurrency: 4 }).catch(() => {});
    await ahead(t);
  });
  // Everything resident (prefetch with deltas): decode + reconstruct + render only.
  const s5 = await openStore(url, { fetch: noStore });
  const pf5 = await s5.prefetch({ level: 0, cells });
  out.prefetchAllMs = pf5.ms;
  out.prefetchAllBytes = pf5.bytes;
  out.scrubFpsAllResident = await scrub(frameFrom(s5));
  // Plain zarrita, the same chunks (stored values, no reconstruction), fetched per frame.
  out.scrubFpsZarrita = await scrub(async (t) => {
    const got4 = await Promise.all(cells.map((c) => zarr0.getChunk([t, 0, c.row, c.col])));
    got4.forEach((chunk, i) => render(chunk.data, cs, cs, cells[i].col * cs, cells[i].row * cs));
  });
  return out;
}

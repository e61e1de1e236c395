// Every cell-timestep of every test store, decoded in JS, equals the Python reader bit for bit.
// Stores: dtype (uint8, uint16, int16, float32) x encoding (none, star-delta for uint8/uint16) x
// layout (unsharded; sharded with shard_time 4 = several time shards; shard_time 12 > n_time) x
// codec (zstd, gzip, blosc zstd/lz4 with shuffle/noshuffle), half of them with mask and
// coverage, all with ragged edge cells; plus a v0.1 root, a root without consolidated metadata,
// a start-located shard index and a store with a missing shard and an empty inner chunk.

import assert from "node:assert/strict";
import path from "node:path";
import { describe, test } from "node:test";
import { openStore } from "../chronozarr/decoder.js";
import { cellOf, loadExpected, sameBytes, servedFixtures } from "./fixtures.js";

const { dir, manifest, server } = servedFixtures();
const TYPED = { uint8: Uint8Array, uint16: Uint16Array, int16: Int16Array, float32: Float32Array };

/** Decode everything of one store and compare with the Python reader. Returns counts. */
async function checkStore(entry) {
  const expected = loadExpected(dir, entry);
  const store = await openStore(`${server.url}/${entry.path}`);
  const T = TYPED[entry.dtype];
  assert.equal(store.dtype, entry.dtype);
  assert.equal(store.levels.length, entry.levels.length, "level count");
  assert.equal(store.nTime, entry.n_time);
  assert.equal(store.encoding, entry.encoding);
  let cells = 0;
  for (let k = 0; k < entry.levels.length; k++) {
    const [nt, nb, h, w] = entry.levels[k].shape;
    const L = store.levels[k];
    assert.deepEqual(L.shape, [nt, nb, h, w], `level ${k} shape`);
    assert.deepEqual(L.grid, entry.levels[k].grid, `level ${k} grid`);
    const cs = L.cs;
    assert.equal(cs, entry.case.cs);
    for (let t = 0; t < nt; t++) {
      const exp = expected[k][t];
      const jobs = [];
      for (let r = 0; r < L.grid[0]; r++) {
        for (let c = 0; c < L.grid[1]; c++) {
          jobs.push(
            (async () => {
              const where = `${entry.name} level ${k} t ${t} cell (${r}, ${c})`;
              const cell = await store.readCell({ t, level: k, row: r, col: c });
              assert.ok(cell.data instanceof T, `${where}: dtype ${cell.data.constructor.name}`);
              assert.equal(cell.height, Math.min(cs, h - r * cs), `${where}: height`);
              assert.equal(cell.width, Math.min(cs, w - c * cs), `${where}: width`);
              const want = cellOf(exp.data, nb, h, w, cs, r, c, T);
              if (!sameBytes(cell.data, want)) {
                const i = cell.data.findIndex((v, j) => !Object.is(v, want[j]));
                assert.fail(`${where}: differs from the Python reader at element ${i}: ${cell.data[i]} != ${want[i]}`);
              }
              if (entry.has_mask) {
                const m = await store.readPlane("mask", { t, level: k, row: r, col: c });
                assert.ok(sameBytes(m, cellOf(exp.mask, 1, h, w, cs, r, c, Uint8Array)), `${where}: mask`);
              } else {
                assert.equal(await store.readPlane("mask", { t, level: k, row: r, col: c }), null);
              }
              if (entry.has_coverage) {
                const cv = await store.readPlane("coverage", { t, level: k, row: r, col: c });
                assert.ok(sameBytes(cv, cellOf(exp.coverage, 1, h, w, cs, r, c, Uint8Array)), `${where}: coverage`);
              }
              const valid = await store.validity({ t, level: k, row: r, col: c, cell });
              assert.ok(sameBytes(valid, cellOf(exp.valid, nb, h, w, cs, r, c, Uint8Array)), `${where}: validity`);
              cells++;
            })(),
          );
        }
      }
      await Promise.all(jobs);
    }
  }
  return { store, expected, cells };
}

/** valueAt and series at a few pixels (corners, ragged edge, interior) against the same answers. */
async function checkPixels(entry, store, expected) {
  const k = 0;
  const [nt, nb, h, w] = entry.levels[k].shape;
  const pixels = [
    [0, 0],
    [h - 1, w - 1],
    [Math.floor(h / 2), Math.floor(w / 3)],
    [h - 1, 0],
  ];
  for (const [row, col] of pixels) {
    const series = await store.series({ row, col, level: k });
    assert.equal(series.row, row);
    for (let t = 0; t < nt; t++) {
      const exp = expected[k][t];
      // Through projected coordinates: the centre of the pixel.
      const { x, y } = store.pixelCentre({ row, col, level: k });
      const v = await store.valueAt({ x, y, t, level: k });
      assert.equal(v.row, row);
      assert.equal(v.col, col);
      for (let b = 0; b < nb; b++) {
        const i = b * h * w + row * w + col;
        const stored = exp.data[i];
        const where = `${entry.name} pixel (${row}, ${col}) t ${t} band ${b}`;
        assert.ok(Object.is(v.bands[b].stored, stored), `${where}: valueAt ${v.bands[b].stored} != ${stored}`);
        assert.ok(Object.is(series.bands[b].stored[t], stored), `${where}: series`);
        const valid = exp.valid[i] === 1;
        assert.equal(v.bands[b].valid, valid, `${where}: valid`);
        assert.equal(series.bands[b].valid[t], exp.valid[i], `${where}: series valid`);
        const band = store.bands[b];
        if (valid) {
          assert.equal(v.bands[b].physical, stored * band.scale + band.offset, `${where}: physical`);
        } else {
          assert.equal(v.bands[b].physical, null);
          assert.ok(Number.isNaN(series.bands[b].physical[t]));
        }
      }
      if (entry.has_mask) assert.equal(v.mask, exp.mask[row * w + col]);
      if (entry.has_coverage) {
        assert.equal(v.coverage, exp.coverage[row * w + col]);
        assert.equal(series.coverage[t], exp.coverage[row * w + col]);
      }
    }
  }
}

describe("every cell-timestep equals the Python reader", () => {
  const groups = new Map();
  for (const entry of manifest.stores) {
    const key = `${entry.case.dtype} ${entry.case.encoding} ${entry.case.layout}`;
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(entry);
  }
  for (const [key, entries] of groups) {
    test(`${key} (${entries.map((e) => e.case.codec).join(", ")})`, async () => {
      let cells = 0;
      for (const entry of entries) {
        const got = await checkStore(entry);
        cells += got.cells;
        await checkPixels(entry, got.store, got.expected);
      }
      assert.ok(cells > 0);
    });
  }
});

describe("derived stores", () => {
  const byName = Object.fromEntries(manifest.derived.map((d) => [d.name, d]));

  test("v0.1 root (string bands, no encoding key, no mirrors, pixels_per_tile) reads as star-delta", async () => {
    const entry = byName["v01-uint16"];
    const { store } = await checkStore(entry);
    assert.equal(store.specVersion, "0.1.0");
    assert.equal(store.encoding, "star-delta");
    // Spec 3.6: the JS reader assumes the Sentinel-2 scale for 0.1.x string bands.
    assert.deepEqual(
      store.bands.map((b) => [b.scale, b.offset]),
      store.bands.map(() => [0.0001, 0]),
    );
  });

  test("no consolidated metadata: per-array zarr.json fallback", async () => {
    const { store } = await checkStore(byName["nocons-uint8"]);
    assert.equal(store.meta.consolidated, null);
  });

  test("index_location start", async () => {
    const { store } = await checkStore(byName["index-start-uint16"]);
    assert.equal(store.levels[0].data.sharding.indexLocation, "start");
  });

  test("the viewer's store (4 bands, cs 64, shard_time 6, mask and coverage)", async () => {
    const { store, expected } = await checkStore(manifest.viewer);
    await checkPixels(manifest.viewer, store, expected);
  });

  test("a missing chunk object of an unsharded store reads as fill", async () => {
    await checkStore(byName["missing-chunk-int16"]);
  });

  test("missing shard and empty inner chunk decode as fill; unlisted shard via HEAD", async () => {
    const { store } = await checkStore(byName["holes-uint16"]);
    assert.ok(store.stats.heads >= 2, `HEAD fallback used for unlisted shards (${store.stats.heads})`);
  });
});

test("fixture sanity: the matrix covers every dtype x encoding x layout x codec", () => {
  const seen = new Set(manifest.stores.map((s) => `${s.case.dtype}/${s.case.encoding}/${s.case.layout}/${s.case.codec}`));
  assert.equal(seen.size, 6 * 3 * 6);
  assert.ok(manifest.stores.some((s) => s.has_mask && s.has_coverage));
  assert.ok(manifest.stores.some((s) => s.case.cs === 32));
  assert.ok(path.isAbsolute(dir));
});

// zstd-prefix.js: a frame cut to its first blocks decodes to exactly the first bytes of the
// whole frame's content, for frames written by libzstd (numcodecs' WebAssembly build, the same C
// library as the Python writer's) at several levels over contents that make compressed, raw and
// RLE blocks; frames whose headers do not prove where a block ends are left whole (null). Also
// the reader's decoder with a prefix, and the store read of the first bands of a Python-written
// store with multi-block chunks against the Python reader.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import Zstd from "numcodecs/zstd";
import { makeChunkDecoder } from "../chronozarr/codecs.js";
import { openStore } from "../chronozarr/decoder.js";
import { parseArray } from "../chronozarr/metadata.js";
import { ZSTD_BLOCK_MAX, zstdPrefixFrame } from "../chronozarr/zstd-prefix.js";
import { cellOf, fixtures, loadExpected, sameBytes } from "./fixtures.js";
import { startServer } from "./server.js";

/** Deterministic PRNG (mulberry32), so a failing case can be replayed from its seed. */
function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** n bytes mixing smooth runs (compressed blocks), noise (raw blocks) and constants (RLE). */
function content(random, n) {
  const out = new Uint8Array(n);
  let i = 0;
  while (i < n) {
    const kind = Math.floor(random() * 3);
    const len = Math.min(n - i, 1 + Math.floor(random() * 200_000));
    const v = Math.floor(random() * 256);
    for (let j = 0; j < len; j++) {
      out[i + j] = kind === 0 ? (v + (j >> 6)) & 255 : kind === 1 ? Math.floor(random() * 256) : v;
    }
    i += len;
  }
  return out;
}

test("a cut frame decodes to the whole frame's first blocks (random contents, levels, prefixes)", async () => {
  let cut = 0;
  for (let seed = 1; seed <= 24; seed++) {
    const random = rng(seed);
    const blocks = 2 + Math.floor(random() * 7);
    const data = content(random, blocks * ZSTD_BLOCK_MAX);
    const level = [1, 3, 5, 9, 19][seed % 5];
    const frame = await new Zstd(level).encode(data);
    for (let k = 0; k < 4; k++) {
      const want = 1 + Math.floor(random() * (data.length - 1));
      const got = zstdPrefixFrame(frame, want);
      const keep = Math.ceil(want / ZSTD_BLOCK_MAX);
      if (keep >= blocks) {
        assert.equal(got, null, `seed ${seed}: a cut holding every block is not made`);
        continue;
      }
      // libzstd's highest levels split blocks by content (then no size is provable: left whole);
      // the levels a writer uses (default 5) write full 128 KiB blocks.
      if (level >= 16 && got === null) continue;
      assert.ok(got, `seed ${seed} level ${level}: ${blocks} full blocks, prefix ${want}: expected a cut`);
      assert.equal(got.size, keep * ZSTD_BLOCK_MAX);
      const part = await new Zstd(level).decode(got.frame);
      assert.ok(sameBytes(part, data.subarray(0, got.size)), `seed ${seed} level ${level} prefix ${want}: content differs`);
      cut++;
    }
  }
  assert.ok(cut > 30, `only ${cut} cuts were tried`);
});

test("frames whose headers do not prove the block boundaries are left whole", async () => {
  const data = content(rng(99), 3 * ZSTD_BLOCK_MAX);
  const frame = await new Zstd(5).encode(data);
  // Content not a whole number of blocks: a block's decoded size is not in its header.
  const odd = await new Zstd(5).encode(data.subarray(0, 3 * ZSTD_BLOCK_MAX - 10));
  assert.equal(zstdPrefixFrame(odd, 1000), null);
  // A dictionary id, a reserved bit, another magic number, a truncated frame.
  const withFlag = (bit) => {
    const f = frame.slice();
    f[4] |= bit;
    return f;
  };
  assert.equal(zstdPrefixFrame(withFlag(1), 1000), null);
  assert.equal(zstdPrefixFrame(withFlag(8), 1000), null);
  const badMagic = frame.slice();
  badMagic[0] ^= 1;
  assert.equal(zstdPrefixFrame(badMagic, 1000), null);
  assert.equal(zstdPrefixFrame(frame.subarray(0, frame.length - 1), 1000), null);
  assert.equal(zstdPrefixFrame(frame.subarray(0, 8), 1000), null);
  // A prefix covering the whole content needs no cut.
  assert.equal(zstdPrefixFrame(frame, data.length), null);
  assert.equal(zstdPrefixFrame(frame, 0), null);
  // The cut of a whole frame is still made, and the original frame is untouched.
  const before = frame.slice();
  assert.ok(zstdPrefixFrame(frame, 1));
  assert.ok(sameBytes(frame, before));
});

test("the reader's decoder with a prefix: the first bands, bounded and checked as the whole chunk", async () => {
  const doc = {
    zarr_format: 3,
    node_type: "array",
    shape: [1, 4, 256, 256],
    data_type: "uint16",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [1, 4, 256, 256] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: 0,
    codecs: [{ name: "bytes", configuration: { endian: "little" } }, { name: "zstd", configuration: { level: 5, checksum: false } }],
    dimension_names: ["time", "band", "y", "x"],
  };
  const array = parseArray(doc, "0/data");
  const decode = await makeChunkDecoder(array);
  const values = new Uint16Array(content(rng(5), 4 * 256 * 256 * 2).buffer);
  const frame = await new Zstd(5).encode(new Uint8Array(values.buffer));
  const whole = await decode(frame, "chunk");
  assert.ok(sameBytes(whole, values));
  const band = 256 * 256;
  for (const bands of [1, 2, 3]) {
    const got = await decode(frame, "chunk", bands * band);
    assert.equal(got.length, bands * band, `${bands} bands: decoded only as far as they go`);
    assert.ok(got instanceof Uint16Array);
    assert.ok(sameBytes(got, values.subarray(0, bands * band)), `${bands} bands`);
  }
  // The frame's declared size is still checked against the whole chunk before anything decodes.
  const short = await new Zstd(5).encode(new Uint8Array(values.buffer, 0, 3 * band * 2));
  await assert.rejects(decode(short, "chunk", band), { name: "CorruptStoreError", message: /chunk: zstd decoding failed: zstd frame declares/ });
});

describe("readCell({bands}) of a store with multi-block chunks equals the Python reader", () => {
  const { dir, manifest } = fixtures();
  let server;
  before(async () => {
    server = await startServer({ mounts: { "/": dir } });
  });
  after(async () => {
    await server?.close();
  });

  test("every level, timestep and cell, 1 and 2 of 3 bands; the deltas are decoded only that far", async () => {
    const entry = manifest.prefix;
    const expected = loadExpected(dir, entry);
    const store = await openStore(`${server.url}/${entry.path}`);
    assert.equal(store.nBands, 3);
    let cutDeltas = 0;
    for (let k = 0; k < entry.levels.length; k++) {
      const [nt, nb, h, w] = entry.levels[k].shape;
      const L = store.levels[k];
      for (let t = 0; t < nt; t++) {
        for (let r = 0; r < L.grid[0]; r++) {
          for (let c = 0; c < L.grid[1]; c++) {
            const want = cellOf(expected[k][t].data, nb, h, w, L.cs, r, c, Uint16Array);
            for (const bands of [1, 2, 3]) {
              const cell = await store.readCell({ t, level: k, row: r, col: c, bands });
              const n = cell.height * cell.width;
              assert.equal(cell.nBands, bands);
              assert.ok(sameBytes(cell.data, want.subarray(0, bands * n)), `level ${k} t ${t} cell (${r}, ${c}) ${bands} bands`);
            }
            if (store.temporal.reference(t) !== null && L.cs * L.cs * 2 >= ZSTD_BLOCK_MAX) {
              const delta = await store.chunks.deltaChunk(L.data, [t, 0, r, c], undefined, L.cs * L.cs);
              if (delta.length === L.cs * L.cs) cutDeltas++;
            }
          }
        }
      }
    }
    assert.ok(cutDeltas >= 8, `only ${cutDeltas} delta chunks were decoded to their first band alone`);
    await assert.rejects(store.readCell({ t: 0, row: 0, col: 0, bands: 4 }), RangeError);
    await assert.rejects(store.readCell({ t: 0, row: 0, col: 0, bands: 0 }), RangeError);
  });
});

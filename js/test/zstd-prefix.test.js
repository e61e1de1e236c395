// zstd-prefix.js: a frame cut to its first blocks decodes to exactly the first bytes of the
// whole frame's content, for frames written by libzstd (numcodecs' WebAssembly build, the same C
// library as the Python writer's) at several levels over contents that make compressed, raw and
// RLE blocks; frames whose headers do not prove where a block ends are left whole (null). Also
// the reader's decoder with a prefix, and the store read of the first bands of a Python-written
// store with multi-block chunks against the Python reader.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import Zstd from "numcodecs/zstd";
import { makeChunkDecoder } from "../chronozarr/codecs.js";
import { openStore } from "../chronozarr/decoder.js";
import { parseArray } from "../chronozarr/metadata.js";
import { ZSTD_BLOCK_MAX, zstdPrefixEnd, zstdPrefixFrame } from "../chronozarr/zstd-prefix.js";
import { cellOf, fileSize, loadExpected, sameBytes, servedFixtures } from "./fixtures.js";

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

test("a frame's first bytes give the same cut as the whole frame once they reach past the kept blocks", async () => {
  let checked = 0;
  for (let seed = 100; seed < 116; seed++) {
    const random = rng(seed);
    const blocks = 3 + Math.floor(random() * 5);
    const data = content(random, blocks * ZSTD_BLOCK_MAX);
    const frame = await new Zstd([1, 5, 9][seed % 3]).encode(data);
    const want = 1 + Math.floor(random() * (blocks - 1) * ZSTD_BLOCK_MAX);
    const whole = zstdPrefixFrame(frame, want);
    const reach = zstdPrefixEnd(frame, want);
    assert.ok(whole && reach && reach.complete && reach.end > 0, `seed ${seed}`);
    for (let k = 0; k < 6; k++) {
      const n = 6 + Math.floor(random() * (frame.length - 6));
      const head = frame.subarray(0, n);
      const got = zstdPrefixFrame(head, want);
      const end = zstdPrefixEnd(head, want);
      if (n < reach.end) {
        assert.equal(got, null, `seed ${seed}, ${n} of ${frame.length} bytes: the kept blocks are not all in`);
        assert.ok(end === null || end.end === -1);
      } else {
        assert.ok(got, `seed ${seed}, ${n} bytes reach past ${reach.end}`);
        assert.equal(end.end, reach.end);
        assert.ok(sameBytes(got.frame, whole.frame), `seed ${seed}: the same cut`);
        checked++;
      }
    }
  }
  assert.ok(checked > 10, `${checked} truncated cuts checked`);
});

/** A zstd frame of raw blocks of the given sizes (libzstd writes full blocks; another writer may not). */
function rawBlocksFrame(data, sizes) {
  const parts = [Uint8Array.of(0x28, 0xb5, 0x2f, 0xfd, (2 << 6) | (1 << 5)), new Uint8Array(new Uint32Array([data.length]).buffer)];
  let at = 0;
  sizes.forEach((n, i) => {
    const header = ((i === sizes.length - 1 ? 1 : 0) | (0 << 1) | (n << 3)) >>> 0;
    parts.push(Uint8Array.of(header & 255, (header >> 8) & 255, (header >> 16) & 255), data.subarray(at, at + n));
    at += n;
  });
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

test("the first bytes of a frame of short blocks: the cut is made, and its decode is refused by size", async () => {
  const data = content(rng(7), 3 * ZSTD_BLOCK_MAX);
  const frame = rawBlocksFrame(data, [100_000, ZSTD_BLOCK_MAX, ZSTD_BLOCK_MAX, ZSTD_BLOCK_MAX - 100_000]);
  assert.ok(sameBytes(await new Zstd(1).decode(frame), data), "a valid frame");
  assert.equal(zstdPrefixFrame(frame, 1000), null, "whole, its four blocks disprove full ones");
  const head = frame.subarray(0, 200_000);
  const cut = zstdPrefixFrame(head, 1000);
  assert.ok(cut, "its first bytes cannot show that, so the cut is made");
  const array = parseArray(
    {
      zarr_format: 3,
      node_type: "array",
      shape: [3 * ZSTD_BLOCK_MAX],
      data_type: "uint8",
      chunk_grid: { name: "regular", configuration: { chunk_shape: [3 * ZSTD_BLOCK_MAX] } },
      chunk_key_encoding: { name: "default" },
      fill_value: 0,
      codecs: [{ name: "bytes" }, { name: "zstd", configuration: { level: 1 } }],
    },
    "x",
  );
  const decode = await makeChunkDecoder(array);
  await assert.rejects(decode(head, "x/c/0", 1000), /x\/c\/0: zstd decoding failed/);
  assert.ok(sameBytes(await decode(frame, "x/c/0", 1000), data), "the whole frame decodes whole");
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
    codecs: [
      { name: "bytes", configuration: { endian: "little" } },
      { name: "zstd", configuration: { level: 5, checksum: false } },
    ],
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
  await assert.rejects(decode(short, "chunk", band), {
    name: "CorruptStoreError",
    message: /chunk: zstd decoding failed: zstd frame declares/,
  });
});

// One server of the fixture stores for the two store-level suites below.
const { dir, manifest, server } = servedFixtures();

describe("readCell({bands}) of a store with multi-block chunks equals the Python reader", () => {
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

describe("a delta's first bytes: range reads of the blocks a band read decodes (decision 0030)", () => {
  /** A fetch logging {url, range, status, bytes}; `edit(url, init)` may answer instead of the server. */
  function logged(edit = () => null) {
    const log = [];
    const f = async (url, init = {}) => {
      const res = (await edit(String(url), init)) ?? (await fetch(url, init));
      const body = new Uint8Array(await res.arrayBuffer());
      log.push({ url: String(url), range: init.headers?.Range ?? null, status: res.status, bytes: body.byteLength });
      return new Response(res.status === 404 ? "not found" : body, {
        status: res.status,
        headers: { "content-length": String(body.byteLength) },
      });
    };
    f.log = log;
    return f;
  }
  const deltaTimes = (store) => [...Array(store.nTime).keys()].filter((t) => store.temporal.reference(t) !== null);
  const deltaKey = (t) => new RegExp(`/0/data/c/${t}/0/0/0$`);

  /** One band of cell (0, 0) at every timestep of level 0, in time order, against the Python reader. */
  async function readBand0(store, expected, entry) {
    const [, nb, h, w] = entry.levels[0].shape;
    for (let t = 0; t < store.nTime; t++) {
      const cell = await store.readCell({ t, row: 0, col: 0, bands: 1 });
      const want = cellOf(expected[0][t].data, nb, h, w, store.levels[0].cs, 0, 0, Uint16Array);
      assert.ok(sameBytes(cell.data, want.subarray(0, cell.height * cell.width)), `t ${t}`);
    }
  }

  test("after the first delta, each is a range read of its first bytes, well short of the object", async () => {
    const entry = manifest.prefix;
    const expected = loadExpected(dir, entry);
    const f = logged();
    const store = await openStore(`${server.url}/${entry.path}`, { fetch: f });
    await readBand0(store, expected, entry);
    const ts = deltaTimes(store);
    assert.ok(ts.length >= 3, "the store has deltas to read");
    const reads = ts.map((t) => f.log.filter((r) => deltaKey(t).test(r.url)));
    assert.ok(
      reads.every((r) => r.length === 1),
      "one GET per delta",
    );
    assert.equal(reads[0][0].range, null, "the first delta is read whole: nothing is known of the array's blocks yet");
    for (const [i, t] of ts.entries()) {
      if (i === 0) continue;
      const [r] = reads[i];
      const size = fileSize(path.join(dir, entry.path, "0", "data", "c", String(t), "0", "0", "0"));
      assert.match(r.range ?? "", /^bytes=0-\d+$/, `t ${t}`);
      assert.equal(r.status, 206);
      assert.ok(r.bytes < 0.6 * size, `t ${t}: ${r.bytes} of ${size} bytes for one band of three`);
    }
    // A read of every band later needs the whole object, and gets it.
    const [, nb, h, w] = entry.levels[0].shape;
    const t = ts.at(-1);
    const all = await store.readCell({ t, row: 0, col: 0 });
    assert.ok(sameBytes(all.data, cellOf(expected[0][t].data, nb, h, w, store.levels[0].cs, 0, 0, Uint16Array)));
    assert.equal(f.log.filter((r) => deltaKey(t).test(r.url) && r.range === null).length, 1, "then read whole");
  });

  test("a host that ignores Range: whole objects, the same values", async () => {
    const entry = manifest.prefix;
    const f = logged((url, init) => fetch(url, { ...init, headers: {} }));
    const store = await openStore(`${server.url}/${entry.path}`, { fetch: f });
    await readBand0(store, loadExpected(dir, entry), entry);
    const ranged = f.log.filter((r) => r.range?.startsWith("bytes=0-"));
    assert.ok(ranged.length >= 2 && ranged.every((r) => r.status === 200), "asked for first bytes, answered whole");
  });

  test("first bytes that do not decode as the first blocks (short blocks): read whole, values exact", async () => {
    const entry = manifest.prefix;
    const ts = deltaTimes(await openStore(`${server.url}/${entry.path}`));
    // The second delta rewritten as raw blocks of other sizes (the same content, a valid frame
    // libzstd would not write): its first bytes cut as full blocks decode short.
    const t = ts[1];
    const file = path.join(dir, entry.path, "0", "data", "c", String(t), "0", "0", "0");
    const content = await new Zstd(1).decode(new Uint8Array(readFileSync(file)));
    const sizes = [100_000, ZSTD_BLOCK_MAX, ZSTD_BLOCK_MAX, content.length - 100_000 - 2 * ZSTD_BLOCK_MAX];
    assert.ok(sizes.at(-1) > 0 && sizes.at(-1) <= ZSTD_BLOCK_MAX);
    const odd = rawBlocksFrame(content, sizes);
    const f = logged((url, init) => {
      if (!deltaKey(t).test(url)) return null;
      const m = /^bytes=0-(\d+)$/.exec(init.headers?.Range ?? "");
      return m ? new Response(odd.slice(0, Number(m[1]) + 1), { status: 206 }) : new Response(odd, { status: 200 });
    });
    const store = await openStore(`${server.url}/${entry.path}`, { fetch: f });
    await readBand0(store, loadExpected(dir, entry), entry);
    const reads = f.log.filter((r) => deltaKey(t).test(r.url)).map((r) => (r.range === null ? "whole" : "first"));
    assert.deepEqual(reads, ["first", "whole"]);
    const later = ts.slice(2).flatMap((u) => f.log.filter((r) => deltaKey(u).test(r.url)));
    assert.ok(later.length > 0 && later.every((r) => r.range === null), "the array's later deltas are read whole");
  });
});

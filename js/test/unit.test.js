// Pure pieces: crc32c, the byte-budget LRU, modular reconstruction, Range parsing of the test
// server, and the shard index decoder.

import assert from "node:assert/strict";
import { test } from "node:test";
import { crc32c } from "../chronozarr/crc32c.js";
import { addWrappedInPlace, reconstruct } from "../chronozarr/decoder.js";
import { LRUCache } from "../chronozarr/lru.js";
import { decodeShardIndex, levelForResolution, locateChunk, pixelCentre, pixelOf } from "../chronozarr/metadata.js";
import { parseRange } from "./server.js";

test("crc32c matches the Castagnoli check values", () => {
  const enc = (s) => new TextEncoder().encode(s);
  assert.equal(crc32c(enc("123456789")), 0xe3069283);
  assert.equal(crc32c(new Uint8Array(32)), 0x8a9136aa);
  assert.equal(crc32c(new Uint8Array(32).fill(0xff)), 0x62a8ab43);
  assert.equal(crc32c(new Uint8Array(0)), 0);
});

test("LRU evicts the least recently used entries to stay within its byte budget", () => {
  const c = new LRUCache(10);
  c.set("a", 1, 4);
  c.set("b", 2, 4);
  assert.equal(c.get("a"), 1); // a is now most recent
  c.set("c", 3, 4); // evicts b
  assert.equal(c.get("b"), undefined);
  assert.equal(c.get("a"), 1);
  assert.equal(c.bytes, 8);
  assert.equal(c.set("huge", 0, 11), false);
  assert.equal(c.size, 2);
  c.set("a", 9, 2);
  assert.equal(c.bytes, 6);
  c.clear();
  assert.equal(c.bytes, 0);
});

test("reconstruction wraps in the stored dtype and trims the edge (4.2, 10.5)", () => {
  const cs = 2;
  const anchor = new Uint16Array([65535, 1, 2, 3, 10, 20, 30, 40]);
  const delta = new Uint16Array([2, 65535, 0, 1, 0, 0, 0, 65526]);
  assert.deepEqual([...reconstruct(anchor, delta, 2, cs, 2, 2, Uint16Array)], [1, 0, 2, 4, 10, 20, 30, 30]);
  assert.deepEqual([...reconstruct(anchor, delta, 2, cs, 1, 2, Uint16Array)], [1, 0, 10, 20]);
  assert.deepEqual([...reconstruct(anchor, delta, 2, cs, 2, 1, Uint16Array)], [1, 2, 10, 30]);
  const a8 = new Uint8Array([250, 5, 0, 128]);
  const d8 = new Uint8Array([10, 251, 0, 128]);
  assert.deepEqual([...reconstruct(a8, d8, 1, 2, 2, 2, Uint8Array)], [4, 0, 0, 0]);
});

test("in-place SWAR reconstruction equals the element-wise modular add", () => {
  for (const T of [Uint8Array, Uint16Array]) {
    const max = T === Uint8Array ? 256 : 65536;
    for (const n of [4, 8, 100, 4096]) {
      const a = T.from({ length: n }, (_, i) => (i * 7919 + 13) % max);
      const d = T.from({ length: n }, (_, i) => (i * 104729 + (i % 3 ? max - 1 : 0)) % max);
      d[0] = max - 1;
      a[0] = max - 1;
      const want = T.from(a, (x, i) => (x + d[i]) % max);
      assert.deepEqual(addWrappedInPlace(a, d.slice()), want, `${T.name} n=${n}`);
      // Unaligned views take the element-wise path and agree too.
      const buf = new T(n + 1);
      buf.set(d, 1);
      assert.deepEqual(T.from(addWrappedInPlace(a, buf.subarray(1))), want);
    }
  }
});

test("shard index: offsets, empty entries, crc (7.2)", () => {
  const n = 3;
  const buf = new Uint8Array(16 * n + 4);
  const view = new DataView(buf.buffer);
  view.setBigUint64(0, 100n, true);
  view.setBigUint64(8, 50n, true);
  view.setBigUint64(16, 2n ** 64n - 1n, true);
  view.setBigUint64(24, 2n ** 64n - 1n, true);
  view.setBigUint64(32, 2n ** 40n, true);
  view.setBigUint64(40, 7n, true);
  view.setUint32(48, crc32c(buf.subarray(0, 48)), true);
  const idx = decodeShardIndex(buf, n, crc32c, "x");
  assert.deepEqual([...idx], [100, 50, -1, -1, 2 ** 40, 7]);
  buf[3] ^= 1;
  assert.throws(() => decodeShardIndex(buf, n, crc32c, "x"), { name: "CorruptStoreError", message: /checksum mismatch/ });
  assert.throws(() => decodeShardIndex(buf.subarray(4), n, crc32c, "x"), { message: /expected 52/ });
});

test("chunk location: unsharded keys, shard key and C-order entry (7.1)", () => {
  const arr = {
    path: "0/data",
    keyEncoding: { prefix: "c", sep: "/" },
    sharding: { perShard: [4, 1, 1, 1] },
  };
  assert.deepEqual(locateChunk(arr, [6, 0, 2, 3]), { key: "0/data/c/1/0/2/3", sharded: true, shard: [1, 0, 2, 3], entry: 2 });
  assert.deepEqual(locateChunk({ ...arr, sharding: null }, [6, 0, 2, 3]), { key: "0/data/c/6/0/2/3", sharded: false });
  assert.equal(locateChunk({ ...arr, sharding: null, keyEncoding: { prefix: null, sep: "." } }, [1, 2, 3]).key, "0/data/1.2.3");
});

test("geometry: pixel lookup inverts the affine; level choice (3.3, 10.3)", () => {
  const tr = [10, 0, 500000, 0, -10, 4000000];
  assert.deepEqual(pixelOf(tr, 500005, 3999995), { row: 0, col: 0 });
  assert.deepEqual(pixelOf(tr, 500019.9, 3999980.1), { row: 1, col: 1 });
  assert.deepEqual(pixelCentre(tr, 1, 2), { x: 500025, y: 3999985 });
  const rot = [10, 2, 0, 1, -10, 0];
  const c = pixelCentre(rot, 5, 7);
  assert.deepEqual(pixelOf(rot, c.x, c.y), { row: 5, col: 7 });
  assert.equal(levelForResolution([10, 20, 40], 25), 1);
  assert.equal(levelForResolution([10, 20, 40], 1), 0);
});

test("test server Range parsing covers every form", () => {
  assert.deepEqual(parseRange("bytes=0-9", 100), [[0, 9]]);
  assert.deepEqual(parseRange("bytes=90-", 100), [[90, 99]]);
  assert.deepEqual(parseRange("bytes=-10", 100), [[90, 99]]);
  assert.deepEqual(parseRange("bytes=95-200", 100), [[95, 99]]);
  assert.deepEqual(parseRange("bytes=0-1,5-6", 100), [
    [0, 1],
    [5, 6],
  ]);
  assert.equal(parseRange("bytes=100-", 100), "unsatisfiable");
  assert.equal(parseRange("items=0-1", 100), null);
});

test("validity (2.3): the mask alone decides when present, else value != nodata per band, else all valid", async () => {
  const { isValid, validityOf } = await import("../chronozarr/validity.js");
  assert.equal(isValid(7, 1, 7), true); // mask 1: valid even at nodata
  assert.equal(isValid(3, 0, 7), false); // mask 0: invalid even off nodata
  assert.equal(isValid(7, null, 7), false);
  assert.equal(isValid(3, null, 7), true);
  assert.equal(isValid(7, null, null), true);
  assert.equal(isValid(Number.NaN, null, null), true);
  // Two bands of three pixels: per band against nodata, and a mask shared by the bands.
  const values = Uint16Array.of(0, 5, 0, 5, 0, 5);
  assert.deepEqual([...validityOf(values, null, 0, 2, 3)], [0, 1, 0, 1, 0, 1]);
  assert.deepEqual([...validityOf(values, Uint8Array.of(1, 0, 1), 0, 2, 3)], [1, 0, 1, 1, 0, 1]);
  assert.deepEqual([...validityOf(values, null, null, 2, 3)], [1, 1, 1, 1, 1, 1]);
});

test("one cache key names a chunk for every cache and residency check", async () => {
  const { cacheKey } = await import("../chronozarr/cache.js");
  assert.equal(cacheKey("0/data", [3, 0, 1, 2]), "0/data|3,0,1,2");
  assert.notEqual(cacheKey("0/data", [1, 12]), cacheKey("0/data", [11, 2]));
  assert.notEqual(cacheKey("0/data", [1]), cacheKey("1/data", [1]));
});

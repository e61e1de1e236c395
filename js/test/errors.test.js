// Broken stores fail fast with a message that says what and where: unsupported codec, data_type,
// spec_version or encoding; not a chronozarr store; a 404 root; an unreachable host; a corrupt
// shard index checksum; a stale shard_bytes; an undecodable chunk. Every case must settle within
// a few seconds (no hangs).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { CorruptStoreError, NotAChronozarrStoreError, StoreNotFoundError, UnsupportedError, openStore } from "../chronozarr/decoder.js";
import { parseArray, parseRoot } from "../chronozarr/metadata.js";
import { fixtures } from "./fixtures.js";
import { startServer } from "./server.js";

const { dir, manifest } = fixtures();
let server;
let scratch;
before(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), "chronozarr-js-err-"));
  writeFileSync(path.join(scratch, "zarr.json"), "{ not json");
  server = await startServer({ mounts: { "/": dir, "/scratch/": scratch } });
});
after(async () => {
  await server?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const broken = (name) => `${server.url}/${manifest.broken[name]}`;

/** Fail the test if `promise` has not settled within `ms`. */
function settlesWithin(promise, ms = 5000) {
  let timer;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`did not settle within ${ms} ms (a hang)`)), ms);
    }),
  ]);
}

describe("open fails with a clear message", () => {
  test("unsupported codec names the codec and the array", async () => {
    await assert.rejects(settlesWithin(openStore(broken("bad-codec"))), (err) => {
      assert.ok(err instanceof UnsupportedError, err.name);
      assert.match(err.message, /unsupported codec "lz4"/);
      assert.match(err.message, /0\/data\/zarr\.json/);
      return true;
    });
  });

  test("blosc with bitshuffle is refused (spec 8)", async () => {
    await assert.rejects(settlesWithin(openStore(broken("bad-blosc"))), {
      name: "UnsupportedError",
      message: /blosc with shuffle "bitshuffle"/,
    });
  });

  test("unsupported data_type", async () => {
    await assert.rejects(settlesWithin(openStore(broken("bad-dtype"))), {
      name: "UnsupportedError",
      message: /unsupported data_type "int32".*0\/data\/zarr\.json|0\/data\/zarr\.json.*unsupported data_type "int32"/,
    });
  });

  test("wrong spec_version", async () => {
    await assert.rejects(settlesWithin(openStore(broken("bad-version"))), (err) => {
      assert.ok(err instanceof UnsupportedError);
      assert.match(err.message, /spec_version "0\.3\.0" is not supported/);
      assert.match(err.message, /0\.1\.x and 0\.2\.x/);
      return true;
    });
  });

  test("unknown temporal encoding", async () => {
    await assert.rejects(settlesWithin(openStore(broken("bad-encoding"))), {
      name: "UnsupportedError",
      message: /encoding "chain-delta" is not supported/,
    });
  });

  test("a Zarr group without chronozarr attributes", async () => {
    await assert.rejects(settlesWithin(openStore(broken("not-chronozarr"))), (err) => {
      assert.ok(err instanceof NotAChronozarrStoreError);
      assert.match(err.message, /not a chronozarr store/);
      return true;
    });
  });

  test("a root that is not JSON", async () => {
    await assert.rejects(settlesWithin(openStore(`${server.url}/scratch/`)), {
      name: "NotAChronozarrStoreError",
      message: /is not JSON/,
    });
  });

  test("404 root", async () => {
    const url = `${server.url}/stores/does-not-exist.zarr`;
    await assert.rejects(settlesWithin(openStore(url)), (err) => {
      assert.ok(err instanceof StoreNotFoundError);
      assert.match(err.message, /no chronozarr store at .*does-not-exist\.zarr/);
      assert.match(err.message, /HTTP 404/);
      return true;
    });
  });

  test("unreachable host", async () => {
    const idle = await startServer({ mounts: { "/": dir } });
    const url = `${idle.url}/x.zarr`;
    await idle.close(); // nothing listens on that port any more
    await assert.rejects(settlesWithin(openStore(url)), {
      name: "StoreNotFoundError",
      message: /cannot open a chronozarr store at .*failed/,
    });
  });

  test("a relative or empty URL outside a page is a TypeError naming it", async () => {
    await assert.rejects(openStore(""), TypeError);
    await assert.rejects(openStore("stores/x.zarr"), { name: "TypeError", message: /"stores\/x\.zarr" is not a URL/ });
  });
});

describe("reads fail with a clear message", () => {
  test("corrupt shard index checksum", async () => {
    const store = await openStore(broken("corrupt-crc"));
    await assert.rejects(settlesWithin(store.readCell({ t: 0, level: 0, row: 0, col: 0 })), (err) => {
      assert.ok(err instanceof CorruptStoreError, err.name);
      assert.match(err.message, /shard index checksum mismatch \(crc32c stored 0x[0-9a-f]{8}, computed 0x[0-9a-f]{8}\)/);
      assert.match(err.message, /0\/data\/c\/0\/0\/0\/0/);
      return true;
    });
    // Other shards are unaffected.
    const ok = await store.readCell({ t: 0, level: 0, row: 0, col: 1 });
    assert.ok(ok.data.length > 0);
  });

  test("stale shard_bytes (an append the reader has not seen) asks to reopen", async () => {
    const store = await openStore(broken("stale-shard-bytes"));
    await assert.rejects(settlesWithin(store.readCell({ t: 1, level: 0, row: 0, col: 0 })), {
      name: "CorruptStoreError",
      message: /reopen the store/,
    });
  });

  test("an undecodable chunk names the object and the codec", async () => {
    const store = await openStore(broken("corrupt-chunk"));
    await assert.rejects(settlesWithin(store.readCell({ t: 1, level: 0, row: 0, col: 0 })), {
      name: "CorruptStoreError",
      message: /0\/data\/c\/1\/0\/0\/0: zstd decoding failed/,
    });
  });

  test("out-of-range arguments are RangeErrors that name the range", async () => {
    const store = await openStore(`${server.url}/${manifest.stores[0].path}`);
    await assert.rejects(store.readCell({ t: 99, row: 0, col: 0 }), { name: "RangeError", message: /timestep 99/ });
    await assert.rejects(store.readCell({ t: 0, row: 0, col: 99 }), { name: "RangeError", message: /cell \(0, 99\)/ });
    await assert.rejects(store.readCell({ t: 0, level: 9, row: 0, col: 0 }), { name: "RangeError", message: /level 9/ });
    assert.equal(await store.valueAt({ x: -1e9, y: 0, t: 0 }), null);
  });
});

describe("metadata parser (I/O-free)", () => {
  const root = (cz, extra = {}) => ({ zarr_format: 3, node_type: "group", attributes: { chronozarr: cz }, ...extra });
  const base = {
    spec_version: "0.2.0",
    variable: "data",
    times: ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"],
    bands: [{ name: "B04", common_name: "red", scale: 0.0001, offset: 0 }, "B08"],
    nodata: 0,
    temporal: { encoding: "star-delta", anchor_interval: 2, anchor_indices: [0, 2], delta_reference: { 1: 0 } },
    levels: [{ path: "0", resolution: 10, transform: [10, 0, 0, 0, -10, 0], shape: [3, 2, 4, 4], grid: [1, 1] }],
  };

  test("accepts 0.1.x and 0.2.x, band strings read as {name}", () => {
    const m = parseRoot(root(base));
    assert.equal(m.bands[1].name, "B08");
    assert.equal(m.bands[1].scale, 1);
    assert.equal(m.temporal.reference(1), 0);
    assert.equal(m.temporal.reference(2), null);
    const v01 = parseRoot(root({ ...base, spec_version: "0.1.3", bands: ["a", "b"] }));
    assert.equal(v01.bands[0].scale, 0.0001);
    assert.throws(() => parseRoot(root({ ...base, spec_version: "1.0.0" })), UnsupportedError);
  });

  test("a delta without a recorded anchor is corrupt (4.2: decode through the recorded map)", () => {
    const t = { ...base.temporal, delta_reference: {} };
    assert.throws(() => parseRoot(root({ ...base, temporal: t })), { message: /delta_reference\["1"\]: missing/ });
    const bad = { ...base.temporal, delta_reference: { 1: 1 } };
    assert.throws(() => parseRoot(root({ ...base, temporal: bad })), { message: /is not an anchor/ });
  });

  test("array documents: codecs and dtypes", () => {
    const doc = (codecs, dtype = "uint16") => ({
      zarr_format: 3,
      node_type: "array",
      shape: [3, 2, 4, 4],
      data_type: dtype,
      chunk_grid: { name: "regular", configuration: { chunk_shape: [1, 2, 4, 4] } },
      chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
      fill_value: 0,
      codecs,
    });
    const a = parseArray(
      doc([
        { name: "bytes", configuration: { endian: "little" } },
        { name: "gzip", configuration: { level: 5 } },
      ]),
      "0/data",
    );
    assert.equal(a.compressors[0].name, "gzip");
    assert.throws(() => parseArray(doc([{ name: "bytes" }, { name: "lzma" }]), "0/data"), { message: /unsupported codec "lzma"/ });
    assert.throws(() => parseArray(doc([{ name: "bytes" }], "float64"), "0/data"), { message: /unsupported data_type "float64"/ });
    assert.throws(
      () => parseArray(doc([{ name: "bytes" }, { name: "blosc", configuration: { cname: "snappy", shuffle: "shuffle" } }]), "0/data"),
      { message: /cname "snappy"/ },
    );
  });
});

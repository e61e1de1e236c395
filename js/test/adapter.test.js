// The store adapter (chronozarrStore): stock zarrita, which knows nothing of star-delta, reads the
// adapter's view of every store kind and gets the Python reader's true values at every level and
// timestep, anchors and deltas alike; the view's metadata describes what it returns.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import * as zarr from "zarrita";
import { chronozarrStore, proj4ForEpsg, timeLabels, vlenUtf8, zarrLayerOptions } from "../chronozarr/store-adapter.js";
import { countingFetch, loadExpected, sameBytes, servedFixtures } from "./fixtures.js";

const { dir, manifest, server } = servedFixtures();
const byName = Object.fromEntries([...manifest.stores, ...(manifest.derived ?? [])].map((e) => [e.name, e]));

const TYPED = { uint8: Uint8Array, uint16: Uint16Array, int16: Int16Array, float32: Float32Array };

// Star-delta and none, unsharded and sharded (several time shards), uint8 and uint16, mask and
// coverage or not, and a store without consolidated metadata.
const CASES = manifest.stores
  .filter((e) => /^(uint16|uint8)-(star-delta|none)-(unsharded|shard4)-(zstd|blosc-lz4-shuffle)$/.test(e.name))
  .map((e) => e.name);

describe("chronozarrStore under stock zarrita", () => {
  test("the fixture matrix offers what this test needs", () => {
    assert.ok(
      CASES.some((n) => n.includes("star-delta") && n.includes("shard4")),
      CASES.join(", "),
    );
    assert.ok(CASES.some((n) => byName[n].has_mask) && CASES.some((n) => !byName[n].has_mask));
  });

  for (const name of CASES) {
    test(`${name}: every level and timestep equals the Python reader`, async () => {
      const entry = byName[name];
      const expected = loadExpected(dir, entry);
      const f = countingFetch();
      const store = await chronozarrStore(`${server.url}/${entry.path}`, { fetch: f });
      const root = zarr.root(store);
      const group = await zarr.open.v3(root, { kind: "group" });
      assert.equal(group.attrs.chronozarr.temporal.encoding, "none", "the view holds true values (4.1)");
      assert.equal(group.attrs.chronozarr.shard_bytes, undefined);
      for (let k = 0; k < entry.levels.length; k++) {
        const [nt, nb, h, w] = entry.levels[k].shape;
        const arr = await zarr.open.v3(root.resolve(`${k}/data`), { kind: "array" });
        assert.deepEqual(arr.shape, [nt, nb, h, w]);
        assert.equal(arr.dtype, entry.dtype);
        for (let t = 0; t < nt; t++) {
          const got = await zarr.get(arr, [t, null, null, null]);
          const want = expected[k][t].data;
          assert.ok(got.data instanceof TYPED[entry.dtype]);
          if (!sameBytes(got.data, want)) {
            const i = got.data.findIndex((v, j) => v !== want[j]);
            assert.fail(`level ${k} t ${t}: element ${i} is ${got.data[i]}, the Python reader says ${want[i]}`);
          }
          for (const plane of ["mask", "coverage"]) {
            if (!entry[`has_${plane}`]) continue;
            const p = await zarr.open.v3(root.resolve(`${k}/${plane}`), { kind: "array" });
            const m = await zarr.get(p, [t, null, null]);
            assert.ok(sameBytes(m.data, expected[k][t][plane]), `level ${k} t ${t} ${plane}`);
          }
        }
      }
      // Coordinates: time as dates, band names, at each level and at the root.
      for (const p of ["time", "0/time"]) {
        const tarr = await zarr.open.v3(root.resolve(p), { kind: "array" });
        const { data } = await zarr.get(tarr);
        // The fixtures' times are first-of-month midnights: served as their dates.
        assert.deepEqual(
          data,
          store.reader.times.map((s) => s.replace(/T00:00:00Z$/, "")),
        );
        assert.match(data[0], /^\d{4}-\d{2}-\d{2}$/);
      }
      const band = await zarr.get(await zarr.open.v3(root.resolve("band"), { kind: "array" }));
      assert.deepEqual(band.data, store.reader.bandNames);
      // Only the reader's requests reached the host: one root GET, then chunks (no array zarr.json).
      assert.equal(f.log.filter((r) => r.url.endsWith("zarr.json")).length, 1, f.log.map((r) => r.url).join("\n"));
      if (entry.encoding === "star-delta") assert.ok(store.stats.reconstructed > 0);
    });
  }

  test("without the adapter, zarrita sees residuals at delta timesteps (why it exists)", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    const expected = loadExpected(dir, entry);
    const plain = new zarr.FetchStore(`${server.url}/${entry.path}`);
    const arr = await zarr.open.v3(zarr.root(plain).resolve("0/data"), { kind: "array" });
    const store = await chronozarrStore(`${server.url}/${entry.path}`);
    const deltaT = [...Array(entry.n_time).keys()].find((t) => store.reader.temporal.reference(t) !== null);
    const anchorT = store.reader.temporal.reference(deltaT);
    assert.ok(sameBytes((await zarr.get(arr, [anchorT, null, null, null])).data, expected[0][anchorT].data));
    assert.ok(!sameBytes((await zarr.get(arr, [deltaT, null, null, null])).data, expected[0][deltaT].data));
  });

  test("a store without consolidated metadata opens through per-array documents", async () => {
    const entry = manifest.derived.find((e) => /^nocons-/.test(e.name));
    assert.ok(entry, manifest.derived.map((e) => e.name).join(", "));
    const expected = loadExpected(dir, entry);
    const store = await chronozarrStore(`${server.url}/${entry.path}`);
    const arr = await zarr.open.v3(zarr.root(store).resolve("0/data"), { kind: "array" });
    for (let t = 0; t < entry.n_time; t++) {
      assert.ok(sameBytes((await zarr.get(arr, [t, null, null, null])).data, expected[0][t].data), `t ${t}`);
    }
  });

  test("chunk keys outside the grid, and unknown keys, are absent", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    const store = await chronozarrStore(`${server.url}/${entry.path}`);
    assert.equal(await store.get("/0/data/c/99/0/0/0"), undefined);
    assert.equal(await store.get("/0/data/c/0/0/x/0"), undefined);
    assert.equal(await store.get("/0/data/c/0/0/0/01"), undefined); // not a canonical key
    assert.equal(await store.get("/0/data/c/0/0/0/0/"), undefined);
    assert.ok((await store.get("/0/data/c/0/0/0/0")) instanceof Uint8Array);
    assert.equal(await store.get("/nothing/here"), undefined);
    const before = store.reader.stats.requests;
    for (const k of ["/.zmetadata", "/.zgroup", "/0/data/.zarray", "/.zattrs"]) assert.equal(await store.get(k), undefined);
    assert.equal(store.reader.stats.requests, before, "v2 probes cost no request");
  });
});

describe("adapter helpers", () => {
  test("vlen-utf8 bytes decode with zarrita's codec", async () => {
    const Codec = await zarr.registry.get("vlen-utf8")();
    const codec = Codec.fromConfig({}, { shape: [3] });
    assert.deepEqual(codec.decode(vlenUtf8(["B04", "", "ü→"])).data, ["B04", "", "ü→"]);
  });

  test("time labels: dates at midnight UTC, else the stored strings", () => {
    const iso = ["2024-01-01T00:00:00Z", "2024-02-01T00:00:00Z"];
    assert.deepEqual(timeLabels(iso, iso.map(Date.parse)), ["2024-01-01", "2024-02-01"]);
    const noon = ["2024-01-01T12:00:00Z"];
    assert.deepEqual(timeLabels(noon, noon.map(Date.parse)), noon);
  });

  test("proj4 for WGS 84 / UTM codes, null for others", () => {
    assert.equal(proj4ForEpsg("EPSG:32631"), "+proj=utm +zone=31 +datum=WGS84 +units=m +no_defs");
    assert.equal(proj4ForEpsg("epsg:32718"), "+proj=utm +zone=18 +south +datum=WGS84 +units=m +no_defs");
    assert.match(proj4ForEpsg("EPSG:4326"), /longlat/);
    assert.equal(proj4ForEpsg("EPSG:32661"), null); // UPS north, not a UTM zone
    assert.equal(proj4ForEpsg("EPSG:2154"), null);
    assert.equal(proj4ForEpsg(null), null);
  });

  test("zarr-layer options come from the store: variable, proj4, bounds, fill value, selector", async () => {
    const entry = byName["uint16-star-delta-unsharded-zstd"];
    const store = await chronozarrStore(`${server.url}/${entry.path}`);
    const o = zarrLayerOptions(store);
    assert.equal(o.store, store);
    assert.equal(o.variable, "data");
    assert.equal(o.proj4, proj4ForEpsg(store.reader.crs));
    const [a, , c, , e, f] = store.reader.levels[0].transform;
    const [, , h, w] = entry.levels[0].shape;
    assert.deepEqual(o.bounds, [c, f + e * h, c + a * w, f]);
    assert.equal(o.fillValue, entry.nodata);
    assert.deepEqual(o.selector, { time: store.times[0], band: store.reader.bandNames[0] });
    // A CRS the adapter has no definition for: a typed error naming it, unless proj4 is given.
    store.reader.crs = "EPSG:2154";
    assert.throws(() => zarrLayerOptions(store), { name: "UnsupportedError", message: /EPSG:2154.*proj4/ });
    const lambert = "+proj=lcc +lat_0=46.5 +lon_0=3 +lat_1=49 +lat_2=44 +x_0=700000 +y_0=6600000 +ellps=GRS80 +units=m +no_defs";
    assert.equal(zarrLayerOptions(store, { proj4: lambert }).proj4, lambert);
    store.reader.crs = "EPSG:4326";
    assert.equal(zarrLayerOptions(store).crs, "EPSG:4326");
    assert.equal(zarrLayerOptions(store).proj4, undefined);
  });
});

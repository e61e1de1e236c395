// store.series and the time-series companion (docs/spec.md C25): the JS reader returns the Python
// reader's history (make_history.py writes the stores and the answers), from the companion in one
// request per time block, and from the chunks when the store has none or `history: false`; the
// store adapter serves the companion to stock zarrita as stored (it already holds true values).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import * as zarr from "zarrita";
import { ChronozarrError, openStore } from "../chronozarr/decoder.js";
import { parseHistory } from "../chronozarr/metadata.js";
import { chronozarrStore } from "../chronozarr/store-adapter.js";
import { HERE, countingFetch, python } from "./fixtures.js";
import { startServer } from "./server.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-history-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
const made = spawnSync(python(), [path.join(HERE, "make_history.py"), dir], { encoding: "utf8" });
if (made.status !== 0) throw new Error(`make_history.py failed:\n${made.stdout}\n${made.stderr}`);
const expected = JSON.parse(readFileSync(path.join(dir, "expected.json"), "utf8"));

let server = null;
before(async () => {
  server = await startServer({ mounts: { "/": dir } });
});
after(async () => {
  await server?.close();
});

/** The series as plain lists, in the layout of expected.json. */
function plain(series) {
  return {
    row: series.row,
    col: series.col,
    stored: series.bands.map((b) => Array.from(b.stored)),
    mask: Array.from(series.mask),
    coverage: Array.from(series.coverage),
  };
}

const companionKey = /\/0\/history\/values\/c\/(\d+)\/0\/(\d+)\/(\d+)$/;

describe("store.series with the time-series companion", () => {
  test("every pixel equals the Python reader's, from the companion and from the chunks", async () => {
    const f = countingFetch();
    const store = await openStore(`${server.url}/history.zarr`, { fetch: f });
    for (const want of expected.pixels) {
      const use = want.source === "history";
      const before = f.log.length;
      const got = await store.series({ row: want.row, col: want.col, history: use });
      assert.equal(got.source, want.source);
      const answer = { row: want.row, col: want.col, stored: want.stored, mask: want.mask, coverage: want.coverage };
      assert.deepEqual(plain(got), answer, `${want.row}, ${want.col} from the ${want.source}`);
      const urls = f.log.slice(before).map((e) => e.url);
      if (use)
        assert.ok(
          urls.every((u) => companionKey.test(u) || u.endsWith("zarr.json")),
          urls.join("\n"),
        );
      else assert.ok(!urls.some((u) => companionKey.test(u)), urls.join("\n"));
    }
  });

  test("a cold history costs one request per time block; the next pixel of the block none", async () => {
    const f = countingFetch();
    const store = await openStore(`${server.url}/history.zarr`, { fetch: f });
    f.log.length = 0;
    const s = await store.series({ row: 9, col: 13 });
    assert.equal(s.source, "history");
    // the consolidated metadata holds the companion's document: only its chunks are read
    const keys = f.log.map((e) => new URL(e.url).pathname.replace(/^.*history\.zarr\//, ""));
    const blocks = Math.ceil(expected.n_time / 4);
    assert.deepEqual(keys.sort(), [...Array(blocks).keys()].map((tb) => `0/history/values/c/${tb}/0/1/1`).sort());
    f.log.length = 0;
    await store.series({ row: 10, col: 14 }); // the same 8 x 8 block: decoded chunks are cached
    assert.equal(f.log.length, 0);
  });

  test("a store without the companion reads the chunks and gives the same history", async () => {
    const store = await openStore(`${server.url}/plain.zarr`);
    const companion = await openStore(`${server.url}/history.zarr`);
    for (const { row, col } of expected.pixels) {
      const a = await store.series({ row, col });
      const b = await companion.series({ row, col });
      assert.equal(a.source, "chunks");
      assert.deepEqual(plain(a), plain(b));
    }
  });

  for (const via of ["the store adapter", "plain zarrita (FetchStore)"]) {
    test(`${via}: stock zarrita reads the companion's true values`, async () => {
      const store =
        via === "the store adapter"
          ? await chronozarrStore(`${server.url}/history.zarr`)
          : new zarr.FetchStore(`${server.url}/history.zarr`);
      await checkWithZarrita(store);
    });
  }

  /** The companion read by stock zarrita through `store` equals the Python reader's history. */
  async function checkWithZarrita(store) {
    const root = zarr.root(store);
    const arr = await zarr.open.v3(root.resolve("0/history/values"), { kind: "array" });
    assert.deepEqual(arr.shape, [expected.n_time, 4, 21, 19]);
    const want = expected.pixels.find((p) => p.source === "history");
    const got = await zarr.get(arr, [null, null, want.row, want.col]);
    const [nT, nF] = got.shape;
    for (let t = 0; t < nT; t++) {
      const row = Array.from(got.data.subarray(t * nF, (t + 1) * nF));
      assert.deepEqual(row, [want.stored[0][t], want.stored[1][t], want.mask[t], want.coverage[t]], `t ${t}`);
    }
    const field = await zarr.get(await zarr.open.v3(root.resolve("0/history/field"), { kind: "array" }));
    assert.deepEqual(Array.from(field.data), ["red", "nir", "mask", "coverage"]);
  }
});

describe("the root's chronozarr.history block (parseHistory)", () => {
  test("absent: null; a block: its path and the store's listed levels", () => {
    assert.equal(parseHistory(undefined, ["0"]), null);
    assert.deepEqual(parseHistory({ path: "history", levels: ["0", "7"] }, ["0", "1"]), { path: "history", levels: ["0"] });
  });
  for (const [label, block] of [
    ["not an object", ["history"]],
    ["a path that climbs", { path: "../up", levels: ["0"] }],
    ["no levels", { path: "history", levels: [] }],
    ["repeated levels", { path: "history", levels: ["0", "0"] }],
    ["a level that is no name", { path: "history", levels: [0] }],
  ]) {
    test(`${label}: a typed error naming the key`, () => {
      assert.throws(
        () => parseHistory(block, ["0"]),
        (e) => e instanceof ChronozarrError && /chronozarr\.history/.test(e.message),
      );
    });
  }
});

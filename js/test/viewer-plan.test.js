// The viewer's early script names the first view's chunks from the root alone (examples/viewer/
// plan.js, decision 0023): they must be the very requests the reader makes for that view, or the
// reader fetches them again. Against fixture stores written by the Python writer: the URLs the
// plan names equal the URLs the reader GETs for timestep 0 of the level spec 10.3 picks (restated
// here), query string included; a sharded level, a view of too many cells and a root whose levels
// the reader refuses are not guessed.

import assert from "node:assert/strict";
import { test } from "node:test";
import { openStore } from "../chronozarr/decoder.js";
import { planChunks } from "../../examples/viewer/plan.js";
import { servedFixtures } from "./fixtures.js";

const { manifest, server } = servedFixtures();

/** The level of spec 10.3 for a fitted box: the largest k whose resolution is at most the ground size of a device pixel. */
function level103(levels, box) {
  const L0 = levels[0];
  const gsd = Math.max((L0.transform[0] * L0.shape[3]) / (box.width - 80), (-L0.transform[4] * L0.shape[2]) / (box.height - 80)) / box.dpr;
  let k = 0;
  levels.forEach((l, i) => {
    if (l.resolution <= gsd) k = i;
  });
  return k;
}

/** The data-chunk URLs the reader GETs to read timestep 0 of every cell of `level`. */
async function readerUrls(url, level) {
  const urls = [];
  const store = await openStore(url, {
    fetch: (u, init) => {
      if (/\/c\//.test(String(u))) urls.push(String(u));
      return fetch(u, init);
    },
  });
  const L = store.levels[level];
  for (let r = 0; r < L.grid[0]; r++) for (let c = 0; c < L.grid[1]; c++) await store.readCell({ t: 0, level, row: r, col: c });
  return { urls, base: store.url, array: L.data };
}

test("the plan names exactly the chunks the reader GETs for the fitted first view, at the level of spec 10.3", async () => {
  const cases = manifest.stores.filter((s) => s.case.layout === "unsharded" && s.levels.length >= 2).slice(0, 3);
  assert.ok(cases.length >= 2, "fixtures with unsharded pyramids");
  for (const entry of cases) {
    for (const [box, query] of [
      [{ width: 1200, height: 760, dpr: 1 }, ""],
      [{ width: 200, height: 150, dpr: 2 }, "?token=a%2Fb"],
    ]) {
      const url = `${server.url}/${entry.path}${query}`;
      const doc = await (await fetch(`${server.url}/${entry.path}/zarr.json${query}`)).json();
      const levels = doc.attributes.chronozarr.levels;
      const k = level103(levels, box);
      const { urls, base, array } = await readerUrls(url, k);
      const plan = planChunks(doc, box, base, query);
      assert.ok(plan, `${entry.name}: a plan`);
      assert.deepEqual(plan.map((p) => p.url).sort(), urls.sort(), `${entry.name} ${JSON.stringify(box)}: level ${k}`);
      for (const p of plan) {
        assert.equal(p.url, p.key + query, "the key is the URL without the query (the decode pool's `where`)");
        assert.equal(p.path, `${levels[k].path}/data`);
        assert.ok(p.cap >= array.innerLength * array.bytesPerElement, "the cap admits an incompressible chunk");
      }
    }
  }
});

test("no guess where the reader would not take it: sharded levels, too many cells, levels the reader refuses", async () => {
  const sharded = manifest.stores.find((s) => s.case.layout !== "unsharded");
  const box = { width: 1200, height: 760, dpr: 1 };
  const doc = await (await fetch(`${server.url}/${sharded.path}/zarr.json`)).json();
  assert.equal(planChunks(doc, box, `${server.url}/${sharded.path}/`, ""), null, "sharded");
  const unsharded = manifest.stores.find((s) => s.case.layout === "unsharded");
  const plain = await (await fetch(`${server.url}/${unsharded.path}/zarr.json`)).json();
  const base = `${server.url}/${unsharded.path}/`;
  assert.ok(planChunks(plain, box, base, ""), "the unsharded store is planned");
  const many = structuredClone(plain);
  for (const l of many.attributes.chronozarr.levels) l.grid = [5, 4];
  assert.equal(planChunks(many, box, base, ""), null, "20 cells");
  const hostile = structuredClone(plain);
  hostile.attributes.chronozarr.levels[0].path = "../elsewhere";
  assert.equal(planChunks(hostile, box, base, ""), null, "a level path that leaves the store");
  assert.equal(planChunks({ zarr_format: 3 }, box, base, ""), null, "no chronozarr block");
  assert.equal(planChunks(plain, { width: 0, height: 0, dpr: 1 }, base, ""), null, "no size yet");
});

// The viewer's pure parts in Node.
//
// The early script names the first view's chunks from the root alone (examples/viewer/plan.js,
// decisions 0023, 0037): they must be the very requests the reader makes for that view, or the
// reader fetches them again. Against fixture stores written by the Python writer: the URLs the
// plan names equal the URLs the reader GETs for timestep 0 of the level spec 10.3 picks (restated
// here), query string included; a sharded level, a view of too many cells and a root whose levels
// the reader refuses are not guessed.
//
// The basemap's canvas is made without alpha only for a style that paints every pixel
// (examples/viewer/basemap.js, decision 0069): CSS colours with no transparency (CSS Color 4: hex
// without or with a full alpha digit pair, rgb()/hsl() with three components or an alpha of 1),
// and a first layer that is a background shown at every zoom.
//
// The offline basemap's graticule (examples/viewer/graticule.js): lines at 1, 2 or 5 x 10^k
// degrees, at least four across any view, covering it.

import assert from "node:assert/strict";
import { test } from "node:test";
import { openStore } from "../chronozarr/decoder.js";
import { opaqueColour, paintsEveryPixel } from "../../examples/viewer/basemap.js";
import { graticule, graticuleStep } from "../../examples/viewer/graticule.js";
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

test("the graticule: nice steps, at least four lines across any view, the view covered", () => {
  for (const [span, want] of [
    [360, 10],
    [40, 10],
    [20, 5],
    [3, 0.5],
    [0.05, 0.01],
    [0.0021, 0.0005],
  ]) {
    assert.ok(Math.abs(graticuleStep(span) - want) < 1e-12, `span ${span}: step ${graticuleStep(span)}, want ${want}`);
  }
  let seed = 3;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let i = 0; i < 200; i++) {
    const span = 10 ** (-4 + 5.5 * rand()); // 1e-4 to 30 degrees
    const west = -170 + 300 * rand();
    const south = -80 + 150 * rand();
    const north = Math.min(84, south + span * (0.5 + rand()));
    const east = west + span;
    const g = graticule([
      [west, south],
      [east, north],
    ]);
    const lons = g.features.filter((f) => f.properties.kind === "meridian" || f.properties.kind === "prime").map((f) => f.properties.deg);
    const lats = g.features.filter((f) => f.properties.kind === "parallel" || f.properties.kind === "equator").map((f) => f.properties.deg);
    const inside = (vs, lo, hi) => vs.filter((v) => v >= lo && v <= hi).length;
    assert.ok(inside(lons, west, east) >= 4, `${west} .. ${east}: ${inside(lons, west, east)} meridians inside`);
    assert.ok(inside(lats, south, north) >= 4, `${south} .. ${north}: ${inside(lats, south, north)} parallels inside`);
    assert.ok(Math.min(...lons) <= west && Math.max(...lons) >= east, "meridians beyond both sides");
    for (const f of g.features) {
      const [a, b] = [f.geometry.coordinates[0], f.geometry.coordinates.at(-1)];
      if (f.properties.kind === "meridian" || f.properties.kind === "prime")
        assert.ok(a[1] <= Math.max(south, -85) && b[1] >= Math.min(north, 85));
      else assert.ok(a[0] <= west && b[0] >= east);
    }
    for (const v of [...lons, ...lats]) {
      const k = v / g.step;
      assert.ok(Math.abs(k - Math.round(k)) < 1e-6, `${v} is a multiple of the step ${g.step}`);
    }
  }
});

test("a colour is taken for opaque only where CSS paints it with no transparency", () => {
  // CSS Color 4: [colour, alpha it paints with]; names and expressions are not parsed (false).
  const cases = [
    ["#0e1a24", 1],
    ["#FFF", 1],
    ["#fffa", 0.67],
    ["#ffff", 1],
    ["#11223380", 0.5],
    ["#112233ff", 1],
    ["rgb(1, 2, 3)", 1],
    ["rgb(1 2 3)", 1],
    ["rgba(1, 2, 3, 1)", 1],
    ["rgba(1, 2, 3, 0.99)", 0.99],
    ["rgb(1 2 3 / 50%)", 0.5],
    ["rgb(1 2 3 / 100%)", 1],
    ["hsl(120, 50%, 50%)", 1],
    ["hsla(120, 50%, 50%, 0)", 0],
  ];
  for (const [css, alpha] of cases) assert.equal(opaqueColour(css), alpha === 1, css);
  for (const css of ["transparent", "red", "#12345", "", null, 3, ["rgb", 1, 2, 3], "rgb(1,2)"])
    assert.equal(opaqueColour(css), false, String(css));
});

test("a style paints every pixel only when its first layer is an opaque background at every zoom", () => {
  const bg = (paint = { "background-color": "#0e1a24" }, extra = {}) => ({ id: "bg", type: "background", paint, ...extra });
  const line = { id: "l", type: "line", source: "s" };
  const style = (...layers) => ({ version: 8, sources: {}, layers });
  assert.equal(paintsEveryPixel(style(bg(), line)), true);
  assert.equal(paintsEveryPixel(style(bg({}))), true, "MapLibre's default background colour is opaque black");
  assert.equal(paintsEveryPixel(style(line, bg())), false, "a line under the background paints only its own pixels");
  assert.equal(paintsEveryPixel(style(bg({ "background-color": "#0e1a24", "background-opacity": 0.9 }))), false);
  assert.equal(paintsEveryPixel(style(bg({ "background-color": "rgba(0, 0, 0, 0.5)" }))), false);
  assert.equal(paintsEveryPixel(style(bg({ "background-color": "#000", "background-pattern": "dots" }))), false);
  assert.equal(paintsEveryPixel(style(bg(undefined, { minzoom: 3 }))), false);
  assert.equal(paintsEveryPixel(style(bg(undefined, { maxzoom: 18 }))), false);
  assert.equal(paintsEveryPixel(style(bg(undefined, { layout: { visibility: "none" } }))), false);
  assert.equal(paintsEveryPixel(style()), false);
  assert.equal(paintsEveryPixel("https://demotiles.maplibre.org/style.json"), false, "a style known by its URL alone");
  assert.equal(paintsEveryPixel(null), false);
});

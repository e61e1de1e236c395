// Stock CarbonPlan zarr-layer (npm 0.5.0) with stock MapLibre GL JS in headless Chromium
// (SwiftShader WebGL), over the chronozarr store adapter (decision 0008):
// - point queries of a star-delta store through the adapter equal the Python reader at anchors
//   and deltas, selecting time by date and band by name;
// - what it renders of the star-delta store through the adapter equals, pixel for pixel, what it
//   renders of the same data written `none` and read plainly; without the adapter it differs;
// - a plain `none` store opened by URL (no adapter): band selected by name and time by its int64
//   value, through the root-level time and band arrays the writer adds (root_coordinates.py);
// - the same with the CRS taken from the store's own proj:code (docs/spec.md C26), no proj4 string;
// Saves artifacts/zarr-layer-adapter-t1.png and zarr-layer-plain-t1.png (a delta timestep).

import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import proj4 from "proj4";
import { proj4ForEpsg } from "../chronozarr/store-adapter.js";
import { HERE, REPO, fixtures, loadExpected } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkip } from "./chromium.js";
import { startServer } from "./server.js";

const UTM31 = "+proj=utm +zone=31 +datum=WGS84 +units=m +no_defs";

const skip = chromiumSkip("zarr-layer");

describe("stock zarr-layer in headless Chromium", { skip, timeout: 240_000 }, () => {
  const { dir, manifest } = fixtures();
  const sd = manifest.map["star-delta"];
  const none = manifest.map.none;
  let server;
  let context;
  let page;
  let userDataDir;
  let bundleDir;
  const pageErrors = [];
  let view;
  let expected;

  before(async () => {
    const { chromium } = await import("playwright-core");
    const { build } = await import("esbuild");
    bundleDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-zl-bundle-"));
    await build({
      entryPoints: [path.join(HERE, "zarr-layer-page.js")],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: path.join(bundleDir, "zarr-layer-page.js"),
      logLevel: "error",
    });
    server = await startServer({
      mounts: {
        "/": HERE,
        "/fixtures/": dir,
        "/bundle/": bundleDir,
        "/maplibre/": path.join(HERE, "..", "node_modules", "maplibre-gl", "dist"),
      },
    });
    userDataDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-chromium-"));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS, "--enable-unsafe-swiftshader"],
      viewport: { width: 600, height: 480 },
    });
    page = await context.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/zarr-layer.html`);
    await page.waitForFunction(() => window.czMap?.ready === true, null, { timeout: 30_000 });
    const [, , h, w] = sd.levels[0].shape;
    const centre = proj4(UTM31, "EPSG:4326", [600000 + (30 * w) / 2, 5000000 - (30 * h) / 2]);
    view = { center: centre, zoom: 12.4 };
    expected = loadExpected(dir, sd);
  });

  after(async () => {
    await context?.close();
    await server?.close();
    for (const d of [userDataDir, bundleDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  const readRoot = (entry) => JSON.parse(readFileSync(path.join(dir, entry.path, "zarr.json"), "utf8"));
  const url = (entry) => `${server.url}/fixtures/${entry.path}`;
  const centreOf = (row, col) => [600000 + 30 * (col + 0.5), 5000000 - 30 * (row + 0.5)];
  const dateOf = (t) => `2024-${String(t + 1).padStart(2, "0")}-01`;

  test("point queries through the adapter equal the Python reader at anchors and deltas", async () => {
    const opened = await page.evaluate((a) => window.czMap.open(a), { url: url(sd), adapter: true, view });
    assert.equal(opened.proj4, UTM31, "the CRS came from the store, not from the page");
    const [nt, nb, h, w] = sd.levels[0].shape;
    const pixels = [
      [0, 0],
      [5, 70],
      [63, 63],
      [64, 64],
      [h - 1, w - 1],
      [40, 100],
    ];
    let deltas = 0;
    for (let t = 0; t < nt; t++) {
      if (t % 3 !== 0) deltas++;
      for (let b = 0; b < nb; b++) {
        for (const [row, col] of pixels) {
          const [x, y] = centreOf(row, col);
          const sel = { time: dateOf(t), band: ["B04", "B08"][b] };
          const got = await page.evaluate((a) => window.czMap.query(a.def, a.x, a.y, a.sel), { def: UTM31, x, y, sel });
          const want = expected[0][t].data[b * h * w + row * w + col];
          // zarr-layer leaves out values equal to the fill value (nodata) from a query's result.
          assert.deepEqual(got.values, want === sd.nodata ? [] : [want], `t ${t} (${sel.time}) band ${sel.band} pixel (${row}, ${col})`);
        }
      }
    }
    assert.ok(deltas >= 4, "delta timesteps were queried");
    assert.deepEqual(pageErrors, []);
  });

  test("a plain none store by URL: band by name and time by its int64 value (root-level time, band)", async () => {
    // zarr-layer 0.5.0 reads no CRS attribute, so the proj4 string is derived from chronozarr.crs.
    const def = proj4ForEpsg(readRoot(none).attributes.chronozarr.crs);
    assert.equal(def, UTM31);
    const exp = loadExpected(dir, none);
    const [nt, , h, w] = none.levels[0].shape;
    await page.evaluate((a) => window.czMap.open(a), { url: url(none), adapter: false, view, options: { proj4: def, zarrVersion: 3 } });
    let checked = 0;
    for (const t of [0, 3, nt - 1]) {
      for (const [b, band] of [
        [0, "B04"],
        [1, "B08"],
      ]) {
        for (const [row, col] of [
          [40, 100],
          [10, 10],
          [90, 3],
        ]) {
          const want = exp[0][t].data[b * h * w + row * w + col];
          if (want === none.nodata) continue;
          const [x, y] = centreOf(row, col);
          const sel = { time: Date.parse(`${dateOf(t)}T00:00:00Z`), band };
          const got = await page.evaluate((a) => window.czMap.query(a.def, a.x, a.y, a.sel), { def, x, y, sel });
          assert.deepEqual(got.values, [want], `t ${t} band ${band} pixel (${row}, ${col})`);
          checked++;
        }
      }
    }
    assert.ok(checked >= 12, `${checked} values checked`);
    assert.deepEqual(pageErrors, []);
  });

  test("a plain none store by URL with the CRS from its own proj:code (no proj4 string written)", async () => {
    // zarr-layer 0.5.0 reads no proj: attribute; the smallest help is the store's own proj:code
    // (docs/spec.md C26) as its proj4 option: proj4js knows the WGS 84 UTM zones by code.
    const code = readRoot(none).attributes["proj:code"];
    assert.equal(code, "EPSG:32631");
    const exp = loadExpected(dir, none);
    const [nt, , h, w] = none.levels[0].shape;
    // what it draws with the code equals what it draws with the hand-written proj4 string
    const red = exp[0][1].data.subarray(0, h * w).filter((v) => v !== none.nodata);
    const sorted = Float64Array.from(red).sort();
    const clim = [sorted[Math.floor(sorted.length * 0.02)], sorted[Math.floor(sorted.length * 0.98)]];
    const shot = async (proj4) => {
      const options = { proj4, zarrVersion: 3, clim, selector: { time: { selected: 1, type: "index" }, band: "B04" } };
      await page.evaluate((a) => window.czMap.open(a), { url: url(none), adapter: false, view, options });
      const png = (await page.locator("#map").screenshot()).toString("base64");
      return { png, lit: await page.evaluate(() => window.czMap.lit()) };
    };
    const byHand = await shot(UTM31);
    const byCode = await shot(code);
    assert.ok(byCode.lit > 0.2, `it drew (${byCode.lit} of the canvas lit)`);
    assert.equal(byCode.png, byHand.png, "the render with proj:code differs from the one with the proj4 string");
    let checked = 0;
    for (const t of [0, nt - 1]) {
      for (const [row, col] of [
        [0, 0],
        [40, 100],
        [h - 1, w - 1],
      ]) {
        const want = exp[0][t].data[row * w + col];
        if (want === none.nodata) continue;
        const [x, y] = centreOf(row, col);
        const sel = { time: { selected: t, type: "index" }, band: "B04" };
        const got = await page.evaluate((a) => window.czMap.query(a.def, a.x, a.y, a.sel), { def: UTM31, x, y, sel });
        assert.deepEqual(got.values, [want], `t ${t} pixel (${row}, ${col})`);
        checked++;
      }
    }
    assert.ok(checked >= 4, `${checked} values checked`);
    assert.deepEqual(pageErrors, []);
  });

  test("what it renders through the adapter equals the none store's render; without it, residuals", async () => {
    const renders = {};
    // A stretch over the red band's valid values, so that the render shows them.
    const red = expected[0][0].data.subarray(0, sd.levels[0].shape[2] * sd.levels[0].shape[3]).filter((v) => v !== 0);
    const sorted = Float64Array.from(red).sort();
    const clim = [sorted[Math.floor(sorted.length * 0.02)], sorted[Math.floor(sorted.length * 0.98)]];
    const shot = async () => {
      const png = await page.locator("#map").screenshot();
      const lit = await page.evaluate(() => window.czMap.lit());
      return { png: png.toString("base64"), lit };
    };
    for (const t of [0, 1, 2, 4]) {
      const sel = { time: dateOf(t), band: "B04" };
      await page.evaluate((a) => window.czMap.open(a), { url: url(sd), adapter: true, view, options: { selector: sel, clim } });
      renders[`adapter ${t}`] = await shot();
      // The none store opened by URL, stock path: zarr-layer needs the page's proj4 here and selects
      // time by index (its int64 coordinate holds epoch ms).
      await page.evaluate((a) => window.czMap.open(a), {
        url: url(none),
        adapter: false,
        view,
        options: { proj4: UTM31, clim, selector: { time: { selected: t, type: "index" }, band: "B04" } },
      });
      renders[`none ${t}`] = await shot();
      await page.evaluate((a) => window.czMap.open(a), {
        url: url(sd),
        adapter: false,
        view,
        options: { proj4: UTM31, clim, selector: { time: { selected: t, type: "index" }, band: "B04" } },
      });
      renders[`plain ${t}`] = await shot();
      const a = renders[`adapter ${t}`];
      assert.ok(a.lit > 0.2, `t ${t}: the layer drew (${a.lit} of the canvas lit)`);
      assert.equal(a.png, renders[`none ${t}`].png, `t ${t}: adapter render differs from the none store's`);
      if (t % 3 === 0) assert.equal(renders[`plain ${t}`].png, a.png, `anchor t ${t}: same without the adapter`);
      else assert.notEqual(renders[`plain ${t}`].png, a.png, `delta t ${t}: without the adapter zarr-layer draws residuals`);
    }
    assert.notEqual(renders["adapter 0"].png, renders["adapter 1"].png, "timesteps differ");
    mkdirSync(path.join(REPO, "artifacts"), { recursive: true });
    writeFileSync(path.join(REPO, "artifacts", "zarr-layer-adapter-t1.png"), Buffer.from(renders["adapter 1"].png, "base64"));
    writeFileSync(path.join(REPO, "artifacts", "zarr-layer-plain-t1.png"), Buffer.from(renders["plain 1"].png, "base64"));
    assert.deepEqual(pageErrors, []);
  });
});

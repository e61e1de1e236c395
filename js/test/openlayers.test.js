// Stock OpenLayers (npm `ol`, `ol/source/GeoZarr`) in headless Chromium (SwiftShader WebGL) on a
// chronozarr `none` store as the writer writes it (docs/spec.md C26, decision 0054):
// - it opens with the URL and the array's name only (the page registers proj4, as every
//   OpenLayers page does for a projected CRS): no extent, projection or tile grid given;
// - in a Web Mercator view, the value it shows at pyproj's lon/lat of a pixel centre is that
//   pixel's value as the Python reader decodes it (corners and interior, several times and both
//   bands), 2 m inside each outer corner the corner pixel's, 2 m outside nothing: placed within
//   a small fraction of a 30 m pixel of where PROJ puts it;
// - its pyramid has every level of the store (the multiscales list's entries), and it reads no
//   coordinate array to place it (OpenLayers 10.11 also places a store written before C26, from
//   the list's crs and the first and last x and y values: 4 more requests);
// - the OpenLayers example of docs/js.md, bundled as written (its URL replaced by the store's),
//   shows the store in its CRS with the Python reader's value under a pixel centre.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { HERE, REPO, fixtures, loadExpected, python } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkip } from "./chromium.js";
import { startServer } from "./server.js";

const skip = chromiumSkip("OpenLayers");

// The map fixtures' grid as make_fixtures.py writes it (never read back from the store under test).
const [A, C, E, F] = [30, 600000, -30, 5000000];

/** pyproj (PROJ, what GDAL uses) from `crs` to lon/lat, for [[x, y], ...]. */
function pyprojLonLat(crs, points) {
  const code = [
    "import json, sys, pyproj",
    "crs, pts = json.load(sys.stdin)",
    "t = pyproj.Transformer.from_crs(crs, 'EPSG:4326', always_xy=True)",
    "print(json.dumps([list(t.transform(x, y)) for x, y in pts]))",
  ].join("\n");
  const res = spawnSync(python(), ["-c", code], { input: JSON.stringify([crs, points]), encoding: "utf8" });
  if (res.status !== 0) throw new Error(`pyproj failed: ${res.stderr}`);
  return JSON.parse(res.stdout);
}

describe("stock OpenLayers GeoZarr source in headless Chromium", { skip, timeout: 240_000 }, () => {
  const { dir, manifest } = fixtures();
  const none = manifest.map.none;
  let server;
  let context;
  let page;
  let userDataDir;
  let bundleDir;
  const pageErrors = [];
  let exp;
  let root;

  before(async () => {
    const { chromium } = await import("playwright-core");
    const { build } = await import("esbuild");
    bundleDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-ol-bundle-"));
    await build({
      entryPoints: [path.join(HERE, "openlayers-page.js")],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: path.join(bundleDir, "openlayers-page.js"),
      logLevel: "error",
    });
    server = await startServer({ mounts: { "/": HERE, "/fixtures/": dir, "/bundle/": bundleDir } });
    userDataDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-chromium-"));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS, "--enable-unsafe-swiftshader"],
      viewport: { width: 512, height: 384 },
    });
    page = await context.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/openlayers.html`);
    await page.waitForFunction(() => window.czOl?.ready === true, null, { timeout: 30_000 });
    exp = loadExpected(dir, none);
    root = JSON.parse(readFileSync(path.join(dir, none.path, "zarr.json"), "utf8")).attributes;
  });

  after(async () => {
    await context?.close();
    await server?.close();
    for (const d of [userDataDir, bundleDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  const url = () => `${server.url}/fixtures/${none.path}`;

  test("opens with the URL and the array name; values at pyproj's places equal the Python reader", async () => {
    const [nt, nb, h, w] = none.levels[0].shape;
    const [a, c, e, f] = [A, C, E, F];
    const crs = "EPSG:32631";
    assert.equal(root["proj:code"], crs);
    const centre = (row, col) => [c + a * (col + 0.5), f + e * (row + 0.5)];
    const [mid] = pyprojLonLat(crs, [centre(h / 2, w / 2)]);
    // 4 m of Web Mercator per screen pixel: about 2.8 m on the ground at 45 degrees north
    const seen = server.log.length;
    const opened = await page.evaluate((o) => window.czOl.open(o), { url: url(), view: { lonLat: mid, resolution: 4 } });
    // the root's spatial:* place it: no coordinate array is read (a store without them costs 4
    // reads of x and y, one after the other)
    const coordinateReads = server.log.slice(seen).filter((r) => /\/[xy]\/c\//.test(r.path));
    assert.deepEqual(coordinateReads, [], "coordinate arrays read");
    assert.equal(opened.projection, "EPSG:32631", "the projection came from the store's proj:code");
    assert.equal(opened.resolutions.length, none.levels.length, "every level of the pyramid");
    assert.deepEqual(opened.extent, [c, f + e * h, c + a * w, f]);

    const pixels = [
      [0, 0],
      [0, w - 1],
      [h - 1, 0],
      [h - 1, w - 1],
      [40, 100],
      [63, 64],
      [10, 77],
    ];
    const lonLats = pyprojLonLat(
      crs,
      pixels.map(([row, col]) => centre(row, col)),
    );
    let checked = 0;
    for (const t of [0, 2, nt - 1]) {
      for (let b = 0; b < nb; b++) {
        if (t !== 0 || b !== 0) await page.evaluate((d) => window.czOl.select(d), { time: t, band: b });
        else await page.evaluate((d) => window.czOl.select(d), { time: 0, band: 0 });
        const got = await page.evaluate((ll) => window.czOl.values(ll), lonLats);
        pixels.forEach(([row, col], i) => {
          const want = exp[0][t].data[b * h * w + row * w + col];
          if (want === none.nodata) {
            assert.ok(got[i] === null || got[i][1] === 0, `t ${t} band ${b} (${row}, ${col}) nodata`);
            return;
          }
          assert.ok(got[i], `t ${t} band ${b} (${row}, ${col}): no data at pyproj's place`);
          assert.equal(got[i][0], want, `t ${t} band ${b} pixel (${row}, ${col})`);
          checked++;
        });
      }
    }
    assert.ok(checked >= 30, `${checked} values checked`);
    assert.deepEqual(pageErrors, []);
  });

  test("outer corners: 2 m inside is the corner pixel, 2 m outside is nothing", async () => {
    const [, , h, w] = none.levels[0].shape;
    const [a, c, e, f] = [A, C, E, F];
    const crs = "EPSG:32631";
    const x0 = c;
    const x1 = c + a * w;
    const y0 = f;
    const y1 = f + e * h;
    const corners = [
      [x0, y0, 1, -1, 0, 0],
      [x1, y0, -1, -1, 0, w - 1],
      [x0, y1, 1, 1, h - 1, 0],
      [x1, y1, -1, 1, h - 1, w - 1],
    ];
    const inside = corners.map(([x, y, sx, sy]) => [x + 2 * sx, y + 2 * sy]);
    const outside = corners.map(([x, y, sx, sy]) => [x - 2 * sx, y - 2 * sy]);
    await page.evaluate((d) => window.czOl.select(d), { time: 0, band: 0 });
    const gotIn = await page.evaluate((ll) => window.czOl.values(ll), pyprojLonLat(crs, inside));
    const gotOut = await page.evaluate((ll) => window.czOl.values(ll), pyprojLonLat(crs, outside));
    corners.forEach(([, , , , row, col], i) => {
      const want = exp[0][0].data[row * w + col];
      assert.ok(gotIn[i] && gotIn[i][0] === want, `corner (${row}, ${col}) 2 m inside: ${gotIn[i]} != ${want}`);
      assert.ok(gotOut[i] === null || gotOut[i][1] === 0, `corner (${row}, ${col}) 2 m outside: ${gotOut[i]}`);
    });
    assert.deepEqual(pageErrors, []);
  });
  test("the docs/js.md example runs as written", async () => {
    const doc = readFileSync(path.join(REPO, "docs", "js.md"), "utf8");
    const from = doc.indexOf("### OpenLayers\n");
    const block = /```js\n([\s\S]*?)```/.exec(doc.slice(from))[1];
    assert.ok(block.includes('new GeoZarr({ url: "https://bucket.example/s2-ucayali.zarr", variable: "data" })'));
    const code = block.replace("https://bucket.example/s2-ucayali.zarr", url()) + "\nwindow.docExample = { map, layer, source };\n";
    const { build } = await import("esbuild");
    await build({
      stdin: { contents: code, resolveDir: HERE, loader: "js" },
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: path.join(bundleDir, "doc-example.js"),
      logLevel: "error",
    });
    const p = await context.newPage();
    p.on("pageerror", (err) => pageErrors.push(err.message));
    await p.goto(`${server.url}/openlayers.html`); // same origin as the bundle
    await p.evaluate(() => {
      document.body.innerHTML = '<div id="map" style="width:512px;height:384px"></div>';
    });
    await p.addScriptTag({ url: `${server.url}/bundle/doc-example.js`, type: "module" });
    const [, , h, w] = none.levels[0].shape;
    const [row, col] = [40, 100];
    const at = [C + A * (col + 0.5), F + E * (row + 0.5)];
    const got = await p.evaluate(async (at) => {
      const { map, layer, source } = window.docExample;
      while (source.getState() === "loading") await new Promise((r) => setTimeout(r, 20));
      map.getView().setResolution(7.5); // 4 screen pixels per store pixel, centred on `at`
      map.getView().setCenter(at);
      await new Promise((r) => map.once("rendercomplete", r));
      return { projection: map.getView().getProjection().getCode(), value: layer.getData(map.getPixelFromCoordinate(at)) };
    }, at);
    await p.close();
    assert.equal(got.projection, "EPSG:32631");
    assert.ok(got.value, "no data under the pixel centre");
    assert.equal(got.value[0], exp[0][0].data[row * w + col]);
    assert.ok(h > row);
    assert.deepEqual(pageErrors, []);
  });
});

// The map viewer (js/dist/viewer, built here with `buildViewer`) in headless Chromium with
// SwiftShader WebGL, on the offline style, against stores written by the Python writer:
// georegistration within 1 px of pyproj at known corners (UTM by EPSG code, LAEA from the
// bundled table, NZTM given only as WKT2), no seam across cell edges at several zooms, values
// on click equal to the Python reader through every timestep, the time slider by date, URL
// state round trip (same view, same pixels), and the error banners. Saves
// artifacts/viewer-map.png. Skipped with the reason printed without /usr/bin/chromium (a
// failure under CI=true, as in browser.test.js).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createReadStream, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { buildViewer } from "../tools/build-viewer.mjs";
import { HERE, REPO, fixtures, loadExpected, python } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkip } from "./chromium.js";
import { startServer } from "./server.js";

const skip = chromiumSkip("map");

/** Zoom at which one store pixel of `res` metres covers `px` screen pixels at `lat` (MapLibre's 512 px tiles). */
const zoomFor = (res, lat, px) => Math.log2((40075016.686 * Math.cos((lat * Math.PI) / 180)) / (512 * (res / px)));

describe("the map viewer in headless Chromium", { skip, timeout: 240_000 }, () => {
  const { dir, manifest } = fixtures();
  let viewerDir;
  let mapDir;
  let mapManifest;
  let server;
  let plainServer;
  let browser;
  const pageErrors = [];

  before(async () => {
    viewerDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-viewer-"));
    mapDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-mapfx-"));
    await buildViewer(viewerDir);
    const res = spawnSync(python(), [path.join(HERE, "make_map_fixtures.py"), mapDir], { encoding: "utf8" });
    assert.equal(res.status, 0, `make_map_fixtures.py failed:\n${res.stdout}\n${res.stderr}`);
    mapManifest = JSON.parse(readFileSync(path.join(mapDir, "map", "manifest.json"), "utf8"));
    server = await startServer({ mounts: { "/": viewerDir, "/fixtures/": dir, "/mapfx/": mapDir } });
    // A host that serves the same files without any CORS header (a bucket without a CORS rule).
    plainServer = http.createServer((req, res) => {
      const file = path.join(mapDir, decodeURIComponent(new URL(req.url, "http://x").pathname));
      if (!file.startsWith(mapDir) || !existsSync(file) || statSync(file).isDirectory()) {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { "Content-Type": "application/json" });
      createReadStream(file).pipe(res);
    });
    await new Promise((r) => plainServer.listen(0, "127.0.0.1", r));
    const { chromium } = await import("playwright-core");
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    plainServer?.closeAllConnections?.();
    await new Promise((r) => (plainServer ? plainServer.close(r) : r()));
    for (const d of [viewerDir, mapDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  async function openViewer(query, { width = 1200, height = 760 } = {}) {
    const page = await browser.newPage({ viewport: { width, height } });
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/index.html?style=style.json&capture=1&${query}`);
    await page.waitForFunction(() => document.body.dataset.state !== "loading", null, { timeout: 30000 });
    return page;
  }

  /** Jump the map, wait until the frame of the new view is drawn and the map is idle. */
  const jump = (page, view) =>
    page.evaluate(async ({ center, zoom }) => {
      const { map, layer } = window.viewer;
      map.jumpTo({ center, zoom });
      await layer.setTime(layer.t);
      await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    }, view);

  /** RGBA of the map canvas along a horizontal and a vertical line through (x, y), +-n px. */
  const lines = (page, n = 30) =>
    page.evaluate((n) => {
      const src = window.viewer.map.getCanvas();
      const c = document.createElement("canvas");
      c.width = src.width;
      c.height = src.height;
      const ctx = c.getContext("2d");
      ctx.drawImage(src, 0, 0);
      if (window.viewer.layer.canvas) ctx.drawImage(window.viewer.layer.canvas, 0, 0); // overlay rendering: the layer's canvas, stacked as on screen
      const cx = Math.round(src.width / 2);
      const cy = Math.round(src.height / 2);
      const h = Array.from(ctx.getImageData(cx - n, cy, 2 * n, 1).data);
      const v = Array.from(ctx.getImageData(cx, cy - n, 1, 2 * n).data);
      return { cx, cy, n, h, v, dpr: devicePixelRatio };
    }, n);

  const isStore = (rgba, i) => Math.max(rgba[4 * i], rgba[4 * i + 1], rgba[4 * i + 2]) > 80; // data is >= 0.4 of the stretch; the basemap is dark

  test("each known corner lands within 1 px of pyproj's lon/lat (UTM code, LAEA code, WKT2-only CRS)", async () => {
    for (const name of ["utm", "laea", "wkt2"]) {
      const s = mapManifest.stores[name];
      const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}&stretch=0,1`);
      assert.equal(await page.evaluate(() => document.body.dataset.state), "ready", `${name}: opened`);
      const res = s.transform[0];
      for (const k of s.corners.filter((c) => c.name !== "cell corner")) {
        await jump(page, { center: [k.lon, k.lat], zoom: zoomFor(res, k.lat, 4) });
        const n = 24;
        const east = k.col === 0; // the store lies east of a west corner
        const south = k.row === 0; // and south of a north corner
        const scan = (rgba, towardsPositive, offset) => {
          const idx = [...Array(2 * n).keys()];
          const inside = idx.filter((i) => isStore(rgba, i));
          assert.ok(inside.length > 0, `${name} ${k.name}: no store pixel near the corner (offset ${offset})`);
          return towardsPositive ? Math.min(...inside) - n : Math.max(...inside) + 1 - n;
        };
        // Horizontal line through the centre, 3 px into the store vertically, and vice versa.
        const probe = await page.evaluate(
          ({ dx, dy, n }) => {
            const src = window.viewer.map.getCanvas();
            const c = document.createElement("canvas");
            c.width = src.width;
            c.height = src.height;
            const ctx = c.getContext("2d");
            ctx.drawImage(src, 0, 0);
            if (window.viewer.layer.canvas) ctx.drawImage(window.viewer.layer.canvas, 0, 0); // overlay rendering: the layer's canvas, stacked as on screen
            const cx = Math.round(src.width / 2);
            const cy = Math.round(src.height / 2);
            return {
              h: Array.from(ctx.getImageData(cx - n, cy + dy, 2 * n, 1).data),
              v: Array.from(ctx.getImageData(cx + dx, cy - n, 1, 2 * n).data),
            };
          },
          { dx: east ? 3 : -4, dy: south ? 3 : -4, n },
        );
        const edgeX = scan(probe.h, east, "h");
        const edgeY = scan(probe.v, south, "v");
        assert.ok(Math.abs(edgeX) <= 1, `${name} ${k.name}: west/east edge ${edgeX} px from pyproj's corner`);
        assert.ok(Math.abs(edgeY) <= 1, `${name} ${k.name}: north/south edge ${edgeY} px from pyproj's corner`);
      }
      // The interior cell corner: the pixel just south-east of it is (cs, cs), north-west (cs-1, cs-1).
      const k = s.corners.find((c) => c.name === "cell corner");
      await jump(page, { center: [k.lon, k.lat], zoom: zoomFor(res, k.lat, 8) });
      const picked = await page.evaluate(() => {
        const { map, layer } = window.viewer;
        const c = map.getCanvas();
        const at = (dx, dy) => layer.pixelAt(map.unproject([c.clientWidth / 2 + dx, c.clientHeight / 2 + dy]));
        return [at(2, 2), at(-2, -2)];
      });
      assert.deepEqual(
        picked,
        [
          { row: s.cs, col: s.cs },
          { row: s.cs - 1, col: s.cs - 1 },
        ],
        `${name}: pixel picking at a cell corner`,
      );
      await page.close();
    }
    assert.deepEqual(pageErrors, []);
  });

  test("no seam between cells at any zoom (pixels across a cell corner)", async () => {
    const s = mapManifest.stores.utm;
    const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}&stretch=0,1`);
    // Lattice point (2 cs, 2 cs) is a cell corner at level 0 and at level 1.
    const ll = await page.evaluate((cs) => window.viewer.layer.lngLatOf({ row: 2 * cs, col: 2 * cs, corner: true }), s.cs);
    const levels = new Set();
    for (const px of [11.3, 4, 1.37, 0.71, 0.45]) {
      await jump(page, { center: ll, zoom: zoomFor(s.transform[0], ll[1], px) });
      levels.add(await page.evaluate(() => window.viewer.layer._loader.shownInfo.level));
      const { n, h, v } = await lines(page, 20);
      for (const [label, rgba] of [
        ["horizontal", h],
        ["vertical", v],
      ]) {
        const gaps = [...Array(2 * n).keys()].filter((i) => !isStore(rgba, i));
        assert.deepEqual(
          gaps,
          [],
          `${px} screen px per store pixel: background shows through at ${label} offsets ${gaps.map((i) => i - n)}`,
        );
      }
    }
    assert.ok(levels.size >= 2, `checked levels ${[...levels]}`);
    await page.close();
  });

  test("click shows the Python reader's stored, physical, validity, mask and coverage values; the slider moves by date", async () => {
    const entry = manifest.viewer;
    const expected = loadExpected(dir, entry);
    const [nt, nb, h, w] = entry.levels[0].shape;
    let pick = null;
    const centre = Math.floor(h / 2) * w + Math.floor(w / 2);
    for (let k = 0; k < h * w && !pick; k += 7) {
      const i = (centre + k) % (h * w);
      const m = expected[0].map((e) => e.mask[i]);
      if (m.includes(0) && m.includes(1)) pick = { row: Math.floor(i / w), col: i % w };
    }
    assert.ok(pick, "fixture has a pixel masked in some timesteps");
    const page = await openViewer(`store=${encodeURIComponent(`/fixtures/${entry.path}`)}&time=2024-03-01`);
    // ?time= selects by date; the label shows it.
    assert.equal(await page.evaluate(() => window.viewer.layer.t), 2);
    assert.equal(await page.locator("#time-label").textContent(), "2024-03-01");
    const ll = await page.evaluate((p) => window.viewer.layer.lngLatOf(p), pick);
    await jump(page, { center: ll, zoom: zoomFor(10, ll[1], 6) });
    const at = await page.evaluate((p) => window.viewer.screenOf(p), pick);
    await page.mouse.click(at.x, at.y);
    // The README picture, before the slider steps and playback below (whose rate the footer's
    // readout would show): the whole store on the map in a month where the clicked pixel is clear
    // and a cloud elsewhere is masked, the pixel's history drawn.
    const clear = expected[0].findIndex((e) => e.mask[pick.row * w + pick.col] === 1 && e.mask.includes(0));
    assert.ok(clear >= 0, "fixture has a month with the pixel clear and a cloud elsewhere");
    await page.locator("#time").fill(String(clear));
    await page.evaluate(() => document.activeElement?.blur()); // keys go to the map, not the slider
    await page.keyboard.press("0"); // fit
    await page.waitForFunction(
      (c) => document.body.dataset.frame === String(c) && document.getElementById("inspector-body").dataset.t === String(c),
      clear,
      { timeout: 10000 },
    );
    await page.waitForFunction(() => Number(document.getElementById("chart").dataset.points) > 0, null, { timeout: 10000 });
    await page.waitForFunction(() => document.getElementById("fps").dataset.value === undefined, null, { timeout: 6000 }); // no stale rate
    await page.evaluate(() => new Promise((r) => (window.viewer.map.loaded() ? r() : window.viewer.map.once("idle", r))));
    mkdirSync(path.join(REPO, "artifacts"), { recursive: true });
    await page.screenshot({ path: path.join(REPO, "artifacts", "viewer-map.png") });
    const bands = await page.evaluate(() => window.viewer.store.bands.map((b) => ({ name: b.name, scale: b.scale, offset: b.offset })));
    const times = await page.evaluate(() => window.viewer.store.times);
    let masked = 0;
    for (let t = 0; t < nt; t++) {
      await page.locator("#time").fill(String(t)); // the slider, as a user drags it
      await page.waitForFunction(
        ({ t, row, col }) => {
          const b = document.getElementById("inspector-body");
          return (
            !b.hidden &&
            document.body.dataset.frame === String(t) &&
            b.dataset.t === String(t) &&
            b.dataset.row === String(row) &&
            b.dataset.col === String(col)
          );
        },
        { t, ...pick },
        { timeout: 10000 },
      );
      const shown = await page.evaluate(() => ({
        label: document.getElementById("time-label").textContent,
        url: new URL(location.href).searchParams.get("time"),
        rows: [...document.querySelectorAll("#values tbody tr")].map((tr) => ({
          band: tr.dataset.band,
          stored: tr.querySelector(".stored").dataset.value,
          physical: tr.querySelector(".physical").dataset.value,
          valid: tr.querySelector(".validity").dataset.value,
        })),
        mask: document.getElementById("px-mask").dataset.value,
        coverage: document.getElementById("px-coverage").dataset.value,
      }));
      assert.equal(shown.label, times[t].slice(0, 10), `t ${t}: slider label is the date`);
      const exp = expected[0][t];
      const i = pick.row * w + pick.col;
      assert.equal(shown.rows.length, nb);
      for (let b = 0; b < nb; b++) {
        const stored = exp.data[b * h * w + i];
        const valid = exp.valid[b * h * w + i] === 1;
        assert.equal(shown.rows[b].band, bands[b].name);
        assert.equal(shown.rows[b].stored, String(stored), `t ${t} ${bands[b].name}: stored`);
        assert.equal(shown.rows[b].valid, valid ? "1" : "0", `t ${t} ${bands[b].name}: validity`);
        assert.equal(
          shown.rows[b].physical,
          valid ? String(stored * bands[b].scale + bands[b].offset) : "",
          `t ${t} ${bands[b].name}: physical`,
        );
      }
      assert.equal(shown.mask, String(exp.mask[i]), `t ${t}: mask`);
      assert.equal(shown.coverage, String(exp.coverage[i]), `t ${t}: coverage`);
      if (exp.mask[i] === 0) masked++;
    }
    assert.ok(masked > 0 && masked < nt);
    await page.waitForFunction(
      () => new URL(location.href).searchParams.get("time") === window.viewer.store.times.at(-1).slice(0, 10),
      null,
      { timeout: 5000 },
    );
    let validPoints = 0;
    for (let t = 0; t < nt; t++) for (let b = 0; b < nb; b++) validPoints += expected[0][t].valid[b * h * w + pick.row * w + pick.col];
    await page.waitForFunction((n) => document.getElementById("chart").dataset.points === String(n), validPoints, { timeout: 10000 });
    // The history chart fits in the sidebar without scrolling.
    const fits = await page.evaluate(() => {
      const side = document.querySelector(".sidebar").getBoundingClientRect();
      const chart = document.getElementById("chart").getBoundingClientRect();
      return chart.bottom <= side.bottom && chart.top >= side.top;
    });
    assert.ok(fits, "the chart is visible without scrolling the sidebar");
    // Once the view is prefetched, playback fetches no data chunk; shard_bytes lists every data
    // shard (spec 7.3), so no HEAD either; every range is bounded.
    await page.waitForFunction(
      () => {
        const { layer } = window.viewer;
        const level = layer.currentLevel();
        return (
          document.body.dataset.prefetched ===
          `${level}|${layer
            .visibleCells(level)
            .map((c) => `${c.row},${c.col}`)
            .join(";")}`
        );
      },
      null,
      { timeout: 30000 },
    );
    const requests = [];
    page.on("request", (r) => requests.push({ method: r.method(), url: r.url(), range: r.headers().range ?? null }));
    await page.locator("#speed").selectOption("30");
    await page.locator("#play").click();
    await page.waitForTimeout(2000);
    await page.locator("#play").click();
    const fps = Number(await page.evaluate(() => document.getElementById("fps").dataset.value));
    assert.ok(fps > 1, `playback displayed ${fps} timesteps/s`);
    // Paused, with no timestep changing, the rate readout goes blank rather than stay stale.
    await page.waitForFunction(() => document.getElementById("fps").dataset.value === undefined, null, { timeout: 6000 });
    assert.equal(await page.locator("#fps").textContent(), "— fps");
    assert.deepEqual(
      requests.filter((r) => r.url.includes("/data/c/")),
      [],
      "prefetched playback fetched data chunks",
    );
    for (const r of requests) if (r.range) assert.match(r.range, /^bytes=\d+-\d+$/);
    // Zooming out far enough draws a coarser level (spec 10.3).
    await page.evaluate(() => window.viewer.map.zoomOut({ animate: false }));
    await page.evaluate(() => window.viewer.map.setZoom(window.viewer.map.getZoom() - 4.5));
    await page.waitForFunction(() => Number(document.body.dataset.level) > 0, null, { timeout: 15000 });
    assert.match(await page.locator("#level-badge").textContent(), /^L[1-9]/);
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  test("overlay and interleaved rendering show the same pixels; the first frame through the value table on the GPU, later ones coloured on the CPU; cells coloured on the CPU as the value table, the value table as the per-fragment shader; a hidden layer leaves its canvas empty", async () => {
    const s = mapManifest.stores.utm;
    const query = `store=${encodeURIComponent(`/mapfx/${s.path}`)}&mode=band&band=B08&stretch=0.05,0.5`;
    const settle = (p) =>
      p.evaluate(async () => {
        const { map } = window.viewer;
        await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
      });
    /** RGBA of the screen as the compositor stacks it (map canvas, then the overlay), or of one canvas. */
    const pixels = (p, which = "screen") =>
      p.evaluate((which) => {
        const { map, layer } = window.viewer;
        const src = map.getCanvas();
        const c = document.createElement("canvas");
        c.width = src.width;
        c.height = src.height;
        const ctx = c.getContext("2d");
        if (which !== "layer") ctx.drawImage(src, 0, 0);
        if (which !== "map" && layer.canvas) ctx.drawImage(layer.canvas, 0, 0);
        window.__px = ctx.getImageData(0, 0, c.width, c.height).data;
        let opaque = 0;
        for (let i = 3; i < window.__px.length; i += 4) if (window.__px[i] > 0) opaque++;
        return { width: c.width, height: c.height, opaque };
      }, which);
    const diff = (p, other) =>
      p.evaluate((other) => {
        const a = window.__px;
        const b = other ?? window.__saved;
        let max = 0;
        let sum = 0;
        for (let i = 0; i < a.length; i++) {
          const d = Math.abs(a[i] - b[i]);
          max = Math.max(max, d);
          sum += d;
        }
        return { max, mean: sum / a.length };
      }, other);
    const over = await openViewer(query);
    const inter = await openViewer(`${query}&rendering=interleaved`);
    await settle(over);
    await settle(inter);
    assert.deepEqual(await over.evaluate(() => [window.viewer.layer.rendering, Boolean(window.viewer.layer.canvas)]), ["overlay", true]);
    assert.deepEqual(await inter.evaluate(() => [window.viewer.layer.rendering, window.viewer.layer.canvas]), ["interleaved", null]);
    assert.equal(
      await over.evaluate(() => window.viewer.layer._renderer.program.valueLut),
      true,
      "band mode of a uint16 store draws through the value table",
    );
    const layerOnly = await pixels(over, "layer");
    assert.ok(layerOnly.opaque > (layerOnly.width * layerOnly.height) / 10, `the overlay canvas holds the store: ${layerOnly.opaque} px`);
    // The same view in both modes: the same screen, pixel for pixel (the same fragments, the
    // overlay blended over the map by the compositor instead of drawn into it).
    await pixels(over);
    const screenOver = await over.evaluate(() => Array.from(window.__px));
    await pixels(inter);
    const same = await diff(inter, screenOver);
    assert.ok(same.max <= 1, `overlay vs interleaved: max channel difference ${same.max}, mean ${same.mean}`);
    // The first frame fetched its colours from the value table on the GPU (decision 0073); after
    // it, without new content, the program is the one that colours on the CPU (decision 0062),
    // and a redraw of the same frame colours its cells there.
    assert.equal(await over.evaluate(() => window.viewer.marks.firstStats.cpuColoured), false, "first frame: value table on the GPU");
    // (in a task after the frame that showed the first one: waited for)
    await over.waitForFunction(() => window.viewer.layer._renderer.program?.cpuColour === true, null, { timeout: 10_000 });
    await over.evaluate(async () => {
      window.viewer.layer._repaint();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    assert.equal(await over.evaluate(() => window.viewer.layer.stats.cpuColoured), true, "a redraw colours on the CPU");
    // The cells coloured on the CPU (the default, decision 0062) against the value table fetched
    // on the GPU: the same table, so the same pixels, byte for byte.
    await pixels(over);
    await over.evaluate(() => (window.__saved = window.__px));
    await over.evaluate(async () => {
      const { layer } = window.viewer;
      layer.cpuColour = false;
      layer._renderer.displayChanged();
      layer._repaint();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    assert.equal(await over.evaluate(() => window.viewer.layer._renderer.program.cpuColour), undefined, "value table on the GPU");
    await pixels(over);
    const gpu = await diff(over);
    assert.equal(gpu.max, 0, `CPU-coloured vs value-table colours: max ${gpu.max}, mean ${gpu.mean}`);
    // The value table against the per-fragment path of the same display: at most one
    // colour-map entry apart (float32 rounding at an entry's edge), almost everywhere equal.
    await pixels(over);
    await over.evaluate(() => (window.__saved = window.__px));
    await over.evaluate(async () => {
      const { layer } = window.viewer;
      layer.valueLut = false;
      layer._renderer.displayChanged();
      layer._repaint();
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    assert.equal(await over.evaluate(() => window.viewer.layer._renderer.program.valueLut), undefined, "per-fragment program");
    await pixels(over);
    const lut = await diff(over);
    assert.ok(lut.max <= 8 && lut.mean < 0.01, `value table vs per-fragment colours: max ${lut.max}, mean ${lut.mean}`);
    // Hidden through the style, the layer's canvas is cleared by the next map frame; shown
    // again, it is drawn again.
    await over.evaluate(async () => {
      const { map } = window.viewer;
      map.setLayoutProperty("chronozarr", "visibility", "none");
      await new Promise((r) => map.once("render", r));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    assert.equal((await pixels(over, "layer")).opaque, 0, "hidden: the overlay is empty");
    await over.evaluate(async () => {
      const { map } = window.viewer;
      map.setLayoutProperty("chronozarr", "visibility", "visible");
      await new Promise((r) => map.once("render", r));
      await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
    });
    assert.equal((await pixels(over, "layer")).opaque, layerOnly.opaque, "shown again: the same pixels");
    await over.close();
    await inter.close();
    assert.deepEqual(pageErrors, []);
  });

  test("URL state round trip: a copied link reproduces the view, the display and the pixels", async () => {
    const s = mapManifest.stores.utm;
    const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.locator("#mode").selectOption("band");
    await page.locator("#band").selectOption("3");
    await page.locator("#colormap").selectOption("magma");
    await page.locator("#stretch-min").fill("0.45");
    await page.locator("#stretch-max").fill("0.85");
    await page.locator("#stretch-max").dispatchEvent("change");
    await page.locator("#opacity").fill("0.6");
    await page.locator("#time").fill("2");
    const ll = await page.evaluate(() => window.viewer.layer.lngLatOf({ row: 100, col: 120 }));
    await jump(page, { center: ll, zoom: 14.3 });
    await page.waitForFunction(() => new URL(location.href).searchParams.get("zoom") === "14.30", null, { timeout: 5000 });
    const link = await page.evaluate(() => location.href);
    const q = new URL(link).searchParams;
    assert.equal(q.get("mode"), "band");
    assert.equal(q.get("band"), "B08");
    assert.equal(q.get("time"), "2023-03-15");
    assert.equal(q.get("stretch"), "0.45,0.85");
    assert.equal(q.get("cmap"), "magma");
    assert.equal(q.get("opacity"), "0.6");
    const snapshot = (p) =>
      p.evaluate(async () => {
        const { map, layer } = window.viewer;
        await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
        const src = map.getCanvas();
        const c = document.createElement("canvas");
        c.width = src.width;
        c.height = src.height;
        const ctx = c.getContext("2d");
        ctx.drawImage(src, 0, 0);
        if (window.viewer.layer.canvas) ctx.drawImage(window.viewer.layer.canvas, 0, 0); // overlay rendering: the layer's canvas, stacked as on screen
        // Mean colour of 24 x 24 px blocks: the same view draws the same blocks; a shifted time,
        // band, stretch, colormap or centre does not (sub-pixel rounding of the centre may move
        // single edge pixels, so blocks, not pixels, are compared).
        const px = ctx.getImageData(0, 0, c.width, c.height).data;
        const blocks = [];
        for (let by = 0; by + 24 <= c.height; by += 24) {
          for (let bx = 0; bx + 24 <= c.width; bx += 24) {
            let sum = 0;
            for (let y = by; y < by + 24; y++)
              for (let x = bx; x < bx + 24; x++) for (let k = 0; k < 3; k++) sum += px[(y * c.width + x) * 4 + k];
            blocks.push(sum / (24 * 24 * 3));
          }
        }
        const c0 = map.getCenter();
        return {
          t: layer.t,
          mode: layer.mode,
          band: layer.band,
          stretch: layer.stretch,
          cmap: layer.colormap,
          opacity: layer.opacity,
          lng: c0.lng,
          lat: c0.lat,
          zoom: map.getZoom(),
          blocks,
        };
      });
    const a = await snapshot(page);
    const again = await browser.newPage({ viewport: { width: 1200, height: 760 } });
    await again.goto(link);
    await again.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 30000 });
    await again.evaluate(() => window.viewer.layer.setTime(window.viewer.layer.t));
    const b = await snapshot(again);
    assert.deepEqual({ ...b, lng: 0, lat: 0, zoom: 0, blocks: 0 }, { ...a, lng: 0, lat: 0, zoom: 0, blocks: 0 });
    const worst = Math.max(...a.blocks.map((v, i) => Math.abs(v - b.blocks[i])));
    assert.ok(worst < 1, `the reopened link draws the same picture (largest block difference ${worst.toFixed(2)} of 255)`);
    const spread = Math.max(...a.blocks) - Math.min(...a.blocks);
    assert.ok(spread > 40, "the view shows the store, not an empty map");
    assert.ok(
      Math.abs(a.lng - b.lng) < 1e-5 && Math.abs(a.lat - b.lat) < 1e-5 && Math.abs(a.zoom - b.zoom) < 0.006,
      "same centre and zoom",
    );
    await page.close();
    await again.close();
  });

  test("the page's first script GETs the root once, which the early script and the reader take", async () => {
    const s = mapManifest.stores.utm;
    const root = new URL(`/mapfx/${s.path.replace(/\/?$/, "/")}zarr.json`, server.url).href;
    const page = await browser.newPage({ viewport: { width: 1200, height: 760 } });
    page.on("pageerror", (err) => pageErrors.push(err.message));
    const requests = [];
    page.on("request", (r) => {
      if (r.url() === root) requests.push(r.method());
    });
    await page.goto(`${server.url}/index.html?style=style.json&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 60000 });
    const taken = await page.evaluate(() => ({
      sent: window.CHRONOZARR_VIEWER.rootGet?.url ?? null,
      adopted: window.CHRONOZARR_VIEWER.early.root === window.CHRONOZARR_VIEWER.rootGet?.response,
    }));
    await page.close();
    assert.equal(taken.sent, root);
    assert.ok(taken.adopted, "the early script took the first script's root GET");
    assert.deepEqual(requests, ["GET"], `the root was requested once (${requests.join(",")})`);
  });

  test("the page's early chunk requests are the reader's: a fitted first view fetches each chunk once", async () => {
    const s = mapManifest.stores.utm;
    const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    const got = await page.evaluate(() => ({
      early: window.viewer.marks.earlyChunks ?? 0,
      earlyDecoded: window.viewer.marks.earlyDecoded ?? 0,
      decodedInWorkers: window.viewer.pool?.stats.decoded ?? 0,
      requests: window.viewer.store.stats.requests,
      // Decision 0023: the page names the first chunks when the root parses; its chunk
      // fetcher Worker GETs them (its Resource Timing entries, on its own time origin, come in
      // early.timing). Both timelines are counted, so a chunk fetched twice shows.
      planned: window.CHRONOZARR_VIEWER.early.planned ?? 0,
      ...(() => {
        const et = window.CHRONOZARR_VIEWER.early.timing;
        const shift = et ? et.timeOrigin - performance.timeOrigin : 0;
        const all = [
          ...performance.getEntriesByType("resource").map((r) => ({ name: r.name, at: r.startTime, worker: false })),
          ...(et?.entries ?? []).map((r) => ({ name: r.name, at: r.startTime + shift, worker: true })),
        ].filter((r) => /\/c\/0\//.test(r.name));
        return { chunks: all.map((r) => r.name), chunksAt: all.map((r) => r.at), fromWorker: all.filter((r) => r.worker).length };
      })(),
      requestedAt: window.CHRONOZARR_VIEWER.early.marks?.["chunks requested"] ?? null,
      files: performance
        .getEntriesByType("resource")
        .map((r) => r.name)
        .filter((u) => !/\/(mapfx|fixtures)\//.test(u)),
    }));
    // The early chunks were decoded in the page's decode workers before the bundle asked for
    // them; the stylesheets are inlined (no request) and the main thread never loaded a WASM codec.
    assert.ok(got.earlyDecoded > 0, `no early decode was used (${JSON.stringify(got)})`);
    assert.ok(got.planned > 0 && got.early === got.planned, `the reader took every chunk the early script named (${JSON.stringify(got)})`);
    // The timestep-0 GETs are the fetcher's, made once the page named them (when the root parsed).
    assert.equal(got.fromWorker, got.planned, `the early chunks came from the page's chunk fetcher (${JSON.stringify(got)})`);
    assert.ok(got.requestedAt !== null && Math.min(...got.chunksAt) >= got.requestedAt - 1, JSON.stringify(got));
    assert.ok(got.decodedInWorkers + got.earlyDecoded >= got.early, JSON.stringify(got));
    assert.ok(
      got.files.some((u) => /\/viewer\.js$/.test(u)),
      `the page's own files are listed: ${got.files.join(", ")}`,
    );
    assert.deepEqual(
      got.files.filter((u) => /\.css$|numcodecs-/.test(u)),
      [],
      "no stylesheet or main-thread codec request",
    );
    // Skip-free: the test stores carry the levels mirror and consolidated metadata, so the page
    // must have named the first view's chunks itself and the reader must have taken them.
    assert.ok(got.early > 0, `no early chunk was used (${JSON.stringify(got)})`);
    assert.equal(new Set(got.chunks).size, got.chunks.length, `a timestep-0 chunk was fetched twice: ${got.chunks.join(", ")}`);
    await page.close();
  });

  test("with its decode Workers failing to load, the page still draws its first frame at once (no wait on early decodes) and fetches each chunk once", async () => {
    const s = mapManifest.stores.utm;
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    await ctx.route(/\/decode-worker\.js$/, (route) => route.fulfill({ status: 404, body: "" }));
    const page = await ctx.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    // ?decoder=file: the early decoder is loaded from decode-worker.js (404 here), not from a Blob of it.
    await page.goto(`${server.url}/index.html?style=style.json&decoder=file&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => document.body.dataset.state !== "loading", null, { timeout: 30000 });
    const got = await page.evaluate(async () => {
      const t0 = performance.now();
      while (!window.CHRONOZARR_VIEWER.early.timing && performance.now() - t0 < 3000) await new Promise((r) => setTimeout(r, 20));
      const et = window.CHRONOZARR_VIEWER.early.timing;
      const names = [...performance.getEntriesByType("resource"), ...(et?.entries ?? [])]
        .map((r) => r.name)
        .filter((u) => /\/c\/0\//.test(u));
      return {
        state: document.body.dataset.state,
        frameAt: window.viewer.firstFrameAt,
        earlyDecoded: window.viewer.marks.earlyDecoded ?? 0,
        early: window.viewer.marks.earlyChunks ?? 0,
        broken: window.viewer.pool?.broken ?? null,
        names,
      };
    });
    await ctx.close();
    assert.equal(got.state, "ready", JSON.stringify(got));
    assert.equal(got.earlyDecoded, 0, "no early decode can have come from a Worker that never started");
    assert.ok(got.early > 0, `the fetcher's chunks were still used (${JSON.stringify(got)})`);
    // The pool waits up to 10 s for an early decode it was promised; none may be left pending.
    assert.ok(got.frameAt < 8000, `first frame after ${Math.round(got.frameAt)} ms: something waited on a decode that never came`);
    assert.equal(new Set(got.names).size, got.names.length, `a timestep-0 chunk was fetched twice: ${got.names.join(", ")}`);
  });

  test("layer.rendered() resolves only once the GPU has signalled the frame's fence; the viewer marks it after the draw", async () => {
    const s = mapManifest.stores.utm;
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    const page = await ctx.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    // Record every fence status the page reads, in order, with what rendered() resolved after.
    await page.addInitScript(() => {
      window.__czSync = [];
      const get = WebGL2RenderingContext.prototype.getSyncParameter;
      WebGL2RenderingContext.prototype.getSyncParameter = function (sync, pname) {
        const v = get.call(this, sync, pname);
        if (pname === this.SYNC_STATUS) window.__czSync.push(v === this.SIGNALED ? "signaled" : "unsignaled");
        return v;
      };
    });
    await page.goto(`${server.url}/index.html?style=style.json&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => window.viewer?.firstFrameRenderedAt, null, { timeout: 30000 });
    const got = await page.evaluate(async () => {
      const first = { issued: window.viewer.firstFrameAt, rendered: window.viewer.firstFrameRenderedAt, statuses: [...window.__czSync] };
      window.__czSync.length = 0;
      await window.viewer.layer.rendered();
      return { ...first, again: [...window.__czSync] };
    });
    await ctx.close();
    assert.ok(got.rendered >= got.issued, `rendered at ${got.rendered} before the draw was issued at ${got.issued}`);
    assert.equal(got.statuses.at(-1), "signaled", `the first frame's mark came before its fence signalled: ${got.statuses.join(",")}`);
    assert.deepEqual(
      got.again.slice(0, -1).filter((x) => x === "signaled"),
      [],
      "rendered() polled past a signalled fence",
    );
    assert.equal(got.again.at(-1), "signaled", `rendered() resolved without its fence signalled: ${got.again.join(",")}`);
  });

  test("the basemap's canvas has no alpha under a style that paints every pixel, and keeps it under one that may not; the background as the style paints it", async () => {
    const s = mapManifest.stores.utm;
    const offline = JSON.parse(readFileSync(path.join(viewerDir, "style.json"), "utf8"));
    // The same style with a translucent background: the page shows through, so the canvas keeps alpha.
    const [bg, ...rest] = offline.layers;
    writeFileSync(
      path.join(viewerDir, "translucent.json"),
      JSON.stringify({ ...offline, layers: [{ ...bg, paint: { ...bg.paint, "background-opacity": 0.5 } }, ...rest] }),
    );
    const seen = {};
    for (const style of ["style.json", "translucent.json"]) {
      const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
      page.on("pageerror", (err) => pageErrors.push(err.message));
      await page.goto(`${server.url}/index.html?style=${style}&capture=1&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
      await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 60000 });
      seen[style] = await page.evaluate(async () => {
        const { map } = window.viewer;
        await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
        const canvas = map.getCanvas();
        const alpha = canvas.getContext("webgl2").getContextAttributes().alpha;
        // The map's own pixels over the page's background (black here): the colour most of them
        // have is the style's background (the store is drawn in the layer's canvas, not this one).
        const out = document.createElement("canvas");
        out.width = canvas.width;
        out.height = canvas.height;
        const ctx = out.getContext("2d");
        ctx.fillStyle = "#000";
        ctx.fillRect(0, 0, out.width, out.height);
        ctx.drawImage(canvas, 0, 0);
        const px = ctx.getImageData(0, 0, out.width, out.height).data;
        const counts = new Map();
        for (let i = 0; i < px.length; i += 4) {
          const k = `${px[i]},${px[i + 1]},${px[i + 2]},${px[i + 3]}`;
          counts.set(k, (counts.get(k) ?? 0) + 1);
        }
        const [mode] = [...counts].sort((a, b) => b[1] - a[1])[0];
        return { alpha, mode };
      });
      await page.close();
    }
    assert.equal(seen["style.json"].alpha, false, "the offline style's opaque background: no alpha");
    assert.equal(seen["translucent.json"].alpha, true, "a translucent background: MapLibre's alpha kept");
    // The offline style's background, #0e1a24, as MapLibre paints it with alpha.
    assert.equal(seen["style.json"].mode, `${0x0e},${0x1a},${0x24},255`);
  });

  test("an oversized first chunk is not read by the early fetcher: the reader GETs it and refuses it by name", async () => {
    const s = mapManifest.stores.utm;
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    // 8 MiB for a chunk of a few kB: over the early fetcher's cap (twice the raw chunk) and the reader's bound.
    await ctx.route(/\/utm\.zarr\/0\/data\/c\/0\/0\/0\/0$/, (route) =>
      route.fulfill({ status: 200, body: Buffer.alloc(8 * 1024 * 1024, 7) }),
    );
    const page = await ctx.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/index.html?style=style.json&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => document.body.dataset.state === "error", null, { timeout: 30000 });
    const got = await page.evaluate(() => ({
      refetched: window.CHRONOZARR_VIEWER.early.refetched ?? 0,
      planned: window.CHRONOZARR_VIEWER.early.planned ?? 0,
      title: document.getElementById("error-title").textContent,
      message: document.getElementById("error-message").textContent,
    }));
    await ctx.close();
    assert.ok(got.planned > 0, JSON.stringify(got));
    assert.equal(got.refetched, 1, `the early fetcher refused the oversized chunk (${JSON.stringify(got)})`);
    assert.match(got.title, /Could not read the store/);
    assert.match(got.message, /0\/data\/c\/0\/0\/0\/0/, "the banner names the chunk");
  });

  test("the first frame is drawn before MapLibre has loaded, where the map then draws it (the same canvas, the same pixels within 1 px)", async () => {
    const s = mapManifest.stores.utm;
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    // MapLibre's module is held back until the frame drawn before it has been read.
    let release;
    const held = new Promise((r) => (release = r));
    await ctx.route(/\/maplibre-gl\.js$/, async (route) => {
      await held;
      await route.continue();
    });
    const page = await ctx.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/index.html?style=style.json&capture=1&stretch=0,1&store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => window.viewer?.firstFrameAt, null, { timeout: 30000 });
    // The overlay canvas as RGBA, and its drawn box (alpha > 0) in device pixels.
    const snap = () =>
      page.evaluate(() => {
        const src = document.querySelector("#map canvas.chronozarr-overlay");
        const c = document.createElement("canvas");
        c.width = src.width;
        c.height = src.height;
        const g = c.getContext("2d");
        g.drawImage(src, 0, 0);
        const d = g.getImageData(0, 0, c.width, c.height).data;
        let [x0, y0, x1, y1, n] = [Infinity, Infinity, -1, -1, 0];
        for (let y = 0; y < c.height; y++) {
          for (let x = 0; x < c.width; x++) {
            if (d[4 * (y * c.width + x) + 3] === 0) continue;
            n++;
            x0 = Math.min(x0, x);
            x1 = Math.max(x1, x);
            y0 = Math.min(y0, y);
            y1 = Math.max(y1, y);
          }
        }
        window.__snaps = [...(window.__snaps ?? []), d];
        return { w: c.width, h: c.height, box: [x0, y0, x1, y1], drawn: n, map: !!window.viewer.map, state: document.body.dataset.state };
      });
    const before = await snap();
    // The page was veiled until this frame (decision 0061): lifted with it, or by the deadline
    // (1.5 s) if the frame came later, never left on.
    const veil = await page.evaluate(() => ({
      on: document.documentElement.hasAttribute("data-veil"),
      lifted: window.CHRONOZARR_VIEWER.early.marks.veilLifted,
      first: window.viewer.firstFrameAt,
    }));
    assert.ok(
      !veil.on && (Math.abs(veil.lifted - veil.first) < 200 || (veil.lifted >= 1500 && veil.lifted < veil.first)),
      `the veil is lifted with the first frame (${JSON.stringify(veil)})`,
    );
    assert.equal(before.map, false, "the frame was drawn before the map existed");
    assert.equal(before.state, "loading", "body[data-state] becomes ready with the map's frame, not before");
    assert.ok(before.drawn > 0.1 * before.w * before.h, `the early frame shows the store (${JSON.stringify(before)})`);
    release();
    await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 30000 });
    await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
    // One decoder was started with the page; the pool has one per core (up to 4) after the frame.
    const decoders = await page.evaluate(() => ({
      early: window.CHRONOZARR_VIEWER.early.workers.length,
      pool: window.viewer.pool.workers.length,
      want: Math.max(1, Math.min(4, navigator.hardwareConcurrency || 2)),
    }));
    assert.ok(decoders.early === 1 && decoders.pool === decoders.want, `decoders ${JSON.stringify(decoders)}`);
    const after = await snap();
    const moved = await page.evaluate(() => {
      const [a, b] = window.__snaps;
      let differ = 0;
      for (let i = 0; i < a.length; i += 4) {
        if (Math.max(...[0, 1, 2, 3].map((k) => Math.abs(a[i + k] - b[i + k]))) > 3) differ++;
      }
      const canvas = document.querySelector("#map canvas.chronozarr-overlay");
      return {
        differ,
        adopted: canvas === window.viewer.layer.canvas && canvas.previousElementSibling === window.viewer.map.getCanvas(),
        // The layer drew in the canvas (and context) the early script made while the chunks were
        // in flight (decision 0066), not one of its own.
        earlyCanvas: canvas === window.CHRONOZARR_VIEWER.early.overlayCanvas,
        overlays: document.querySelectorAll("canvas.chronozarr-overlay").length,
      };
    });
    await ctx.close();
    assert.ok(moved.adopted && moved.overlays === 1, `the map adopted the layer's canvas (${JSON.stringify(moved)})`);
    assert.ok(moved.earlyCanvas, `the layer drew in the early script's canvas (${JSON.stringify(moved)})`);
    assert.equal(after.w, before.w);
    for (let i = 0; i < 4; i++)
      assert.ok(Math.abs(after.box[i] - before.box[i]) <= 1, `drawn box before the map ${before.box}, on the map ${after.box}`);
    // Pixels on the store's edges may move by the sub-pixel difference of the two cameras.
    const edge = 2 * (before.box[2] - before.box[0] + before.box[3] - before.box[1]);
    assert.ok(moved.differ <= edge, `${moved.differ} pixels changed when the map took over (edge ${edge})`);
  });

  test("offline, the default basemap falls back to a graticule drawn for the view, at any zoom (no network)", async () => {
    const s = mapManifest.stores.utm;
    const ctx = await browser.newContext({ viewport: { width: 1200, height: 760 } });
    const remote = [];
    // Offline: nothing but 127.0.0.1 answers (the public default style cannot be fetched).
    await ctx.route(/^https?:\/\/(?!127\.0\.0\.1)/, (route) => {
      remote.push(route.request().url());
      return route.abort("internetdisconnected");
    });
    const page = await ctx.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    await page.goto(`${server.url}/index.html?store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    await page.waitForFunction(() => document.body.dataset.state === "ready" && window.viewer.state.styleFallback, null, {
      timeout: 30000,
    });
    const lines = () =>
      page.evaluate(async () => {
        const { map } = window.viewer;
        await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
        const drawn = map.queryRenderedFeatures({ layers: ["graticule"] });
        return { drawn: new Set(drawn.map((f) => `${f.properties.kind} ${f.properties.deg}`)).size, zoom: map.getZoom() };
      });
    const fitted = await lines();
    assert.ok(
      remote.some((u) => /demotiles/.test(u)),
      "the page asked for the public default style",
    );
    assert.ok(fitted.drawn >= 4, `graticule lines on screen at the fitted zoom ${fitted.zoom.toFixed(1)}: ${fitted.drawn}`);
    // Zoomed in far (a few metres across the screen): lines still cross the view.
    await page.evaluate(() => window.viewer.map.jumpTo({ zoom: 18 }));
    const near = await lines();
    assert.ok(near.drawn >= 4, `graticule lines on screen at zoom 18: ${near.drawn}`);
    await ctx.close();
  });

  test("the selected pixel is marked at any zoom: a square of 14 px around it when its footprint is smaller, its outline when larger", async () => {
    const s = mapManifest.stores.utm;
    const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}&stretch=0,1`);
    const pick = { row: 137, col: 201 };
    /** The marker's geometry on screen, and the pixel's footprint corners projected by the map. */
    const marked = () =>
      page.evaluate(async (p) => {
        const { map, layer } = window.viewer;
        await new Promise((r) => (map.loaded() ? r() : map.once("idle", r)));
        await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
        const rect = document.querySelector("svg.cz-selected rect.marker");
        const poly = document.querySelector("svg.cz-selected polygon.footprint");
        const corners = [
          [p.row, p.col],
          [p.row, p.col + 1],
          [p.row + 1, p.col + 1],
          [p.row + 1, p.col],
        ].map(([r, c]) => map.project(layer.lngLatOf({ row: r, col: c, corner: true })));
        const centre = map.project(layer.lngLatOf(p));
        return {
          marker: rect && {
            visible: rect.getAttribute("visibility") !== "hidden",
            box: (({ x, y, width, height }) => ({ x, y, width, height }))(rect.getBBox()),
          },
          footprint: poly && [...poly.points].map((q) => ({ x: q.x, y: q.y })),
          corners: corners.map((q) => ({ x: q.x, y: q.y })),
          centre: { x: centre.x, y: centre.y },
        };
      }, pick);
    await page.evaluate((p) => window.viewer.select(p.row, p.col), pick);
    const far = await marked();
    const side = (pts, k) => Math.max(...pts.map((q) => q[k])) - Math.min(...pts.map((q) => q[k]));
    assert.ok(
      side(far.corners, "x") < 14,
      `the fitted view shows a pixel smaller than the marker (${side(far.corners, "x").toFixed(1)} px)`,
    );
    assert.ok(far.marker?.visible, "a marker is drawn around a small pixel");
    const b = far.marker.box;
    assert.ok(b.width >= 14 && b.height >= 14, `marker ${b.width} x ${b.height} px`);
    assert.ok(
      b.x <= far.centre.x && far.centre.x <= b.x + b.width && b.y <= far.centre.y && far.centre.y <= b.y + b.height,
      "around the pixel",
    );
    // Zoomed in to 40 screen px per store pixel: the footprint's own outline, no square.
    const ll = await page.evaluate((p) => window.viewer.layer.lngLatOf(p), pick);
    await jump(page, { center: ll, zoom: zoomFor(s.transform[0], ll[1], 40) });
    const near = await marked();
    assert.equal(near.marker.visible, false, "no square around a pixel larger than it");
    assert.ok(side(near.corners, "x") > 30, `zoomed in: the pixel is ${side(near.corners, "x").toFixed(1)} px wide`);
    near.corners.forEach((q, i) => {
      const d = Math.hypot(q.x - near.footprint[i].x, q.y - near.footprint[i].y);
      assert.ok(d <= 1, `footprint corner ${i} is ${d.toFixed(2)} px from the pixel's corner`);
    });
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  test("URL state holds only what the mode uses; a round trip through other modes brings the RGB stretch back", async () => {
    const s = mapManifest.stores.utm;
    const page = await openViewer(`store=${encodeURIComponent(`/mapfx/${s.path}`)}`);
    const query = () => page.evaluate(() => Object.fromEntries(new URL(location.href).searchParams));
    const settled = (mode) =>
      page.waitForFunction(
        (m) =>
          window.viewer.layer.mode === m &&
          new URL(location.href).searchParams.get("mode") === m &&
          document.body.dataset.frame !== undefined,
        mode,
        { timeout: 10000 },
      );
    const rgb0 = await page.evaluate(() => ({ ...window.viewer.layer.stretch }));
    // Another view, whose own 2-98 % differs from the first frame's.
    const ll = await page.evaluate(() => window.viewer.layer.lngLatOf({ row: 40, col: 40 }));
    await jump(page, { center: ll, zoom: zoomFor(s.transform[0], ll[1], 6) });
    await page.waitForFunction(() => new URL(location.href).searchParams.get("mode") === "rgb", null, { timeout: 10000 });
    const q0 = await query();
    for (const key of ["cmap", "band", "formula"]) assert.ok(!(key in q0), `RGB: no ${key} in ${JSON.stringify(q0)}`);
    const here = await page.evaluate(async () => {
      const { layer } = window.viewer;
      const kept = { ...layer.stretch };
      const auto = await layer.autoStretch();
      layer.setStretch(kept.min, kept.max);
      return { ...auto };
    });
    assert.notDeepEqual(here, rgb0, "this view's auto stretch differs from the first frame's (the round trip below means something)");
    await page.locator("#mode").selectOption("band");
    await settled("band");
    const qb = await query();
    assert.ok(qb.cmap && qb.band && !("formula" in qb), `band mode: cmap and band (${JSON.stringify(qb)})`);
    await page.locator("#mode").selectOption("ndvi");
    await settled("ndvi");
    const qn = await query();
    assert.ok(qn.cmap && !("band" in qn) && !("formula" in qn), `NDVI: cmap only (${JSON.stringify(qn)})`);
    await page.locator("#mode").selectOption("rgb");
    await settled("rgb");
    await page.waitForFunction(() => !new URL(location.href).searchParams.has("cmap"), null, { timeout: 5000 });
    const q1 = await query();
    for (const key of ["cmap", "band", "formula"]) assert.ok(!(key in q1), `back in RGB: no ${key} in ${JSON.stringify(q1)}`);
    assert.deepEqual(await page.evaluate(() => ({ ...window.viewer.layer.stretch })), rgb0, "the RGB stretch is the one RGB had");
    assert.equal(q1.stretch, q0.stretch, "and the link says so");
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  const banners = (closedPort) => [
    ["an unreachable host", `http://127.0.0.1:${closedPort}/none.zarr`, /Store unreachable/, /failed|fetch/i],
    [
      "a host without CORS",
      `http://127.0.0.1:${plainServer.address().port}/map/utm.zarr`,
      /blocked by CORS/,
      /Access-Control-Allow-Origin/,
    ],
    ["a plain Zarr group", "/mapfx/map/plain.zarr", /Not a chronozarr store/, /chronozarr/],
    ["an unsupported codec", `/fixtures/${manifest.broken["bad-codec"]}`, /Unsupported store/, /unsupported codec "lz4"/],
    ["a missing store", "/mapfx/map/nope.zarr", /Store not found/, /HTTP 404/],
  ];
  test("clear banners for an unreachable host, missing CORS, a non-chronozarr group, an unsupported codec, a 404", async () => {
    const probe = http.createServer();
    await new Promise((r) => probe.listen(0, "127.0.0.1", r));
    const closedPort = probe.address().port; // free a port nobody listens on
    await new Promise((r) => probe.close(r));
    for (const [what, url, title, message] of banners(closedPort)) {
      const t0 = Date.now();
      const page = await openViewer(`store=${encodeURIComponent(url)}`);
      await page.locator("#error").waitFor({ state: "visible", timeout: 15000 });
      assert.match(await page.locator("#error-title").textContent(), title, what);
      assert.match(await page.locator("#error-message").textContent(), message, what);
      assert.equal(await page.evaluate(() => document.body.dataset.state), "error", what);
      assert.ok(Date.now() - t0 < 15000, `${what}: settled in time`);
      await page.close();
    }
  });
});

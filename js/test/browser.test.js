// Headless Chromium (Debian `chromium` + npm playwright-core): the reader in a page and in a Web
// Worker equals the Python reader bit for bit; the viewer opens a store served on 127.0.0.1 by a
// Range-capable server, scrubs through every timestep, and the values it shows for a clicked
// pixel equal the Python reader's; broken stores show clear messages. A screenshot is kept as
// artifacts/viewer.png.
//
// Without /usr/bin/chromium these tests are skipped with the reason printed, except under
// CI=true, where a missing browser is a failure (scripts/apt-packages.txt installs it).

import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { digestOfExpected } from "./digest-node.js";
import { HERE, REPO, fixtures, loadExpected } from "./fixtures.js";
import { startServer } from "./server.js";

const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const available = existsSync(CHROMIUM);
const ci = process.env.CI === "true";
let skip = false;
if (!available) {
  skip = `${CHROMIUM} is not installed (apt-get install -y chromium); browser tests skipped`;
  if (ci) {
    test("Chromium is installed under CI", () => {
      assert.fail(`CI=true but ${CHROMIUM} is missing: scripts/test.sh installs it from scripts/apt-packages.txt`);
    });
  } else {
    console.log(`# SKIP browser tests: ${skip}`);
  }
}

describe("in headless Chromium", { skip, timeout: 170_000 }, () => {
  const { dir, manifest } = fixtures();
  let server;
  let context;
  let userDataDir;
  let bundleDir;
  const pageErrors = [];

  before(async () => {
    const { chromium } = await import("playwright-core");
    const { build } = await import("esbuild");
    bundleDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-js-bundle-"));
    await build({
      entryPoints: [path.join(HERE, "worker.js")],
      bundle: true,
      format: "esm",
      target: "es2022",
      outfile: path.join(bundleDir, "worker.js"),
      logLevel: "error",
    });
    server = await startServer({ mounts: { "/": REPO, "/fixtures/": dir, "/bundle/": bundleDir } });
    userDataDir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-chromium-"));
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      viewport: { width: 1440, height: 880 },
    });
  });

  after(async () => {
    await context?.close();
    await server?.close();
    for (const d of [userDataDir, bundleDir]) if (d) rmSync(d, { recursive: true, force: true });
  });

  async function newPage() {
    const page = await context.newPage();
    page.on("pageerror", (err) => pageErrors.push(err.message));
    return page;
  }

  const stores = [
    ...manifest.stores.filter(
      (s) =>
        (s.case.dtype === "uint16" && s.case.encoding === "star-delta" && s.case.layout === "shard4") ||
        (s.case.dtype === "uint8" && s.case.encoding === "star-delta" && s.case.layout === "unsharded") ||
        (s.case.dtype === "float32" && s.case.layout === "shard12" && s.case.codec.startsWith("blosc")) ||
        (s.case.dtype === "int16" && s.case.layout === "unsharded" && s.case.codec === "gzip"),
    ),
    ...manifest.derived.filter((d) => d.name === "index-start-uint16" || d.name === "holes-uint16"),
    manifest.viewer,
  ];

  test("decoder.js in a page and, bundled, in a Web Worker equals the Python reader", async () => {
    assert.ok(stores.length >= 16, `${stores.length} stores`);
    const page = await newPage();
    await page.goto(`${server.url}/js/test/harness.html`);
    await page.waitForFunction(() => window.harnessReady === true, null, { timeout: 15000 });
    for (const entry of stores) {
      const url = `${server.url}/fixtures/${entry.path}`;
      const want = digestOfExpected(entry, loadExpected(dir, entry));
      const inPage = await page.evaluate((u) => window.digestStore(u), url);
      assert.equal(inPage.cells, want.cells, `${entry.name}: cells`);
      assert.equal(inPage.digest, want.digest, `${entry.name}: page digest differs from the Python reader`);
      const inWorker = await page.evaluate(
        (u) =>
          new Promise((resolve) => {
            const w = new Worker("/bundle/worker.js", { type: "module" });
            w.onmessage = (e) => {
              resolve(e.data);
              w.terminate();
            };
            w.onerror = (e) => resolve({ ok: false, error: e.message });
            w.postMessage({ url: u });
          }),
        url,
      );
      assert.ok(inWorker.ok, `${entry.name}: worker failed: ${inWorker.error}`);
      assert.ok(inWorker.inWorker, "ran in a worker scope");
      assert.equal(inWorker.digest, want.digest, `${entry.name}: worker digest differs from the Python reader`);
    }
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  test("the viewer scrubs every timestep and shows the Python reader's values for a clicked pixel", async () => {
    const entry = manifest.viewer;
    const expected = loadExpected(dir, entry);
    const [nt, nb, h, w] = entry.levels[0].shape;
    // A pixel that is masked (cloud) in some months and valid in others.
    let pick = null;
    const centre = Math.floor(h / 2) * w + Math.floor(w / 2);
    for (let k = 0; k < h * w && !pick; k += 7) {
      const i = (centre + k) % (h * w);
      const m = expected[0].map((e) => e.mask[i]);
      if (m.includes(0) && m.includes(1)) pick = { row: Math.floor(i / w), col: i % w };
    }
    assert.ok(pick, "fixture has a pixel masked in some timesteps");

    const page = await newPage();
    const requests = [];
    page.on("request", (r) => requests.push({ method: r.method(), url: r.url(), range: r.headers().range ?? null }));
    const storeUrl = `/fixtures/${entry.path}`;
    await page.goto(`${server.url}/examples/viewer/index.html?store=${encodeURIComponent(storeUrl)}`);
    await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 30000 });
    await page.waitForFunction(() => document.body.dataset.prefetched, null, { timeout: 30000 });

    const at = await page.evaluate((p) => window.viewer.screenOf(p), pick);
    await page.mouse.click(at.x, at.y);
    await page.waitForFunction(
      ({ row, col }) => {
        const b = document.getElementById("inspector-body");
        return !b.hidden && b.dataset.row === String(row) && b.dataset.col === String(col) && b.dataset.t === "0";
      },
      pick,
      { timeout: 10000 },
    );

    const bandNames = await page.evaluate(() => window.viewer.store.bands.map((b) => ({ name: b.name, scale: b.scale, offset: b.offset })));
    let maskedSeen = 0;
    for (let t = 0; t < nt; t++) {
      await page.locator("#time").fill(String(t)); // the slider, as a user drags it
      await page.waitForFunction(
        (tt) => document.body.dataset.frame === String(tt) && document.getElementById("inspector-body").dataset.t === String(tt),
        t,
        { timeout: 10000 },
      );
      const shown = await page.evaluate(() => ({
        time: document.getElementById("time-label").textContent,
        rows: [...document.querySelectorAll("#values tbody tr")].map((tr) => ({
          band: tr.dataset.band,
          stored: tr.querySelector(".stored").dataset.value,
          physical: tr.querySelector(".physical").dataset.value,
          valid: tr.querySelector(".validity").dataset.value,
        })),
        mask: document.getElementById("px-mask").dataset.value,
        coverage: document.getElementById("px-coverage").dataset.value,
      }));
      const exp = expected[0][t];
      const i = pick.row * w + pick.col;
      assert.equal(shown.time, (await page.evaluate((tt) => window.viewer.store.times[tt], t)).slice(0, 10));
      assert.equal(shown.rows.length, nb);
      for (let b = 0; b < nb; b++) {
        const where = `t ${t} band ${bandNames[b].name}`;
        const stored = exp.data[b * h * w + i];
        assert.equal(shown.rows[b].band, bandNames[b].name);
        assert.equal(shown.rows[b].stored, String(stored), `${where}: stored value`);
        const valid = exp.valid[b * h * w + i] === 1;
        assert.equal(shown.rows[b].valid, valid ? "1" : "0", `${where}: validity`);
        if (valid) {
          assert.equal(Number(shown.rows[b].physical), stored * bandNames[b].scale + bandNames[b].offset, `${where}: physical`);
        } else {
          assert.equal(shown.rows[b].physical, "", `${where}: invalid pixels have no physical value`);
        }
      }
      assert.equal(shown.mask, String(exp.mask[i]), `t ${t}: mask`);
      assert.equal(shown.coverage, String(exp.coverage[i]), `t ${t}: coverage`);
      if (exp.mask[i] === 0) maskedSeen++;
    }
    assert.ok(maskedSeen > 0 && maskedSeen < nt);

    // The history chart has one point per valid band-timestep.
    let validPoints = 0;
    for (let t = 0; t < nt; t++) for (let b = 0; b < nb; b++) validPoints += expected[0][t].valid[b * h * w + pick.row * w + pick.col];
    await page.waitForFunction((n) => document.getElementById("chart").dataset.points === String(n), validPoints, { timeout: 10000 });

    // Once the anchors are resident the view must be served without chunk requests per frame.
    const before = requests.length;
    await page.locator("#speed").selectOption("30");
    await page.locator("#play").click();
    await page.waitForTimeout(2000);
    await page.locator("#play").click();
    const fps = Number(await page.evaluate(() => document.getElementById("fps").dataset.value));
    assert.ok(fps > 5, `playback ran at ${fps} fps`);
    const during = requests.slice(before).filter((r) => r.url.includes("/data/c/"));
    assert.equal(during.length, 0, `prefetched playback fetched ${during.length} data chunks`);
    // shard_bytes lists the data shards (spec 7.3 covers the data array only): no HEAD for them.
    const heads = requests.filter((r) => r.method === "HEAD" && r.url.includes("/data/c/"));
    assert.equal(heads.length, 0, "shard_bytes lists every data shard: no HEAD");
    for (const r of requests) if (r.range) assert.match(r.range, /^bytes=\d+-\d+$/);

    // Show a cloudy month (masked pixels are transparent) in the screenshot, then zoom out until
    // a coarser level is drawn.
    const cloudy = expected[0].findIndex((e) => e.mask[pick.row * w + pick.col] === 0);
    await page.locator("#time").fill(String(cloudy));
    await page.waitForFunction((c) => document.body.dataset.frame === String(c), cloudy, { timeout: 10000 });
    await page.waitForTimeout(300);
    mkdirSync(path.join(REPO, "artifacts"), { recursive: true });
    await page.screenshot({ path: path.join(REPO, "artifacts", "viewer.png") });
    for (let k = 0; k < 6; k++) await page.locator("#zoom-out").click();
    await page.waitForFunction(() => Number(document.body.dataset.level) > 0, null, { timeout: 10000 });
    assert.match(await page.locator("#level-badge").textContent(), /^L[1-9]/);
    await page.close();
    assert.deepEqual(pageErrors, []);
  });

  const errorCases = [
    ["bad-codec", /Unsupported store/, /unsupported codec "lz4"/],
    ["bad-version", /Unsupported store/, /spec_version "0\.3\.0" is not supported/],
    ["corrupt-crc", /Could not read the store|Corrupt store/, /checksum mismatch/],
    [null, /Store not found/, /HTTP 404/],
  ];
  for (const [name, title, message] of errorCases) {
    test(`the viewer explains ${name ?? "a 404 root"} without hanging`, async () => {
      const page = await newPage();
      const url = name ? `/fixtures/${manifest.broken[name]}` : "/fixtures/stores/nope.zarr";
      const t0 = Date.now();
      await page.goto(`${server.url}/examples/viewer/index.html?store=${encodeURIComponent(url)}`);
      await page.locator("#error").waitFor({ state: "visible", timeout: 15000 });
      assert.match(await page.locator("#error-title").textContent(), title);
      assert.match(await page.locator("#error-message").textContent(), message);
      assert.equal(await page.evaluate(() => document.body.dataset.state), "error");
      assert.ok(Date.now() - t0 < 15000);
      await page.close();
    });
  }
});

// Headless Chromium (Debian `chromium` + npm playwright-core): the reader in a page and in a Web
// Worker equals the Python reader bit for bit. The viewer's tests are in map.test.js.
//
// Without /usr/bin/chromium these tests are skipped with the reason printed, except under
// CI=true, where a missing browser is a failure (scripts/apt-packages.txt installs it).

import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { digestOfExpected } from "./digest-node.js";
import { HERE, REPO, fixtures, loadExpected } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS, chromiumSkip } from "./chromium.js";
import { startServer } from "./server.js";

const skip = chromiumSkip("browser");

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

  // The viewer (a MapLibre map, decision 0009) is tested in map.test.js: values on click
  // through every timestep, playback without chunk requests once prefetched, levels by zoom,
  // georegistration, seams, URL state and the error banners.
});

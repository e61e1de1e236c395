// The viewer's click on a pixel, cold, in headless Chromium (Playwright): from window.viewer.select
// (what a click on the map calls) to the history chart drawn, with the time-series companion
// (docs/spec.md C25) and without it, through nginx behind the delay proxy (RTT per request and per
// new connection, HTTP/1.1, 6 connections per host). Each run opens the viewer in a fresh context
// (cold cache), waits for the map and for the viewer's own read-ahead to go quiet, then clicks.
// Counts the store requests the click made (Resource Timing) and the time to the drawn chart.
//
//   cd js && node ../bench/js/history_click.mjs STORES_DIR [--reps 3] [--rtt 80] [--stores none,T12-B16]
//
// STORES_DIR holds the stores bench/bench_history.py leaves with --out. Playwright's DevTools
// session is attached (bench/js/first_frame_nodevtools.mjs says what it costs): compare the rows.

import { chmodSync, cpSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { startDelayProxy } from "./delay_proxy.mjs";
import { startNginx } from "./servers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(path.join(REPO, "js", "package.json"));
const { chromium } = require("playwright-core");

const args = process.argv.slice(2);
const stores = path.resolve(args[0]);
const opt = (name, d) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : d);
const reps = Number(opt("reps", 3));
const rtt = Number(opt("rtt", 80));
const names = opt("stores", "none,T12-B16").split(",");
const ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-click-"));
chmodSync(work, 0o755);
cpSync(path.join(REPO, "cli", "_viewer"), path.join(work, "viewer"), { recursive: true });
for (const name of names) symlinkSync(path.join(stores, name), path.join(work, name));
const loadBefore = os.loadavg()[0];
const nginx = await startNginx(work, { accessLog: false });
const proxy = await startDelayProxy(nginx.port, rtt);
const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ARGS });
try {
  for (let r = 0; r < reps; r++) {
    for (const name of names) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      const page = await ctx.newPage();
      await page.addInitScript(() => performance.setResourceTimingBufferSize(100000)); // default 250
      await page.goto(`${proxy.url}/viewer/index.html?style=style.json&store=../${name}/`, { waitUntil: "commit" });
      await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 120000 });
      // the viewer reads ahead after its first frame: click once the network has been quiet 1 s
      await page.evaluate(async () => {
        let n = -1;
        for (let i = 0; i < 120; i++) {
          const now = performance.getEntriesByType("resource").length;
          if (now === n) return;
          n = now;
          await new Promise((res) => setTimeout(res, 1000));
        }
      });
      const got = await page.evaluate(
        async (row) => {
          const t0 = performance.now();
          const before = performance.getEntriesByType("resource").length;
          window.viewer.select(row, row + 2);
          const chart = document.getElementById("chart");
          while (!(Number(chart.dataset.points) > 0)) await new Promise((res) => setTimeout(res, 2));
          const ms = performance.now() - t0;
          const reqs = performance
            .getEntriesByType("resource")
            .slice(before)
            .filter((e) => e.startTime >= t0 && /\/c\//.test(e.name));
          return {
            ms,
            requests: reqs.length,
            history: reqs.filter((e) => /\/history\//.test(e.name)).length,
            bytes: reqs.reduce((a, e) => a + (e.encodedBodySize || 0), 0),
          };
        },
        250 + 7 * r,
      );
      console.log(JSON.stringify({ name, rep: r, ...got, ms: Math.round(got.ms) }));
      await ctx.close();
    }
  }
} finally {
  await browser.close();
  await proxy.close();
  nginx.stop();
  rmSync(work, { recursive: true, force: true });
  console.log(JSON.stringify({ load: [loadBefore, os.loadavg()[0]] }));
}

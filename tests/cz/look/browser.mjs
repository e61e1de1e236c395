// Drive headless Chromium (playwright-core from js/node_modules) to a page; used by
// test_share_browser.py. Usage: node browser.mjs REPO URL SCREENSHOT [STATE_TIMEOUT_MS]
// Prints one JSON line: the page's final location.search, its configured default store,
// body[data-state], page errors, the console errors, and where the screenshot was written.
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [repo, url, shot, waitMs = "30000"] = process.argv.slice(2);
const { chromium } = await import(
  pathToFileURL(path.join(repo, "js", "node_modules", "playwright-core", "index.mjs")).href
);
const userDataDir = mkdtempSync(path.join(os.tmpdir(), "cz-share-chromium-"));
const context = await chromium.launchPersistentContext(userDataDir, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
  ],
  viewport: { width: 1200, height: 800 },
});
const result = { errors: [], console: [] };
try {
  const page = await context.newPage();
  page.on("pageerror", (err) => result.errors.push(err.message));
  page.on("console", (msg) => {
    if (msg.type() === "error") result.console.push(msg.text());
  });
  await page.goto(url, { waitUntil: "load" });
  try {
    // the module viewer says "ready" once the first frame is drawn; a bundle that does not
    // set data-state is given the same time, then judged by its requests and screenshot
    await page.waitForFunction(
      () => ["ready", "error"].includes(document.body?.dataset?.state),
      null,
      { timeout: Number(waitMs) },
    );
  } catch {
    result.timedOut = true;
  }
  await page.waitForTimeout(500);
  result.state = await page.evaluate(() => document.body?.dataset?.state ?? null);
  result.search = await page.evaluate(() => location.search);
  result.configStore = await page.evaluate(() => window.CHRONOZARR_VIEWER?.store ?? null);
  await page.screenshot({ path: shot });
  result.screenshot = shot;
} finally {
  await context.close();
  rmSync(userDataDir, { recursive: true, force: true });
}
console.log(JSON.stringify(result));

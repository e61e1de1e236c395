// A page loaded as a person's browser loads it, with no DevTools client attached during the load
// (decision 0028): a fresh Chromium (its own profile: a cold cache, no connection to any server)
// opens a driver page, which follows a link to the page under test on its own; only after
// `attachMs` does this process attach (Playwright's connectOverCDP) to read what the page
// recorded with its own clocks. Used by first_frame_nodevtools.mjs and peers.mjs.

import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(HERE, "..", "..", "js", "package.json"));
const { chromium } = require("playwright-core");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * Start /usr/bin/chromium with `args` on `driverUrl` (a profile made under `profileRoot`), wait
 * `attachMs`, attach, and resolve what `inspect(browser)` resolves; the browser (every process
 * of it) is killed afterwards, whatever happened.
 */
export async function loadBare({ args, driverUrl, profileRoot, attachMs, inspect }) {
  const profile = mkdtempSync(path.join(profileRoot, "profile-"));
  const proc = spawn("/usr/bin/chromium", [...args, `--user-data-dir=${profile}`, "--remote-debugging-port=0", driverUrl], {
    stdio: "ignore",
    detached: true,
  });
  const exited = new Promise((r) => proc.once("exit", r));
  try {
    await sleep(attachMs);
    const port = readFileSync(path.join(profile, "DevToolsActivePort"), "utf8").split("\n")[0];
    const browser = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
    try {
      return await inspect(browser);
    } finally {
      await browser.close().catch(() => {});
    }
  } finally {
    process.kill(-proc.pid, "SIGKILL"); // the whole browser: its zygote, renderers, GPU process
    await exited;
  }
}

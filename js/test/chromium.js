// Headless Chromium for the browser tests (Debian `chromium`, driven by npm playwright-core):
// where it is, the flags every test launches it with, and the rule when it is absent: the test
// file is skipped with the reason printed, except under CI=true, where a test fails instead
// (scripts/test.sh installs it from scripts/apt-packages.txt).

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { test } from "node:test";

export const CHROMIUM = "/usr/bin/chromium";

/** Software rendering (SwiftShader WebGL, GPU off) and no traffic of the browser's own. */
export const CHROMIUM_ARGS = Object.freeze([
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
]);

/**
 * false where Chromium is installed; else the reason the `what` tests are skipped (printed), and
 * under CI=true a test that fails.
 * @param {string} what
 * @returns {string | false}
 */
export function chromiumSkip(what) {
  if (existsSync(CHROMIUM)) return false;
  const reason = `${CHROMIUM} is not installed (apt-get install -y chromium); ${what} tests skipped`;
  if (process.env.CI === "true") {
    test("Chromium is installed under CI", () => {
      assert.fail(`CI=true but ${CHROMIUM} is missing: scripts/test.sh installs it from scripts/apt-packages.txt`);
    });
  } else {
    console.log(`# SKIP ${what} tests: ${reason}`);
  }
  return reason;
}

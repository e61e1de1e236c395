// `npm test`: write the test stores once (Python writer, into a temporary folder), run every
// test file with node:test against them, remove the folder. Exit code is node --test's.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { HERE, generateFixtures, python } from "./fixtures.js";

const dir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-js-"));
let status;
try {
  const started = Date.now();
  console.log(`# writing test stores with ${python()} ...`);
  console.log(`# ${generateFixtures(dir)} in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  const only = process.argv.slice(2);
  const files = (
    only.length
      ? only
      : readdirSync(HERE)
          .filter((f) => f.endsWith(".test.js"))
          .sort()
  ).map((f) => (path.isAbsolute(f) ? f : path.join(HERE, path.basename(f))));
  const res = spawnSync(process.execPath, ["--test", "--test-concurrency=1", ...files], {
    stdio: "inherit",
    env: { ...process.env, CHRONOZARR_FIXTURES: dir },
  });
  status = res.status ?? 1;
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);

// The bounded fuzz slice `npm test` runs (decision 0016): mutated stores from the Python harness's
// mutators (tests/fuzz/mutate.py, written by test/fuzz/make_cases.py), served on 127.0.0.1 and
// read by the reader in limited child processes (test/fuzz/harness.js). Every bad class must be
// empty. CZ_FUZZ_N raises the number of stores (CZ_FUZZ_N=5000 npm test -- fuzz.test.js);
// `node test/fuzz/run.js --n 5000 --json out.json` runs the long run alone.

import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import path from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { BAD, runFuzz } from "./fuzz/harness.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const N = Number(process.env.CZ_FUZZ_N ?? 24);
const linux = existsSync("/proc/self/status");
const skip = linux ? false : "the harness polls /proc for each child's RSS (Linux only)";
if (skip) console.log(`# skipped: ${skip}`);

describe("fuzz slice", { skip }, () => {
  test(
    `${N} mutated stores (seed 0): no untyped error, escape, wrong read, memory blow-up, hang or crash`,
    { timeout: 30 * 60_000 },
    async () => {
      const { summary } = await runFuzz({ n: N, seed: 0, timeout: 30_000 });
      console.log(`# fuzz slice: ${JSON.stringify(summary.classes)} in ${summary.seconds} s`);
      assert.equal(summary.stores, N);
      assert.deepEqual(summary.bad, [], JSON.stringify(summary.bad, null, 1));
      assert.ok(summary.classes.typed > 0, "mutations do bite");
      assert.ok(summary.classes["ok-same"] > 0, "and unmutated content still reads as the baseline");
    },
  );

  // The harness itself: a canary reader that misbehaves on mutated stores must land in each bad
  // class, else a clean slice above would prove nothing.
  for (const [mode, cls] of [
    ["escape", "escape"],
    ["untyped", "untyped"],
    ["memory", "memory"],
    ["hang", "hang"],
  ]) {
    test(`the harness classes a reader that misbehaves (${mode}) as ${cls}`, { timeout: 120_000 }, async () => {
      const { summary, rows } = await runFuzz({
        n: 1,
        seed: 0,
        reader: path.join(HERE, "fuzz", "canary.js"),
        env: { CZ_FUZZ_CANARY: mode },
        timeout: 4000,
        capMiB: 512,
      });
      assert.ok(BAD.includes(cls));
      assert.equal(rows[0].class, cls, JSON.stringify(rows));
      assert.equal(summary.classes[cls], 1);
    });
  }
});

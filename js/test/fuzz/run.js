// The JS fuzz harness from the command line (the long run of docs/reliability.md):
//
//   node test/fuzz/run.js [--n 200] [--seed 0] [--json out.json] [--reader path/to/decoder.js]
//                         [--timeout ms] [--heap-mib 256] [--cap-mib 1024]
//
// --n defaults to CZ_FUZZ_N (else 50). --reader tests another checkout's reader (the "before"
// figures: main's js/chronozarr/decoder.js). Prints the summary as JSON.

import { writeFileSync } from "node:fs";
import path from "node:path";
import { parseArgs } from "node:util";
import { runFuzz } from "./harness.js";

const { values } = parseArgs({
  options: {
    n: { type: "string", default: process.env.CZ_FUZZ_N ?? "50" },
    seed: { type: "string", default: "0" },
    json: { type: "string" },
    reader: { type: "string" },
    timeout: { type: "string", default: "20000" },
    "heap-mib": { type: "string", default: "256" },
    "cap-mib": { type: "string", default: "1024" },
  },
});

let done = 0;
const { rows, summary } = await runFuzz({
  n: Number(values.n),
  seed: Number(values.seed),
  reader: values.reader ? path.resolve(values.reader) : undefined,
  timeout: Number(values.timeout),
  heapMiB: Number(values["heap-mib"]),
  capMiB: Number(values["cap-mib"]),
  onCase: (c, caseRows) => {
    done++;
    const bad = caseRows.filter((r) => !["typed", "ok-same", "ok-changed"].includes(r.class));
    if (bad.length)
      process.stderr.write(`case ${c.case} (${c.mutation}): ${bad.map((r) => `${r.entry} ${r.class} ${r.sig}`).join("; ")}\n`);
    if (done % 50 === 0) process.stderr.write(`# ${done} cases\n`);
  },
});
if (values.json) writeFileSync(values.json, JSON.stringify({ summary, rows }, null, 1));
console.log(JSON.stringify(summary, null, 1));

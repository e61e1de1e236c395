// The JS reader's fuzz harness (decision 0016), mirroring tests/fuzz/run.py for the Python reader.
//
// The mutated stores are the Python harness's own: make_cases.py runs tests/fuzz/mutate.py (JSON
// structure and types, hostile names with path tricks, absurd sizes, deep nesting, huge numbers,
// codec configurations, key encodings, truncated and flipped chunk bytes, shard index entries,
// compression bombs, symlinks, v2 keys) into a temporary folder, next to a decoy copy of the
// store's data (secret/) that a reader following ".." would reach. That folder is served over
// HTTP on 127.0.0.1 (test/server.js, with Range), and each case runs in its own Node child
// (case.js) with --max-old-space-size, a timeout and an RSS cap polled from /proc.
//
// Outcome classes (docs/reliability.md): good: typed (a ChronozarrError), ok-same (the
// baseline's result), ok-changed (a different but legitimate result); bad: untyped (any other
// exception), escape (a URL outside the store's prefix was requested: seen in the server's log
// or by the child's fetch), wrong (a content-preserving mutation, v2 keys, read differently),
// memory (heap exhausted, the RSS cap hit, or a peak RSS more than RSS_MIB above the
// baseline's), hang (killed at the timeout), crash (the child died otherwise).

import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { python } from "../fixtures.js";
import { startServer } from "../server.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const BAD = ["untyped", "escape", "wrong", "memory", "hang", "crash"];
export const GOOD = ["typed", "ok-same", "ok-changed"];
export const ENTRIES = ["open", "read", "pixel", "volatility"];
/** Mutation kinds that keep the store's content: any success must equal the baseline. */
const PRESERVING = ["v2-keys"];
/** A peak RSS this far above the baseline's decoded beyond what the metadata implies. */
export const RSS_MIB = 128;

function rssBytes(pid) {
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Run case.js on `url`; resolves {rows: [{entry, class, ...}], peak, status, stderr}. */
function runChild(url, { reader, timeout, heapMiB, capMiB, log, env }) {
  return new Promise((resolve) => {
    const args = [`--max-old-space-size=${heapMiB}`, path.join(HERE, "case.js"), url];
    if (reader) args.push(reader);
    const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
    const rows = [];
    let out = "";
    let err = "";
    let peak = 0;
    let killed = null;
    let logAt = log.length;
    child.stdout.on("data", (d) => {
      out += d;
      let nl;
      while ((nl = out.indexOf("\n")) >= 0) {
        const line = out.slice(0, nl);
        out = out.slice(nl + 1);
        try {
          const row = JSON.parse(line);
          row.requests = log.slice(logAt);
          logAt = log.length;
          rows.push(row);
        } catch {
          /* a stray line: ignored */
        }
      }
    });
    child.stderr.on("data", (d) => {
      if (err.length < 20000) err += d;
    });
    const poll = setInterval(() => {
      const rss = rssBytes(child.pid);
      peak = Math.max(peak, rss);
      if (rss > capMiB * 2 ** 20 && !killed) {
        killed = "memory";
        child.kill("SIGKILL");
      }
    }, 20);
    const timer = setTimeout(() => {
      if (!killed) killed = "hang";
      child.kill("SIGKILL");
    }, timeout);
    child.on("close", (status, sig) => {
      clearInterval(poll);
      clearTimeout(timer);
      const end = rows.find((r) => r.entry === "_end");
      if (end) peak = Math.max(peak, end.maxRSS);
      resolve({
        rows: rows.filter((r) => r.entry !== "_end"),
        peak,
        status,
        sig,
        killed,
        ended: !!end,
        stderr: err,
        late: log.slice(logAt),
      });
    });
  });
}

/** Generate cases [start, start + count) with make_cases.py; returns [{case, base, mutation}]. */
function makeCases(work, start, count, seed) {
  const res = spawnSync(
    python(),
    [path.join(HERE, "make_cases.py"), work, "--start", String(start), "--count", String(count), "--seed", String(seed)],
    {
      encoding: "utf8",
      maxBuffer: 64 * 2 ** 20,
    },
  );
  if (res.status !== 0) throw new Error(`make_cases.py failed (exit ${res.status}):\n${res.stdout}\n${res.stderr}`);
  return res.stdout
    .trim()
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

/**
 * Classify one child's result into a row per entry. `prefix` is the store's URL path; any
 * request the server saw outside it is an escape of the entry that made it.
 */
function classify(res, prefix, baseline, mutation, peak0) {
  const out = [];
  const outside = (reqs) => reqs.filter((r) => !r.path.startsWith(prefix));
  for (const entry of ENTRIES) {
    const row = res.rows.find((r) => r.entry === entry);
    let r;
    if (row) {
      r = { entry, class: row.class, sig: row.sig, msg: row.msg };
      const esc = outside(row.requests);
      if (esc.length) r = { entry, class: "escape", sig: `requested ${esc[0].path.slice(0, 120)}`, was: row.class };
      if (r.class === "ok") {
        const same = baseline?.[entry] === row.digest;
        r.class = same ? "ok-same" : "ok-changed";
        if (!same && PRESERVING.some((k) => mutation.startsWith(k)))
          r = { entry, class: "wrong", sig: "content-preserving change read differently" };
      }
    } else if (res.ended) {
      continue; // not run: open failed with a typed error first
    } else if (res.killed) {
      r = { entry, class: res.killed, sig: res.killed === "hang" ? "killed at the timeout" : "killed at the RSS cap" };
    } else if (/heap out of memory|Allocation failed|Array buffer allocation failed|RangeError: Array buffer/.test(res.stderr)) {
      r = { entry, class: "memory", sig: "out of memory" };
    } else {
      const lines = res.stderr.trim().split("\n");
      const why = lines.find((l) => /Error|error:/.test(l)) ?? lines.pop() ?? "";
      r = {
        entry,
        class: "crash",
        sig: `died (status ${res.status}, ${res.sig ?? "no signal"}): ${why.slice(0, 160)}`,
        stderr: res.stderr.slice(-2000),
      };
    }
    out.push(r);
    if (!row) break; // the first entry the child did not finish takes the class
  }
  const lateEscapes = outside(res.late ?? []);
  if (lateEscapes.length && out.length)
    out[out.length - 1] = { ...out[out.length - 1], class: "escape", sig: `requested ${lateEscapes[0].path.slice(0, 120)}` };
  if (peak0 !== null && res.peak - peak0 > RSS_MIB * 2 ** 20) {
    for (const r of out)
      if (!BAD.includes(r.class)) Object.assign(r, { class: "memory", sig: `peak RSS +${Math.round((res.peak - peak0) / 2 ** 20)} MiB` });
  }
  return out;
}

/**
 * Run `n` mutated stores (case i as in tests/fuzz/run.py for `seed`). Returns {rows, summary}.
 * options: reader (path of the decoder.js to test; default this checkout's), timeout (ms per
 * case), heapMiB (--max-old-space-size), capMiB (RSS at which a child is killed), batch
 * (cases generated at a time), env (added to the children's environment), onCase(case, rows).
 */
export async function runFuzz({ n, seed = 0, reader, timeout = 20000, heapMiB = 256, capMiB = 1024, batch = 100, env = {}, onCase } = {}) {
  const work = mkdtempSync(path.join(os.tmpdir(), "cz-jsfuzz-"));
  const server = await startServer({ mounts: { "/": work } });
  const started = Date.now();
  const rows = [];
  try {
    makeCases(work, 0, 0, seed); // the bases
    const baseline = {};
    let peak0 = 0;
    for (const base of readdirSync(path.join(work, "bases")).sort()) {
      const res = await runChild(`${server.url}/bases/${base}/`, { reader, timeout: timeout * 3, heapMiB, capMiB, log: server.log, env });
      const bad = res.rows.filter((r) => r.class !== "ok");
      if (res.rows.length !== ENTRIES.length || bad.length) {
        throw new Error(`baseline ${base} is not ok: ${JSON.stringify(bad.length ? bad : res).slice(0, 2000)}`);
      }
      baseline[base] = Object.fromEntries(res.rows.map((r) => [r.entry, r.digest]));
      peak0 = Math.max(peak0, res.peak);
    }
    for (let start = 0; start < n; start += batch) {
      const cases = makeCases(work, start, Math.min(batch, n - start), seed);
      for (const c of cases) {
        const prefix = `/case-${c.case}/store/`;
        const t0 = Date.now();
        const res = await runChild(`${server.url}${prefix}`, { reader, timeout, heapMiB, capMiB, log: server.log, env });
        const caseRows = classify(res, prefix, baseline[c.base], c.mutation, peak0).map((r) => ({
          case: c.case,
          base: c.base,
          mutation: c.mutation,
          ...r,
          rss_mib: Math.round(res.peak / 2 ** 20),
          ms: Date.now() - t0,
        }));
        rows.push(...caseRows);
        onCase?.(c, caseRows);
        rmSync(path.join(work, `case-${c.case}`), { recursive: true, force: true });
        server.log.length = 0;
      }
    }
  } finally {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  }
  return { rows, summary: summary(rows, (Date.now() - started) / 1000) };
}

/** Counts per class, and the distinct signatures of the bad classes. */
export function summary(rows, seconds) {
  const classes = Object.fromEntries([...GOOD, ...BAD].map((c) => [c, 0]));
  const bad = new Map();
  for (const r of rows) {
    classes[r.class] = (classes[r.class] ?? 0) + 1;
    if (BAD.includes(r.class)) {
      const key = JSON.stringify([r.class, r.entry, r.sig ?? "", r.mutation.split(":")[0]]);
      bad.set(key, (bad.get(key) ?? 0) + 1);
    }
  }
  return {
    seconds: Math.round(seconds * 10) / 10,
    stores: new Set(rows.map((r) => r.case)).size,
    runs: rows.length,
    classes,
    bad: [...bad.entries()]
      .sort((a, b) => b[1] - a[1])
      .map(([k, count]) => {
        const [cls, entry, sig, kind] = JSON.parse(k);
        return { class: cls, entry, sig, kind, count };
      }),
  };
}

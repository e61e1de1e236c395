// What a fetch() costs headless Chromium in CPU, per request and per byte, with no DevTools client.
//
//   cd js && node ../bench/js/fetch_cost.mjs [--rounds 2]
//
// The map viewer's "anchors resident" scrub fetches 3.3 delta chunks of ~0.7 MB per timestep;
// this measures that cost alone, outside the viewer: /usr/bin/chromium started on its own (no
// remote debugging) on a page that fetches an object 120 times, 4 at a time, from a small Node
// server on 127.0.0.1, for a 0.7 MB object (one of the bench store's delta chunks,
// bench/js/make_store.py) and a 7 KB one, three ways: fetch() + arrayBuffer() through the HTTP
// cache (the default), the same with cache: "no-store" (what the viewer's delta GETs do), and
// no-store read into one buffer of the Content-Length (a BYOB reader, as the reader's
// http.js readBounded does). CPU per request of each process kind comes from /proc around the
// loop (proc_cpu.mjs), which starts 3 s after the page has loaded: a fresh renderer's start-up
// costs most of a core in its first second (the two idle rows: 1 s of nothing, right after the
// load and 3 s after it), which an earlier version of this script counted in the loop. The 7 KB figure is the per-request overhead, the difference the per-byte cost.
// Prints a table; writes nothing.

import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const { byKind, cpuDelta, cpuSnapshot } = await import(pathToFileURL(path.join(HERE, "proc_cpu.mjs")).href);
const args = process.argv.slice(2);
const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 2;
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const N = 120;

const page = `<!doctype html><script type="module">
const q = new URLSearchParams(location.search);
const file = q.get("file");
const mode = q.get("mode");
const init = mode === "default" ? {} : { cache: "no-store" };
const whole = (i) => fetch("/" + file + "?" + i, init).then((r) => r.arrayBuffer());
const byob = (i) => fetch("/" + file + "?" + i, init).then(async (r) => {
  const size = Number(r.headers.get("content-length"));
  const reader = r.body.getReader({ mode: "byob" });
  let buf = new ArrayBuffer(size);
  let at = 0;
  while (at < size) {
    const { done, value } = await reader.read(new Uint8Array(buf, at, size - at));
    buf = value.buffer;
    if (done) break;
    at += value.byteLength;
  }
  return buf;
});
const one = mode === "byob" ? byob : whole;
await one("warm");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
if (mode !== "idle-at-load") await sleep(3000); // the fresh renderer's start-up, not counted
await fetch("/start");
if (mode.startsWith("idle")) await sleep(1000);
else for (let i = 0; i < ${N}; i += 4) await Promise.all([0, 1, 2, 3].map((k) => one(i + k)));
await fetch("/done");
</script>`;
const MODES = { default: "fetch() + arrayBuffer(), HTTP cache", "no-store": "the same, cache: no-store", byob: "no-store, read into one buffer (BYOB)" };

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-fetch-cost-"));
let server;
try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr")], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  const big = readFileSync(path.join(work, "store.zarr", "0", "data", "c", "1", "0", "0", "0"));
  const objects = { big, small: big.subarray(0, 7120) };
  let before = null;
  let finish = null;
  server = http.createServer((req, res) => {
    const name = req.url.slice(1).split("?")[0];
    if (name === "start") before = cpuSnapshot();
    if (name === "done") finish?.(byKind(cpuDelta(before, cpuSnapshot())));
    if (objects[name]) {
      res.writeHead(200, { "content-type": "application/octet-stream", "cache-control": "no-cache" });
      return res.end(objects[name]);
    }
    res.writeHead(200, { "content-type": "text/html" });
    res.end(name === "page" ? page : "");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${server.address().port}`;
  const rows = [];
  const loads = [os.loadavg()[0]];
  for (let r = 0; r < rounds; r++) {
    const idle = [["idle-at-load", "small"], ["idle", "small"]];
    for (const [mode, file] of [...idle, ...Object.keys(MODES).flatMap((m) => [[m, "big"], [m, "small"]])]) {
      const done = new Promise((resolve, reject) => {
        finish = resolve;
        setTimeout(() => reject(new Error("no result within 120 s")), 120_000);
      });
      const profile = mkdtempSync(path.join(os.tmpdir(), "chronozarr-profile-"));
      const proc = spawn("/usr/bin/chromium", [...ARGS, `--user-data-dir=${profile}`, `${url}/page?file=${file}&mode=${mode}`], { stdio: "ignore" });
      try {
        const kinds = await done;
        rows.push({ r, mode, file, bytes: objects[file].byteLength, kinds });
      } finally {
        proc.kill("SIGTERM");
        await new Promise((res) => setTimeout(res, 800));
        rmSync(profile, { recursive: true, force: true });
      }
    }
    loads.push(os.loadavg()[0]);
  }
  const per = (row, k) => (row.kinds[k] ?? 0) / N;
  const total = (row) => Object.values(row.kinds).reduce((a, b) => a + b, 0) / N;
  console.log(`Chromium alone, 4 requests at a time, ${N} per row; load average ${loads.map((l) => l.toFixed(1)).join(" / ")}`);
  for (const row of rows.filter((x) => x.mode.startsWith("idle"))) {
    const all = Object.values(row.kinds).reduce((a, b) => a + b, 0);
    console.log(`round ${row.r + 1}: an idle page for 1 s ${row.mode === "idle" ? "3 s after its load" : "right after its load"}: ${all.toFixed(0)} ms of CPU (renderer ${(row.kinds.renderer ?? 0).toFixed(0)})`);
  }
  console.log("| round, read, object | CPU ms per request: renderer / network service / browser / all |");
  console.log("|---|---|");
  for (const row of rows.filter((x) => !x.mode.startsWith("idle"))) {
    console.log(`| ${row.r + 1}, ${MODES[row.mode]}, ${row.bytes.toLocaleString("en-US")} B | ${["renderer", "network service", "browser"].map((k) => per(row, k).toFixed(2)).join(" / ")} / ${total(row).toFixed(2)} |`);
  }
} finally {
  server?.close();
  rmSync(work, { recursive: true, force: true });
}

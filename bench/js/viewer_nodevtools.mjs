// The viewer's scrub rates in headless Chromium with no DevTools client attached.
//
//   cd js && node ../bench/js/viewer_nodevtools.mjs [--rounds 2] [--baseline DIR]
//
// bench/js/viewer.mjs drives the page through Playwright, whose DevTools protocol session keeps
// the Network domain enabled: every response's data is reported to it, which costs the renderer
// and the browser process CPU per fetched byte (the anchors-resident row fetches 2.5 MB per
// timestep). A person's browser has no such client. Here /usr/bin/chromium is started on its own
// (no --remote-debugging flag at all) on a page of our own that holds the viewer in a same-origin
// iframe of 1280 x 800 and runs the same scrubs as viewer.mjs through the viewer's window (the
// layer's setTime, awaited; display frames counted by requestAnimationFrame in the viewer's
// document), then posts its figures to this script. CPU per timestep comes from /proc around
// each scrub (proc_cpu.mjs), marked by the page; over the anchors-resident scrub the machine's
// idle and stolen CPU (what a VM's host took) come from /proc/stat, so a round on a machine that
// was not otherwise idle shows. Each round starts a fresh browser per build, this build then the
// baseline (if given), so load on the shared machine falls on both.
// Prints a table; writes nothing.

import { spawn, spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const { buildViewer } = await import(pathToFileURL(path.join(REPO, "js", "tools", "build-viewer.mjs")).href);
const { byKind, cpuDelta, cpuSnapshot } = await import(pathToFileURL(path.join(HERE, "proc_cpu.mjs")).href);
const { startNginx } = await import(pathToFileURL(path.join(HERE, "servers.mjs")).href);
const args = process.argv.slice(2);
const rounds = args.includes("--rounds") ? Number(args[args.indexOf("--rounds") + 1]) : 2;
const baseline = args.includes("--baseline") ? path.resolve(args[args.indexOf("--baseline") + 1]) : null;
/** The machine's CPU ticks from /proc/stat: all, idle (+ iowait) and steal (a VM's host took them). */
const machineTicks = () => {
  const [, ...f] = readFileSync("/proc/stat", "utf8").split("\n")[0].trim().split(/\s+/);
  const n = f.map(Number);
  return { all: n.slice(0, 8).reduce((a, b) => a + b, 0), idle: n[3] + n[4], steal: n[7] };
};
const machineShare = (a, b) => ({ idle: (100 * (b.idle - a.idle)) / (b.all - a.all), steal: (100 * (b.steal - a.steal)) / (b.all - a.all) });
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1300,850"];

// The driver page: the viewer in an iframe, the scrubs of viewer.mjs, marks and results posted.
const driver = (dir, report) => `<!doctype html><meta charset="utf-8"><body style="margin:0">
<iframe id="f" src="${dir}/index.html?style=style.json&store=../store.zarr/" width="1280" height="800" style="border:0;display:block"></iframe>
<script type="module">
const post = (what, body = "") => fetch("${report}/" + what, { method: "POST", mode: "no-cors", body });
const f = document.getElementById("f");
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
while (!f.contentWindow?.document?.body?.dataset?.prefetched) await sleep(100);
await sleep(1000);
const w = f.contentWindow;
const { layer, store } = w.viewer;
async function scrub(frames, dropDeltas) {
  layer._frameBudget ??= layer.frameCache.maxBytes;
  layer.frameCache.clear();
  layer.frameCache.maxBytes = dropDeltas === false ? layer._frameBudget : 0;
  if (dropDeltas === true) {
    store.rawCache.clear();
    store.rawCache.maxBytes = 0;
  } else {
    store.rawCache.maxBytes = 64 * 1024 * 1024;
    await store.prefetch({ level: layer.currentLevel(), cells: layer.visibleCells() });
  }
  const n = store.nTime;
  let shownT = (layer._loader?.shownInfo ?? layer._shownInfo).t;
  let running = true;
  const stamps = [];
  const raf = (now) => {
    if ((layer._loader?.shownInfo ?? layer._shownInfo).t !== shownT) {
      shownT = (layer._loader?.shownInfo ?? layer._shownInfo).t;
      stamps.push(now);
    }
    if (running) w.requestAnimationFrame(raf);
  };
  w.requestAnimationFrame(raf);
  const req0 = store.stats.requests;
  let t = layer.t;
  for (let i = 0; i < frames; i++) {
    t = (t + 1) % n;
    await layer.setTime(t);
  }
  await new Promise((r) => w.requestAnimationFrame(() => w.requestAnimationFrame(r)));
  running = false;
  return { fps: ((stamps.length - 1) * 1000) / (stamps.at(-1) - stamps[0]), steps: stamps.length, requests: (store.stats.requests - req0) / frames };
}
// The viewer's own playback (its play button at a set rate) with only the anchors resident, as
// when a person presses play on a store just opened: display frames showing a new timestep per
// second, counted at requestAnimationFrame over 3 s after the first 0.5 s.
async function playAt(rate) {
  layer.frameCache.clear();
  layer.frameCache.maxBytes = 0;
  store.rawCache.clear();
  store.rawCache.maxBytes = 0;
  const speed = w.document.getElementById("speed");
  speed.value = String(rate);
  speed.dispatchEvent(new w.Event("change"));
  w.document.getElementById("play").click();
  await sleep(500);
  let shownT = (layer._loader?.shownInfo ?? layer._shownInfo).t;
  const stamps = [];
  const until = w.performance.now() + 3000;
  await new Promise((done) => {
    const raf = (now) => {
      if ((layer._loader?.shownInfo ?? layer._shownInfo).t !== shownT) {
        shownT = (layer._loader?.shownInfo ?? layer._shownInfo).t;
        stamps.push(now);
      }
      if (now < until) w.requestAnimationFrame(raf);
      else done();
    };
    w.requestAnimationFrame(raf);
  });
  w.document.getElementById("play").click();
  await sleep(300);
  return { fps: ((stamps.length - 1) * 1000) / (stamps.at(-1) - stamps[0]) };
}
const out = {};
for (const [name, frames, drop] of [["all", 72, false], ["decodeEach", 72, "decode"], ["anchors", 48, true]]) {
  if (drop !== true) await scrub(24, drop); // fills what the scrub keeps, uncounted
  await post("start/" + name);
  out[name] = await scrub(frames, drop);
  await post("end/" + name);
}
for (const rate of [24, 30]) out["play" + rate] = await playAt(rate);
await post("done", JSON.stringify(out));
</script>`;

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-nodevtools-"));
chmodSync(work, 0o755);
let nginx;
let report;
try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr")], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  await buildViewer(path.join(work, "viewer"));
  if (baseline) cpSync(baseline, path.join(work, "baseline"), { recursive: true });
  nginx = await startNginx(work, { accessLog: false });
  let waiting = null;
  const cpu = {};
  const machine = {};
  report = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const [, what, name] = req.url.split("/");
      if (what === "start") {
        cpu[name] = cpuSnapshot();
        machine[name] = machineTicks();
      } else if (what === "end") {
        cpu[name] = byKind(cpuDelta(cpu[name], cpuSnapshot()));
        machine[name] = machineShare(machine[name], machineTicks());
      }
      res.writeHead(204, { "access-control-allow-origin": "*" });
      res.end();
      if (what === "done") waiting?.(JSON.parse(body));
    });
  });
  await new Promise((r) => report.listen(0, "127.0.0.1", r));
  const reportUrl = `http://127.0.0.1:${report.address().port}`;
  const builds = ["viewer", ...(baseline ? ["baseline"] : [])];
  for (const b of builds) writeFileSync(path.join(work, `driver-${b}.html`), driver(b, reportUrl));
  const results = Object.fromEntries(builds.map((b) => [b, []]));
  const load = [os.loadavg()[0]];
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      const done = new Promise((resolve, reject) => {
        waiting = resolve;
        setTimeout(() => reject(new Error(`${b}: no result within 240 s`)), 240_000);
      });
      const profile = mkdtempSync(path.join(os.tmpdir(), "chronozarr-profile-"));
      const proc = spawn("/usr/bin/chromium", [...ARGS, `--user-data-dir=${profile}`, `${nginx.url}/driver-${b}.html`], { stdio: "ignore" });
      try {
        const got = await done;
        for (const k of Object.keys(got)) {
          got[k].cpu = cpu[k];
          got[k].machine = machine[k];
        }
        results[b].push(got);
      } finally {
        proc.kill("SIGTERM");
        await new Promise((res) => setTimeout(res, 1000));
        rmSync(profile, { recursive: true, force: true });
      }
      load.push(os.loadavg()[0]);
    }
  }
  const perStep = (x, k) => (x.cpu?.[k] ?? 0) / x.steps;
  const total = (x) => Object.values(x.cpu ?? {}).reduce((a, c) => a + c, 0) / x.steps;
  console.log(`Chromium alone (no DevTools client), 1280 x 800 iframe, SwiftShader; load average ${load.map((l) => l.toFixed(1)).join(" / ")}`);
  console.log("| build, round | scrubbing all resident | every delta decoded | anchors resident | anchors resident: CPU ms per timestep (renderer / GPU process / network service / browser / all) | anchors resident: the machine's cores idle / stolen by the host (/proc/stat) | playing at a set 24 / 30 fps, anchors resident |");
  console.log("|---|---|---|---|---|---|---|");
  for (let r = 0; r < rounds; r++) {
    for (const b of builds) {
      const x = results[b][r];
      const a = x.anchors;
      console.log(`| ${b === "viewer" ? "this build" : "baseline"}, round ${r + 1} | ${x.all.fps.toFixed(1)} fps | ${x.decodeEach.fps.toFixed(1)} fps | ${a.fps.toFixed(1)} fps (${a.requests.toFixed(1)} GETs per step) | ${["renderer", "GPU process", "network service", "browser"].map((k) => perStep(a, k).toFixed(1)).join(" / ")} / ${total(a).toFixed(1)} | ${a.machine.idle.toFixed(0)} % / ${a.machine.steal.toFixed(1)} % | ${x.play24.fps.toFixed(1)} / ${x.play30.fps.toFixed(1)} fps |`);
    }
  }
} finally {
  report?.close();
  nginx?.stop();
  rmSync(work, { recursive: true, force: true });
  if (nginx) rmSync(nginx.dir, { recursive: true, force: true });
}

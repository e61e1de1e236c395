// Map viewer benchmark: first frame in round trips at 80 ms RTT, and display rates while
// scrubbing and playing, in headless Chromium (SwiftShader WebGL).
//
//   cd js && npm ci && node ../bench/js/viewer.mjs [--reps 5] [--rtt 80] [--no-write] [--baseline DIR]
//       [--baseline-reader SRC] [--first-only] [--trace] [--far-rtt 240]
//
// --first-only measures the first frames alone (nothing written); --trace prints, per cold load,
// every request (start, request sent, first byte, end, new or reused connection), the page's early
// marks (CHRONOZARR_VIEWER.early.marks) and the main thread's long tasks; --baseline-reader SRC
// measures the bare reader of another source tree (its js/chronozarr) interleaved with this one's.
//
// --baseline DIR measures another viewer build in the same run, interleaved (before/after on a
// shared machine). A build of main, from js/:
//   mkdir /tmp/base && git archive main examples js/tools js/chronozarr js/package.json | tar -x -C /tmp/base
//   ln -s "$PWD/node_modules" /tmp/base/js/node_modules && node /tmp/base/js/tools/build-viewer.mjs /tmp/base-viewer
//
// Setup: the bench store (bench/js/make_store.py: 24 x 2 x 1024 x 1024 uint16, cs 512 = a 2 x 2
// cell view, star-delta, zstd, unsharded) and the built viewer (npm run build:viewer) served by
// nginx on 127.0.0.1, behind a small proxy of our own (delay_proxy.mjs, a process of its own at a
// higher priority than the browser) that adds the RTT to every request (the request waits RTT
// before it is forwarded) and to every new TCP connection (the handshake), so HTTP/1.1 with
// Chromium's 6 connections per host behaves as over a real 80 ms link. Each first frame run uses
// a fresh browser context (cold cache); the same frame is also measured at --far-rtt (240 ms by
// default), where the network outweighs the CPU, and a blank page gives the harness's floor.
// Playwright's DevTools session is attached from the page's start and costs the load CPU:
// first_frame_nodevtools.mjs measures the first frame without it. The split comes from the page's Resource
// Timing entries; "first frame" is when the layer's frame was rendered (onFrame after MapLibre's
// render), measured from navigation start.
//
// Display rates are counted at the display: a requestAnimationFrame loop in the page counts the
// animation frames in which a new timestep is on screen. Scrubbing asks for the next timestep as
// soon as the previous one is drawn; "anchors resident" drops the prefetched deltas so each
// timestep costs one delta GET per cell (direct to nginx, no added RTT); "all resident" keeps
// them. Writes the "Map viewer (browser)" section of docs/benchmarks-archive.md.

import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(path.join(REPO, "js", "package.json"));
const { chromium } = require("playwright-core");
const { buildViewer } = await import(pathToFileURL(path.join(REPO, "js", "tools", "build-viewer.mjs")).href);
const { build } = require("esbuild");
const { byKind, cpuDelta, cpuSnapshot } = await import(pathToFileURL(path.join(HERE, "proc_cpu.mjs")).href);
const { startNginx } = await import(pathToFileURL(path.join(HERE, "servers.mjs")).href);
const { startDelayProxy } = await import(pathToFileURL(path.join(HERE, "delay_proxy.mjs")).href);
const { median, writeSection } = await import(pathToFileURL(path.join(HERE, "report.mjs")).href);

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const reps = opt("--reps", 5);
const RTT = opt("--rtt", 80);
// --far-rtt: a second, longer round trip at which the same first frame is measured (this build
// only), so that the network's waits outweigh the machine's CPU work and the frame's count of
// round trips shows through (at 80 ms on two cores, a fresh renderer's own start-up competes).
const FAR_RTT = opt("--far-rtt", 3 * RTT);
// --first-only: the first-frame half alone (no display rates, nothing written); --trace: print
// every request of each first-frame run (start, connection reused or new, response end).
const firstOnly = args.includes("--first-only");
const trace = args.includes("--trace");
// --display-only: the display rates alone (no first frames, nothing written), for iterating.
const displayOnly = args.includes("--display-only") || args.includes("--scrub-only");
// --scrub-only: the three scrub rates and their CPU per timestep alone (this build overlay, and
// the baseline), nothing written: the quick loop while working on the scrub path.
const scrubOnly = args.includes("--scrub-only");
const write = !args.includes("--no-write") && !firstOnly && !displayOnly;
// --baseline DIR: a viewer folder built from another commit (e.g. main), measured in the same run,
// interleaved with this one, so a busy shared machine slows both alike (before/after ratios).
const baseline = args.includes("--baseline") ? path.resolve(args[args.indexOf("--baseline") + 1]) : null;
// --baseline-reader SRC: the bare reader built from another source tree (e.g. `git archive main`),
// measured interleaved with this tree's.
const baselineReader = args.includes("--baseline-reader") ? path.resolve(args[args.indexOf("--baseline-reader") + 1]) : null;
const CHROMIUM = "/usr/bin/chromium";
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"];
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";


const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-viewer-bench-"));
chmodSync(work, 0o755); // nginx workers run as an unprivileged user
const loadBefore = os.loadavg()[0];
let nginx;
let proxy;
let far;
let browser;
try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr")], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  await buildViewer(path.join(work, "viewer"));
  if (baseline) cpSync(baseline, path.join(work, "baseline"), { recursive: true });
  // The bare reader: one bundled page that opens the store and reads the 4 cells of timestep 0,
  // from this tree's reader (and, with --baseline-reader SRC, from another source tree's).
  const buildReader = async (src, name) => {
    mkdirSync(path.join(work, name));
    await build({
      stdin: {
        contents: `import { openStore } from "./js/chronozarr/decoder.js";
          const t0 = performance.now();
          const s = await openStore(new URL("../store.zarr/", location.href).href);
          await Promise.all([0, 1].flatMap((row) => [0, 1].map((col) => s.readCell({ t: 0, row, col }))));
          window.firstFrame = performance.now();`,
        resolveDir: src,
        loader: "js",
      },
      bundle: true,
      format: "esm",
      minify: true,
      outfile: path.join(work, name, "reader.js"),
      nodePaths: [path.join(REPO, "js", "node_modules")],
      logLevel: "error",
    });
    writeFileSync(path.join(work, name, "index.html"), `<!doctype html><meta charset="utf-8"><script type="module" src="reader.js"></script>`);
  };
  await buildReader(REPO, "reader");
  writeFileSync(path.join(work, "blank.html"), `<!doctype html><meta charset="utf-8"><title>blank</title>`);
  if (baselineReader) await buildReader(baselineReader, "reader-base");
  nginx = await startNginx(work, { priority: true });
  proxy = await startDelayProxy(nginx.port, RTT);
  far = await startDelayProxy(nginx.port, FAR_RTT);
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const viewport = { width: 1280, height: 800 };

  // --- first frame, cold, through the delay proxy ------------------------------------------------
  /** One cold first frame of the viewer folder `dir` through the delay proxy `via` (Resource Timing split). */
  const firstFrame = async (dir, via = proxy) => {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    if (trace) {
      await page.addInitScript(() => {
        window.__czLongTasks = [];
        new PerformanceObserver((l) => window.__czLongTasks.push(...l.getEntries())).observe({ type: "longtask", buffered: true });
      });
    }
    const cpuBefore = cpuSnapshot();
    await page.goto(`${via.url}/${dir}/index.html?style=style.json&store=../store.zarr/`, { waitUntil: "commit" });
    await page.waitForFunction(() => window.viewer?.firstFrameAt, null, { timeout: 60000 });
    // Where the cores went from navigation to the first frame (every thread still alive then).
    const cpuToFrame = cpuDelta(cpuBefore, cpuSnapshot());
    // The frame rendered: the GPU has run its commands (layer.rendered(); builds before it have none).
    await page.waitForFunction(() => window.viewer.firstFrameRenderedAt || !window.viewer.layer?.rendered, null, { timeout: 60000 });
    // Then the map's frame (basemap and layer; since decision 0027 the layer's first frame is
    // drawn before MapLibre has loaded, and the map adopts it): body[data-state] "ready".
    await page.waitForFunction(() => document.body.dataset.state === "ready", null, { timeout: 60000 });
    const out = await page.evaluate(async () => {
        // The root and the first chunks may be fetched by the page's early Worker (builds before
        // decision 0021): its Resource Timing entries come with its time origin (waited for up
        // to 1 s). Since 0021 the page fetches them itself (early.inPage): its own entries.
        const t0 = performance.now();
        while (!window.CHRONOZARR_VIEWER?.early?.inPage && !window.CHRONOZARR_VIEWER?.early?.timing && performance.now() - t0 < 1000) await new Promise((r) => setTimeout(r, 20));
        const et = window.CHRONOZARR_VIEWER?.early?.timing;
        const shift = et ? et.timeOrigin - performance.timeOrigin : 0;
        const fromWorker = (et?.entries ?? []).map((e) => ({ ...e, startTime: e.startTime + shift, responseEnd: e.responseEnd + shift, requestStart: (e.requestStart ?? 0) + shift, responseStart: (e.responseStart ?? 0) + shift, encodedBodySize: 0 }));
        const nav = performance.getEntriesByType("navigation")[0];
        const res = [...performance.getEntriesByType("resource"), ...fromWorker];
        const end = (re) => Math.max(...res.filter((r) => re.test(r.name)).map((r) => r.responseEnd));
        // The first frame's chunks: timestep 0 (key c/0/...), requested before the frame (the
        // viewer's prefetch of the other timesteps starts once the frame is drawn).
        const chunks = res.filter((r) => /\/data\/c\/0\//.test(r.name) && r.startTime < window.viewer.firstFrameAt);
        return {
          page: nav.responseEnd,
          code: end(/viewer\.js$/),
          // Since decision 0027 MapLibre is a file of its own, fetched once the chunks are in
          // (0 for a build that bundles it into viewer.js).
          maplibre: Math.max(0, end(/maplibre-gl\.js$/)),
          maplibreEvaluated: window.viewer.marks.maplibreEvaluated ?? window.viewer.marks.codeStart,
          mapFrame: window.viewer.marks.mapFrame ?? window.viewer.firstFrameAt,
          root: end(/store\.zarr\/zarr\.json$/),
          style: end(/style\.json$/),
          chunks: Math.max(...chunks.map((r) => r.responseEnd)),
          chunkStart: Math.min(...chunks.map((r) => r.startTime)),
          codeStart: window.viewer.marks.codeStart,
          storeOpen: window.viewer.marks.storeOpen,
          styleLoaded: window.viewer.marks.styleLoaded,
          worker: end(/maplibre-gl-worker/),
          frameRead: window.viewer.marks.firstStats.readMs,
          frameUpload: window.viewer.marks.firstStats.uploadMs,
          frameRender: window.viewer.marks.firstStats.renderWaitMs,
          chunkRequests: chunks.length,
          earlyChunks: window.viewer.marks.earlyChunks ?? 0,
          earlyDecoded: window.viewer.marks.earlyDecoded ?? 0,
          bundleBytes: res.filter((r) => /\/(viewer|baseline)\/[^/]*\.(js|mjs)$/.test(r.name) && r.startTime < window.viewer.firstFrameAt).reduce((a, r) => a + r.encodedBodySize, 0),
          codeRequests: res.filter((r) => /\/(viewer|baseline)\/[^/]*\.(js|mjs|css|json)$/.test(r.name) && r.startTime < window.viewer.firstFrameAt).length,
          frame: window.viewer.firstFrameAt,
          rendered: window.viewer.firstFrameRenderedAt ?? window.viewer.firstFrameAt,
          afterChunks: window.viewer.firstFrameAt - Math.max(...chunks.map((r) => r.responseEnd)),
          requests: res.length + 1,
          earlyMarks: window.CHRONOZARR_VIEWER?.early?.marks ?? {},
          longTasks: (window.__czLongTasks ?? []).map((e) => [Math.round(e.startTime), Math.round(e.duration)]),
          chunksOnNewConnections: chunks.filter((r) => r.connectEnd > r.connectStart).length,
          trace: res.map((r) => ({ name: r.name.replace(/^.*\/\/[^/]+/, ""), start: r.startTime, newConnection: r.connectEnd > r.connectStart, requestStart: r.requestStart, responseStart: r.responseStart, end: r.responseEnd, priority: r.renderBlockingStatus })),
        };
    });
    await ctx.close();
    if (trace) {
      console.log(`${dir}: frame ${out.frame.toFixed(0)} ms; codeStart ${out.codeStart.toFixed(0)} storeOpen ${out.storeOpen.toFixed(0)} styleLoaded ${out.styleLoaded.toFixed(0)}`);
      console.log(`  early marks: ${Object.entries(out.earlyMarks).map(([k, v]) => `${k} ${v.toFixed(0)}`).join(", ")}`);
      console.log(`  main-thread long tasks [start, ms]: ${JSON.stringify(out.longTasks)}`);
      const busy = [...cpuToFrame].sort((a, b) => b.ms - a.ms);
      console.log(`  CPU ms to the first frame (${busy.reduce((a, r) => a + r.ms, 0).toFixed(0)} in all): ${busy.filter((r) => r.ms >= 5).map((r) => `${r.kind}/${r.thread} ${r.ms.toFixed(0)}`).join(", ")}`);
      for (const r of [...out.trace].sort((a, b) => a.start - b.start)) {
        console.log(`  ${r.start.toFixed(0).padStart(5)} req ${r.requestStart.toFixed(0).padStart(5)} ttfb ${r.responseStart.toFixed(0).padStart(5)} end ${r.end.toFixed(0).padStart(5)} ${r.newConnection ? "new-conn" : "reused  "} ${r.name}`);
      }
    }
    out.cpuToFrame = cpuToFrame.reduce((a, r) => a + r.ms, 0);
    delete out.trace;
    delete out.earlyMarks;
    delete out.longTasks;
    return out;
  };
  /**
   * The harness's own floor: a blank page (no script, no request) navigated in a fresh context
   * through the same proxy: time to its load event and the CPU all processes spent to then (a
   * fresh renderer's start-up, which a first frame at 80 ms RTT on two cores competes with).
   */
  const blankPage = async () => {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    const cpuBefore = cpuSnapshot();
    await page.goto(`${proxy.url}/blank.html`, { waitUntil: "load" });
    const cpu = cpuDelta(cpuBefore, cpuSnapshot()).reduce((a, r) => a + r.ms, 0);
    const load = await page.evaluate(() => performance.getEntriesByType("navigation")[0].loadEventEnd);
    await ctx.close();
    return { cpu, load };
  };
  const first = [];
  const firstBase = [];
  const firstFar = [];
  const blank = [];
  const bare = [];
  const bareBase = [];
  for (let i = 0; i < (displayOnly ? 0 : reps); i++) {
    first.push(await firstFrame("viewer"));
    if (baseline) firstBase.push(await firstFrame("baseline"));
    firstFar.push(await firstFrame("viewer", far));
    blank.push(await blankPage());
    for (const [dir, into] of [["reader", bare], ...(baselineReader ? [["reader-base", bareBase]] : [])]) {
      const ctx2 = await browser.newContext({ viewport });
      const p2 = await ctx2.newPage();
      await p2.goto(`${proxy.url}/${dir}/index.html`, { waitUntil: "commit" });
      await p2.waitForFunction(() => window.firstFrame, null, { timeout: 60000 });
      into.push(await p2.evaluate(() => window.firstFrame));
      await ctx2.close();
    }
  }
  const f = displayOnly ? null : Object.fromEntries(Object.keys(first[0]).map((k) => [k, median(first.map((r) => r[k]))]));
  const rt = (ms) => (ms / RTT).toFixed(1);
  const ff = displayOnly ? null : Object.fromEntries(Object.keys(firstFar[0]).map((k) => [k, median(firstFar.map((r) => r[k]))]));
  const rtFar = (ms) => (ms / FAR_RTT).toFixed(1);
  const blankLoad = displayOnly ? 0 : median(blank.map((b) => b.load));
  const blankCpu = displayOnly ? 0 : median(blank.map((b) => b.cpu));
  if (firstOnly) {
    const ms = (v) => `${v.toFixed(0)} ms = ${rt(v)} RTT`;
    const show = (label, r) =>
      console.log(
        `${label}: first frame ${ms(r.frame)}; page ${rt(r.page)}, code ${rt(r.code)}, root ${rt(r.root)}, first chunk requested ${rt(r.chunkStart)}, chunks ${rt(r.chunks)} RTT; ` +
          `after the last chunk ${r.afterChunks.toFixed(0)} ms; module starts ${r.codeStart.toFixed(0)}, store open ${r.storeOpen.toFixed(0)}, MapLibre received ${r.maplibre.toFixed(0)}, evaluated ${r.maplibreEvaluated.toFixed(0)}, style loaded ${r.styleLoaded.toFixed(0)}, map frame ${ms(r.mapFrame)}; ` +
          `${r.chunkRequests} chunk GETs (${r.earlyChunks} early, ${r.earlyDecoded} decoded early, ${r.chunksOnNewConnections} on a new connection); read/upload/render ${r.frameRead.toFixed(0)}/${r.frameUpload.toFixed(0)}/${r.frameRender.toFixed(0)} ms`,
      );
    show(`this build, median of ${reps}`, f);
    console.log(
      `this build at ${FAR_RTT} ms RTT: first frame ${ff.frame.toFixed(0)} ms = ${rtFar(ff.frame)} RTT; page ${rtFar(ff.page)}, root ${rtFar(ff.root)}, first chunk requested ${rtFar(ff.chunkStart)}, chunks ${rtFar(ff.chunks)} RTT (${ff.chunksOnNewConnections} on a new connection); ` +
        `CPU to the first frame ${f.cpuToFrame.toFixed(0)} ms at ${RTT} ms RTT; a blank page: load ${blankLoad.toFixed(0)} ms, CPU ${blankCpu.toFixed(0)} ms`,
    );
    if (baseline) show(`baseline, median of ${reps}`, Object.fromEntries(Object.keys(firstBase[0]).map((k) => [k, median(firstBase.map((r) => r[k]))])));
    if (baselineReader) console.log(`bare reader, baseline source: ${ms(median(bareBase))}`);
    console.log(`bare reader: ${ms(median(bare))}; load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0].toFixed(1)} after`);
    process.exitCode = 0;
  }

  if (!firstOnly) {
  // --- display rates, direct to nginx ------------------------------------------------------------
  /** Display rates of the viewer folder `dir`, direct to nginx. */
  const display = async (dir, query = "") => {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    await page.goto(`${nginx.url}/${dir}/index.html?style=style.json&store=../store.zarr/${query}`);
    await page.waitForFunction(() => document.body.dataset.prefetched, null, { timeout: 120000 });
    const scrub = (frames, dropDeltas) =>
      page.evaluate(
        async ({ frames, dropDeltas }) => {
          const { layer, store } = window.viewer;
          // The layer's decoded frames (frameCache, where the build has one): kept for "all
          // resident", none when every delta is to be fetched or decoded per timestep.
          const keepFrames = dropDeltas === false;
          if (layer.frameCache) {
            layer._frameBudget ??= layer.frameCache.maxBytes;
            layer.frameCache.clear();
            layer.frameCache.maxBytes = keepFrames ? layer._frameBudget : 0;
          }
          if (dropDeltas === true) {
            store.rawCache.clear();
            store.rawCache.maxBytes = 0; // anchors stay resident; every delta is fetched again
          } else {
            store.rawCache.maxBytes = 64 * 1024 * 1024;
            await store.prefetch({ level: layer.currentLevel(), cells: layer.visibleCells() });
          }
          const n = store.nTime;
          let shownT = (layer._loader?.shownInfo ?? layer._shownInfo).t;
          let newFrames = 0;
          let rafs = 0;
          let running = true;
          const stamps = [];
          const raf = (now) => {
            rafs++;
            const t = (layer._loader?.shownInfo ?? layer._shownInfo).t;
            if (t !== shownT) {
              shownT = t;
              newFrames++;
              stamps.push(now);
            }
            if (running) requestAnimationFrame(raf);
          };
          requestAnimationFrame(raf);
          const req0 = store.stats.requests;
          const bytes0 = store.stats.bytes;
          const parts = { readMs: 0, uploadMs: 0, drawMs: 0 };
          const started = performance.now();
          let t = layer.t;
          for (let i = 0; i < frames; i++) {
            t = (t + 1) % n;
            await layer.setTime(t);
            for (const k of Object.keys(parts)) parts[k] += layer.stats[k];
          }
          await new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)));
          running = false;
          const elapsed = stamps.at(-1) - stamps[0];
          return {
            displayFps: ((stamps.length - 1) * 1000) / elapsed,
            rafFps: (rafs * 1000) / (performance.now() - started),
            newFrames,
            requestsPerFrame: (store.stats.requests - req0) / frames,
            bytesPerFrame: (store.stats.bytes - bytes0) / frames,
            readMs: parts.readMs / frames,
            uploadMs: parts.uploadMs / frames,
            drawMs: parts.drawMs / frames,
          };
        },
        { frames, dropDeltas },
      );
    // CPU per timestep of every process of the run (Chromium's renderer, GPU process, network
    // service, ... and nginx), from /proc, around a scrub (proc_cpu.mjs).
    const withCpu = async (run) => {
      const before = cpuSnapshot();
      const r = await run();
      const rows = cpuDelta(before, cpuSnapshot());
      r.cpu = { rows, kinds: byKind(rows), steps: r.newFrames };
      return r;
    };
    const out = { playback: {} };
    const steps = [];
    steps.push(async () => (out.all = await withCpu(() => scrub(72, false))));
    // All resident, but the layer keeps no decoded frame: every delta is decoded per timestep.
    steps.push(async () => (out.decodeEach = await withCpu(() => scrub(72, "decode"))));
    steps.push(async () => {
      out.anchors = await withCpu(() => scrub(48, true));
      await page.evaluate(() => {
        const { layer, store } = window.viewer;
        store.rawCache.maxBytes = 64 * 1024 * 1024;
        if (layer.frameCache) layer.frameCache.maxBytes = layer._frameBudget;
      });
      await page.evaluate(() => window.viewer.store.prefetch({ level: window.viewer.layer.currentLevel(), cells: window.viewer.layer.visibleCells() }));
    });
    // The plain alternative to "anchors resident": the same delta objects of the same 48
    // timesteps fetched with plain fetch() + arrayBuffer() in the page, 4 at a time, nothing
    // decoded or drawn: the CPU the browser and nginx spend on the fetches alone.
    steps.push(async () => {
      if (dir !== "viewer") return;
      out.fetchOnly = await withCpu(() =>
        page.evaluate(async () => {
          const { layer, store } = window.viewer;
          const cells = layer.visibleCells();
          const base = store.source.url;
          const n = store.nTime;
          let t = layer.t;
          let steps = 0;
          let requests = 0;
          const started = performance.now();
          for (let i = 0; i < 48; i++) {
            t = (t + 1) % n;
            steps++;
            if (store.temporal.reference(t) === null) continue;
            await Promise.all(cells.map((c) => fetch(`${base}0/data/c/${t}/0/${c.row}/${c.col}`).then((r) => r.arrayBuffer())));
            requests += cells.length;
          }
          return { newFrames: steps, requests, ms: performance.now() - started };
        }),
      );
    });
    if (scrubOnly) {
      steps.push(() => ctx.close());
      return { steps, out };
    }
    for (const rate of [12, 24, 30]) {
      steps.push(async () => {
        await page.locator("#speed").selectOption(String(rate));
        await page.locator("#play").click();
        await page.waitForTimeout(3500);
        out.playback[rate] = Number(await page.evaluate(() => document.getElementById("fps").dataset.value));
        await page.locator("#play").click();
        await page.waitForTimeout(300);
      });
    }
    // Where a display frame's time goes: MapLibre repaints with nothing changing, with the layer,
    // without it (basemap only), and with the layer over an empty style (layer only).
    const repaint = () =>
      page.evaluate(
        () =>
          new Promise((resolve) => {
            let n = 0;
            const { map } = window.viewer;
            const t0 = performance.now();
            const f = () => (++n < 90 ? (map.triggerRepaint(), requestAnimationFrame(f)) : resolve((n * 1000) / (performance.now() - t0)));
            requestAnimationFrame(f);
          }),
      );
    steps.push(async () => (out.idle = await repaint()));
    // Overlay rendering: the layer's own canvas redrawn every animation frame, map untouched.
    steps.push(async () => {
      out.overlay = await page.evaluate(
        () =>
          new Promise((resolve) => {
            const { layer } = window.viewer;
            if (!layer.canvas) return resolve(NaN);
            let n = 0;
            const t0 = performance.now();
            const f = () => (++n < 90 ? (layer._overlay ? layer._overlay.draw() : layer._drawOverlay(), requestAnimationFrame(f)) : resolve((n * 1000) / (performance.now() - t0)));
            requestAnimationFrame(f);
          }),
      );
    });
    steps.push(async () => {
      await page.evaluate(() => window.viewer.map.setLayoutProperty("chronozarr", "visibility", "none"));
      out.basemapOnly = await repaint();
    });
    steps.push(async () => {
      await page.evaluate(() => {
        const { map } = window.viewer;
        map.setLayoutProperty("chronozarr", "visibility", "visible");
        map.setLayoutProperty("graticule", "visibility", "none");
        map.setLayoutProperty("background", "visibility", "none");
      });
      out.layerOnly = await repaint();
    });
    // The layer's fill cost without its colouring: the same meshes with a constant-colour shader.
    steps.push(async () => {
      await page.evaluate(() => {
        const { layer, map } = window.viewer;
        const gl = layer._gl ?? map.painter.context.gl; // the overlay's context in overlay rendering
        const prog = gl.createProgram();
        const src = [
          [gl.VERTEX_SHADER, "#version 300 es\nuniform mat4 u_matrix; in vec2 a_pos; void main() { gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0); }"],
          [gl.FRAGMENT_SHADER, "#version 300 es\nprecision mediump float; out vec4 o; void main() { o = vec4(0.2, 0.5, 0.3, 1.0); }"],
        ];
        for (const [type, text] of src) {
          const sh = gl.createShader(type);
          gl.shaderSource(sh, text);
          gl.compileShader(sh);
          gl.attachShader(prog, sh);
        }
        gl.bindAttribLocation(prog, 0, "a_pos");
        gl.linkProgram(prog);
        const u = { u_matrix: gl.getUniformLocation(prog, "u_matrix") };
        const flat = { program: prog, u, scale: new Float32Array(8), offset: new Float32Array(8) };
        if (layer._renderer) layer._renderer.program = flat; // the split layer (map/renderer.js)
        else layer._program = flat;
      });
      out.flat = await repaint();
    });
    // The ceiling: MapLibre repainting an empty map (every layer hidden) at the same size.
    steps.push(async () => {
      await page.evaluate(() => window.viewer.map.setLayoutProperty("chronozarr", "visibility", "none"));
      out.empty = await repaint();
      await ctx.close();
    });
    return { steps, out };
  };
  // With a baseline, both viewers are open at once and every display step (each scrub, each
  // playback rate, each repaint variant) runs for this build, then for the baseline, so a burst
  // of load on the shared machine falls on both sides of a ratio.
  // This build runs twice: as the viewer draws (overlay rendering) and with
  // ?rendering=interleaved (the layer in MapLibre's context, every timestep repaints the map).
  const runs = [await display("viewer"), scrubOnly ? null : await display("viewer", "&rendering=interleaved")];
  if (baseline) runs.push(await display("baseline"));
  for (let i = 0; i < runs[0].steps.length; i++) for (const r of runs) if (r?.steps[i]) await r.steps[i]();
  const mine = runs[0].out;
  const inter = runs[1]?.out;
  const theirs = runs[2]?.out ?? null;
  if (scrubOnly) {
    const cpu = (r) => (Object.values(r.cpu.kinds).reduce((a, b) => a + b, 0) / Math.max(1, r.cpu.steps)).toFixed(1);
    if (mine.fetchOnly) {
      const f = mine.fetchOnly;
      console.log(`plain fetch() of the same deltas (no viewer): ${(f.requests / f.newFrames).toFixed(1)} GETs and ${cpu(f)} ms CPU per timestep; ${Object.entries(f.cpu.kinds).sort((a, b) => b[1] - a[1]).map(([n, ms]) => `${n} ${(ms / f.newFrames).toFixed(1)}`).join(", ")}`);
    }
    for (const [label, o] of [["this build", mine], ...(theirs ? [["baseline", theirs]] : [])]) {
      console.log(`${label}: display fps scrubbing all resident ${o.all.displayFps.toFixed(1)} (CPU ${cpu(o.all)} ms/step), every delta decoded ${o.decodeEach.displayFps.toFixed(1)} (${cpu(o.decodeEach)}), anchors resident ${o.anchors.displayFps.toFixed(1)} (${cpu(o.anchors)}; ${o.anchors.requestsPerFrame.toFixed(1)} GETs, ${Math.round(o.anchors.bytesPerFrame).toLocaleString("en-US")} B per step)`);
      for (const k of ["anchors", "decodeEach"]) {
        console.log(`  ${k}: ${Object.entries(o[k].cpu.kinds).sort((a, b) => b[1] - a[1]).map(([n, ms]) => `${n} ${(ms / o[k].cpu.steps).toFixed(1)}`).join(", ")}`);
        console.log(`    ${o[k].cpu.rows.slice(0, 12).map((r) => `${r.kind}/${r.thread} ${(r.ms / o[k].cpu.steps).toFixed(1)}`).join(", ")}`);
      }
    }
    console.log(`load average ${loadBefore.toFixed(1)} before, ${os.loadavg()[0].toFixed(1)} after`);
  } else {
  const { all, decodeEach, anchors, playback, idle, overlay, basemapOnly, layerOnly, flat, empty } = mine;
  const base = baseline ? { first: firstBase, ...theirs } : null;

  const chrome = browser.version();
  const loadAfter = os.loadavg()[0];
  const firstRows = displayOnly ? [] : [
    ["First frame, viewer (bundled), 2 x 2 cells, cold cache: navigation to the layer's frame drawn (before MapLibre has loaded, decision 0027)", `${f.frame.toFixed(0)} ms = ${rt(f.frame)} RTT`],
    ["  the same frame rendered: the GPU has run its commands (layer.rendered(), a fence; SwiftShader renders at the composite, which reads the canvas back)", `${f.rendered.toFixed(0)} ms = ${rt(f.rendered)} RTT`],
    ["  map frame: the basemap and the layer drawn by MapLibre (body[data-state] ready)", `${f.mapFrame.toFixed(0)} ms = ${rt(f.mapFrame)} RTT`],
    ["  MapLibre (maplibre-gl.js, fetched once the chunks are in) received / evaluated", `${f.maplibre.toFixed(0)} / ${f.maplibreEvaluated.toFixed(0)} ms`],
    ["  page (index.html received)", `${f.page.toFixed(0)} ms = ${rt(f.page)} RTT`],
    ["  code (viewer.js received; preloaded by the page right after the root's GET)", `${f.code.toFixed(0)} ms = ${rt(f.code)} RTT`],
    ["  root zarr.json received (the page's early GET, on the page's own connection)", `${f.root.toFixed(0)} ms = ${rt(f.root)} RTT`],
    ["  bundle evaluated (module starts) / store open / style loaded", `${f.codeStart.toFixed(0)} / ${f.storeOpen.toFixed(0)} / ${f.styleLoaded.toFixed(0)} ms`],
    ["  first chunk requested / MapLibre worker received", `${f.chunkStart.toFixed(0)} / ${f.worker.toFixed(0)} ms`],
    [`  chunks received (${f.chunkRequests} requests, ${f.earlyChunks} of them issued by the page's early script, ${f.earlyDecoded} decoded in its decode workers)`, `${f.chunks.toFixed(0)} ms = ${rt(f.chunks)} RTT`],
    ["  page-folder requests before the frame (code, workers, style) / their bytes", `${f.codeRequests} / ${Math.round(f.bundleBytes).toLocaleString("en-US")} B`],
    ["  decode + upload + draw after the last chunk", `${f.afterChunks.toFixed(0)} ms`],
    ["  first frame's read (request to decoded, 4 cells; the uploads of cells read first overlap it) / texture upload / wait until drawn", `${f.frameRead.toFixed(0)} / ${f.frameUpload.toFixed(0)} / ${f.frameRender.toFixed(0)} ms`],
    ["  CPU of all processes from navigation to the frame (2 cores) / the same for a blank page to its load event (the harness: a fresh renderer's start-up), load at", `${f.cpuToFrame.toFixed(0)} / ${blankCpu.toFixed(0)} ms, ${blankLoad.toFixed(0)} ms`],
    [`First frame, viewer, at ${FAR_RTT} ms RTT (the network outweighs the CPU work: the frame's round trips): frame / page / root / first chunk requested / chunks received`, `${rtFar(ff.frame)} / ${rtFar(ff.page)} / ${rtFar(ff.root)} / ${rtFar(ff.chunkStart)} / ${rtFar(ff.chunks)} RTT`],
    [`  chunk GETs that opened a new connection (HTTP/1.1) at ${FAR_RTT} ms / at ${RTT} ms`, `${ff.chunksOnNewConnections} / ${f.chunksOnNewConnections} of ${f.chunkRequests}`],
    ["First frame, bare reader (bundled page: open + 4 cells), cold cache", `${median(bare).toFixed(0)} ms = ${rt(median(bare))} RTT`],
  ];
  const rows = [
    ...firstRows,
    ["Display fps scrubbing, 2 x 2 cells of 512, anchors and deltas resident (72 steps, 3 passes over the series; the layer keeps decoded frames)", `${all.displayFps.toFixed(1)} fps`],
    ["  the same with no decoded frame kept (every delta decoded per timestep, frameCacheBytes 0)", `${decodeEach.displayFps.toFixed(1)} fps`],
    ["Display fps scrubbing, 2 x 2 cells of 512, anchors resident (4 delta GETs per timestep, loopback)", `${anchors.displayFps.toFixed(1)} fps`],
    ["  requests / bytes per timestep, anchors resident", `${anchors.requestsPerFrame.toFixed(1)} / ${Math.round(anchors.bytesPerFrame).toLocaleString("en-US")} B`],
    ["  requests per timestep, all resident", `${all.requestsPerFrame.toFixed(1)}`],
    ["  per timestep, all resident: read+decode / texture upload / layer draw call (CPU)", `${all.readMs.toFixed(1)} / ${all.uploadMs.toFixed(1)} / ${all.drawMs.toFixed(1)} ms`],
    ["  per timestep, anchors resident: read+decode / texture upload / layer draw call (CPU)", `${anchors.readMs.toFixed(1)} / ${anchors.uploadMs.toFixed(1)} / ${anchors.drawMs.toFixed(1)} ms`],
    ["Map repaint rate with nothing changing: basemap + layer / basemap only / layer only (SwiftShader, 1280 x 800)", `${idle.toFixed(1)} / ${basemapOnly.toFixed(1)} / ${layerOnly.toFixed(1)} fps`],
    ["  layer only with a constant-colour shader (same meshes) / empty map, every layer hidden (the ceiling)", `${flat.toFixed(1)} / ${empty.toFixed(1)} fps`],
    ["Display fps playing at a set rate of 12 / 24 / 30 fps (all resident)", `${playback[12].toFixed(1)} / ${playback[24].toFixed(1)} / ${playback[30].toFixed(1)} fps`],
    ["Overlay rendering: the layer's own canvas redrawn every frame, map untouched (nothing changing)", `${overlay.toFixed(1)} fps`],
    ["Interleaved rendering (?rendering=interleaved, the layer in MapLibre's context): display fps scrubbing all resident / anchors resident", `${inter.all.displayFps.toFixed(1)} / ${inter.anchors.displayFps.toFixed(1)} fps`],
    ["  interleaved: playing at a set 12 / 24 / 30 fps / repaint, nothing changing (basemap + layer)", `${inter.playback[12].toFixed(1)} / ${inter.playback[24].toFixed(1)} / ${inter.playback[30].toFixed(1)} / ${inter.idle.toFixed(1)} fps`],
  ];
  let comparison = "";
  if (base) {
    const b = displayOnly ? null : Object.fromEntries(Object.keys(base.first[0]).map((k) => [k, median(base.first.map((r) => r[k]))]));
    const pair = (label, x, y, fmt) => [label, fmt(y), fmt(x), (x / y).toFixed(2)];
    const ms = (v) => `${v.toFixed(0)} ms = ${rt(v)} RTT`;
    const fps = (v) => `${v.toFixed(1)} fps`;
    const cmp = [
      ...(displayOnly ? [] : [
      pair("first frame drawn", f.frame, b.frame, ms),
      pair("map frame drawn (basemap and layer)", f.mapFrame, b.mapFrame, ms),
      pair("code received", f.code, b.code, ms),
      pair("root received", f.root, b.root, ms),
      pair("chunks received", f.chunks, b.chunks, ms),
      pair("after the last chunk (decode, upload, render)", f.afterChunks, b.afterChunks, (v) => `${v.toFixed(0)} ms`),
      pair("bundle evaluated (module starts)", f.codeStart, b.codeStart, (v) => `${v.toFixed(0)} ms`),
      pair("first chunk requested", f.chunkStart, b.chunkStart, (v) => `${v.toFixed(0)} ms`),
      ]),
      pair("display fps scrubbing, all resident", all.displayFps, base.all.displayFps, fps),
      pair("display fps scrubbing, all resident, every delta decoded per timestep", decodeEach.displayFps, base.decodeEach.displayFps, fps),
      pair("display fps scrubbing, anchors resident", anchors.displayFps, base.anchors.displayFps, fps),
      pair("repaint, nothing changing: basemap + layer", idle, base.idle, fps),
      pair("repaint, layer only", layerOnly, base.layerOnly, fps),
      pair("playing at 30 fps", playback[30], base.playback[30], fps),
    ];
    comparison = [
      "",
      `The same run measured a baseline build (\`--baseline\`, ${path.basename(baseline)}) interleaved with this one: first frames alternate rep by rep and every display step runs for both builds in turn, so load bursts on the shared machine fall on both.`,
      "",
      "| measurement | baseline | this build | ratio |",
      "|---|---|---|---|",
      ...cmp.map((r) => `| ${r.join(" | ")} |`),
    ].join("\n");
    console.log(comparison);
  }
  const table = ["| measurement | result |", "|---|---|", ...rows.map(([k, v]) => `| ${k} | ${v} |`)].join("\n");
  console.log(table);
  // CPU per displayed timestep, per process (and the busiest threads), of this build's scrubs.
  const cpuRuns = [["anchors resident", anchors], ["plain fetch() of the same deltas, nothing else", mine.fetchOnly], ["every delta decoded", decodeEach], ["all resident", all]];
  const kinds = [...new Set(cpuRuns.flatMap(([, r]) => Object.keys(r.cpu.kinds)))]
    .sort((a, b) => (anchors.cpu.kinds[b] ?? 0) - (anchors.cpu.kinds[a] ?? 0));
  const perStep = (r, ms) => (ms / Math.max(1, r.cpu.steps)).toFixed(1);
  const cpuTable = [
    `| CPU ms per displayed timestep (/proc schedstat, all threads; 2 cores = ${(2000 / 30).toFixed(1)} ms per step at 30 fps) | ${cpuRuns.map(([k]) => k).join(" | ")} |`,
    `|---|${"---|".repeat(cpuRuns.length)}`,
    ...kinds.map((k) => `| ${k} | ${cpuRuns.map(([, r]) => perStep(r, r.cpu.kinds[k] ?? 0)).join(" | ")} |`),
    `| total | ${cpuRuns.map(([, r]) => perStep(r, Object.values(r.cpu.kinds).reduce((a, b) => a + b, 0))).join(" | ")} |`,
    "",
    `| busiest threads, anchors resident (process: thread) | ms per timestep |`,
    "|---|---|",
    ...anchors.cpu.rows.slice(0, 10).map((r) => `| ${r.kind}: ${r.thread} | ${perStep(anchors, r.ms)} |`),
  ].join("\n");
  console.log(cpuTable);
  const section = [
    "## Map viewer (browser)",
    "",
    `The bundled viewer (\`npm run build:viewer\`) in headless Chromium ${chrome} (SwiftShader WebGL, ${viewport.width} x ${viewport.height}), offline style, on the bench store`,
    "(24 x 2 x 1024 x 1024 uint16, cs 512, a 2 x 2 cell view, star-delta every 6, zstd 5, unsharded) served by nginx on 127.0.0.1.",
    `First frames go through the benchmark's proxy (bench/js/delay_proxy.mjs, a process of its own at a higher priority, as nginx's worker, since they stand for the network and a remote server) adding ${RTT} ms per request and per new TCP connection (HTTP/1.1), a fresh browser context per run (cold cache), median of ${reps};`,
    "display rates go direct to nginx and are counted by requestAnimationFrame in the page (animation frames showing a new timestep).",
    `Machine: ${os.cpus().length} cores shared with other work (load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after), ${new Date().toISOString().slice(0, 10)}.`,
    "",
    `Command: \`cd js && npm ci && node ../bench/js/viewer.mjs${reps !== 5 ? ` --reps ${reps}` : ""}${baseline ? " --baseline DIR" : ""}\``,
    "",
    table,
    "",
    cpuTable,
    "",
    comparison,
    "",
    "Reading the figures: the round trips are the structure. The page's inline script GETs the root zarr.json first (on the page's own",
    "connection), then preloads the bundle, starts the chunk-decoding Workers (decode-worker.js, zstddec compiled now) and, once the",
    "root is in, requests the first view's chunks and hands each to a Worker as it arrives; the stylesheets and the offline style are",
    "inlined. The layer draws the first frame in its own canvas before MapLibre has loaded (decision 0027): what follows the last chunk is",
    "the last decodes, the texture uploads not yet done, the stretch and the draw, stretched by the machine's load. MapLibre (fetched",
    "once the chunks are in, then evaluated) opens the map at the same camera and adopts the canvas: that is the map frame row. Compare",
    "with the bare reader of the same run, which decodes on its main thread. Display: the layer decodes the next 5 timesteps in the",
    "direction of travel in the Workers and keeps decoded frames, and draws in a canvas of its own above the map (overlay rendering,",
    "decision 0024), so a scrub frame costs a texture upload and a redraw of the layer's canvas, not a MapLibre repaint of the basemap (the",
    "interleaved rows draw in MapLibre's context as before; the repaint rows give MapLibre's own rates: nothing changing, basemap only,",
    "layer only, the layer's meshes with a constant colour, and an empty map with every layer hidden).",
"Playwright's DevTools client is attached to the page from its start and costs it CPU (the CPU row: all processes, against a blank",
    "page's in the same harness); bench/js/first_frame_nodevtools.mjs measures the same frame without it (the next section). The 240 ms",
    "rows give the frame's round trips where the network outweighs the CPU: page 2 (connection + GET), root 1, chunks 2 (three of the",
    "four GETs open a connection; decision 0028).",
    "",
  ].join("\n");
  if (write) writeSection(path.join(REPO, "docs", "benchmarks-archive.md"), section);
  }
  }
} finally {
  await browser?.close();
  await proxy?.close();
  await far?.close();
  nginx?.stop();
  rmSync(work, { recursive: true, force: true });
  if (nginx) rmSync(nginx.dir, { recursive: true, force: true });
}

// Side by side, same store, same run: our map viewer, OpenLayers (npm `ol`, ol/source/GeoZarr) and
// CarbonPlan zarr-layer (npm, on MapLibre), in headless Chromium under two software-rendering flag
// sets. Each library opens the store as docs/js.md says: the viewer by URL, OpenLayers with the
// URL and the array name (the page registers proj4), zarr-layer with the URL, the array name and
// the store's own proj:code as its proj4 option. One band shown, greyscale stretch.
//
//   cd js && node ../bench/js/peers.mjs [--reps 5] [--rtt 80] [--steps 48] [--no-write] [--first-only] [--trace]
//       [--libs viewer,openlayers] [--flags angle] [--viewer-query rendering=interleaved]
//       [--no-devtools | --devtools-only]   (first frames one way of the two, below)
//       [--baseline DIR[,DIR...]]   (an A/B: each baseline's first frames minus the viewer's, paired
//                                      by run, with the 95 % interval of the median difference)
//
// The store: bench/js/make_store.py --encoding none (24 x 2 x 1024 x 1024 uint16, cs 512, none,
// zstd, unsharded: every library reads it), served by nginx on 127.0.0.1. First frames go through
// the delay proxy (delay_proxy.mjs: RTT per request and per new connection, a process of its own
// at a higher priority than the browser), cold (a fresh browser context each run), 1280 x 800
// CSS px, each library's own first view of the whole store; "first frame" is from navigation start
// to the library's first frame with the store's data on screen (the viewer: firstFrameAt; OpenLayers:
// the first rendercomplete with data under the map's centre; zarr-layer: the first map render after
// its first load finished). "chain" is the longest chain of requests before the frame where each
// starts after the previous one's response ended (the round trips the frame waited for; the
// page and its scripts included); "store GETs" the store's requests before it; the CPU to first
// frame is that of the GPU process and of the renderers (proc_cpu.mjs) from navigation to the
// frame, median of the runs (where the time goes under GPU compositing on SwiftShader).
// Each first frame is measured two ways, interleaved (decision 0074): through Playwright, whose
// DevTools session is attached to the page from its start (its scripts injected into the
// document, every request reported; a fresh context of one running browser per run), and with no
// DevTools client during the load, as a person's browser loads a page (a fresh Chromium per run
// on a driver page that makes a WebGL context and then follows a link to the library's page; the
// page's own clocks read once the frame is long drawn: first_frame_nodevtools.mjs's method,
// decision 0028). The same definitions of the frame hold both ways.
//
// Scrub: direct to nginx (no added RTT), one browser context per library: after a warm-up pass
// over every timestep (all chunks resident, as far as the library keeps them), --steps timesteps
// one after another, each requested once the previous one is drawn (the viewer: layer.setTime
// resolved and one animation frame; OpenLayers: updateDimensions then rendercomplete; zarr-layer:
// setSelector, its loading done, then a map render). Steps per second, the CPU of every process
// of the browser per step (proc_cpu.mjs: renderer, GPU process, ...), and the store's GETs and
// bytes per step from nginx's access log. Writes the "Map libraries side by side" section of
// docs/benchmarks-archive.md unless --no-write.

import { spawnSync } from "node:child_process";
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const JS = path.join(REPO, "js");
const require = createRequire(path.join(JS, "package.json"));
const { chromium } = require("playwright-core");
const { build } = require("esbuild");
const proj4 = require("proj4");
const { buildViewer } = await import(pathToFileURL(path.join(JS, "tools", "build-viewer.mjs")).href);
const { byKind, cpuDelta, cpuSnapshot } = await import(pathToFileURL(path.join(HERE, "proc_cpu.mjs")).href);
const { startNginx } = await import(pathToFileURL(path.join(HERE, "servers.mjs")).href);
const { startDelayProxy } = await import(pathToFileURL(path.join(HERE, "delay_proxy.mjs")).href);
const { loadBare } = await import(pathToFileURL(path.join(HERE, "bare_browser.mjs")).href);
const { median, pairedInterval, ratioInterval, writeSection } = await import(pathToFileURL(path.join(HERE, "report.mjs")).href);

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const reps = opt("--reps", 5);
const RTT = opt("--rtt", 80);
const STEPS = opt("--steps", 48);
const trace = args.includes("--trace"); // print each first frame's requests and the viewer's marks
const firstOnly = args.includes("--first-only"); // first frames alone, printed, nothing written
// First frames are measured two ways (decision 0074): "bare", with no DevTools client during the
// load (firstFrameBare: how a person's browser loads the page), and "devtools", through
// Playwright's DevTools session (firstFrame: with the CPU to the frame). --no-devtools measures
// the first alone, --devtools-only the second alone.
const WAYS = args.includes("--no-devtools") ? ["bare"] : args.includes("--devtools-only") ? ["devtools"] : ["bare", "devtools"];
const WAY_NAMES = { bare: "no DevTools client", devtools: "Playwright's DevTools client" };
const LEAD_MS = 2000; // bare first frames: the driver page's wait before it follows the link
const ATTACH_MS = LEAD_MS + 2500 + 25 * RTT; // bare first frames: when this script attaches (the frame long drawn)
const write = !args.includes("--no-write") && !firstOnly;
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const BASE = [
  "--headless",
  "--no-sandbox",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];
const ALL_FLAGS = {
  "--disable-gpu": ["--disable-gpu"],
  "--use-gl=angle --use-angle=swiftshader": ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"],
};
// --libs viewer,openlayers: some of the libraries (the ratio rows need all three)
// --flags disable-gpu|angle: one of the two flag sets
const FLAGS = Object.fromEntries(Object.entries(ALL_FLAGS).filter(([k]) => !args.includes("--flags") || k.includes(args[args.indexOf("--flags") + 1])));
// --baseline DIR[,DIR...]: viewer folders built from other commits (e.g. main's cli/_viewer)
// measured as the libraries "baseline", "baseline-2", ..., interleaved with the others run by run
// (an A/B of a viewer change: --first-only --libs viewer,baseline).
const baselineDirs = args.includes("--baseline") ? args[args.indexOf("--baseline") + 1].split(",").map((d) => path.resolve(d)) : [];
const baselineNames = baselineDirs.map((_, i) => (i ? `baseline-${i + 1}` : "baseline"));
const LIBS = args.includes("--libs") ? args[args.indexOf("--libs") + 1].split(",") : ["viewer", "openlayers", "zarr-layer", ...baselineNames];
const isViewer = (lib) => lib === "viewer" || lib.startsWith("baseline");
const viewport = { width: 1280, height: 800 };

/** In the page, once its first frame is drawn: when (ms from navigation), the request chain, the store's GETs, the viewer's marks. */
const readFrame = (viewer) => {
  const at = viewer ? window.viewer.firstFrameAt : window.peer.firstFrameAt;
  if (at < 0) return { error: window.peer.error };
  const nav = performance.getEntriesByType("navigation")[0];
  const et = window.CHRONOZARR_VIEWER?.early?.timing; // a viewer build whose early Worker fetches
  const shift = et ? et.timeOrigin - performance.timeOrigin : 0;
  const res = [
    nav,
    ...performance.getEntriesByType("resource"),
    ...(et?.entries ?? []).map((e) => ({ ...e, startTime: e.startTime + shift, responseEnd: e.responseEnd + shift })),
  ].filter((r) => r.responseEnd > 0 && r.responseEnd <= at);
  const depth = new Map();
  const sorted = [...res].sort((a, b) => a.startTime - b.startTime);
  for (const r of sorted)
    depth.set(r, 1 + Math.max(0, ...sorted.filter((q) => q.responseEnd <= r.startTime).map((q) => depth.get(q) ?? 0)));
  const reqs = sorted.map((r) => `${r.name.split("/").slice(-3).join("/")} ${r.startTime.toFixed(0)}-${r.responseEnd.toFixed(0)} d${depth.get(r)}${r.connectEnd > r.connectStart ? " new-conn" : ""} ${r.transferSize ?? ""}`);
  const marks = Object.fromEntries(Object.entries({ ...(window.CHRONOZARR_VIEWER?.early?.marks ?? {}), ...(window.viewer?.marks ?? {}) }).filter(([, v]) => typeof v === "number").map(([k, v]) => [k, Math.round(v)]));
  return { ms: at, chain: Math.max(...depth.values()), storeGets: res.filter((r) => /store\.zarr\//.test(r.name)).length, reqs, marks };
};

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-peers-"));
chmodSync(work, 0o755); // nginx workers run as an unprivileged user
const loadBefore = os.loadavg();
let nginx;
let proxy;
const page = (name, script) =>
  writeFileSync(
    path.join(work, `${name}.html`),
    `<!doctype html><meta charset="utf-8"><style>html,body{margin:0;background:#000}#map{width:100vw;height:100vh}</style><div id="map"></div><script type="module" src="${script}"></script>`,
  );

try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr"), "--encoding", "none"], {
    encoding: "utf8",
  });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  await buildViewer(path.join(work, "viewer"));
  baselineDirs.forEach((d, i) => cpSync(d, path.join(work, baselineNames[i]), { recursive: true }));
  for (const [name, entry] of [
    ["peer-openlayers", "peer_openlayers.js"],
    ["peer-zarr-layer", "peer_zarr_layer.js"],
  ]) {
    await build({
      entryPoints: [path.join(HERE, entry)],
      bundle: true,
      format: "esm",
      minify: true,
      target: "es2022",
      outfile: path.join(work, `${name}.js`),
      nodePaths: [path.join(JS, "node_modules")],
      logLevel: "error",
    });
    page(name, `${name}.js`);
  }
  copyFileSync(path.join(JS, "node_modules", "maplibre-gl", "dist", "maplibre-gl-worker.mjs"), path.join(work, "maplibre-gl-worker.mjs"));
  const root = JSON.parse(readFileSync(path.join(work, "store.zarr", "zarr.json"), "utf8")).attributes;
  const code = root["proj:code"];
  const [xmin, ymin, xmax, ymax] = root["spatial:bbox"];
  const [lon, lat] = proj4(code, "EPSG:4326", [(xmin + xmax) / 2, (ymin + ymax) / 2]);
  // zarr-layer's view: the store's height filling the 800 px viewport, as OpenLayers and the viewer fit it
  const mPerPx = (ymax - ymin) / viewport.height;
  const zoom = Math.log2((156543.03392 * Math.cos((lat * Math.PI) / 180)) / mPerPx);
  const nt = root.chronozarr.times.length;
  const urls = {
    viewer: `viewer/index.html?style=style.json&store=../store.zarr/&mode=band&band=B04${args.includes("--viewer-query") ? `&${args[args.indexOf("--viewer-query") + 1]}` : ""}`,
    ...Object.fromEntries(baselineNames.map((b) => [b, `${b}/index.html?style=style.json&store=../store.zarr/&mode=band&band=B04`])),
    openlayers: "peer-openlayers.html?store=store.zarr/",
    "zarr-layer": `peer-zarr-layer.html?store=store.zarr/&proj4=${code}&center=${lon},${lat}&zoom=${zoom}&nt=${nt}`,
  };
  nginx = await startNginx(work, { priority: true, accessLog: true });
  proxy = await startDelayProxy(nginx.port, RTT);
  const accessLog = path.join(nginx.dir, "access.log");
  const logLines = () => (existsSync(accessLog) ? readFileSync(accessLog, "utf8").split("\n").filter(Boolean) : []);

  const frameAt = {
    viewer: () => window.viewer?.firstFrameAt,
    ...Object.fromEntries(baselineNames.map((b) => [b, () => window.viewer?.firstFrameAt])),
    openlayers: () => window.peer?.firstFrameAt || (window.peer?.error && -1),
    "zarr-layer": () => window.peer?.firstFrameAt || (window.peer?.error && -1),
  };

  /** One cold first frame of `lib` through the proxy: ms, the request chain, the store's GETs. */
  const firstFrame = async (browser, lib) => {
    const ctx = await browser.newContext({ viewport });
    const p = await ctx.newPage();
    const cpu0 = cpuSnapshot();
    await p.goto(`${proxy.url}/${urls[lib]}`, { waitUntil: "commit" });
    await p.waitForFunction(frameAt[lib], null, { timeout: 60000 });
    const cpuFirst = byKind(cpuDelta(cpu0, cpuSnapshot())); // every process of the browser, navigation to frame
    const out = await p.evaluate(readFrame, isViewer(lib));
    await ctx.close();
    if (out.error) throw new Error(`${lib}: ${out.error}`);
    out.gpuMs = cpuFirst["GPU process"] ?? 0;
    out.rendererMs = cpuFirst.renderer ?? 0;
    if (trace) console.error(lib, Math.round(out.ms), JSON.stringify(out.marks), "\n  " + out.reqs.join("\n  "));
    return out;
  };

  /**
   * One cold first frame of `lib` with no DevTools client during the load (the "bare" way; the
   * method of first_frame_nodevtools.mjs, decision 0028): a fresh Chromium with `flags` on a
   * driver page, served by nginx directly, that makes a WebGL context (the GPU process up, as in a
   * running browser) and after LEAD_MS follows a link to the library's page through the proxy.
   * The driver's origin is another site (localhost, where the page is 127.0.0.1), so the page
   * opens in a renderer process of its own, as a link from another site does.
   * This script attaches only once the frame is long drawn and reads the page's own clocks. The
   * CPU columns are not measured this way (the navigation's start is the page's, not ours).
   */
  const firstFrameBare = async (flags, lib, i) => {
    const go = `go-${i}-${lib}.html`;
    const target = `${proxy.url}/${urls[lib]}`;
    writeFileSync(
      path.join(work, go),
      `<!doctype html><script>document.createElement("canvas").getContext("webgl2")?.finish(); setTimeout(function () { location.href = ${JSON.stringify(target)}; }, ${LEAD_MS});</script>`,
    );
    const [out, size] = await loadBare({
      // 1280 x 800 CSS px of page: headless Chromium's window is 143 px taller than its page.
      args: [...BASE, ...flags, "--window-size=1280,943"],
      driverUrl: `http://localhost:${nginx.port}/${go}`,
      profileRoot: work,
      attachMs: ATTACH_MS,
      inspect: async (browser) => {
        const p = browser.contexts()[0].pages().find((q) => q.url().startsWith(proxy.url));
        if (!p) throw new Error(`${lib}: the driver page did not reach the library's page`);
        const drawn = await p.evaluate(frameAt[lib]);
        return [drawn ? await p.evaluate(readFrame, isViewer(lib)) : null, await p.evaluate(() => [innerWidth, innerHeight])];
      },
    });
    if (!out) throw new Error(`${lib}: no first frame within ${ATTACH_MS} ms of the browser's start (raise ATTACH_MS)`);
    if (out.error) throw new Error(`${lib}: ${out.error}`);
    if (size[0] !== viewport.width || size[1] !== viewport.height) throw new Error(`${lib}: the page is ${size.join(" x ")}, not 1280 x 800`);
    out.gpuMs = NaN;
    out.rendererMs = NaN;
    if (trace) console.error(lib, Math.round(out.ms), JSON.stringify(out.marks), "\n  " + out.reqs.join("\n  "));
    return out;
  };

  /** Steps per second over STEPS timesteps with every chunk resident, CPU and GETs per step. */
  const scrub = async (browser, lib) => {
    const ctx = await browser.newContext({ viewport });
    const p = await ctx.newPage();
    await p.goto(`${nginx.url}/${urls[lib]}`);
    await p.waitForFunction(frameAt[lib], null, { timeout: 60000 });
    if (isViewer(lib)) await p.waitForFunction(() => document.body.dataset.prefetched, null, { timeout: 120000 });
    else await p.evaluate(() => window.peer.ready);
    const stepAll = (n) =>
      p.evaluate(
        async ({ viewer, n }) => {
          const nTime = viewer ? window.viewer.store.nTime : window.peer.nTime;
          const step =
            viewer
              ? async (t) => (await window.viewer.layer.setTime(t), await new Promise((r) => requestAnimationFrame(r)))
              : window.peer.step;
          let t = viewer ? window.viewer.layer.t : 0;
          const t0 = performance.now();
          for (let i = 0; i < n; i++) {
            t = (t + 1) % nTime;
            await step(t);
          }
          return (n * 1000) / (performance.now() - t0);
        },
        { viewer: isViewer(lib), n },
      );
    await stepAll(nt); // warm-up: every timestep once, so its chunks are resident
    const lines0 = logLines().length;
    const before = cpuSnapshot();
    const rate = await stepAll(STEPS);
    const kinds = byKind(cpuDelta(before, cpuSnapshot()));
    const store = logLines()
      .slice(lines0)
      .filter((l) => l.includes("/store.zarr/"));
    const bytes = store.reduce((a, l) => a + Number(/" \d{3} (\d+) /.exec(l)?.[1] ?? 0), 0);
    await ctx.close();
    const cpu = Object.fromEntries(Object.entries(kinds).map(([k, ms]) => [k, ms / STEPS]));
    return { rate, cpu, cpuAll: Object.values(cpu).reduce((a, b) => a + b, 0), gets: store.length / STEPS, bytes: bytes / STEPS };
  };

  const results = {};
  for (const [flagName, flags] of Object.entries(FLAGS)) {
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: [...BASE, ...flags] });
    // A running browser's GPU process is up: its first WebGL context (565 ms under angle here,
    // 40 ms after) is not charged to whichever library happens to be measured first.
    const warm = await browser.newPage();
    await warm.evaluate(() => document.createElement("canvas").getContext("webgl2")?.finish());
    await warm.close();
    // First frames both ways (WAYS), interleaved library by library and way by way within a run.
    const first = Object.fromEntries(WAYS.map((w) => [w, Object.fromEntries(LIBS.map((l) => [l, []]))]));
    for (let i = 0; i < reps; i++)
      for (const lib of LIBS)
        for (const way of WAYS) first[way][lib].push(way === "bare" ? await firstFrameBare(flags, lib, i) : await firstFrame(browser, lib));
    const scrubs = {};
    for (const lib of LIBS) scrubs[lib] = firstOnly ? { rate: 0, cpu: {}, cpuAll: 0, gets: 0, bytes: 0 } : await scrub(browser, lib);
    await browser.close();
    const summary = (runs) =>
      runs.length
        ? {
            firstMs: median(runs.map((r) => r.ms)),
            firstRange: [Math.min(...runs.map((r) => r.ms)), Math.max(...runs.map((r) => r.ms))],
            chain: median(runs.map((r) => r.chain)),
            firstGpuMs: median(runs.map((r) => r.gpuMs)),
            firstRendererMs: median(runs.map((r) => r.rendererMs)),
            storeGets: median(runs.map((r) => r.storeGets)),
            firstRuns: runs.map((r) => r.ms),
          }
        : null;
    results[flagName] = Object.fromEntries(LIBS.map((lib) => [lib, { ...Object.fromEntries(WAYS.map((w) => [w, summary(first[w][lib])])), ...scrubs[lib] }]));
    console.error(flagName, JSON.stringify(results[flagName]));
    // An A/B: each baseline against the viewer run by run (interleaved, so paired), since a
    // batch's median moves by more than the effects such an A/B looks for.
    for (const way of WAYS)
      for (const b of baselineNames.filter((b) => LIBS.includes(b) && LIBS.includes("viewer"))) {
        const p = pairedInterval(results[flagName].viewer[way].firstRuns, results[flagName][b][way].firstRuns);
        console.error(`${flagName} first frame (${WAY_NAMES[way]}), ${b} minus viewer, paired by run: median ${p.median.toFixed(1)} ms (95 % interval ${p.lo.toFixed(1)} to ${p.hi.toFixed(1)})`);
      }
  }
  const loadAfter = os.loadavg();
  console.log(JSON.stringify({ results, load: { before: loadBefore, after: loadAfter } }, null, 1));

  const version = (pkg) => JSON.parse(readFileSync(path.join(JS, "node_modules", pkg, "package.json"), "utf8")).version;
  const versions = {
    ol: version("ol"),
    zarrLayer: version("@carbonplan/zarr-layer"),
    maplibre: version("maplibre-gl"),
    chromium: spawnSync("/usr/bin/chromium", ["--version"], { encoding: "utf8" }).stdout.trim(),
  };
  const f0 = (x) => x.toFixed(0);
  const f1 = (x) => x.toFixed(1);
  const rows = [];
  const firstCell = (f) => (f ? `${f0(f.firstMs)} (${f0(f.firstRange[0])}-${f0(f.firstRange[1])})` : "not measured");
  for (const [flagName, libs] of Object.entries(results)) {
    for (const lib of LIBS) {
      const r = libs[lib];
      const d = r.devtools; // the chain, GETs and CPU columns: Playwright's runs where measured
      const f = d ?? r.bare;
      const cpu = Object.entries(r.cpu)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 3)
        .map(([k, ms]) => `${k} ${f1(ms)}`)
        .join(", ");
      rows.push(
        `| \`${flagName}\` | ${lib} | ${firstCell(r.bare)} | ${firstCell(d)} | ${d ? `${f0(d.firstGpuMs)} / ${f0(d.firstRendererMs)}` : ""} | ${f.chain} | ${f.storeGets} | ${f1(r.rate)} | ${f1(r.cpuAll)} (${cpu}) | ${f1(r.gets)} / ${f0(r.bytes / 1024)} KB |`,
      );
    }
    if (["viewer", "openlayers", "zarr-layer"].every((l) => LIBS.includes(l))) {
      // The ratio's 95 % bootstrap interval: a run's median moves by more than the 5 % between
      // 0.6x and where the viewer stands, so the row says how far the runs can carry the ratio.
      const ratio = (way) => {
        if (!libs.viewer[way]) return "";
        const [lo, hi] = ratioInterval(libs.viewer[way].firstRuns, [libs.openlayers[way].firstRuns, libs["zarr-layer"][way].firstRuns]);
        const best = Math.min(libs.openlayers[way].firstMs, libs["zarr-layer"][way].firstMs);
        return `${(libs.viewer[way].firstMs / best).toFixed(2)}x (95 % interval ${lo.toFixed(2)}-${hi.toFixed(2)})`;
      };
      const rate = firstOnly ? "" : `${(libs.viewer.rate / Math.max(libs.openlayers.rate, libs["zarr-layer"].rate)).toFixed(2)}x`;
      rows.push(`| \`${flagName}\` | viewer / best peer | ${ratio("bare")} | ${ratio("devtools")} | | | | ${rate} | | |`);
    }
  }
  const date = new Date().toISOString().slice(0, 16).replace("T", " ");
  const section = `## Map libraries side by side (browser)

\`cd js && node ../bench/js/peers.mjs --reps ${reps} --rtt ${RTT} --steps ${STEPS}\`, ${date} UTC, load (1-min average)
${f1(loadBefore[0])} before, ${f1(loadAfter[0])} after; ${versions.chromium}, ol ${versions.ol}, zarr-layer ${versions.zarrLayer}, MapLibre ${versions.maplibre}.
Store: make_store.py --encoding none (24 x 2 x 1024 x 1024 uint16, cs 512, unsharded), one band shown.
First frame: cold, through the ${RTT} ms delay proxy, median (range) of ${reps} runs interleaved by library, measured two ways
(decision 0074): with no DevTools client during the load (a fresh browser per run follows a link from a driver page that
has made a WebGL context; its clocks read after the frame), and through Playwright's DevTools session (a fresh context of
one running browser per run; the CPU, chain and GET columns are from these runs). Viewer / best peer: the ratio of the
medians and its 95 % bootstrap interval (report.mjs ratioInterval). Scrub: direct to nginx,
${STEPS} timesteps after a warm-up pass, each requested once the previous is drawn. Flags: each row's, beside
\`${BASE.join(" ")}\` (the angle row adds \`--enable-unsafe-swiftshader\`).

| flags | library | first frame ms, no DevTools client | first frame ms, Playwright | CPU ms to first frame (Playwright): GPU process / renderer | chain | store GETs | scrub steps/s | CPU ms per step (top processes) | GETs / bytes per step |
|---|---|---|---|---|---|---|---|---|---|
${rows.join("\n")}
`;
  console.log(section);
  if (write) writeSection(path.join(REPO, "docs", "benchmarks-archive.md"), section);
} finally {
  proxy?.close?.();
  nginx?.stop();
  rmSync(work, { recursive: true, force: true });
}

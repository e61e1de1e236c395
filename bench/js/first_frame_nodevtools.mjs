// The viewer's first frame in round trips, in headless Chromium with no DevTools client attached
// during the load, through the delay proxy (bench/js/delay_proxy.mjs: RTT per request and per new
// TCP connection, HTTP/1.1).
//
//   cd js && node ../bench/js/first_frame_nodevtools.mjs [--reps 7] [--rtt 80] [--baseline DIR] [--no-write]
//
// bench/js/viewer.mjs measures first frames through Playwright, whose DevTools session is attached
// to the page from its start: it injects its scripts into every new document and reports every
// request and response, which on two cores costs the load about as much CPU as the viewer's own
// work (its --trace prints the CPU split). A person's browser has no such client. Here each run
// starts /usr/bin/chromium on its own (fresh profile: cold cache, no connection to the proxy) on a
// driver page served directly by nginx, which after 1.5 s (the browser's own start-up is over)
// follows a link to the viewer through the proxy: a top-level navigation of a running browser.
// Only once the frame is long drawn does this script attach (connectOverCDP) and read the page's
// own clocks: Resource Timing (the page's, and the early chunk fetcher Worker's) and the viewer's
// marks. A frame not drawn by then fails the run (DevTools would have watched the load).
//
// Each figure is split into the round trips the frame waited for (the page: a new connection and
// its GET; the root: a GET on the page's connection; the chunks: a GET, and a new connection when
// any chunk had to open one) and what is left, the client's own time: the scripts, the chunks'
// bodies, decode, upload and draw. --baseline DIR (a viewer folder built from another commit, as
// viewer.mjs's header says) is measured interleaved, run by run. Writes the "Map viewer: first
// frame, no DevTools client" section of docs/benchmarks-archive.md unless --no-write.

import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const { buildViewer } = await import(pathToFileURL(path.join(REPO, "js", "tools", "build-viewer.mjs")).href);
const { startNginx } = await import(pathToFileURL(path.join(HERE, "servers.mjs")).href);
const { startDelayProxy } = await import(pathToFileURL(path.join(HERE, "delay_proxy.mjs")).href);
const { loadBare } = await import(pathToFileURL(path.join(HERE, "bare_browser.mjs")).href);
const { median, writeSection } = await import(pathToFileURL(path.join(HERE, "report.mjs")).href);

const args = process.argv.slice(2);
const opt = (name, dflt) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const reps = opt("--reps", 7);
const RTT = opt("--rtt", 80);
const write = !args.includes("--no-write");
const baseline = args.includes("--baseline") ? path.resolve(args[args.indexOf("--baseline") + 1]) : null;
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const LEAD_MS = 1500; // the driver page's wait before it follows the link
const ATTACH_MS = LEAD_MS + 1500 + 25 * RTT; // when this script attaches: the frame is long drawn
// 1280 x 800 CSS px of page, as viewer.mjs's viewport: headless Chromium's window is 143 px taller.
const ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,943"];

/** In the viewer's page once its frame is long drawn: its clocks (Resource Timing, the early Worker's, the viewer's marks). */
const READ_PAGE = () => {
  const now = performance.now();
  const v = window.viewer;
  const early = window.CHRONOZARR_VIEWER?.early ?? {};
  const nav = performance.getEntriesByType("navigation")[0];
  const res = performance.getEntriesByType("resource");
  // The early chunk fetcher Worker's entries, on its own time origin.
  const shift = early.timing ? early.timing.timeOrigin - performance.timeOrigin : 0;
  const chunks = (early.timing?.entries ?? [])
    .filter((e) => /\/data\/c\/0\//.test(e.name) && e.startTime + shift < (v?.firstFrameAt ?? Infinity))
    .map((e) => ({ start: e.startTime + shift, end: e.responseEnd + shift, fresh: e.connectEnd > e.connectStart }));
  const root = res.find((e) => /store\.zarr\/zarr\.json$/.test(e.name));
  const marks = early.marks ?? {};
  const at = (prefix) => Math.max(...Object.entries(marks).filter(([k]) => k.startsWith(prefix)).map(([, t]) => t));
  return {
    now,
    issued: v?.firstFrameAt ?? null,
    // Rendered: the GPU has run the frame's commands (layer.rendered(), a fence); a build
    // before it reports only the draw issued.
    frame: v?.firstFrameRenderedAt ?? v?.firstFrameAt ?? null,
    hasRendered: v?.firstFrameRenderedAt != null,
    width: innerWidth,
    height: innerHeight,
    page: nav.responseEnd,
    rootFresh: root ? root.connectEnd > root.connectStart : false,
    rootStart: root?.startTime ?? NaN,
    root: root?.responseEnd ?? NaN,
    chunkStart: Math.min(...chunks.map((c) => c.start)),
    chunks: Math.max(...chunks.map((c) => c.end)),
    chunkCount: chunks.length,
    freshChunks: chunks.filter((c) => c.fresh).length,
    chunkInPage: at("chunk c/"),
    decoded: at("decoded c/"),
  };
};

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-first-frame-"));
chmodSync(work, 0o755); // nginx workers run as an unprivileged user
const loadBefore = os.loadavg()[0];
let nginx;
let proxy;
let zero;
let version = "";
try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr")], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  await buildViewer(path.join(work, "viewer"));
  if (baseline) cpSync(baseline, path.join(work, "baseline"), { recursive: true });
  nginx = await startNginx(work, { priority: true, accessLog: false });
  proxy = await startDelayProxy(nginx.port, RTT);
  // The same path with no added latency: the frame with no round trip to wait for, the client's
  // work alone. (Its difference from the frame at RTT is no count of round trips: at RTT, most of
  // that work, the bundle, the Workers, WebGL, runs while the page waits on the network.)
  zero = await startDelayProxy(nginx.port, 0);

  /** One cold first frame of the viewer folder `dir`, read after the fact from the page's clocks. */
  const run = async (dir, i, via = proxy) => {
    const target = `${via.url}/${dir}/index.html?style=style.json&store=../store.zarr/`;
    const rtt = via === proxy ? RTT : 0;
    writeFileSync(path.join(work, `go-${dir}-${i}-${rtt}.html`), `<!doctype html><script>setTimeout(function () { location.href = ${JSON.stringify(target)}; }, ${LEAD_MS});</script>`);
    const out = await loadBare({
      args: ARGS,
      driverUrl: `${nginx.url}/go-${dir}-${i}-${rtt}.html`,
      profileRoot: work,
      attachMs: ATTACH_MS,
      inspect: async (browser) => {
        version ||= browser.version();
        const page = browser.contexts()[0].pages().find((p) => p.url().startsWith(via.url));
        if (!page) throw new Error(`${dir}: the driver page did not reach the viewer`);
        return page.evaluate(READ_PAGE);
      },
    });
    if (out.frame === null || out.frame > out.now) throw new Error(`${dir}: no first frame within ${ATTACH_MS} ms of the start (raise ATTACH_MS)`);
    if (out.width !== 1280 || out.height !== 800) throw new Error(`${dir}: the page is ${out.width} x ${out.height}, not 1280 x 800`);
    if (out.chunkCount !== 4) throw new Error(`${dir}: ${out.chunkCount} early chunk GETs, not the 2 x 2 view's 4`);
    // The round trips waited for, in order (HTTP/1.1): the page's connection (a fresh browser
    // has none to the proxy) and GET, the root's GET (and a connection if it opened one), the
    // chunks' GETs (and one connection more if any chunk opened one: they run in parallel).
    out.trips = 2 + (out.rootFresh ? 2 : 1) + (out.freshChunks > 0 ? 2 : 1);
    out.client = out.frame - out.trips * rtt;
    out.afterChunks = out.frame - out.chunks;
    return out;
  };

  const mine = [];
  const theirs = [];
  const mineZero = [];
  for (let i = 0; i < reps; i++) {
    mine.push(await run("viewer", i));
    if (baseline) theirs.push(await run("baseline", i));
    mineZero.push(await run("viewer", i, zero));
  }
  const loadAfter = os.loadavg()[0];
  const rt = (ms) => (ms / RTT).toFixed(1);
  const summary = (runs) => {
    const m = (k) => median(runs.map((r) => r[k]));
    return {
      frame: m("frame"),
      issued: m("issued"),
      hasRendered: runs.every((r) => r.hasRendered),
      page: m("page"),
      rootStart: m("rootStart"),
      root: m("root"),
      chunkStart: m("chunkStart"),
      chunks: m("chunks"),
      chunkInPage: m("chunkInPage"),
      decoded: m("decoded"),
      afterChunks: m("afterChunks"),
      client: m("client"),
      trips: m("trips"),
      freshChunks: m("freshChunks"),
      spread: [Math.min(...runs.map((r) => r.frame)), Math.max(...runs.map((r) => r.frame))],
    };
  };
  const a = summary(mine);
  const z = summary(mineZero);
  const rows = (s) => [
    [`First frame, navigation to the layer's frame ${s.hasRendered ? "rendered (the GPU has run its commands)" : "drawn (issued)"} (median; fastest - slowest)`, `${s.frame.toFixed(0)} ms = ${rt(s.frame)} RTT (${s.spread[0].toFixed(0)} - ${s.spread[1].toFixed(0)} ms)`],
    ["  the frame's draw issued (the page's onFrame)", `${s.issued.toFixed(0)} ms = ${rt(s.issued)} RTT`],
    ["  round trips waited for: page (connection + GET), root (GET), chunks (connection + GET)", `${s.trips} = ${(s.trips * RTT).toFixed(0)} ms`],
    ["  the rest: the client's own time (scripts, bodies, decode, upload, draw)", `${s.client.toFixed(0)} ms`],
    ...(s === a
      ? [
          ["  the same frame with no added latency (proxy at 0 ms: the client's work alone; fastest - slowest)", `${z.frame.toFixed(0)} ms (${z.spread[0].toFixed(0)} - ${z.spread[1].toFixed(0)} ms); after the last chunk's body ${z.afterChunks.toFixed(0)} ms`],
        ]
      : []),
    ["  page received / root requested / root received", `${s.page.toFixed(0)} / ${s.rootStart.toFixed(0)} / ${s.root.toFixed(0)} ms = ${rt(s.page)} / ${rt(s.rootStart)} / ${rt(s.root)} RTT`],
    ["  chunks requested / received (network) / handed to the page / last decoded", `${s.chunkStart.toFixed(0)} / ${s.chunks.toFixed(0)} / ${s.chunkInPage.toFixed(0)} / ${s.decoded.toFixed(0)} ms`],
    ["  chunk GETs that opened a new connection (of 4; Chromium opens them on demand, 6 per host)", `${s.freshChunks}`],
    ["  after the last chunk's body: hand-off, last decode, upload, draw", `${s.afterChunks.toFixed(0)} ms`],
  ];
  const table = ["| measurement | result |", "|---|---|", ...rows(a).map(([k, v]) => `| ${k} | ${v} |`)].join("\n");
  let comparison = "";
  if (baseline) {
    const b = summary(theirs);
    comparison = [
      "",
      `The same run measured a baseline build (\`--baseline\`, ${path.basename(baseline)}), run by run in turn:`,
      "",
      "| measurement | baseline | this build | ratio |",
      "|---|---|---|---|",
      `| first frame ${a.hasRendered && b.hasRendered ? "rendered" : "(rendered where the build reports it, else issued)"} | ${b.frame.toFixed(0)} ms = ${rt(b.frame)} RTT | ${a.frame.toFixed(0)} ms = ${rt(a.frame)} RTT | ${(a.frame / b.frame).toFixed(2)}x |`,
      `| first frame's draw issued | ${b.issued.toFixed(0)} ms | ${a.issued.toFixed(0)} ms | ${(a.issued / b.issued).toFixed(2)}x |`,
      `| chunks received | ${rt(b.chunks)} RTT | ${rt(a.chunks)} RTT | ${(a.chunks / b.chunks).toFixed(2)}x |`,
      `| the client's own time | ${b.client.toFixed(0)} ms | ${a.client.toFixed(0)} ms | ${(a.client / b.client).toFixed(2)}x |`,
    ].join("\n");
  }
  console.log(table + "\n" + comparison);
  const section = [
    "## Map viewer: first frame, no DevTools client",
    "",
    `The bundled viewer's first frame of the 2 x 2-cell bench store view (as in "Map viewer (browser)"), cold cache, in headless Chromium ${version} (SwiftShader WebGL, 1280 x 800)`,
    `with no DevTools client during the load: a fresh browser per run follows a link from a driver page to the viewer through the delay proxy (${RTT} ms per request and per new TCP connection, HTTP/1.1; the proxy and nginx at a higher priority, as the network and a remote server), median of ${reps}.`,
    `Machine: ${os.cpus().length} cores (load average ${loadBefore.toFixed(1)} before, ${loadAfter.toFixed(1)} after), ${new Date().toISOString().slice(0, 10)}.`,
    "",
    `Command: \`cd js && npm ci && node ../bench/js/first_frame_nodevtools.mjs${reps !== 7 ? ` --reps ${reps}` : ""}${RTT !== 80 ? ` --rtt ${RTT}` : ""}${baseline ? " --baseline DIR" : ""}\``,
    "",
    table,
    comparison,
    "",
    "Reading the figures: over HTTP/1.1 a cold 2 x 2-cell frame waits for 5 round trips at least: the page's connection and GET, the",
    "root's GET (the page's inline script sends it first, on the page's connection), and the chunks' GETs, three of which must open a",
    "connection (Chromium opens connections when requests wait, one more per preconnect at most, and a request to warm one costs its own",
    "round trip: decision 0028). The rest is the client's. With no added latency the same frame takes the client's work alone: at RTT,",
    "most of that work (the bundle, the Workers, WebGL) runs while the page waits on the network, and what is left on the path is the",
    "\"client's own time\" row. viewer.mjs measures the same frame with Playwright's DevTools client attached.",
    "The frame counts when the GPU has run its commands (layer.rendered(), a WebGL2 fence), not when its draw is issued: with",
    "SwiftShader and the software compositor, the GPU process runs a frame's uploads and draw when the compositor reads the canvas",
    "back, 60-100 ms after the draw call (flushing the uploads earlier, as they arrive, measured 1.02-1.04x: no gain).",
    "",
  ].join("\n");
  if (write) writeSection(path.join(REPO, "docs", "benchmarks-archive.md"), section, { after: "## Map viewer (browser)" });
} finally {
  await proxy?.close();
  await zero?.close();
  nginx?.stop();
  try {
    rmSync(work, { recursive: true, force: true, maxRetries: 5 });
  } catch {
    // a browser child still closing its profile: the temporary folder is left to the system
  }
}

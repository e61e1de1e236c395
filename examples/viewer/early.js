// The viewer's early work: the first script of the built page (js/tools/build-viewer.mjs bundles
// this module and writes it inline into <head>, after the config block: no request of its own,
// run before anything else has loaded). Decisions 0023, 0027 and 0028 say why it exists:
//
// - it fetches the store's root zarr.json itself (a Worker would start later), and the moment the
//   root parses it names the first view's chunks: the fitted view's level (spec 10.3) and the
//   cells of timestep 0, keys from the consolidated metadata (3.7). A small Worker started with
//   the page (early-fetcher.js, a Blob of its bundle, no request) GETs them at once (high
//   priority) and hands each to the chunk decoder Worker (decode-worker.js, started here so zstd
//   compiles while the code downloads) as it arrives;
// - it preloads the bundle (viewer.js) after the root's GET, so the root takes the page's own
//   connection; MapLibre's files come at low priority once the first view's chunks are in;
// - the basemap style: the offline one is written into the built page (no request), another URL
//   is fetched here;
// - it veils the page until the layer's first frame (or an error, or 1.5 s), so the page's own
//   loading changes make no compositor frames meanwhile, and starts one chunk decoder, not one
//   per core (decision 0061).
//
// The root and the chunks are read by the reader's own code (http.js readBody, jsondoc.js,
// metadata.js parseRoot, parseArray, chunkKey, compressedBound, names.js joinUrl), so they are
// bounded, parsed and named exactly as the reader will: a wrong guess costs bytes only, since the
// reader and the decode pool take an early answer for the exact URL and length alone. The bundle
// (viewer.js) adopts all of it through window.CHRONOZARR_VIEWER.early.

import DECODER from "cz:decode-worker";
import FETCHER from "cz:early-fetcher";
import { readBody, resolveStoreUrl } from "../../js/chronozarr/http.js";
import { MAX_DOCUMENT_BYTES, parseJson } from "../../js/chronozarr/jsondoc.js";
import { joinUrl } from "../../js/chronozarr/names.js";
import { overlayCanvas } from "../../js/chronozarr/map/overlay.js";
import { planChunks } from "./plan.js";

/** @import {PlannedChunk} from "./plan.js" */

/** Run the early work for the page's store (the `?store=` parameter or the config block's). */
function start() {
  const c = window.CHRONOZARR_VIEWER || (window.CHRONOZARR_VIEWER = {});
  const q = new URLSearchParams(location.search);
  // marks: when each early step happened (performance.now()), for bench/js/viewer.mjs.
  /** @type {any} */
  const early = (c.early = { marks: {} });
  const mark = (/** @type {string} */ name) => (early.marks[name] = performance.now());
  const store = q.get("store") || c.store;
  const hi = /** @type {RequestInit} */ ({ priority: "high" });
  // The bundle: fetched from here, after the root's GET (so the root takes the page's own
  // connection, idle once the page is in, instead of opening one), and run by the end of
  // <body>. It is not in the page's markup, where the preload scanner would GET it first.
  early.preloadCode = () => {
    if (early.codePreloaded) return;
    early.codePreloaded = true;
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = "viewer.js";
    document.head.appendChild(link);
  };
  // MapLibre (its module and its worker's script), at low priority and only once the first
  // view's chunks are in (the fetcher's timing message), so their 1.6 MB take neither the
  // connections nor the cores the root and the chunks need; viewer.js imports it after the
  // first frame (decision 0027), and fetches it itself if this has not run by then.
  early.fetchMap = () => {
    if (early.mapWorker) return;
    const link = document.createElement("link");
    link.rel = "modulepreload";
    link.href = "maplibre-gl.js";
    link.fetchPriority = "low";
    document.head.appendChild(link);
    early.mapWorker = fetch("maplibre-gl-worker.mjs", /** @type {RequestInit} */ ({ priority: "low" }))
      .then((r) => (r.ok ? r.blob() : null))
      .catch(() => null);
  };
  // The map's size comes from the end of <body> (laid out by then): it picks the level.
  /** @type {(box: {width: number, height: number, dpr: number}) => void} */
  let gotSize;
  const size = new Promise((r) => (gotSize = r));
  early.sendSize = () => {
    const box = document.getElementById("map");
    mark("size");
    gotSize({ width: box ? box.clientWidth : 0, height: box ? box.clientHeight : 0, dpr: window.devicePixelRatio || 1 });
  };
  if (store && q.get("veil") !== "0") veil(early);
  if (store) {
    try {
      startStore(early, store, q, size, mark, hi);
    } catch {
      // (a store URL that does not parse: the reader says so)
    }
  }
  early.preloadCode();
  startStyle(early, q.get("style") || c.style);
}

/**
 * Chunk decoders started with the page. One: it decodes the first view's few chunks as they
 * arrive (a few ms each), and a second one cost a second fetch of its script (Chromium's cache
 * lock, then a revalidation: one more round trip and connection while the root and the chunks
 * need them) and its WebAssembly compile on the same cores; viewer.js adds the rest once the
 * first frame is drawn (DecodePool#grow, decision 0061).
 */
const EARLY_DECODERS = 1;

/** The longest the page stays veiled waiting for the first frame (a slow store then shows its spinner). */
const VEIL_MS = 1500;

/**
 * Veil the page until the layer's first frame (decision 0061): `<html data-veil>` hides the
 * body (style.css, `visibility: hidden`: laid out as ever, so the map's size is known, but
 * nothing painted), so the page's own changes while the store opens (the first paint of the
 * chrome, the loading text and spinner) make no compositor frames. In headless Chromium each
 * frame is a full redraw and readback of the page (decision 0055), 24-45 of them before the first
 * frame, and under GPU compositing on a software renderer the layer's WebGL context waits behind
 * them. viewer.js lifts the veil with its first frame or an error; VEIL_MS lifts it regardless.
 * `?veil=0` opens unveiled (for comparison).
 * @param {any} early
 */
function veil(early) {
  const root = document.documentElement;
  root.setAttribute("data-veil", "");
  early.liftVeil = () => {
    if (!root.hasAttribute("data-veil")) return;
    root.removeAttribute("data-veil");
    early.marks.veilLifted = performance.now();
  };
  setTimeout(early.liftVeil, VEIL_MS);
}

/**
 * The chunk decoder Worker, from a Blob of decode-worker.js's bundle, which the build writes into
 * this script (decision 0066): its script was the one request of the early Workers, on a
 * connection of its own (a round trip for the handshake, one for the GET) while the root and then
 * the chunks needed the connections, and the layer's WebGL context waited for the decoder to have
 * started (decision 0055). CZ_VIEWER_BASE, prepended, is the folder its codec files are in.
 * `?decoder=file` (or a page whose CSP refuses blob: Workers) loads decode-worker.js instead.
 * @param {boolean} file
 */
function decoderWorker(file) {
  if (!file) {
    try {
      const base = `globalThis.CZ_VIEWER_BASE = ${JSON.stringify(new URL(".", location.href).href)};\n`;
      return new Worker(URL.createObjectURL(new Blob([base, DECODER], { type: "text/javascript" })), { type: "module" });
    } catch {
      // (a CSP without blob: workers) the file, below
    }
  }
  return new Worker("decode-worker.js", { type: "module" });
}

/**
 * The root's GET, the decoders, the chunk fetcher and the first view's chunks.
 * @param {any} early
 * @param {string} store
 * @param {URLSearchParams} q
 * @param {Promise<{width: number, height: number, dpr: number}>} size
 * @param {(name: string) => void} mark
 * @param {RequestInit} hi
 */
function startStore(early, store, q, size, mark, hi) {
  const { base, query } = resolveStoreUrl(store, "viewer");
  early.rootUrl = joinUrl(base, "zarr.json", query);
  // The reader takes this response as its own root GET (viewer.js earlyFetch): the page's read
  // is a clone, so status, headers and a CORS or network failure are the reader's to report
  // exactly as if it had fetched the root itself.
  // The page's first script has sent this GET already (early-root.js, decision 0069).
  const sent = window.CHRONOZARR_VIEWER?.rootGet;
  early.root = sent?.url === early.rootUrl ? sent.response : fetch(early.rootUrl, hi);
  early.root.catch(() => {});
  early.preloadCode();
  early.chunks = {};
  early.decoded = {};
  const workers = [];
  /** @type {Worker | null} */
  let fetcher = null;
  let decodesOff = false;
  /** @type {Record<string, (v: any) => void>} */
  const waiting = {};
  // A decoder that fails to start: chunks are decoded when the reader reads them.
  const off = () => {
    decodesOff = true;
    early.decodersFailed = true; // the bundle then decodes on its own thread
    for (const k of Object.keys(early.decoded)) delete early.decoded[k];
    for (const id of Object.keys(waiting)) {
      waiting[id](null); // whoever took the promise decodes it itself
      delete waiting[id];
    }
    fetcher?.postMessage({ drop: true });
  };
  // early.started: settled once every Worker started here has its first message from the page.
  // Until then those messages wait in the page, delivered only when its thread has taken note
  // that the Worker's script ran: a page thread blocked meanwhile (a WebGL context's creation
  // waits on the GPU process, up to a second under GPU compositing on a software renderer)
  // held the chunk GETs and the decoders' start until it was free (decision 0055). viewer.js
  // waits for this before it creates its context.
  let toStart = 0;
  /** @type {() => void} */
  let allStarted = () => {};
  early.started = new Promise((r) => (allStarted = /** @type {() => void} */ (r)));
  const started = () => {
    if (--toStart <= 0) allStarted();
  };
  let fetcherCounted = false;
  const fetcherStarted = () => {
    if (fetcherCounted) return;
    fetcherCounted = true;
    started();
  };
  if (typeof Worker !== "undefined") {
    const n = EARLY_DECODERS;
    /** @type {Set<string>} */
    const received = new Set();
    const listen = (/** @type {MessageEvent} */ e) => {
      const got = e.data?.received;
      if (typeof got === "string" && !received.has(got)) {
        received.add(got);
        started();
      }
      const id = e.data?.id;
      if (typeof id === "string" && id.startsWith("early-warm-")) {
        mark(id);
        if (!e.data.ok) off(); // zstd failed to load: decode when the reader reads
      }
      if (typeof id === "string" && waiting[id]) {
        mark(`decoded ${id.slice(id.lastIndexOf("/c/") + 1)}`);
        waiting[id](e.data);
        delete waiting[id];
      }
    };
    const ports = [];
    toStart = n + 1; // the decoders and the fetcher
    for (let i = 0; i < n; i++) {
      const wk = decoderWorker(q.get("decoder") === "file");
      wk.addEventListener("message", listen);
      wk.addEventListener("error", off);
      wk.addEventListener("error", () => listen(/** @type {any} */ ({ data: { received: `early-warm-${i}` } })));
      // The port lets the chunk fetcher hand this decoder its chunks directly.
      const ch = new MessageChannel();
      wk.postMessage({ id: `early-warm-${i}`, warm: true, port: ch.port1 }, [ch.port1]);
      ports.push(ch.port2);
      workers.push(wk);
    }
    early.workers = workers;
    try {
      fetcher = new Worker(URL.createObjectURL(new Blob([FETCHER], { type: "text/javascript" })));
      fetcher.postMessage({ ports }, ports);
    } catch {
      fetcher = null; // (a CSP without blob: workers) the page GETs the chunks itself
      fetcherStarted();
    }
  } else allStarted();
  /** @type {Record<string, {promise: Promise<Response>, resolve: (r: Response | Promise<Response>) => void}>} */
  const slots = {};
  const slot = (/** @type {string} */ url) => {
    if (!slots[url]) {
      /** @type {any} */
      const sl = {};
      sl.promise = new Promise((res) => (sl.resolve = res));
      slots[url] = sl;
    }
    return slots[url];
  };
  // A chunk no decoder got: the pool decodes it when the reader reads it.
  const unsent = (/** @type {string} */ key) => {
    const id = `early-${key}`;
    waiting[id]?.(null);
    delete waiting[id];
    delete early.decoded[key];
  };
  if (fetcher) {
    // If the fetcher fails, nothing may wait for it: the page GETs what it had named.
    fetcher.onerror = () => {
      fetcherStarted();
      early.fetchMap();
      for (const url of Object.keys(slots)) slots[url].resolve(fetch(url));
      for (const key of Object.keys(early.decoded)) unsent(key);
    };
    fetcher.onmessage = (e) => {
      const m = e.data;
      if (m.kind === "started") {
        mark("fetcher started");
        fetcherStarted();
      } else if (m.kind === "chunk") {
        mark(`chunk ${m.key.slice(m.key.lastIndexOf("/c/") + 1)}`);
        // (a failed or too large chunk: the reader GETs it itself and says why)
        if (m.failed) {
          early.refetched = (early.refetched || 0) + 1;
          slot(m.url).resolve(fetch(m.url));
        } else slot(m.url).resolve(new Response(m.buf, { status: m.status, statusText: m.statusText || "" }));
        if (!m.decoding) unsent(m.key);
      } else if (m.kind === "timing") {
        early.timing = m;
        early.fetchMap();
        fetcher.terminate();
      }
    };
  }
  /** Name every chunk (so the reader finds them at once), then GET them. @param {PlannedChunk[]} plan */
  const getChunks = (plan) => {
    if (!fetcher) {
      for (const ck of plan) early.chunks[ck.url] = fetch(ck.url, hi);
      Promise.all(Object.values(early.chunks)).then(early.fetchMap, early.fetchMap);
      return;
    }
    for (const ck of plan) {
      early.chunks[ck.url] = slot(ck.url).promise;
      if (!decodesOff) {
        const id = `early-${ck.key}`;
        early.decoded[ck.key] = new Promise((res) => (waiting[id] = res));
      }
    }
    fetcher.postMessage({ chunks: plan, decode: !decodesOff });
  };
  // A view from the URL is not the fitted one: its chunks are not guessed.
  if (q.get("time") || q.get("center") || q.get("level")) {
    fetcher?.terminate();
    fetcherStarted();
    early.fetchMap();
    return;
  }
  // early.named: settled once the first view's chunks are named (or will not be); the bundle's
  // reader, which may read on from the root first, waits for it.
  early.named = early.root
    .then((/** @type {Response} */ r) => {
      mark("root headers");
      if (!r.ok) return null;
      // The root's copy, read no further than the reader reads it (jsondoc.js MAX_DOCUMENT_BYTES).
      return readBody(r.clone(), MAX_DOCUMENT_BYTES, early.rootUrl).then((b) => parseJson(b, early.rootUrl));
    })
    .then((doc) => {
      mark("root parsed");
      return doc && size.then((box) => planChunks(doc, box, base, query));
    })
    .then((plan) => {
      mark("chunks requested");
      early.planned = (plan || []).length;
      if (plan?.length) getChunks(plan);
      else {
        fetcher?.terminate();
        fetcherStarted();
      }
    })
    .catch(() => {});
  // MapLibre's files once the first view's chunks are in (or there are none to get).
  early.named.then(() => {
    if (!early.planned) early.fetchMap();
  });
  earlyOverlay(early, size, q.get("capture") === "1", mark);
}

/**
 * The layer's overlay canvas and WebGL2 context, made here once the first view's chunks are
 * requested and the early Workers have their first messages (decision 0066). Creating a context
 * blocks the page's thread on the GPU process (40-230 ms in traced first frames, the most under
 * GPU compositing on a software renderer, decision 0055); made by viewer.js it came after the
 * bundle's compile, on the first frame's path, while here the page's thread is idle, waiting on
 * the chunks. It waits for those two so that neither the chunks' naming nor the Workers' start
 * waits on it. viewer.js takes it (`early.takeOverlay`) for the layer's first frame
 * (ChronozarrLayer#drawBeforeMap, which makes its own when the map's size has changed); once
 * taken, or once the bundle has made its own, none is made here.
 * @param {any} early
 * @param {Promise<{width: number, height: number, dpr: number}>} size
 * @param {boolean} preserveDrawingBuffer
 * @param {(name: string) => void} mark
 */
function earlyOverlay(early, size, preserveDrawingBuffer, mark) {
  /** @type {{canvas: HTMLCanvasElement, gl: WebGL2RenderingContext | null} | null} */
  let made = null;
  let taken = false;
  early.takeOverlay = () => {
    taken = true;
    return made;
  };
  Promise.all([early.named, early.started, size]).then(([, , box]) => {
    if (taken || !early.planned || !box.width || !box.height) return;
    const w = box.width;
    const h = box.height;
    const like = {
      width: Math.round(w * box.dpr),
      height: Math.round(h * box.dpr),
      style: { width: `${w}px`, height: `${h}px` },
    };
    made = overlayCanvas(document, preserveDrawingBuffer, like);
    early.overlayCanvas = made.canvas; // (for the tests: the layer's canvas is this one)
    mark("overlay made");
  });
}

/**
 * The basemap style: the offline one is this folder's style.json, which the build also writes
 * into the page as a function (no request): the same JSON either way; another URL is fetched.
 * @param {any} early
 * @param {string | null | undefined} style
 */
function startStyle(early, style) {
  if (!style || style === "default") return;
  try {
    early.styleUrl = new URL(style === "offline" ? "style.json" : style, location.href).href;
    const offline = typeof window.CHRONOZARR_OFFLINE_STYLE === "function" && early.styleUrl === new URL("style.json", location.href).href;
    if (offline) {
      // Made when the map asks for it (after the first frame, decision 0027), not here: its
      // graticule's 12,000 points took 2-15 ms of the early script (decision 0073), which runs
      // before the page's first layout and the root's answer.
      /** @type {Promise<object> | null} */
      let made = null;
      Object.defineProperty(early, "style", {
        enumerable: true,
        get: () => (made ??= Promise.resolve().then(() => window.CHRONOZARR_OFFLINE_STYLE())),
      });
      return;
    }
    early.style = fetch(early.styleUrl).then((r) => {
      if (!r.ok) throw new Error(`HTTP ${r.status} for ${early.styleUrl}`);
      return r.json();
    });
    early.style.catch(() => {});
  } catch {
    // (a style URL that does not parse: the map falls back to the offline style)
  }
}

start();

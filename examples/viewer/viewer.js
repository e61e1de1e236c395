// chronozarr viewer: a store on a MapLibre map. It opens a store URL, draws the current timestep
// georegistered in the store's CRS (js/chronozarr/map), scrubs and plays time like video, and
// inspects any pixel through time with its exact stored value. All reading goes through
// js/chronozarr/decoder.js. `npm run build:viewer` bundles this file into js/dist/viewer/.

import { openStore } from "../../js/chronozarr/decoder.js";
import { cameraMap, fitCamera } from "../../js/chronozarr/map/camera.js";
import { COLORMAPS, gradientCss, ticks } from "../../js/chronozarr/map/colormaps.js";
import { ExpressionError, PRESETS } from "../../js/chronozarr/map/expression.js";
import { DecodePool } from "../../js/chronozarr/map/decode-pool.js";
import { ChronozarrLayer } from "../../js/chronozarr/map/layer.js";
import { paintsEveryPixel, withOpaqueMapCanvas } from "./basemap.js";
import { graticule } from "./graticule.js";

/** Public basemap used when neither ?style= nor the page config names one. */
export const DEFAULT_STYLE = "https://demotiles.maplibre.org/style.json";

const marks = { codeStart: performance.now() }; // first-frame split (bench/js/viewer.mjs)
const $ = (id) => document.getElementById(id);
/** The page's elements by camel-cased id (inputs, selects and containers alike). @type {Record<string, any>} */
const el = Object.fromEntries(
  [
    "map",
    "landing",
    "error",
    "error-title",
    "error-message",
    "loading",
    "loading-text",
    "store-chips",
    "store-url",
    "mode",
    "band",
    "band-field",
    "formula",
    "formula-field",
    "formula-error",
    "stretch-min",
    "stretch-max",
    "stretch-units",
    "colormap",
    "colormap-field",
    "colorbar",
    "colorbar-ticks",
    "colorbar-units",
    "opacity",
    "level",
    "level-badge",
    "cursor-readout",
    "time",
    "time-label",
    "time-index",
    "time-ticks",
    "buffer",
    "play",
    "speed",
    "fps",
    "inspector-empty",
    "inspector-body",
    "px-rc",
    "px-xy",
    "px-ll",
    "px-time",
    "px-mask",
    "px-coverage",
    "px-valid",
    "px-index",
    "px-index-value",
    "chart",
    "chart-legend",
    "chart-units",
    "about",
    "about-list",
  ].map((id) => [id.replace(/-(\w)/g, (_, c) => c.toUpperCase()), $(id)]),
);
el.values = $("values").querySelector("tbody");

const config = window.CHRONOZARR_VIEWER ?? {};
const early = config.early ?? {};
const params = new URL(location.href).searchParams;

const state = { store: null, url: null, layer: null, map: null, selected: null, series: null, playing: false };

/**
 * Chunks are decoded in Workers (decode-worker.js; the early script in index.html started them
 * and already handed them the first view's chunks), so zstd never runs on the thread that builds
 * and draws the map. Without Worker support the reader decodes on this thread as before.
 */
function startDecodePool() {
  try {
    // A decoder that failed before this pool could listen (its script did not load) would
    // never answer: the early script saw the failure, so decode on this thread instead.
    if (early.decodersFailed) return null;
    if (early.workers?.length) return new DecodePool(early.workers, { early: early.decoded });
    if (typeof Worker === "undefined") return null;
    const pool = new DecodePool(new URL("decode-worker.js", import.meta.url));
    pool.warm();
    return pool;
  } catch (err) {
    console.warn("no decode workers, decoding on the main thread", err);
    return null;
  }
}
const pool = startDecodePool();

/**
 * MapLibre GL JS, loaded when the map is built: it is a file of its own (maplibre-gl.js, 1.1
 * MB), imported only once the layer has drawn the first frame (or a deadline passed), because
 * evaluating it is one long task on this thread (decision 0027); the early script has fetched it
 * and MapLibre's worker script at low priority once the first view's chunks were asked for.
 */
let maplibreP = null;
function loadMapLibre() {
  early.fetchMap?.(); // (if the early script has not yet)
  maplibreP ??= import("maplibre-gl").then(async (maplibregl) => {
    marks.maplibreEvaluated = performance.now();
    try {
      const blob = await early.mapWorker;
      if (blob) maplibregl.setWorkerUrl(URL.createObjectURL(blob));
      maplibregl.prewarm();
    } catch (err) {
      console.warn("MapLibre worker prewarm failed", err);
    }
    return maplibregl;
  });
  return maplibreP;
}
/** The map waits at most this long for the first frame drawn before it (a slow store). */
const MAP_DEADLINE_MS = 1500;
// The longest the layer's context waits for the early Workers to have their first messages.
const START_DEADLINE_MS = 1000;

// --- formatting ----------------------------------------------------------------------------------

/** The exact stored value as text: integers as is; float32 at the shortest precision that round-trips. */
function formatStored(v, dtype) {
  if (dtype !== "float32" || !Number.isFinite(v)) return String(v);
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}
const formatPhysical = (v) =>
  v === null || Number.isNaN(v)
    ? "—"
    : Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-4)
      ? v.toExponential(4)
      : String(Number(v.toPrecision(6)));
const formatCoord = (v) => (Math.abs(v) >= 1000 ? v.toFixed(1) : v.toPrecision(7));
const formatTick = (v) => String(Number(v.toPrecision(4)));
function formatAxis(v, span) {
  const digits = Math.max(0, Math.min(6, 2 - Math.floor(Math.log10(span || 1))));
  return Math.abs(v) >= 1e5 ? v.toExponential(1) : v.toFixed(digits);
}

// --- banners and loading -------------------------------------------------------------------------

function showError(title, err) {
  early.liftVeil?.();
  console.error(err);
  el.errorTitle.textContent = title;
  el.errorMessage.textContent = err?.message ?? String(err);
  el.error.hidden = false;
  el.error.dataset.kind = err?.name ?? "Error";
}
let loadingTimer = null;
function setLoading(text) {
  clearTimeout(loadingTimer);
  if (!text) {
    el.loading.hidden = true;
    return;
  }
  el.loadingText.textContent = text;
  loadingTimer = setTimeout(() => (el.loading.hidden = false), 120); // no flash for fast frames
}

/** Why a store did not open, as {title, message} a person can act on. */
async function explainOpenError(err, url) {
  const name = err?.name;
  if (name === "NotAChronozarrStoreError") return { title: "Not a chronozarr store", message: err.message };
  if (name === "UnsupportedError") return { title: "Unsupported store", message: err.message };
  if (name === "CorruptStoreError") return { title: "Corrupt store", message: err.message };
  if (name === "StoreNotFoundError" && /HTTP 404/.test(err.message)) return { title: "Store not found", message: err.message };
  if (name === "StoreNotFoundError" || name === "FetchError") {
    // A cross-origin host that answers without CORS headers fails like an unreachable one; an
    // opaque no-cors request tells the two apart (it succeeds when the host is up).
    const abs = new URL(url, location.href);
    if (abs.origin !== location.origin) {
      try {
        await fetch(new URL("zarr.json", abs.href.endsWith("/") ? abs.href : `${abs.href}/`), { mode: "no-cors", cache: "no-store" });
        return {
          title: "Store blocked by CORS",
          message: `${abs.origin} answered, but without an Access-Control-Allow-Origin header, so this page may not read it. Serve the store with CORS (docs/hosting.md) or open the viewer from the same origin.`,
        };
      } catch {
        /* unreachable: fall through */
      }
    }
    return { title: "Store unreachable", message: err.message };
  }
  return { title: "Could not open the store", message: err?.message ?? String(err) };
}

// --- URL state -----------------------------------------------------------------------------------

let urlTimer = null;
/**
 * Write the view into the URL: store, time, centre, zoom, mode, stretch, and what the mode uses
 * (band in band mode, formula in formula mode, the colour map unless RGB) and opacity when not 1;
 * a parameter the mode does not use is removed, so a copied link holds only what it shows.
 */
function saveUrlState() {
  clearTimeout(urlTimer);
  urlTimer = setTimeout(() => {
    const { store, map, layer } = state;
    if (!store || !map || !layer) return;
    const u = new URL(location.href);
    const q = u.searchParams;
    q.set("store", state.url);
    q.set("time", store.times[layer.t].slice(0, 10));
    q.delete("t");
    const c = map.getCenter();
    q.set("center", `${c.lng.toFixed(6)},${c.lat.toFixed(6)}`);
    q.set("zoom", map.getZoom().toFixed(2));
    q.set("mode", layer.mode);
    if (layer.mode === "band") q.set("band", store.bands[layer.band].name);
    else q.delete("band");
    if (layer.mode === "formula") q.set("formula", layer.formula);
    else q.delete("formula");
    if (layer.stretch) q.set("stretch", `${formatTick(layer.stretch.min)},${formatTick(layer.stretch.max)}`);
    if (layer.mode !== "rgb") q.set("cmap", layer.colormap);
    else q.delete("cmap");
    if (layer.opacity !== 1) q.set("opacity", String(layer.opacity));
    else q.delete("opacity");
    history.replaceState(null, "", u);
    document.body.dataset.url = u.search;
  }, 60);
}

/** Timestep from ?time=YYYY-MM-DD (nearest date) or ?t=index. */
function timeFromUrl(store) {
  const date = params.get("time");
  if (date) {
    const ms = Date.parse(date.length <= 10 ? `${date}T00:00:00Z` : date);
    if (Number.isFinite(ms)) {
      let best = 0;
      store.timesMs.forEach((v, i) => {
        if (Math.abs(v - ms) < Math.abs(store.timesMs[best] - ms)) best = i;
      });
      return best;
    }
  }
  const t = Number(params.get("t"));
  return Number.isInteger(t) && t >= 0 && t < store.nTime ? t : 0;
}

function displayFromUrl(store) {
  const mode = params.get("mode");
  const bandName = params.get("band");
  const out = {};
  if (mode && ["rgb", "band", "ndvi", "formula", ...Object.keys(PRESETS)].includes(mode)) out.mode = mode;
  if (bandName !== null) {
    const b = store.bands.findIndex((x) => x.name === bandName || x.common_name === bandName);
    if (b >= 0) out.band = b;
    else if (/^\d+$/.test(bandName) && Number(bandName) < store.nBands) out.band = Number(bandName);
  }
  if (params.get("formula")) out.formula = params.get("formula");
  const st = params.get("stretch")?.split(",").map(Number);
  if (st?.length === 2 && st.every(Number.isFinite) && st[1] > st[0]) out.stretch = { min: st[0], max: st[1] };
  if (COLORMAPS[params.get("cmap")]) out.colormap = params.get("cmap");
  const op = Number(params.get("opacity"));
  if (params.get("opacity") !== null && op >= 0 && op <= 1) out.opacity = op;
  return out;
}

// --- controls ------------------------------------------------------------------------------------

function bandIndex(store, commonName) {
  let i = store.bands.findIndex((b) => b.common_name === commonName);
  if (i < 0) i = store.bands.findIndex((b) => b.name.toLowerCase() === commonName);
  return i;
}

function unitsOfDisplay() {
  const { store, layer } = state;
  if (layer.mode === "band") return store.bands[layer.band].units ?? "";
  if (layer.mode === "rgb") return store.bands[layer.rgb[0]].units ?? "";
  return "index";
}

function paintColorbar() {
  const { layer } = state;
  if (!layer?.stretch) return;
  const { min, max } = layer.stretch;
  el.colorbar.style.background = layer.mode === "rgb" ? "linear-gradient(90deg, #000, #fff)" : gradientCss(layer.colormap);
  el.colorbarTicks.replaceChildren(
    ...ticks(min, max, 5).map((v) => {
      const s = document.createElement("span");
      s.style.left = `${((v - min) / (max - min)) * 100}%`;
      s.textContent = formatTick(v);
      return s;
    }),
  );
  const units = unitsOfDisplay();
  el.colorbarUnits.textContent = units;
  el.stretchUnits.textContent = units ? `(${units})` : "";
  el.stretchMin.value = formatTick(min);
  el.stretchMax.value = formatTick(max);
  el.colormapField.hidden = layer.mode === "rgb";
}

function syncControls() {
  const { layer } = state;
  el.mode.value = layer.mode;
  el.bandField.hidden = layer.mode !== "band";
  el.formulaField.hidden = layer.mode !== "formula";
  if (layer.mode === "band") el.band.value = String(layer.band);
  if (layer.formula) el.formula.value = layer.formula;
  el.colormap.value = layer.colormap;
  el.opacity.value = String(layer.opacity);
  paintColorbar();
}

async function changeDisplay(options) {
  const { layer } = state;
  el.formulaError.textContent = "";
  try {
    const mode = options.mode ?? layer.mode;
    const colormap =
      mode === "ndvi"
        ? "rdylgn"
        : mode === "rgb"
          ? layer.colormap
          : layer.colormap === "rdylgn" && layer.mode === "ndvi"
            ? "viridis"
            : layer.colormap;
    layer.setColormap(colormap);
    const drawn = layer.setDisplay({ ...options, stretch: null });
    syncControls();
    await drawn;
  } catch (err) {
    if (err instanceof ExpressionError || err instanceof RangeError) {
      el.formulaError.textContent = err.message;
      return;
    }
    showError("Could not change the display", err);
  }
  syncControls();
  saveUrlState();
  drawChart();
  updateInspector();
}

function describeStore(s, url, layer) {
  const L0 = s.levels[0];
  const codec =
    L0.data.compressors
      .filter((c) => c.name !== "crc32c")
      .map((c) => (c.name === "blosc" ? `blosc/${c.configuration.cname}` : c.name))
      .join("+") || "none";
  const chip = (value) => {
    const span = document.createElement("span");
    span.className = "chip";
    span.textContent = value;
    return span;
  };
  const crsText = typeof s.crs === "string" ? s.crs : s.crs ? "PROJJSON" : "no CRS";
  el.storeChips.replaceChildren(
    chip(`${s.nTime} × ${s.nBands} × ${L0.height} × ${L0.width}`),
    chip(s.dtype),
    chip(s.encoding),
    chip(L0.sharded ? `sharded ×${L0.shardTime}` : "unsharded"),
    chip(crsText.length > 24 ? `${crsText.slice(0, 22)}…` : crsText),
    chip(`${L0.resolution} m`),
  );
  const rows = [
    ["URL", url],
    ["spec", s.specVersion],
    ["times", `${s.times[0].slice(0, 10)} → ${s.times.at(-1).slice(0, 10)}`],
    ["bands", s.bands.map((b) => b.name + (b.common_name ? ` (${b.common_name})` : "")).join(", ")],
    ["nodata", s.nodata === null ? "none" : String(s.nodata)],
    ["levels", s.levels.map((l) => `${l.resolution}`).join(", ")],
    ["cell", `${s.cs} px`],
    ["codec", codec],
    ["CRS from", layer.projection.source],
    ["mask", s.hasMask ? "yes" : "no"],
    ["coverage", s.hasCoverage ? "yes" : "no"],
  ];
  if (s.encoding === "star-delta") rows.push(["anchors", s.temporal.anchorIndices.join(", ")]);
  el.aboutList.replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = v;
      return [dt, dd];
    }),
  );
  el.about.hidden = false;
  el.band.replaceChildren(
    ...s.bands.map((b, i) =>
      Object.assign(document.createElement("option"), {
        value: String(i),
        textContent: b.common_name ? `${b.name} · ${b.common_name}` : b.name,
      }),
    ),
  );
  el.level.replaceChildren(
    Object.assign(document.createElement("option"), { value: "auto", textContent: "Auto (by zoom)" }),
    ...s.levels.map((l) =>
      Object.assign(document.createElement("option"), {
        value: String(l.index),
        textContent: `${l.index} · ${l.resolution} · ${l.height} × ${l.width}`,
      }),
    ),
  );
  el.colormap.replaceChildren(
    ...Object.entries(COLORMAPS).map(([k, v]) => Object.assign(document.createElement("option"), { value: k, textContent: v.label })),
  );
  const hasNdvi = bandIndex(s, "red") >= 0 && bandIndex(s, "nir") >= 0;
  el.mode.querySelector('option[value="ndvi"]').disabled = !hasNdvi;
  el.mode.querySelector('option[value="rgb"]').disabled = s.nBands < 3;
}

// --- time ----------------------------------------------------------------------------------------

function paintTimeline() {
  const s = state.store;
  el.time.max = String(s.nTime - 1);
  el.time.disabled = false;
  el.buffer.replaceChildren(
    ...s.times.map((time, t) => {
      const span = document.createElement("span");
      const anchor = s.encoding === "star-delta" && s.temporal.isAnchor(t);
      span.classList.toggle("anchor", anchor);
      span.title = `${time.slice(0, 10)}${anchor ? " (anchor)" : ""}`;
      return span;
    }),
  );
  // Date ticks under the slider: every year boundary (or every k-th step for short series).
  const n = s.nTime;
  const years = s.times.map((x) => x.slice(0, 4));
  const marks = [];
  for (let t = 0; t < n; t++) if (t === 0 || years[t] !== years[t - 1]) marks.push([t, years[t]]);
  const shown = marks.length > 1 ? marks : [0, Math.floor((n - 1) / 2), n - 1].map((t) => [t, s.times[t].slice(0, 7)]);
  el.timeTicks.replaceChildren(
    ...shown.map(([t, label]) => {
      const span = document.createElement("span");
      span.style.left = `${n > 1 ? (t / (n - 1)) * 100 : 0}%`;
      span.textContent = label;
      return span;
    }),
  );
}

function updateTimeUi() {
  const { store: s, layer } = state;
  const t = layer.t;
  el.time.value = String(t);
  el.timeLabel.textContent = s.times[t].slice(0, 10);
  el.timeIndex.textContent = `${t + 1} / ${s.nTime}${s.encoding === "star-delta" && s.temporal.isAnchor(t) ? " · anchor" : ""}`;
  [...el.buffer.children].forEach((span, i) => span.classList.toggle("current", i === t));
}

/** Show timestep t; resolves once it is drawn. */
function setTime(t) {
  const frame = state.layer.setTime(t);
  updateTimeUi();
  saveUrlState();
  if (state.selected) updateInspector();
  drawChartCursor();
  return frame;
}

// Playback runs on requestAnimationFrame: a new timestep is asked for when the previous one has
// been drawn and 1/rate has passed, and the next one is decoded ahead meanwhile. The fps readout
// counts timesteps drawn per second at the display (the layer's onFrame, after MapLibre's render).
const displayTimes = [];
function countDisplayed(now) {
  displayTimes.push(now);
  while (displayTimes.length && now - displayTimes[0] > 1000) displayTimes.shift();
  // The readout changes at most 4 times a second: a text change every frame would make the page
  // lay out and repaint its footer at the display rate (software compositing on this machine).
  if (displayTimes.length >= 2 && now - fpsShownAt >= 250) {
    fpsShownAt = now;
    const fps = ((displayTimes.length - 1) * 1000) / (displayTimes.at(-1) - displayTimes[0]);
    el.fps.textContent = `${fps.toFixed(1)} fps`;
    el.fps.dataset.value = fps.toFixed(2);
  }
  // A rate is a figure of timesteps changing: once they have stopped for a while (no playback,
  // no scrubbing), the readout goes blank instead of showing a rate that no longer holds.
  clearTimeout(fpsStale);
  fpsStale = setTimeout(() => {
    if (state.playing) return;
    displayTimes.length = 0;
    fpsShownAt = -Infinity;
    el.fps.textContent = "— fps";
    delete el.fps.dataset.value;
  }, FPS_STALE_MS);
}
let fpsShownAt = -Infinity;
let fpsStale = 0;
const FPS_STALE_MS = 2000;

let playAhead = null;
function play() {
  if (!state.layer || state.playing) return;
  state.playing = true;
  displayTimes.length = 0;
  fpsShownAt = -Infinity;
  document.body.classList.add("playing");
  el.play.setAttribute("aria-label", "Pause");
  playAhead = new AbortController();
  let busy = false;
  let due = -Infinity;
  const n = state.store.nTime;
  const tick = (now) => {
    if (!state.playing) return;
    const period = 1000 / Number(el.speed.value);
    // Due times advance by the period, not from the frame that showed the last timestep, so a rate
    // that is not a divisor of the display's (24 fps at 60 Hz) alternates 3 and 2 frames and
    // averages the set rate instead of rounding down to every 3rd frame (20 fps). A tick within
    // 4 ms of its due time shows it (rAF timestamps jitter); once late by a period, the schedule
    // restarts from now rather than bursting to catch up.
    if (!busy && now >= due - 4) {
      busy = true;
      due = now - due > period ? now + period : due + period;
      const next = (state.layer.t + 1) % n;
      setTime(next).then(() => {
        busy = false;
      });
      state.layer.preload((next + 1) % n, playAhead.signal).catch(() => {});
    }
    requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}
function stop() {
  state.playing = false;
  playAhead?.abort();
  document.body.classList.remove("playing");
  el.play.setAttribute("aria-label", "Play");
}

// --- prefetch ------------------------------------------------------------------------------------

let prefetchCtrl = null;
let prefetchKey = "";
async function prefetchView() {
  const { store: s, layer } = state;
  const level = layer.currentLevel();
  const cells = layer.visibleCells(level);
  const key = `${level}|${cells.map((c) => `${c.row},${c.col}`).join(";")}`;
  if (key === prefetchKey) return;
  prefetchKey = key;
  prefetchCtrl?.abort();
  const ctrl = new AbortController();
  prefetchCtrl = ctrl;
  const times = [...Array(s.nTime).keys()].map((i) => (layer.t + i) % s.nTime); // what playback needs next first
  try {
    await s.prefetch({ level, cells, times, signal: ctrl.signal, concurrency: 4 });
    [...el.buffer.children].forEach((span, t) => span.classList.toggle("resident", s.isResident({ level, cells, t })));
    document.body.dataset.prefetched = key;
  } catch (err) {
    if (err?.name !== "AbortError") showError("Prefetch failed", err);
  }
}

// --- inspector -----------------------------------------------------------------------------------

const BAND_COLOURS = { red: "#f87171", green: "#4ade80", blue: "#60a5fa", nir: "#c084fc", swir16: "#fbbf24", swir22: "#fb923c" };
const PALETTE = ["#2dd4bf", "#f472b6", "#facc15", "#a3e635", "#38bdf8", "#fb7185", "#e879f9"];
const bandColour = (b, i) => BAND_COLOURS[b.common_name] ?? PALETTE[i % PALETTE.length];

let inspectCtrl = null;
let seriesCtrl = null;

function pixelFootprint({ row, col }) {
  const ring = [
    [row, col],
    [row, col + 1],
    [row + 1, col + 1],
    [row + 1, col],
    [row, col],
  ].map(([r, c]) => state.layer.lngLatOf({ row: r, col: c, corner: true }));
  return { type: "Feature", properties: {}, geometry: { type: "Polygon", coordinates: [ring] } };
}

// The selected pixel is marked in an SVG over the map and the layer (the layer's overlay canvas
// is above every map layer, so a map line layer would be hidden under it), placed again after
// every map frame: its footprint's outline, and, where the footprint is smaller than
// MARKER_MIN_PX on screen (zoomed out, a pixel is a screen pixel or less), a square of that size
// around it, so the selection stays visible at any zoom. Each line has a dark halo under it, to
// show on light and dark pixels alike.
const MARKER_MIN_PX = 14;
let selection = null;
function drawSelection() {
  if (!state.selected || !state.map) return;
  if (!selection) {
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("class", "cz-selected");
    svg.style.cssText = "position:absolute;inset:0;width:100%;height:100%;pointer-events:none;overflow:visible";
    const shape = (tag, cls, stroke, width) => {
      const node = document.createElementNS(ns, tag);
      node.setAttribute("class", cls);
      node.setAttribute("fill", "none");
      node.setAttribute("stroke", stroke);
      node.setAttribute("stroke-width", width);
      svg.append(node);
      return node;
    };
    selection = {
      footprint: [shape("polygon", "halo", "#0b1118", "4"), shape("polygon", "footprint", "#fbbf24", "2")],
      marker: [shape("rect", "halo", "#0b1118", "4"), shape("rect", "marker", "#fbbf24", "2")],
    };
    state.map.getCanvasContainer().append(svg);
  }
  const corners = pixelFootprint(state.selected)
    .geometry.coordinates[0].slice(0, 4)
    .map((ll) => state.map.project(ll));
  const points = corners.map((p) => `${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(" ");
  for (const node of selection.footprint) node.setAttribute("points", points);
  const xs = corners.map((p) => p.x);
  const ys = corners.map((p) => p.y);
  const small = Math.max(...xs) - Math.min(...xs) < MARKER_MIN_PX && Math.max(...ys) - Math.min(...ys) < MARKER_MIN_PX;
  const cx = (Math.min(...xs) + Math.max(...xs)) / 2;
  const cy = (Math.min(...ys) + Math.max(...ys)) / 2;
  for (const node of selection.marker) {
    node.setAttribute("visibility", small ? "visible" : "hidden");
    node.setAttribute("x", (cx - MARKER_MIN_PX / 2).toFixed(1));
    node.setAttribute("y", (cy - MARKER_MIN_PX / 2).toFixed(1));
    node.setAttribute("width", String(MARKER_MIN_PX));
    node.setAttribute("height", String(MARKER_MIN_PX));
  }
}

function select(row, col) {
  const L0 = state.store.levels[0];
  if (row < 0 || col < 0 || row >= L0.height || col >= L0.width) return;
  state.selected = { row, col };
  drawSelection();
  updateInspector();
  loadSeries();
}

async function updateInspector() {
  const { store: s, layer } = state;
  if (!s || !state.selected) return;
  inspectCtrl?.abort();
  const ctrl = new AbortController();
  inspectCtrl = ctrl;
  const { row, col } = state.selected;
  const t = layer.t;
  let v;
  try {
    v = await s.valueAt({ row, col, t, level: 0, signal: ctrl.signal });
  } catch (err) {
    if (err?.name !== "AbortError") showError("Could not read the pixel", err);
    return;
  }
  if (ctrl.signal.aborted || !v) return;
  el.inspectorEmpty.hidden = true;
  el.inspectorBody.hidden = false;
  el.pxRc.textContent = `${v.row}, ${v.col}`;
  el.pxXy.textContent = `${formatCoord(v.x)}, ${formatCoord(v.y)}`;
  const [lon, lat] = layer.lngLatOf({ row, col });
  el.pxLl.textContent = `${lon.toFixed(6)}, ${lat.toFixed(6)}`;
  el.pxTime.textContent = v.time.slice(0, 10);
  el.inspectorBody.dataset.t = String(t);
  el.inspectorBody.dataset.row = String(v.row);
  el.inspectorBody.dataset.col = String(v.col);
  el.values.replaceChildren(
    ...v.bands.map((b, i) => {
      const tr = document.createElement("tr");
      tr.dataset.band = b.name;
      const name = document.createElement("td");
      const sw = document.createElement("span");
      sw.className = "swatch";
      sw.style.background = bandColour(b, i);
      name.append(sw, b.name);
      if (b.common_name && b.common_name !== b.name) {
        const u = document.createElement("span");
        u.className = "units";
        u.textContent = ` ${b.common_name}`;
        name.append(u);
      }
      const stored = document.createElement("td");
      stored.className = "num stored";
      stored.textContent = formatStored(b.stored, s.dtype);
      stored.dataset.value = stored.textContent;
      const physical = document.createElement("td");
      physical.className = "num physical";
      physical.textContent = formatPhysical(b.physical);
      physical.dataset.value = b.physical === null ? "" : String(b.physical);
      if (b.units && b.physical !== null) physical.title = b.units;
      const validity = document.createElement("td");
      validity.textContent = b.valid ? "✓" : "✕";
      validity.className = `validity ${b.valid ? "ok" : "bad"}`;
      validity.dataset.value = b.valid ? "1" : "0";
      tr.append(name, stored, physical, validity);
      return tr;
    }),
  );
  el.pxMask.textContent = v.mask === null ? "—" : String(v.mask);
  el.pxMask.dataset.value = v.mask === null ? "" : String(v.mask);
  el.pxCoverage.textContent = v.coverage === null ? "—" : `${v.coverage} obs`;
  el.pxCoverage.dataset.value = v.coverage === null ? "" : String(v.coverage);
  const index = layer.displayValueOf(v);
  el.pxIndex.hidden = layer.mode === "rgb" || layer.mode === "band";
  el.pxIndexValue.textContent = index === null ? "—" : formatPhysical(index);
  el.pxIndexValue.dataset.value = index === null ? "" : String(index);
  el.pxValid.textContent = v.valid ? "VALID" : "MISSING";
  el.pxValid.className = `pill ${v.valid ? "ok" : "bad"}`;
}

async function loadSeries() {
  seriesCtrl?.abort();
  const ctrl = new AbortController();
  seriesCtrl = ctrl;
  state.series = null;
  drawChart();
  try {
    const series = await state.store.series({ ...state.selected, level: 0, signal: ctrl.signal });
    if (ctrl.signal.aborted) return;
    state.series = series;
    drawChart();
  } catch (err) {
    if (err?.name !== "AbortError") showError("Could not read the pixel history", err);
  }
}

function svg(tag, attrs = {}, parent) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  parent?.appendChild(node);
  return node;
}

let chartX = null;
function drawChartCursor() {
  const line = el.chart.querySelector("line.now");
  if (line && chartX) {
    const x = chartX(state.layer.t);
    line.setAttribute("x1", x);
    line.setAttribute("x2", x);
  }
}

function drawChart() {
  const { store: s, layer, series } = state;
  const chart = el.chart;
  chart.replaceChildren();
  el.chartLegend.replaceChildren();
  const W = chart.clientWidth || 320;
  const H = chart.clientHeight || 150;
  chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
  if (!series) {
    const txt = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#8b9bab", "font-size": 11 }, chart);
    txt.textContent = state.selected ? "Reading every timestep…" : "";
    chart.dataset.points = "0";
    return;
  }
  let lines;
  if (layer.mode !== "rgb" && layer.mode !== "band") {
    const values = series.times.map((_, t) => {
      const v = { bands: series.bands.map((b) => ({ physical: Number.isNaN(b.physical[t]) ? null : b.physical[t] })) };
      return layer.displayValueOf(v) ?? NaN;
    });
    lines = [{ name: layer.mode === "formula" ? "formula" : layer.mode.toUpperCase(), colour: "#4ade80", values }];
    el.chartUnits.textContent = "index";
  } else {
    lines = series.bands.map((b, i) => ({ name: b.name, colour: bandColour(b, i), values: Array.from(b.physical) }));
    el.chartUnits.textContent = s.bands[0].units ?? "physical value";
  }
  const pad = { l: 44, r: 10, t: 8, b: 20 };
  const tx = series.timesMs;
  const x0 = tx[0];
  const x1 = tx.at(-1) === x0 ? x0 + 1 : tx.at(-1);
  const all = lines.flatMap((l) => l.values).filter(Number.isFinite);
  let y0 = all.length ? Math.min(...all) : 0;
  let y1 = all.length ? Math.max(...all) : 1;
  if (y1 === y0) {
    y0 -= 1;
    y1 += 1;
  }
  const m = (y1 - y0) * 0.08;
  y0 -= m;
  y1 += m;
  const X = (ms) => pad.l + ((ms - x0) / (x1 - x0)) * (W - pad.l - pad.r);
  const Y = (v) => pad.t + (1 - (v - y0) / (y1 - y0)) * (H - pad.t - pad.b);
  chartX = (t) => X(tx[t]);
  const grid = svg("g", { class: "grid axis" }, chart);
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    svg("line", { x1: pad.l, x2: W - pad.r, y1: Y(v), y2: Y(v) }, grid);
    svg("text", { x: pad.l - 5, y: Y(v) + 3, "text-anchor": "end" }, grid).textContent = formatAxis(v, y1 - y0);
  }
  const nt = Math.min(tx.length, 4);
  for (let i = 0; i < nt; i++) {
    const k = Math.round((i * (tx.length - 1)) / Math.max(1, nt - 1));
    svg("text", { x: X(tx[k]), y: H - 5, "text-anchor": i === 0 ? "start" : i === nt - 1 ? "end" : "middle" }, grid).textContent =
      series.times[k].slice(0, 7);
  }
  svg("line", { class: "now", x1: X(tx[layer.t]), x2: X(tx[layer.t]), y1: pad.t, y2: H - pad.b }, chart);
  let points = 0;
  for (const line of lines) {
    const g = svg("g", { class: "series" }, chart);
    let d = "";
    let pen = false;
    line.values.forEach((v, i) => {
      if (!Number.isFinite(v)) {
        pen = false;
        return;
      }
      d += `${pen ? "L" : "M"}${X(tx[i]).toFixed(1)},${Y(v).toFixed(1)}`;
      pen = true;
    });
    svg("path", { d, stroke: line.colour }, g);
    line.values.forEach((v, i) => {
      if (Number.isFinite(v)) {
        svg("circle", { cx: X(tx[i]), cy: Y(v), r: 2.4, fill: line.colour }, g);
        points++;
      } else {
        svg("circle", { class: "invalid", cx: X(tx[i]), cy: H - pad.b - 4, r: 2.5 }, g);
      }
    });
    const item = document.createElement("span");
    const sw = document.createElement("i");
    sw.style.background = line.colour;
    item.append(sw, line.name);
    el.chartLegend.appendChild(item);
  }
  chart.dataset.points = String(points);
  chart.onclick = (ev) => {
    const rect = chart.getBoundingClientRect();
    const ms = x0 + (((ev.clientX - rect.left) * (W / rect.width) - pad.l) / (W - pad.l - pad.r)) * (x1 - x0);
    let best = 0;
    tx.forEach((v, i) => {
      if (Math.abs(v - ms) < Math.abs(tx[best] - ms)) best = i;
    });
    stop();
    setTime(best);
  };
}

// --- interaction ---------------------------------------------------------------------------------

function bindControls() {
  const { map, layer, store } = state;
  const n = store.nTime;
  el.time.addEventListener("input", () => {
    stop();
    setTime(Number(el.time.value));
  });
  el.play.onclick = () => (state.playing ? stop() : play());
  $("step-back").onclick = () => {
    stop();
    setTime((layer.t - 1 + n) % n);
  };
  $("step-fwd").onclick = () => {
    stop();
    setTime((layer.t + 1) % n);
  };
  el.mode.onchange = () => changeDisplay({ mode: el.mode.value, formula: el.formula.value });
  el.band.onchange = () => changeDisplay({ mode: "band", band: Number(el.band.value) });
  el.formula.onchange = () => changeDisplay({ mode: "formula", formula: el.formula.value });
  const manual = () => {
    const min = Number(el.stretchMin.value);
    const max = Number(el.stretchMax.value);
    if (Number.isFinite(min) && Number.isFinite(max) && max > min) {
      layer.setStretch(min, max);
      paintColorbar();
      saveUrlState();
    }
  };
  el.stretchMin.onchange = manual;
  el.stretchMax.onchange = manual;
  $("stretch-auto").onclick = async () => {
    await layer.autoStretch();
    paintColorbar();
    saveUrlState();
  };
  el.colormap.onchange = () => {
    layer.setColormap(el.colormap.value);
    paintColorbar();
    saveUrlState();
  };
  el.opacity.oninput = () => {
    layer.setOpacity(Number(el.opacity.value));
    saveUrlState();
  };
  el.level.onchange = () => layer.setLevel(el.level.value);
  map.on("mousemove", (e) => {
    const p = layer.pixelAt(e.lngLat);
    const ll = `${e.lngLat.lng.toFixed(5)}°, ${e.lngLat.lat.toFixed(5)}°`;
    if (!p) {
      el.cursorReadout.textContent = ll;
      return;
    }
    const xy = store.pixelCentre({ row: p.row, col: p.col });
    const crs = typeof store.crs === "string" && store.crs.length < 16 ? store.crs : "store CRS";
    el.cursorReadout.textContent = `${ll}  ·  ${crs} ${formatCoord(xy.x)}, ${formatCoord(xy.y)}  ·  px ${p.row}, ${p.col}`;
  });
  map.on("click", (e) => {
    const p = layer.pixelAt(e.lngLat);
    if (p) select(p.row, p.col);
  });
  map.on("moveend", () => {
    saveUrlState();
    prefetchView();
    const level = layer.currentLevel();
    el.levelBadge.textContent = `L${level}`;
    el.levelBadge.title = `level ${level}: ${store.levels[level].resolution} per pixel`;
    document.body.dataset.level = String(level);
  });
  $("error-close").onclick = () => (el.error.hidden = true);
  window.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    if (ev.key === " ") {
      ev.preventDefault();
      state.playing ? stop() : play();
    } else if (ev.key === "ArrowRight") {
      stop();
      setTime((layer.t + 1) % n);
    } else if (ev.key === "ArrowLeft") {
      stop();
      setTime((layer.t - 1 + n) % n);
    } else if (ev.key === "+" || ev.key === "=") {
      map.zoomIn();
    } else if (ev.key === "-") {
      map.zoomOut();
    } else if (ev.key === "0") {
      map.fitBounds(layer.lngLatBounds(), { padding: 40, animate: false });
    }
  });
}

function bindLanding() {
  const submit = (input) => (ev) => {
    ev.preventDefault();
    const value = input.value.trim();
    if (!value) return;
    const url = new URL(location.href);
    url.search = "";
    url.searchParams.set("store", value);
    location.assign(url);
  };
  $("open-form").addEventListener("submit", submit(el.storeUrl));
  $("landing-form").addEventListener("submit", submit($("landing-url")));
}

// --- open ----------------------------------------------------------------------------------------

/** fetch that answers the page's early request for the root zarr.json once, then goes to the network. */
function earlyFetch() {
  let pending = early.root ? { url: early.rootUrl, response: early.root } : null;
  let named = false;
  return (url, init = {}) => {
    const plain = (init.method ?? "GET") === "GET" && !init.headers?.Range;
    if (pending && url === pending.url && plain) {
      const r = pending.response;
      pending = null;
      return r;
    }
    // The page's early chunk requests (index.html: earlyChunks), each answered once; until the
    // early script has named them (it parses the root beside this reader), a GET waits for it.
    if (plain && early.named && !named) return early.named.then(() => ((named = true), take(url, init, plain)));
    return take(url, init, plain);
  };
  function take(url, init, plain) {
    const chunk = plain ? early.chunks?.[url] : undefined;
    if (chunk) {
      delete early.chunks[url];
      marks.earlyChunks = (marks.earlyChunks ?? 0) + 1;
      return chunk;
    }
    return fetch(url, init);
  }
}

/**
 * The offline basemap's graticule at a step for the view on screen (graticule.js): a style with a
 * "graticule" GeoJSON source (the offline one) gets lines wherever the map is, at any zoom.
 */
function updateGraticule() {
  const source = state.map?.getSource("graticule");
  if (typeof source?.setData !== "function") return;
  const b = state.map.getBounds();
  source.setData(
    graticule([
      [b.getWest(), b.getSouth()],
      [b.getEast(), b.getNorth()],
    ]),
  );
}

/** The basemap style: the early-fetched JSON, or a URL MapLibre fetches itself. */
async function resolveStyle() {
  if (early.style) return early.style;
  return params.get("style") || config.style || DEFAULT_STYLE;
}

function createMap(maplibregl, style, camera) {
  // A style that paints every pixel: the map's canvas without alpha, which the compositor then
  // draws as opaque, not blended over the page under it (basemap.js, decision 0069).
  const map = withOpaqueMapCanvas(
    paintsEveryPixel(style),
    () =>
      new maplibregl.Map({
        container: el.map,
        style,
        center: camera.center,
        zoom: camera.zoom,
        attributionControl: { compact: true },
        dragRotate: false,
        pitchWithRotate: false,
        fadeDuration: 0,
        canvasContextAttributes: { preserveDrawingBuffer: params.get("capture") === "1", antialias: false },
      }),
  );
  map.touchZoomRotate.disableRotation();
  map.addControl(new maplibregl.NavigationControl({ showCompass: false }), "top-left");
  map.addControl(new maplibregl.ScaleControl({ maxWidth: 120, unit: "metric" }), "bottom-left");
  return map;
}

async function open(url) {
  document.body.dataset.state = "loading";
  el.storeUrl.value = url;
  setLoading("Opening store…");
  const styleP = resolveStyle();
  let opened = null;
  const storeP = openStore(url, {
    timeout: 20000,
    // Deltas stream through the layer's own caches (rawCacheBytes, the frame cache); writing each
    // to the browser's HTTP cache as well cost the network service ~2 ms of CPU per 0.7 MB chunk
    // (bench/js/fetch_cost.mjs), a tenth of a scrub step's budget. Anchors and metadata keep it.
    deltaCache: "no-store",
    fetch: earlyFetch(),
    makeDecoder: pool ? pool.makeDecoder(() => opened?.rootDocument) : undefined,
  });
  let store;
  let style;
  try {
    [store, style] = await Promise.all([storeP, styleP.catch((err) => ({ failed: err }))]);
    opened = store;
  } catch (err) {
    setLoading(null);
    document.body.dataset.state = "error";
    const { title, message } = await explainOpenError(err, url);
    showError(title, Object.assign(new Error(message), { name: err?.name ?? "Error" }));
    return;
  }
  if (style?.failed) {
    console.warn("basemap style failed, using the offline style", style.failed);
    style = new URL("style.json", location.href).href;
  }
  marks.storeOpen = performance.now();
  state.store = store;
  state.url = url;
  window.viewer.store = store;
  document.title = `${url.replace(/\/$/, "").split("/").pop()} · chronozarr viewer`;
  const display = displayFromUrl(store);
  const t0 = timeFromUrl(store);
  const center = params.get("center")?.split(",").map(Number);
  const zoom = Number(params.get("zoom"));
  let layer;
  try {
    layer = new ChronozarrLayer(store, {
      t: t0,
      ...display,
      // ?rendering=interleaved draws in MapLibre's context (for comparison; default: overlay).
      rendering: params.get("rendering") === "interleaved" ? "interleaved" : "overlay",
      // ?colour=gpu fetches a one-band display's colours on the GPU (for comparison; default: the
      // cells on screen coloured on the CPU, decision 0062).
      cpuColour: params.get("colour") !== "gpu",
      colormap: display.colormap ?? (display.mode === "ndvi" ? "rdylgn" : "viridis"),
      onLoading: (on) => setLoading(on ? "Reading…" : null),
      onError: (err) => {
        stop();
        showError("Could not read the store", err);
        document.body.dataset.state = "error";
      },
      // The first stretch comes between the first frame's last cell and its draw: its colour bar
      // is painted once that frame is on screen (a frame later), not before the draw (decision 0073).
      onStretch: () => (window.viewer.firstFrameAt ? paintColorbar() : requestAnimationFrame(() => setTimeout(paintColorbar, 0))),
      onFrame: ({ t, level }) => {
        document.body.dataset.frame = String(t);
        document.body.dataset.level = String(level);
        countDisplayed(performance.now());
        if (!window.viewer.firstFrameAt) {
          window.viewer.firstFrameAt = performance.now();
          marks.firstFrame = window.viewer.firstFrameAt;
          early.liftVeil?.();
          marks.firstStats = { ...layer.stats };
          marks.earlyDecoded = pool?.stats.early ?? 0;
          // When the GPU has rendered it (the draw above is only issued): benchmarks report this.
          layer.rendered().then(() => {
            window.viewer.firstFrameRenderedAt = performance.now();
            marks.firstFrameRendered = window.viewer.firstFrameRenderedAt;
          });
          if (pool) pool.early = null; // early decodes the reader did not ask for (a wrong guess)
          // The early script started one decoder; the others start now (decision 0061).
          pool?.grow(new URL("decode-worker.js", import.meta.url));
        }
        mapReady();
      },
    });
  } catch (err) {
    setLoading(null);
    document.body.dataset.state = "error";
    showError(err?.name === "UnsupportedError" ? "Unsupported store" : "Could not draw the store", err);
    return;
  }
  state.layer = layer;
  window.viewer.layer = layer;
  // The view: from the URL, else the store's bounds from its metadata alone (fitBounds with 40
  // px padding, computed here so the frame drawn before the map and the map are one camera).
  const size = { width: el.map.clientWidth, height: el.map.clientHeight };
  const camera =
    center?.length === 2 && center.every(Number.isFinite) && Number.isFinite(zoom)
      ? { center, zoom }
      : fitCamera(layer.lngLatBounds(), size, 40);
  // The first frame, drawn by the layer in its own canvas before MapLibre is loaded (decision
  // 0027); the map adopts that canvas. "ready" (body[data-state]) is the map's frame.
  let onMap = false;
  const mapReady = () => {
    if (!onMap || !window.viewer.firstFrameAt || document.body.dataset.state !== "loading") return;
    document.body.dataset.state = "ready";
    marks.mapFrame = performance.now();
    prefetchView();
  };
  // Creating the layer's WebGL context blocks this thread on the GPU process (up to a second
  // under GPU compositing on a software renderer); the early Workers' first messages wait on
  // this thread, so the context waits for them to be delivered (early.js `started`, at most
  // START_DEADLINE_MS): the chunk GETs and the decoders' start are no longer held (decision 0055).
  await Promise.race([early.started, new Promise((r) => setTimeout(r, START_DEADLINE_MS))]);
  // The early script's overlay canvas, made while the page waited on the chunks (decision 0066).
  const made = early.takeOverlay?.() ?? null;
  if (made) marks.earlyOverlay = 1;
  const drawn = layer.drawBeforeMap(cameraMap({ ...camera, ...size, dpr: window.devicePixelRatio || 1 }), el.map, {
    preserveDrawingBuffer: params.get("capture") === "1",
    made,
  });
  if (made && layer.canvas !== made.canvas) made.gl?.getExtension("WEBGL_lose_context")?.loseContext();
  await Promise.race([drawn.catch(() => false), new Promise((r) => setTimeout(r, MAP_DEADLINE_MS))]);
  let maplibregl;
  try {
    maplibregl = await loadMapLibre();
  } catch (err) {
    setLoading(null);
    document.body.dataset.state = "error";
    showError("Could not load the map", err);
    return;
  }
  const map = createMap(maplibregl, style, camera);
  state.map = map;
  window.viewer.map = map;
  if (!layer.canvas) layer.warm(map); // no frame before the map: read while the style loads
  map.on("error", (e) => {
    // A basemap that cannot be reached (offline) must not hide the store: fall back once.
    if (!state.styleFallback && e?.error && /style|Failed to fetch|NetworkError/i.test(String(e.error.message ?? e.error))) {
      state.styleFallback = true;
      console.warn("basemap failed, using the offline style", e.error);
      // The offline style is in the built page (no request); style.json is the same JSON.
      map.setStyle(window.CHRONOZARR_OFFLINE_STYLE?.() ?? new URL("style.json", location.href).href);
    }
  });
  let bound = false;
  map.on("style.load", () => {
    marks.styleLoaded ??= performance.now();
    map.addLayer(layer); // again after a style fallback
    if (!onMap) {
      onMap = true;
      map.once("render", mapReady); // the layer's frame on the map (drawn before it, or now)
    }
    updateGraticule(); // the offline style's (again after a style fallback)
    if (bound) return;
    bound = true;
    map.on("render", drawSelection);
    map.on("moveend", updateGraticule);
    describeStore(store, url, layer);
    paintTimeline();
    updateTimeUi();
    syncControls();
    bindControls();
  });
}

window.viewer = {
  marks,
  pool,
  get state() {
    return state;
  },
  store: null,
  map: null,
  layer: null,
  setTime: (t) => setTime(t),
  select,
  play,
  stop,
  /** Screen position (client px) of the centre of level-0 pixel (row, col). */
  screenOf: ({ row, col }) => {
    const p = state.map.project(state.layer.lngLatOf({ row, col }));
    const rect = state.map.getCanvas().getBoundingClientRect();
    return { x: rect.left + p.x, y: rect.top + p.y };
  },
};

bindLanding();
const storeParam = params.get("store") || config.store;
if (storeParam) open(storeParam);
else {
  el.landing.hidden = false;
  document.body.dataset.state = "idle";
}

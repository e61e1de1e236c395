// chronozarr viewer: a static page that opens a store URL, draws the current timestep, scrubs
// time like video once the anchors of the view are resident, and inspects any pixel through
// time with its exact stored value. All reading goes through js/chronozarr/decoder.js.

import { openStore } from "../../js/chronozarr/decoder.js";

const $ = (id) => document.getElementById(id);
const el = {
  canvas: $("canvas"),
  map: $("map"),
  landing: $("landing"),
  error: $("error"),
  errorTitle: $("error-title"),
  errorMessage: $("error-message"),
  loading: $("loading"),
  loadingText: $("loading-text"),
  chips: $("store-chips"),
  storeUrl: $("store-url"),
  mode: $("mode"),
  band: $("band"),
  bandField: $("band-field"),
  stretchMin: $("stretch-min"),
  stretchMax: $("stretch-max"),
  stretchUnits: $("stretch-units"),
  colorbar: $("colorbar"),
  level: $("level"),
  showGrid: $("show-grid"),
  levelBadge: $("level-badge"),
  cursor: $("cursor-readout"),
  scalebarBar: $("scalebar-bar"),
  scalebarLabel: $("scalebar-label"),
  time: $("time"),
  timeLabel: $("time-label"),
  timeIndex: $("time-index"),
  buffer: $("buffer"),
  play: $("play"),
  speed: $("speed"),
  fps: $("fps"),
  prefetchBar: $("prefetch-bar"),
  inspectorEmpty: $("inspector-empty"),
  inspectorBody: $("inspector-body"),
  values: $("values").querySelector("tbody"),
  pxRc: $("px-rc"),
  pxXy: $("px-xy"),
  pxTime: $("px-time"),
  pxMask: $("px-mask"),
  pxCoverage: $("px-coverage"),
  pxValid: $("px-valid"),
  chart: $("chart"),
  chartLegend: $("chart-legend"),
  chartUnits: $("chart-units"),
  about: $("about"),
  aboutList: $("about-list"),
};

// --- colour ------------------------------------------------------------------------------------

function ramp(stops) {
  const lut = new Uint8ClampedArray(256 * 3);
  for (let i = 0; i < 256; i++) {
    const x = (i / 255) * (stops.length - 1);
    const k = Math.min(stops.length - 2, Math.floor(x));
    const f = x - k;
    for (let c = 0; c < 3; c++) lut[i * 3 + c] = stops[k][c] + (stops[k + 1][c] - stops[k][c]) * f;
  }
  return lut;
}
const VIRIDIS = ramp([
  [68, 1, 84], [72, 40, 120], [62, 74, 137], [49, 104, 142], [38, 130, 142],
  [31, 158, 137], [53, 183, 121], [109, 205, 89], [180, 222, 44], [253, 231, 37],
]);
const RDYLGN = ramp([
  [165, 0, 38], [215, 48, 39], [244, 109, 67], [253, 174, 97], [254, 224, 139],
  [217, 239, 139], [166, 217, 106], [102, 189, 99], [26, 152, 80], [0, 104, 55],
]);
const BAND_COLOURS = { red: "#f87171", green: "#4ade80", blue: "#60a5fa", nir: "#c084fc", swir16: "#fbbf24", swir22: "#fb923c" };
const PALETTE = ["#2dd4bf", "#f472b6", "#facc15", "#a3e635", "#38bdf8", "#fb7185", "#e879f9"];
const lutCss = (lut) =>
  `linear-gradient(90deg, ${[0, 64, 128, 192, 255].map((i) => `rgb(${lut[i * 3]},${lut[i * 3 + 1]},${lut[i * 3 + 2]})`).join(",")})`;

// --- number formatting -------------------------------------------------------------------------

/** The exact stored value as text: integers as is; float32 at the shortest precision that round-trips. */
function formatStored(v, dtype) {
  if (dtype !== "float32") return String(v);
  if (!Number.isFinite(v)) return String(v);
  for (let p = 1; p <= 9; p++) {
    const s = v.toPrecision(p);
    if (Math.fround(Number(s)) === v) return String(Number(s));
  }
  return String(v);
}
const formatPhysical = (v) => (v === null || Number.isNaN(v) ? "—" : Math.abs(v) >= 1e6 || (v !== 0 && Math.abs(v) < 1e-4) ? v.toExponential(4) : String(Number(v.toPrecision(6))));
function formatAxis(v, span) {
  const digits = Math.max(0, Math.min(6, 2 - Math.floor(Math.log10(span || 1))));
  return Math.abs(v) >= 1e5 ? v.toExponential(1) : v.toFixed(digits);
}
const formatCoord = (v) => (Math.abs(v) >= 1000 ? v.toFixed(1) : v.toPrecision(7));
function niceDistance(m) {
  const p = 10 ** Math.floor(Math.log10(m));
  const n = m / p;
  return (n >= 5 ? 5 : n >= 2 ? 2 : 1) * p;
}

// --- state -------------------------------------------------------------------------------------

const state = {
  store: null,
  url: null,
  t: 0,
  level: 0,
  levelMode: "auto",
  view: { cx: 0, cy: 0, scale: 1 }, // canvas centre in level-0 pixels; CSS px per level-0 pixel
  mode: "rgb",
  band: 0,
  stretch: { min: 0, max: 1 },
  style: 0, // bumped whenever rendering settings change (invalidates rendered cells)
  selected: null, // {row, col} at level 0
  series: null,
  playing: false,
  frame: null, // {level, t, images: [{cell, canvas}]}
};

const rendered = new Map(); // LRU of rendered cell canvases, key -> {canvas, bytes}
let renderedBytes = 0;
const RENDER_BUDGET = 192 * 1024 * 1024;

function cacheRendered(key, canvas) {
  const bytes = canvas.width * canvas.height * 4;
  rendered.set(key, { canvas, bytes });
  renderedBytes += bytes;
  for (const [k, v] of rendered) {
    if (renderedBytes <= RENDER_BUDGET) break;
    rendered.delete(k);
    renderedBytes -= v.bytes;
  }
}

function getRendered(key) {
  const hit = rendered.get(key);
  if (!hit) return null;
  rendered.delete(key);
  rendered.set(key, hit);
  return hit.canvas;
}

function clearRendered() {
  rendered.clear();
  renderedBytes = 0;
}

// --- errors and status -------------------------------------------------------------------------

function showError(title, err) {
  console.error(err);
  el.errorTitle.textContent = title;
  el.errorMessage.textContent = err?.message ?? String(err);
  el.error.hidden = false;
  el.error.dataset.kind = err?.name ?? "Error";
}
function hideError() {
  el.error.hidden = true;
}
function setLoading(text) {
  el.loading.hidden = !text;
  if (text) el.loadingText.textContent = text;
}

// --- geometry ----------------------------------------------------------------------------------

function canvasSize() {
  return { w: el.canvas.clientWidth, h: el.canvas.clientHeight };
}
function toPixel(sx, sy) {
  const { w, h } = canvasSize();
  return { px: state.view.cx + (sx - w / 2) / state.view.scale, py: state.view.cy + (sy - h / 2) / state.view.scale };
}
function toScreen(px, py) {
  const { w, h } = canvasSize();
  return { sx: (px - state.view.cx) * state.view.scale + w / 2, sy: (py - state.view.cy) * state.view.scale + h / 2 };
}

function currentLevel() {
  const s = state.store;
  if (state.levelMode !== "auto") return Number(state.levelMode);
  const gsd = s.resolutions[0] / (state.view.scale * (window.devicePixelRatio || 1));
  return s.levelFor(gsd);
}

function visibleCells(level) {
  const s = state.store;
  const { w, h } = canvasSize();
  const a = toPixel(0, 0);
  const b = toPixel(w, h);
  const f = 2 ** level;
  return s.cellsInWindow({
    level,
    row0: Math.floor(a.py / f),
    col0: Math.floor(a.px / f),
    row1: Math.ceil(b.py / f),
    col1: Math.ceil(b.px / f),
  });
}

function fit() {
  const L0 = state.store.levels[0];
  const { w, h } = canvasSize();
  state.view.scale = Math.min(w / L0.width, h / L0.height) * 0.92;
  state.view.cx = L0.width / 2;
  state.view.cy = L0.height / 2;
}

// --- rendering ---------------------------------------------------------------------------------

function bandIndex(commonName) {
  const bands = state.store.bands;
  let i = bands.findIndex((b) => b.common_name === commonName);
  if (i < 0) i = bands.findIndex((b) => b.name.toLowerCase() === commonName);
  return i;
}

function rgbBands() {
  const idx = ["red", "green", "blue"].map(bandIndex);
  if (idx.every((i) => i >= 0)) return idx;
  const n = state.store.nBands;
  return [0, Math.min(1, n - 1), Math.min(2, n - 1)];
}

/** Physical values used for the current render mode, for stretch statistics. */
function displayValues(cell, mask) {
  const s = state.store;
  const n = cell.height * cell.width;
  const out = [];
  const valid = (b, i) => (mask ? mask[i] === 1 : s.nodata === null || cell.data[b * n + i] !== s.nodata);
  const phys = (b, i) => cell.data[b * n + i] * s.bands[b].scale + s.bands[b].offset;
  if (state.mode === "ndvi") {
    const r = bandIndex("red");
    const nir = bandIndex("nir");
    for (let i = 0; i < n; i++) {
      if (!valid(r, i) || !valid(nir, i)) continue;
      const a = phys(nir, i);
      const c = phys(r, i);
      if (a + c !== 0) out.push((a - c) / (a + c));
    }
  } else {
    const bands = state.mode === "rgb" ? rgbBands() : [state.band];
    for (const b of bands) for (let i = 0; i < n; i++) if (valid(b, i)) out.push(phys(b, i));
  }
  return out;
}

/** Colour one cell into an ImageData: invalid pixels are transparent (spec 2.3). */
function colourise(cell, mask) {
  const s = state.store;
  const n = cell.height * cell.width;
  const img = new ImageData(cell.width, cell.height);
  const px = img.data;
  const { min, max } = state.stretch;
  const k = 255 / (max - min || 1);
  const nd = s.nodata;
  const data = cell.data;
  const validAt = (b, i) => (mask ? mask[i] === 1 : nd === null || data[b * n + i] !== nd);
  if (state.mode === "rgb") {
    const idx = rgbBands();
    const sc = idx.map((b) => s.bands[b].scale);
    const of = idx.map((b) => s.bands[b].offset);
    for (let i = 0; i < n; i++) {
      if (!(validAt(idx[0], i) && validAt(idx[1], i) && validAt(idx[2], i))) continue;
      for (let c = 0; c < 3; c++) px[i * 4 + c] = ((data[idx[c] * n + i] * sc[c] + of[c]) - min) * k;
      px[i * 4 + 3] = 255;
    }
  } else if (state.mode === "ndvi") {
    const r = bandIndex("red");
    const nir = bandIndex("nir");
    const [sr, or, sn, on] = [s.bands[r].scale, s.bands[r].offset, s.bands[nir].scale, s.bands[nir].offset];
    for (let i = 0; i < n; i++) {
      if (!validAt(r, i) || !validAt(nir, i)) continue;
      const a = data[nir * n + i] * sn + on;
      const c = data[r * n + i] * sr + or;
      const v = a + c === 0 ? 0 : (a - c) / (a + c);
      const j = Math.max(0, Math.min(255, Math.round((v - min) * k))) * 3;
      px[i * 4] = RDYLGN[j];
      px[i * 4 + 1] = RDYLGN[j + 1];
      px[i * 4 + 2] = RDYLGN[j + 2];
      px[i * 4 + 3] = 255;
    }
  } else {
    const b = state.band;
    const sc = s.bands[b].scale;
    const of = s.bands[b].offset;
    for (let i = 0; i < n; i++) {
      if (!validAt(b, i)) continue;
      const j = Math.max(0, Math.min(255, Math.round((data[b * n + i] * sc + of - min) * k))) * 3;
      px[i * 4] = VIRIDIS[j];
      px[i * 4 + 1] = VIRIDIS[j + 1];
      px[i * 4 + 2] = VIRIDIS[j + 2];
      px[i * 4 + 3] = 255;
    }
  }
  return img;
}

async function cellData(level, t, cell, signal) {
  const s = state.store;
  const [data, mask] = await Promise.all([
    s.readCell({ t, level, row: cell.row, col: cell.col, signal }),
    s.hasMask ? s.readPlane("mask", { t, level, row: cell.row, col: cell.col, signal }) : null,
  ]);
  return { data, mask };
}

async function cellCanvas(level, t, cell, signal) {
  const key = `${state.style}|${level}|${t}|${cell.row}|${cell.col}`;
  const hit = getRendered(key);
  if (hit) return hit;
  const { data, mask } = await cellData(level, t, cell, signal);
  const canvas = document.createElement("canvas");
  canvas.width = data.width;
  canvas.height = data.height;
  canvas.getContext("2d").putImageData(colourise(data, mask), 0, 0);
  cacheRendered(key, canvas);
  return canvas;
}

let frameSeq = 0;
let frameCtrl = null;

/** Render timestep state.t at the current level; resolves true once drawn, false if superseded. */
async function renderFrame() {
  const s = state.store;
  if (!s) return false;
  const seq = ++frameSeq;
  frameCtrl?.abort();
  const ctrl = new AbortController();
  frameCtrl = ctrl;
  const level = currentLevel();
  const t = state.t;
  const cells = visibleCells(level);
  try {
    const images = await Promise.all(cells.map(async (cell) => ({ cell, canvas: await cellCanvas(level, t, cell, ctrl.signal) })));
    if (seq !== frameSeq) return false;
    state.frame = { level, t, images };
    state.level = level;
    draw();
    document.body.dataset.frame = String(t);
    document.body.dataset.level = String(level);
    return true;
  } catch (err) {
    if (err?.name === "AbortError" || seq !== frameSeq) return false;
    stop();
    showError("Could not read the store", err);
    document.body.dataset.state = "error";
    return false;
  }
}

function draw() {
  const s = state.store;
  const dpr = window.devicePixelRatio || 1;
  const { w, h } = canvasSize();
  if (el.canvas.width !== Math.round(w * dpr) || el.canvas.height !== Math.round(h * dpr)) {
    el.canvas.width = Math.round(w * dpr);
    el.canvas.height = Math.round(h * dpr);
  }
  const ctx = el.canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, w, h);
  if (!s || !state.frame) return;
  ctx.imageSmoothingEnabled = false;
  const { level, images } = state.frame;
  const L = s.levels[level];
  const f = 2 ** level;
  const sc = state.view.scale * f;
  for (const { cell, canvas } of images) {
    const { sx, sy } = toScreen(cell.col * L.cs * f, cell.row * L.cs * f);
    ctx.drawImage(canvas, sx, sy, canvas.width * sc, canvas.height * sc);
  }
  // The outline of the whole level-0 grid.
  const a = toScreen(0, 0);
  const b = toScreen(s.levels[0].width, s.levels[0].height);
  ctx.strokeStyle = "#ffffff33";
  ctx.lineWidth = 1;
  ctx.strokeRect(Math.round(a.sx) + 0.5, Math.round(a.sy) + 0.5, Math.round(b.sx - a.sx), Math.round(b.sy - a.sy));
  if (el.showGrid.checked) {
    ctx.strokeStyle = "#14b8a6aa";
    ctx.font = "11px ui-monospace, monospace";
    ctx.fillStyle = "#14b8a6";
    for (let r = 0; r < L.grid[0]; r++) {
      for (let c = 0; c < L.grid[1]; c++) {
        const p = toScreen(c * L.cs * f, r * L.cs * f);
        const q = toScreen(Math.min((c + 1) * L.cs, L.width) * f, Math.min((r + 1) * L.cs, L.height) * f);
        ctx.strokeRect(p.sx + 0.5, p.sy + 0.5, q.sx - p.sx, q.sy - p.sy);
        if (q.sx - p.sx > 60) ctx.fillText(`${level}/${r}/${c}`, p.sx + 5, p.sy + 14);
      }
    }
  }
  if (state.selected) {
    const p = toScreen(state.selected.col, state.selected.row);
    const size = Math.max(state.view.scale, 10);
    const cx = p.sx + state.view.scale / 2;
    const cy = p.sy + state.view.scale / 2;
    ctx.strokeStyle = "#0b1117";
    ctx.lineWidth = 4;
    ctx.strokeRect(cx - size / 2, cy - size / 2, size, size);
    ctx.strokeStyle = "#fbbf24";
    ctx.lineWidth = 2;
    ctx.strokeRect(cx - size / 2, cy - size / 2, size, size);
  }
  updateScaleBar();
}

function updateScaleBar() {
  const s = state.store;
  const metresPerPx = s.resolutions[0] / state.view.scale;
  const target = niceDistance(metresPerPx * 100);
  el.scalebarBar.style.width = `${target / metresPerPx}px`;
  el.scalebarLabel.textContent = target >= 1000 ? `${target / 1000} km` : `${target} m`;
  const L = s.levels[state.level];
  el.levelBadge.textContent = `L${state.level}`;
  el.levelBadge.title = `level ${state.level}: ${L.resolution} m, ${L.height} × ${L.width} px`;
}

// --- stretch -----------------------------------------------------------------------------------

function percentile(sorted, p) {
  if (!sorted.length) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.round((p / 100) * (sorted.length - 1))));
  return sorted[i];
}

async function autoStretch() {
  const s = state.store;
  if (state.mode === "ndvi") {
    setStretch(-0.2, 0.9);
    return;
  }
  const level = currentLevel();
  const cells = visibleCells(level).slice(0, 16);
  const values = [];
  for (const cell of cells) {
    const { data, mask } = await cellData(level, state.t, cell);
    const v = displayValues(data, mask);
    const step = Math.max(1, Math.floor(v.length / 20000));
    for (let i = 0; i < v.length; i += step) values.push(v[i]);
  }
  values.sort((a, b) => a - b);
  let lo = percentile(values, 2);
  let hi = percentile(values, 98);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) {
    lo = 0;
    hi = s.dtype === "uint8" ? 255 : 1;
  }
  if (hi <= lo) hi = lo + (Math.abs(lo) || 1) * 0.01;
  setStretch(lo, hi);
}

function setStretch(min, max) {
  state.stretch = { min, max };
  el.stretchMin.value = Number(min.toPrecision(4));
  el.stretchMax.value = Number(max.toPrecision(4));
  restyle();
}

function restyle() {
  state.style++;
  clearRendered();
  const lut = state.mode === "ndvi" ? RDYLGN : state.mode === "band" ? VIRIDIS : null;
  el.colorbar.hidden = !lut;
  if (lut) el.colorbar.style.background = lutCss(lut);
  const s = state.store;
  const unitBand = state.mode === "band" ? s.bands[state.band] : state.mode === "rgb" ? s.bands[rgbBands()[0]] : null;
  el.stretchUnits.textContent = state.mode === "ndvi" ? "(index)" : unitBand?.units ? `(${unitBand.units})` : "";
  renderFrame();
}

// --- inspector ---------------------------------------------------------------------------------

let inspectCtrl = null;
let seriesCtrl = null;

function bandColour(b, i) {
  return BAND_COLOURS[b.common_name] ?? PALETTE[i % PALETTE.length];
}

async function updateInspector() {
  const s = state.store;
  if (!s || !state.selected) return;
  inspectCtrl?.abort();
  const ctrl = new AbortController();
  inspectCtrl = ctrl;
  const { row, col } = state.selected;
  const t = state.t;
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
  el.pxTime.textContent = v.time;
  el.inspectorBody.dataset.t = String(t);
  el.inspectorBody.dataset.row = String(v.row);
  el.inspectorBody.dataset.col = String(v.col);
  el.values.replaceChildren(
    ...v.bands.map((b, i) => {
      const tr = document.createElement("tr");
      tr.dataset.band = b.name;
      const label = b.common_name && b.common_name !== b.name ? `${b.name} <span class="units">${b.common_name}</span>` : b.name;
      tr.innerHTML = `<td><span class="swatch" style="background:${bandColour(b, i)}"></span>${label}</td>
        <td class="num stored"></td><td class="num physical"></td><td class="validity"></td>`;
      const stored = tr.querySelector(".stored");
      stored.textContent = formatStored(b.stored, s.dtype);
      stored.dataset.value = stored.textContent;
      const physical = tr.querySelector(".physical");
      physical.textContent = formatPhysical(b.physical);
      physical.dataset.value = b.physical === null ? "" : String(b.physical);
      if (b.units && b.physical !== null) physical.title = b.units;
      const validity = tr.querySelector(".validity");
      validity.textContent = b.valid ? "✓" : "✕";
      validity.className = `validity ${b.valid ? "ok" : "bad"}`;
      validity.dataset.value = b.valid ? "1" : "0";
      return tr;
    }),
  );
  el.pxMask.textContent = v.mask === null ? "—" : String(v.mask);
  el.pxMask.dataset.value = v.mask === null ? "" : String(v.mask);
  el.pxCoverage.textContent = v.coverage === null ? "—" : `${v.coverage} obs`;
  el.pxCoverage.dataset.value = v.coverage === null ? "" : String(v.coverage);
  el.pxValid.textContent = v.valid ? "VALID" : "MISSING";
  el.pxValid.className = `pill ${v.valid ? "ok" : "bad"}`;
  drawChart();
}

async function loadSeries() {
  const s = state.store;
  seriesCtrl?.abort();
  const ctrl = new AbortController();
  seriesCtrl = ctrl;
  state.series = null;
  drawChart();
  try {
    const series = await s.series({ ...state.selected, level: 0, signal: ctrl.signal });
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

function drawChart() {
  const s = state.store;
  const chart = el.chart;
  chart.replaceChildren();
  el.chartLegend.replaceChildren();
  const W = chart.clientWidth || 320;
  const H = chart.clientHeight || 170;
  chart.setAttribute("viewBox", `0 0 ${W} ${H}`);
  const series = state.series;
  if (!series) {
    const txt = svg("text", { x: W / 2, y: H / 2, "text-anchor": "middle", fill: "#8b9bab", "font-size": 11 }, chart);
    txt.textContent = state.selected ? "Reading every timestep…" : "";
    chart.dataset.points = "0";
    return;
  }
  const ndvi = state.mode === "ndvi" && bandIndex("red") >= 0 && bandIndex("nir") >= 0;
  let lines;
  if (ndvi) {
    const r = series.bands[bandIndex("red")];
    const n = series.bands[bandIndex("nir")];
    const v = Array.from(r.physical, (x, i) => {
      const a = n.physical[i];
      return Number.isNaN(x) || Number.isNaN(a) || a + x === 0 ? NaN : (a - x) / (a + x);
    });
    lines = [{ name: "NDVI", colour: "#4ade80", values: v }];
    el.chartUnits.textContent = "index";
  } else {
    lines = series.bands.map((b, i) => ({ name: b.name, colour: bandColour(b, i), values: Array.from(b.physical) }));
    el.chartUnits.textContent = s.bands[0].units ?? "physical value";
  }
  const pad = { l: 44, r: 10, t: 10, b: 22 };
  const tx = series.timesMs;
  const x0 = tx[0];
  const x1 = tx[tx.length - 1] === x0 ? x0 + 1 : tx[tx.length - 1];
  const all = lines.flatMap((l) => l.values).filter((v) => Number.isFinite(v));
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
  const grid = svg("g", { class: "grid axis" }, chart);
  for (let i = 0; i <= 4; i++) {
    const v = y0 + ((y1 - y0) * i) / 4;
    svg("line", { x1: pad.l, x2: W - pad.r, y1: Y(v), y2: Y(v) }, grid);
    const label = svg("text", { x: pad.l - 5, y: Y(v) + 3, "text-anchor": "end" }, grid);
    label.textContent = formatAxis(v, y1 - y0);
  }
  const ticks = Math.min(tx.length, 4);
  for (let i = 0; i < ticks; i++) {
    const k = Math.round((i * (tx.length - 1)) / Math.max(1, ticks - 1));
    const label = svg("text", { x: X(tx[k]), y: H - 6, "text-anchor": i === 0 ? "start" : i === ticks - 1 ? "end" : "middle" }, grid);
    label.textContent = series.times[k].slice(0, 7);
  }
  svg("line", { class: "now", x1: X(tx[state.t]), x2: X(tx[state.t]), y1: pad.t, y2: H - pad.b }, chart);
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
        svg("circle", { cx: X(tx[i]), cy: Y(v), r: i === state.t ? 4 : 2.4, fill: line.colour }, g);
        points++;
      } else {
        svg("circle", { class: "invalid", cx: X(tx[i]), cy: H - pad.b - 4, r: 2.5 }, g);
      }
    });
    const item = document.createElement("span");
    item.innerHTML = `<i style="background:${line.colour}"></i>${line.name}`;
    el.chartLegend.appendChild(item);
  }
  chart.dataset.points = String(points);
  chart.onclick = (ev) => {
    const rect = chart.getBoundingClientRect();
    const ms = x0 + ((ev.clientX - rect.left) * (W / rect.width) - pad.l) / (W - pad.l - pad.r) * (x1 - x0);
    let best = 0;
    tx.forEach((v, i) => {
      if (Math.abs(v - ms) < Math.abs(tx[best] - ms)) best = i;
    });
    setTime(best);
  };
}

// --- time --------------------------------------------------------------------------------------

function updateTimeUi() {
  const s = state.store;
  el.time.value = String(state.t);
  el.timeLabel.textContent = s.times[state.t].slice(0, 10);
  el.timeIndex.textContent = `${state.t + 1} / ${s.nTime}${s.temporal.isAnchor(state.t) && s.encoding === "star-delta" ? " · anchor" : ""}`;
  for (const [i, span] of [...el.buffer.children].entries()) span.classList.toggle("current", i === state.t);
}

/** Show timestep t: the frame and the inspector. Resolves when the frame is drawn. */
async function setTime(t) {
  const s = state.store;
  state.t = Math.max(0, Math.min(s.nTime - 1, t));
  updateTimeUi();
  const url = new URL(location.href);
  url.searchParams.set("t", String(state.t));
  history.replaceState(null, "", url);
  const frame = renderFrame();
  if (state.selected) {
    updateInspector();
  }
  return frame;
}

let fpsSamples = [];

/** Fetch the delta chunks of the next frames while this one decodes (playback read-ahead). */
function readAhead(from, frames, signal) {
  const s = state.store;
  const level = currentLevel();
  const times = Array.from({ length: frames }, (_, i) => (from + 1 + i) % s.nTime);
  s.prefetch({ level, cells: visibleCells(level), times, signal, concurrency: 4 }).catch(() => {});
}

async function playLoop() {
  const s = state.store;
  let last = performance.now();
  const ctrl = new AbortController();
  while (state.playing) {
    const target = 1000 / Number(el.speed.value);
    const started = performance.now();
    const next = (state.t + 1) % s.nTime;
    readAhead(next, 2, ctrl.signal);
    await setTime(next);
    if (!state.playing) break;
    const spent = performance.now() - started;
    if (spent < target) await new Promise((r) => setTimeout(r, target - spent));
    const now = performance.now();
    fpsSamples.push(now - last);
    last = now;
    if (fpsSamples.length > 12) fpsSamples.shift();
    const mean = fpsSamples.reduce((a, b) => a + b, 0) / fpsSamples.length;
    el.fps.textContent = `${(1000 / mean).toFixed(1)} fps`;
    el.fps.dataset.value = (1000 / mean).toFixed(2);
  }
  ctrl.abort();
}

function play() {
  if (!state.store || state.playing) return;
  state.playing = true;
  fpsSamples = [];
  document.body.classList.add("playing");
  el.play.setAttribute("aria-label", "Pause");
  playLoop();
}
function stop() {
  state.playing = false;
  document.body.classList.remove("playing");
  el.play.setAttribute("aria-label", "Play");
}

// --- prefetch ----------------------------------------------------------------------------------

let prefetchCtrl = null;
let prefetchTimer = null;
let prefetchKey = "";

function schedulePrefetch() {
  clearTimeout(prefetchTimer);
  prefetchTimer = setTimeout(runPrefetch, 250);
}

async function runPrefetch() {
  const s = state.store;
  const level = currentLevel();
  const cells = visibleCells(level);
  const key = `${level}|${cells.map((c) => `${c.row},${c.col}`).join(";")}`;
  if (key === prefetchKey) return;
  prefetchKey = key;
  prefetchCtrl?.abort();
  const ctrl = new AbortController();
  prefetchCtrl = ctrl;
  const n = s.nTime;
  const times = [...Array(n).keys()].map((i) => (state.t + i) % n); // what playback needs next, first
  const resident = new Set();
  paintBuffer(resident);
  try {
    await s.prefetch({
      level,
      cells,
      times,
      signal: ctrl.signal,
      onProgress: (done, total) => {
        el.prefetchBar.style.width = `${(100 * done) / total}%`;
        el.prefetchBar.parentElement.title = `${done} of ${total} chunks resident for this view`;
        if (done === total || done % Math.max(1, cells.length) === 0) {
          for (let t = 0; t < n; t++) if (!resident.has(t) && s.isResident({ level, cells, t })) resident.add(t);
          paintBuffer(resident);
        }
      },
    });
    for (let t = 0; t < n; t++) if (s.isResident({ level, cells, t })) resident.add(t);
    paintBuffer(resident);
    document.body.dataset.prefetched = key;
  } catch (err) {
    if (err?.name !== "AbortError") showError("Prefetch failed", err);
  }
}

function paintBuffer(resident) {
  const s = state.store;
  if (el.buffer.children.length !== s.nTime) {
    el.buffer.replaceChildren(...Array.from({ length: s.nTime }, () => document.createElement("span")));
  }
  [...el.buffer.children].forEach((span, t) => {
    span.classList.toggle("anchor", s.encoding === "star-delta" && s.temporal.isAnchor(t));
    span.classList.toggle("resident", resident.has(t));
    span.classList.toggle("current", t === state.t);
    span.title = `${s.times[t].slice(0, 10)}${s.temporal.isAnchor(t) && s.encoding === "star-delta" ? " (anchor)" : ""}`;
  });
}

// --- interaction -------------------------------------------------------------------------------

function onViewChanged() {
  draw();
  requestAnimationFrame(() => renderFrame());
  schedulePrefetch();
  if (state.levelMode === "auto") el.level.title = `auto: level ${currentLevel()}`;
}

function zoomAt(sx, sy, factor) {
  const before = toPixel(sx, sy);
  state.view.scale = Math.max(0.01, Math.min(64, state.view.scale * factor));
  const after = toPixel(sx, sy);
  state.view.cx += before.px - after.px;
  state.view.cy += before.py - after.py;
  onViewChanged();
}

function bindInteraction() {
  const c = el.canvas;
  let drag = null;
  c.addEventListener("pointerdown", (ev) => {
    if (!state.store) return;
    c.setPointerCapture(ev.pointerId);
    drag = { x: ev.clientX, y: ev.clientY, cx: state.view.cx, cy: state.view.cy, moved: false };
  });
  c.addEventListener("pointermove", (ev) => {
    if (!state.store) return;
    const rect = c.getBoundingClientRect();
    const { px, py } = toPixel(ev.clientX - rect.left, ev.clientY - rect.top);
    const L0 = state.store.levels[0];
    const row = Math.floor(py);
    const col = Math.floor(px);
    if (row >= 0 && col >= 0 && row < L0.height && col < L0.width) {
      const xy = state.store.pixelCentre({ row, col });
      el.cursor.textContent = `${formatCoord(xy.x)}, ${formatCoord(xy.y)}  ·  px ${row}, ${col}`;
    } else {
      el.cursor.textContent = "—";
    }
    if (!drag) return;
    const dx = ev.clientX - drag.x;
    const dy = ev.clientY - drag.y;
    if (Math.abs(dx) + Math.abs(dy) > 3) {
      drag.moved = true;
      c.classList.add("dragging");
    }
    if (drag.moved) {
      state.view.cx = drag.cx - dx / state.view.scale;
      state.view.cy = drag.cy - dy / state.view.scale;
      draw();
    }
  });
  c.addEventListener("pointerup", (ev) => {
    if (!drag) return;
    const moved = drag.moved;
    drag = null;
    c.classList.remove("dragging");
    if (moved) {
      onViewChanged();
      return;
    }
    const rect = c.getBoundingClientRect();
    const { px, py } = toPixel(ev.clientX - rect.left, ev.clientY - rect.top);
    select(Math.floor(py), Math.floor(px));
  });
  c.addEventListener(
    "wheel",
    (ev) => {
      if (!state.store) return;
      ev.preventDefault();
      const rect = c.getBoundingClientRect();
      zoomAt(ev.clientX - rect.left, ev.clientY - rect.top, Math.exp(-ev.deltaY * 0.0015));
    },
    { passive: false },
  );
  const centre = () => {
    const { w, h } = canvasSize();
    return [w / 2, h / 2];
  };
  $("zoom-in").onclick = () => zoomAt(...centre(), 1.6);
  $("zoom-out").onclick = () => zoomAt(...centre(), 1 / 1.6);
  $("zoom-fit").onclick = () => {
    fit();
    onViewChanged();
  };
  el.time.addEventListener("input", () => {
    stop();
    setTime(Number(el.time.value));
  });
  el.play.onclick = () => (state.playing ? stop() : play());
  $("step-back").onclick = () => {
    stop();
    setTime((state.t - 1 + state.store.nTime) % state.store.nTime);
  };
  $("step-fwd").onclick = () => {
    stop();
    setTime((state.t + 1) % state.store.nTime);
  };
  el.mode.onchange = () => {
    state.mode = el.mode.value;
    el.bandField.hidden = state.mode !== "band";
    autoStretch().catch((err) => showError("Could not compute the stretch", err));
    drawChart();
  };
  el.band.onchange = () => {
    state.band = Number(el.band.value);
    autoStretch().catch((err) => showError("Could not compute the stretch", err));
  };
  const manual = () => {
    const min = Number(el.stretchMin.value);
    const max = Number(el.stretchMax.value);
    if (Number.isFinite(min) && Number.isFinite(max) && max > min) {
      state.stretch = { min, max };
      restyle();
    }
  };
  el.stretchMin.onchange = manual;
  el.stretchMax.onchange = manual;
  $("stretch-auto").onclick = () => autoStretch().catch((err) => showError("Could not compute the stretch", err));
  el.level.onchange = () => {
    state.levelMode = el.level.value;
    onViewChanged();
  };
  el.showGrid.onchange = () => draw();
  $("error-close").onclick = hideError;
  window.addEventListener("resize", () => {
    if (state.store) onViewChanged();
  });
  window.addEventListener("keydown", (ev) => {
    if (!state.store || ev.target instanceof HTMLInputElement || ev.target instanceof HTMLSelectElement) return;
    if (ev.key === " ") {
      ev.preventDefault();
      state.playing ? stop() : play();
    } else if (ev.key === "ArrowRight") {
      stop();
      setTime((state.t + 1) % state.store.nTime);
    } else if (ev.key === "ArrowLeft") {
      stop();
      setTime((state.t - 1 + state.store.nTime) % state.store.nTime);
    } else if (ev.key === "+" || ev.key === "=") {
      zoomAt(...centre(), 1.6);
    } else if (ev.key === "-") {
      zoomAt(...centre(), 1 / 1.6);
    } else if (ev.key === "0") {
      fit();
      onViewChanged();
    }
  });
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

function select(row, col) {
  const L0 = state.store.levels[0];
  if (row < 0 || col < 0 || row >= L0.height || col >= L0.width) return;
  state.selected = { row, col };
  draw();
  updateInspector();
  loadSeries();
}

// --- open --------------------------------------------------------------------------------------

function chip(label, value) {
  const span = document.createElement("span");
  span.className = "chip";
  span.innerHTML = `${label} <strong></strong>`;
  span.querySelector("strong").textContent = value;
  return span;
}

function describeStore(s, url) {
  const L0 = s.levels[0];
  const codec = L0.data.compressors.filter((c) => c.name !== "crc32c").map((c) => (c.name === "blosc" ? `blosc/${c.configuration.cname}` : c.name)).join("+") || "none";
  el.chips.replaceChildren(
    chip("", `${s.nTime} × ${s.nBands} × ${L0.height} × ${L0.width}`),
    chip("", s.dtype),
    chip("", s.encoding),
    chip("", L0.sharded ? `sharded ×${L0.shardTime}` : "unsharded"),
    chip("", s.crs ?? "no CRS"),
    chip("", `${L0.resolution} m`),
  );
  const rows = [
    ["URL", url],
    ["spec", s.specVersion],
    ["times", `${s.times[0].slice(0, 10)} → ${s.times.at(-1).slice(0, 10)}`],
    ["bands", s.bands.map((b) => b.name + (b.common_name ? ` (${b.common_name})` : "")).join(", ")],
    ["nodata", s.nodata === null ? "none" : String(s.nodata)],
    ["levels", s.levels.map((l) => `${l.resolution} m`).join(", ")],
    ["cell", `${s.cs} px`],
    ["codec", codec],
    ["mask", s.hasMask ? "yes" : "no"],
    ["coverage", s.hasCoverage ? "yes" : "no"],
  ];
  if (s.encoding === "star-delta") rows.push(["anchors", s.temporal.anchorIndices.join(", ")]);
  if (s.provenance?.composite) rows.push(["composite", s.provenance.composite]);
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
    ...s.bands.map((b, i) => {
      const o = document.createElement("option");
      o.value = String(i);
      o.textContent = b.common_name ? `${b.name} · ${b.common_name}` : b.name;
      return o;
    }),
  );
  el.level.replaceChildren(
    Object.assign(document.createElement("option"), { value: "auto", textContent: "Auto (by zoom)" }),
    ...s.levels.map((l) =>
      Object.assign(document.createElement("option"), {
        value: String(l.index),
        textContent: `${l.index} · ${l.resolution} m · ${l.height} × ${l.width}`,
      }),
    ),
  );
  const hasRgb = ["red", "green", "blue"].every((n) => bandIndex(n) >= 0);
  const hasNdvi = bandIndex("red") >= 0 && bandIndex("nir") >= 0;
  el.mode.querySelector('option[value="ndvi"]').disabled = !hasNdvi;
  el.mode.querySelector('option[value="rgb"]').disabled = !hasRgb && s.nBands < 3;
  state.mode = hasRgb || s.nBands >= 3 ? "rgb" : hasNdvi ? "ndvi" : "band";
  el.mode.value = state.mode;
  el.bandField.hidden = state.mode !== "band";
}

async function open(url) {
  document.body.dataset.state = "loading";
  el.landing.hidden = true;
  el.storeUrl.value = url;
  setLoading("Opening store…");
  hideError();
  try {
    const store = await openStore(url, { timeout: 20000 });
    state.store = store;
    state.url = url;
    document.body.classList.add("has-store");
    window.viewer.store = store;
    document.title = `${url.replace(/\/$/, "").split("/").pop()} · chronozarr viewer`;
    describeStore(store, url);
    el.time.max = String(store.nTime - 1);
    el.time.disabled = false;
    const t0 = Number(new URL(location.href).searchParams.get("t"));
    state.t = Number.isInteger(t0) && t0 >= 0 && t0 < store.nTime ? t0 : 0;
    fit();
    paintBuffer(new Set());
    updateTimeUi();
    setLoading("Reading the first frame…");
    await autoStretch();
    await renderFrame();
    setLoading(null);
    if (document.body.dataset.state !== "error") document.body.dataset.state = "ready";
    schedulePrefetch();
  } catch (err) {
    setLoading(null);
    document.body.dataset.state = "error";
    const title =
      err?.name === "StoreNotFoundError"
        ? "Store not found"
        : err?.name === "UnsupportedError"
          ? "Unsupported store"
          : err?.name === "CorruptStoreError"
            ? "Corrupt store"
            : "Could not open the store";
    showError(title, err);
  }
}

window.viewer = {
  state,
  store: null,
  /** CSS pixel position (relative to the canvas) of the centre of level-0 pixel (row, col). */
  screenOf: ({ row, col }) => {
    const p = toScreen(col + 0.5, row + 0.5);
    const rect = el.canvas.getBoundingClientRect();
    return { x: rect.left + p.sx, y: rect.top + p.sy };
  },
  setTime,
  select,
  play,
  stop,
  zoomAt: (factor) => {
    const { w, h } = canvasSize();
    zoomAt(w / 2, h / 2, factor);
  },
};

bindInteraction();
const param = new URL(location.href).searchParams.get("store");
if (param) open(param);
else document.body.dataset.state = "idle";

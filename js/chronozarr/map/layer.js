// chronozarr/map/layer.js: a chronozarr store as a MapLibre GL JS custom WebGL2 layer.
//
// Each visible cell (spec 2.1) is one textured mesh whose vertices are the cell's pixel lattice
// in the store CRS, reprojected with proj4 to Web Mercator (so a UTM store lands where GDAL would
// put it). The cell's stored values are uploaded as an integer texture array (one layer per band
// the display needs) and coloured in the fragment shader: scale and offset (3.6), validity
// (mask or nodata, 2.3), band math, stretch and colour map all run on the GPU, so scrubbing time
// only uploads the new timestep's values. Level of detail follows the map zoom (10.3); only the
// cells that intersect the viewport are read. Cells of one level share one mercator origin and
// their shared edges are the same reprojected vertices, so there is no seam between cells.
//
// The module never imports MapLibre: it works with the map object it is given.

import { COLORMAPS } from "./colormaps.js";
import { lonLatOfMercator, mercatorOf, storeProjection } from "./crs.js";
import { PRESETS, parseExpression, toFunction, toGlsl } from "./expression.js";
import { buildValueLut, VALUE_LUT_DTYPES } from "./value-lut.js";
import { LRUCache } from "../lru.js";

/**
 * @import {ChronozarrStore} from "../store.js"
 */

/**
 * The layer's options (see addChronozarrLayer).
 * @typedef {object} LayerOptions
 * @property {string} [id]
 * @property {string} [beforeId]
 * @property {number} [t]
 * @property {string} [mode] "rgb" | "band" | "ndvi" | "formula" (or another preset of expression.js)
 * @property {number} [band]
 * @property {number[]} [rgb]
 * @property {string} [formula]
 * @property {{min: number, max: number} | null} [stretch]
 * @property {string} [colormap]
 * @property {number} [opacity]
 * @property {"auto" | number} [level]
 * @property {"overlay" | "interleaved"} [rendering]
 * @property {boolean} [readAhead]
 * @property {number} [aheadSteps]
 * @property {number} [frameCacheBytes]
 * @property {boolean} [valueLut]
 * @property {(f: {t: number, level: number, cells: {row: number, col: number}[], ms: number}) => void} [onFrame]
 * @property {(loading: boolean) => void} [onLoading]
 * @property {(err: any) => void} [onError]
 * @property {(s: {min: number, max: number}) => void} [onStretch]
 */

const SUBDIV = 16; // mesh quads per cell side: sub-millimetre error against the exact reprojection
const MAX_LAYERS = 8; // bands one display may use
const AHEAD_ENTRIES = 48; // decoded cell-timesteps kept for playback read-ahead
const GL_CELLS = 96; // GL cells (mesh + textures) kept before the least recently used is freed
const FRAME_CACHE_BYTES = 128 * 1024 * 1024; // decoded cell-timesteps kept (scrubbing back and forth)

// The overlay canvas's context: no depth, stencil or antialiasing (the layer draws flat meshes,
// and the software rasterizer, SwiftShader, then clears and resolves one colour buffer only).
const OVERLAY_CONTEXT = { alpha: true, premultipliedAlpha: true, antialias: false, depth: false, stencil: false };

const TEX = {
  uint8: { sampler: "usampler2DArray", internal: "R8UI", format: "RED_INTEGER", type: "UNSIGNED_BYTE" },
  uint16: { sampler: "usampler2DArray", internal: "R16UI", format: "RED_INTEGER", type: "UNSIGNED_SHORT" },
  int16: { sampler: "isampler2DArray", internal: "R16I", format: "RED_INTEGER", type: "SHORT" },
  float32: { sampler: "sampler2DArray", internal: "R32F", format: "RED", type: "FLOAT" },
};

/**
 * Add a chronozarr layer to a MapLibre map. `store` is an open store (openStore from
 * chronozarr). Returns the ChronozarrLayer (its methods change time, display and view).
 *
 * options: id ("chronozarr"), beforeId, t (0), mode ("rgb" | "band" | "ndvi" | "formula"),
 * band (index, for "band"), rgb ([r, g, b] band indices; default by common_name), formula (text
 * over common_name, for "formula"), stretch ({min, max}; default: 2-98 % of the first frame),
 * colormap ("viridis"), opacity (1), level ("auto" or an index), rendering ("overlay" |
 * "interleaved"; default "overlay", or "interleaved" when beforeId is given), and callbacks
 * onFrame({t, level, cells, ms}), onLoading(bool), onError(err), onStretch({min, max}).
 *
 * rendering "overlay" draws the layer in a WebGL canvas of its own above the map's, redrawn with
 * the map's camera whenever MapLibre renders: a new timestep repaints that canvas only, not the
 * basemap (MapLibre's software repaint of the whole map is what bounds scrubbing in SwiftShader).
 * The layer is then above every map layer (labels included). "interleaved" draws in MapLibre's
 * own context at its place in the style (beforeId), so each timestep repaints the whole map.
 */
/**
 * @param {any} map a MapLibre GL JS map
 * @param {ChronozarrStore} store
 * @param {LayerOptions} [options]
 * @returns {ChronozarrLayer}
 */
export function addChronozarrLayer(map, store, options = {}) {
  const layer = new ChronozarrLayer(store, options);
  map.addLayer(layer, options.beforeId);
  return layer;
}

export class ChronozarrLayer {
  /**
   * @param {ChronozarrStore} store an open store
   * @param {LayerOptions} [options]
   */
  constructor(store, options = {}) {
    this.id = options.id ?? "chronozarr";
    this.type = "custom";
    this.renderingMode = "2d";
    this.store = store;
    this.projection = storeProjection(store);
    this.t = clampT(store, options.t ?? 0);
    this.levelMode = options.level ?? "auto";
    this.opacity = options.opacity ?? 1;
    this.colormap = options.colormap ?? "viridis";
    this.stretch = options.stretch ?? null;
    this.onFrame = options.onFrame ?? null;
    this.onLoading = options.onLoading ?? null;
    this.onError = options.onError ?? null;
    this.onStretch = options.onStretch ?? null;
    this.readAhead = options.readAhead ?? true;
    this.aheadSteps = options.aheadSteps ?? 5;
    // Decoded cell-timesteps, kept like a video player's frames: the reader keeps deltas
    // compressed (spec 10), so without this every pass over a series decodes every delta again.
    this.frameCache = new LRUCache(options.frameCacheBytes ?? FRAME_CACHE_BYTES);
    // false: colour one-band integer displays per fragment instead of through a value table.
    this.valueLut = options.valueLut ?? true;
    this.rendering = options.rendering ?? (options.beforeId ? "interleaved" : "overlay");
    if (this.rendering !== "overlay" && this.rendering !== "interleaved") {
      throw new RangeError(`rendering must be "overlay" or "interleaved", not ${JSON.stringify(this.rendering)}`);
    }
    /** The overlay canvas while the layer is on a map in "overlay" rendering, else null. */
    this.canvas = null;
    this._setDisplay(options);
    const b = store.bounds(0);
    const [lon, lat] = this.projection.forward([(b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2]);
    this.origin = mercatorOf(lon, lat);
    this._cells = new Map(); // "level/row/col" -> GL cell
    this._shown = []; // GL cells drawn now
    this._shownInfo = null; // {level, t, cells, key}
    this._ahead = new Map(); // decoded read-ahead "level/row/col/t" -> {data, mask}
    this._lattice = new Map(); // level -> {mx, my}: cell-corner lattice in mercator
    this._seq = 0;
    this._want = null;
    this._waiters = [];
    this.stats = { frames: 0, uploads: 0, uploadBytes: 0, readMs: 0, uploadMs: 0, drawMs: 0, renderWaitMs: 0 };
  }

  // --- display settings ----------------------------------------------------------------------

  /** @param {{mode?: string, band?: number, rgb?: number[], formula?: string}} display */
  _setDisplay({ mode, band, rgb, formula }) {
    const s = this.store;
    const byName = (n) => {
      let i = s.bands.findIndex((x) => x.common_name === n);
      if (i < 0) i = s.bands.findIndex((x) => x.name.toLowerCase() === n);
      return i;
    };
    const m = mode ?? this.mode ?? (s.nBands >= 3 ? "rgb" : "band");
    let spec;
    if (m === "rgb") {
      let idx = rgb ?? this.rgb;
      if (!idx) {
        idx = ["red", "green", "blue"].map(byName);
        if (!idx.every((i) => i >= 0)) idx = [0, Math.min(1, s.nBands - 1), Math.min(2, s.nBands - 1)];
      }
      spec = { kind: "rgb", bands: idx };
      this.rgb = idx;
    } else if (m === "band") {
      const b = band ?? this.band ?? 0;
      if (!(b >= 0 && b < s.nBands)) throw new RangeError(`band ${b} out of range 0..${s.nBands - 1}`);
      this.band = b;
      spec = { kind: "scalar", bands: [b], glsl: (ref) => ref(b), fn: (p) => p[b] };
    } else {
      const text = m === "formula" ? (formula ?? this.formula) : PRESETS[m];
      if (!text) throw new RangeError(`unknown display mode ${JSON.stringify(m)}`);
      const { tree, bands } = parseExpression(text, s.bands);
      if (bands.length > MAX_LAYERS) throw new RangeError(`a formula may use at most ${MAX_LAYERS} bands`);
      if (m === "formula") this.formula = text;
      spec = { kind: "scalar", bands, glsl: (ref) => toGlsl(tree, ref), fn: toFunction(tree), text };
    }
    this.mode = m;
    this._display = spec;
    this._displayKey = `${m}|${spec.bands.join(",")}|${spec.text ?? ""}`;
  }

  /** Change what is drawn: {mode, band, rgb, formula}; keeps the stretch unless `stretch` is given. */
  setDisplay(options) {
    this._setDisplay(options);
    if (options.stretch !== undefined) this.stretch = options.stretch;
    this._program = null; // recompiled for the new band math
    return this._request();
  }

  setStretch(min, max) {
    this.stretch = { min, max };
    this._repaint();
  }

  /** @param {string} name a key of COLORMAPS */
  setColormap(name) {
    if (!COLORMAPS[name]) throw new RangeError(`unknown colormap ${JSON.stringify(name)}`);
    this.colormap = name;
    this._lutDirty = true;
    this._repaint();
  }

  setOpacity(value) {
    this.opacity = Math.max(0, Math.min(1, value));
    this._repaint();
  }

  setLevel(level) {
    this.levelMode = level;
    return this._request();
  }

  /** Show timestep t; resolves true once it is drawn, false when superseded. */
  setTime(t) {
    this.t = clampT(this.store, t);
    return this._request();
  }

  /** Decode timestep t of the visible cells ahead of display (playback read-ahead). */
  async preload(t, signal) {
    const level = this.currentLevel();
    const cells = this.visibleCells(level);
    await Promise.all(cells.map((c) => this._cellData(level, clampT(this.store, t), c, signal, true)));
  }

  /**
   * Start reading the current timestep for `map`'s view before the layer is added to it, e.g.
   * while the basemap style loads, so the first frame does not wait for the style.
   */
  warm(map) {
    const prev = this._map;
    this._map = map;
    try {
      this.preload(this.t).catch(() => {});
    } finally {
      this._map = prev;
    }
  }

  /** Physical value of the display (band math) at a pixel, from a valueAt() answer; null if invalid. */
  displayValueOf(v) {
    if (!v) return null;
    const spec = this._display;
    if (spec.kind !== "scalar") return null;
    const phys = v.bands.map((b) => b.physical);
    if (spec.bands.some((b) => phys[b] === null)) return null;
    const r = spec.fn(phys);
    return Number.isFinite(r) ? r : null;
  }

  // --- geometry ------------------------------------------------------------------------------

  /** The level for the map's zoom (10.3): ground distance of one device pixel in store units. */
  currentLevel() {
    if (this.levelMode !== "auto") return Number(this.levelMode);
    const map = this._map;
    if (!map) return 0;
    const c = map.getCenter();
    const p = map.project(c);
    const q = map.unproject([p.x + 1, p.y]);
    const a = this.projection.inverse([c.lng, c.lat]);
    const b = this.projection.inverse([q.lng, q.lat]);
    const perCssPx = Math.hypot(b[0] - a[0], b[1] - a[1]);
    const dpr = map.getPixelRatio?.() ?? globalThis.devicePixelRatio ?? 1;
    const gsd = perCssPx / dpr;
    return Number.isFinite(gsd) ? this.store.levelFor(gsd) : 0;
  }

  /** Mercator lattice of cell corners of a level (computed once per level). */
  _latticeOf(level) {
    let lat = this._lattice.get(level);
    if (lat) return lat;
    const L = this.store.levels[level];
    const [gr, gc] = L.grid;
    const mx = new Float64Array((gr + 1) * (gc + 1));
    const my = new Float64Array((gr + 1) * (gc + 1));
    for (let r = 0; r <= gr; r++) {
      for (let c = 0; c <= gc; c++) {
        const [x, y] = this._project(L, Math.min(r * L.cs, L.height), Math.min(c * L.cs, L.width));
        mx[r * (gc + 1) + c] = x;
        my[r * (gc + 1) + c] = y;
      }
    }
    lat = { mx, my, gc };
    this._lattice.set(level, lat);
    return lat;
  }

  /** Mercator [0, 1] of the outer corner (row, col) of a level's pixel lattice (3.3 affine). */
  _project(L, row, col) {
    const [a, b, c, d, e, f] = L.transform;
    const [lon, lat] = this.projection.forward([a * col + b * row + c, d * col + e * row + f]);
    return mercatorOf(lon, lat);
  }

  /** Cells of `level` whose reprojected footprint intersects the map's viewport. */
  visibleCells(level = this.currentLevel()) {
    const map = this._map;
    const L = this.store.levels[level];
    if (!map) return this.store.cellsInWindow({ level, row0: 0, col0: 0, row1: L.height, col1: L.width });
    const canvas = map.getCanvas();
    const w = canvas.clientWidth || canvas.width;
    const h = canvas.clientHeight || canvas.height;
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (const [sx, sy] of [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
      [w / 2, 0],
      [w / 2, h],
      [0, h / 2],
      [w, h / 2],
    ]) {
      const ll = map.unproject([sx, sy]);
      const [mx, my] = mercatorOf(ll.lng, Math.max(-85.0511, Math.min(85.0511, ll.lat)));
      x0 = Math.min(x0, mx);
      x1 = Math.max(x1, mx);
      y0 = Math.min(y0, my);
      y1 = Math.max(y1, my);
    }
    const { mx, my, gc } = this._latticeOf(level);
    const out = [];
    const [gr] = L.grid;
    for (let r = 0; r < gr; r++) {
      for (let c = 0; c < L.grid[1]; c++) {
        const k = [r * (gc + 1) + c, r * (gc + 1) + c + 1, (r + 1) * (gc + 1) + c, (r + 1) * (gc + 1) + c + 1];
        const cx0 = Math.min(...k.map((i) => mx[i]));
        const cx1 = Math.max(...k.map((i) => mx[i]));
        const cy0 = Math.min(...k.map((i) => my[i]));
        const cy1 = Math.max(...k.map((i) => my[i]));
        const pad = (cx1 - cx0 + cy1 - cy0) * 0.01; // edges bow slightly between the corners
        if (cx1 + pad >= x0 && cx0 - pad <= x1 && cy1 + pad >= y0 && cy0 - pad <= y1) out.push({ row: r, col: c });
      }
    }
    return out;
  }

  /** Level-0 pixel {row, col} under a lon/lat, or null outside the store. */
  pixelAt(lngLat) {
    const [x, y] = this.projection.inverse([lngLat.lng, lngLat.lat]);
    return this.store.pixelAt({ x, y, level: 0 });
  }

  /** Lon/lat of the centre of a pixel (or of its outer corner with corner: true). */
  lngLatOf({ row, col, level = 0, corner = false }) {
    const L = this.store.levels[level];
    const d = corner ? 0 : 0.5;
    const [a, b, c, dd, e, f] = L.transform;
    return this.projection.forward([a * (col + d) + b * (row + d) + c, dd * (col + d) + e * (row + d) + f]);
  }

  /**
   * [[west, south], [east, north]] of the store's level 0, for map.fitBounds.
   * @returns {[[number, number], [number, number]]}
   */
  lngLatBounds() {
    const L = this.store.levels[0];
    const pts = [];
    for (let k = 0; k <= 8; k++) {
      const r = (k / 8) * L.height;
      const c = (k / 8) * L.width;
      pts.push(this._project(L, r, 0), this._project(L, r, L.width), this._project(L, 0, c), this._project(L, L.height, c));
    }
    const lls = pts.map(([mx, my]) => lonLatOfMercator(mx, my));
    const lon = lls.map((p) => p[0]);
    const lat = lls.map((p) => p[1]);
    return [
      [Math.min(...lon), Math.min(...lat)],
      [Math.max(...lon), Math.max(...lat)],
    ];
  }

  // --- reading -------------------------------------------------------------------------------

  /**
   * Bands the reads decode: up to the last band the display uses (a chunk is C order, so the
   * bands before it are a prefix of the chunk and a zstd delta is decoded only that far).
   */
  _readBands() {
    return Math.max(...this._display.bands) + 1;
  }

  /**
   * The decoded data of one cell-timestep: {data, mask}, data holding the display's bands (and
   * those before them). With `ahead`, the read is kept (as its promise, so a frame that asks for
   * it while it is still being decoded waits for the same read) until a frame takes it: playback
   * and scrub read-ahead.
   */
  async _cellData(level, t, cell, signal, ahead = false) {
    const bands = this._readBands();
    const key = `${level}/${cell.row}/${cell.col}/${t}/${bands}`;
    const kept = this.frameCache.get(key);
    if (kept) return kept;
    const hit = this._ahead.get(key);
    if (hit) {
      if (!ahead) this._ahead.delete(key);
      try {
        return await hit;
      } catch (err) {
        // A read-ahead abandoned (playback stopped) is read again for the frame that wants it.
        if (ahead || err?.name !== "AbortError" || signal?.aborted) throw err;
      }
    }
    const s = this.store;
    const read = Promise.all([
      s.readCell({ t, level, row: cell.row, col: cell.col, signal, bands }),
      s.hasMask ? s.readPlane("mask", { t, level, row: cell.row, col: cell.col, signal }) : null,
    ]).then(([data, mask]) => {
      const frame = { data, mask };
      this.frameCache.set(key, frame, data.data.byteLength + (mask?.byteLength ?? 0));
      return frame;
    });
    if (ahead) {
      this._ahead.set(key, read);
      read.catch(() => {
        if (this._ahead.get(key) === read) this._ahead.delete(key);
      });
      while (this._ahead.size > AHEAD_ENTRIES) this._ahead.delete(this._ahead.keys().next().value);
    }
    return read;
  }

  /**
   * Decode-ahead while scrubbing or playing: once timestep t is uploaded, read the next one in
   * the direction of travel (its chunks are decoded in the store's decode Workers when it has a
   * pool), so the next frame costs a texture upload only.
   */
  _readAhead(level, cells, t) {
    const n = this.store.nTime;
    if (n < 2 || this._lastT === undefined || this._lastT === t) return;
    const dir = (t - this._lastT + n) % n <= n / 2 ? 1 : -1;
    // Several timesteps ahead: a delta that must be fetched (anchors resident) takes longer than
    // a display frame, so one read in flight would bound the rate by its latency; with
    // `aheadSteps` in flight the reads overlap (bounded by AHEAD_ENTRIES).
    const steps = Math.max(1, Math.min(this.aheadSteps, n - 1, Math.floor(AHEAD_ENTRIES / Math.max(1, cells.length)) - 1));
    for (let k = 1; k <= steps; k++) {
      const next = (((t + dir * k) % n) + n) % n;
      for (const c of cells) this._cellData(level, next, c, undefined, true).catch(() => {});
    }
  }

  /** Stretch of a frame: 2-98 % of the display values of valid pixels (sampled). */
  _autoStretch(datas) {
    const s = this.store;
    const spec = this._display;
    const values = [];
    for (const { data, mask } of datas) {
      const n = data.height * data.width;
      const step = Math.max(1, Math.floor(n / 20000));
      const phys = new Array(s.nBands);
      for (let i = 0; i < n; i += step) {
        if (mask && mask[i] !== 1) continue;
        let ok = true;
        for (const b of spec.bands) {
          const v = data.data[b * n + i];
          if (!mask && s.nodata !== null && (v === s.nodata || (Number.isNaN(s.nodata) && Number.isNaN(v)))) ok = false;
          phys[b] = v * s.bands[b].scale + s.bands[b].offset;
        }
        if (!ok) continue;
        if (spec.kind === "rgb") for (const b of spec.bands) values.push(phys[b]);
        else {
          const r = spec.fn(phys);
          if (Number.isFinite(r)) values.push(r);
        }
      }
    }
    if (this.mode === "ndvi") return { min: -0.2, max: 0.9 };
    // A typed array sorts numerically in native code: ~20x faster than Array#sort with a
    // comparator on the first frame's ~80k samples, which ran on the main thread before it drew.
    const sorted = Float64Array.from(values).sort();
    const pick = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))];
    let min = sorted.length ? pick(0.02) : 0;
    let max = sorted.length ? pick(0.98) : 1;
    if (!(max > min)) max = min + (Math.abs(min) || 1) * 0.01;
    return { min, max };
  }

  /**
   * Resolves once the GPU has run every command the layer has issued so far (a WebGL2 fence;
   * at once without a context or fences): the frame drawn is then rendered, not only asked
   * for. Polled on tasks, never blocking the page's thread.
   * @returns {Promise<void>}
   */
  rendered() {
    const gl = this._gl;
    const sync = gl?.fenceSync?.(gl.SYNC_GPU_COMMANDS_COMPLETE, 0);
    if (!sync) return Promise.resolve();
    gl.flush();
    return new Promise((/** @type {() => void} */ resolve) => {
      const poll = () => {
        if (gl.isContextLost() || gl.getSyncParameter(sync, gl.SYNC_STATUS) === gl.SIGNALED) {
          gl.deleteSync(sync);
          resolve();
        } else setTimeout(poll, 1);
      };
      poll();
    });
  }

  /** Recompute the stretch from the frame on screen (2-98 %); resolves to {min, max}. */
  async autoStretch() {
    const info = this._shownInfo;
    if (!info) return this.stretch;
    const datas = await Promise.all(info.cells.map((c) => this._cellData(info.level, info.t, c)));
    this.stretch = this._autoStretch(datas);
    this.onStretch?.(this.stretch);
    this._repaint();
    return this.stretch;
  }

  /** Make the current (time, view, display) the drawn frame; resolves true once drawn. */
  _request() {
    const map = this._map;
    if (!map) return Promise.resolve(false);
    const level = this.currentLevel();
    const cells = this.visibleCells(level);
    const t = this.t;
    const key = `${level}|${t}|${this._displayKey}|${cells.map((c) => `${c.row},${c.col}`).join(";")}`;
    if (this._want?.key === key) return this._want.promise;
    if (this._shownInfo?.key === key) return Promise.resolve(true);
    const seq = ++this._seq;
    this._want?.ctrl.abort();
    const ctrl = new AbortController();
    const promise = (async () => {
      this.onLoading?.(true);
      const started = performance.now();
      const content = `${t}|${this._displayKey}`;
      const need = cells.filter((c) => this._cells.get(cellKey(level, c))?.content !== content);
      // A cell not on screen is uploaded as soon as its data is in (its texture holds stored
      // values: the stretch is a uniform), so the first frame's uploads overlap the reads of
      // the other cells; a cell on screen keeps its texture until the whole frame is read.
      const onScreen = new Set(this._shown);
      let uploadMs = 0;
      const early = new Set();
      const datas = await Promise.all(
        need.map((c) =>
          this._cellData(level, t, c, ctrl.signal).then((d) => {
            const glCell = this._cells.get(cellKey(level, c));
            if (seq === this._seq && this._gl && !(glCell && onScreen.has(glCell))) {
              const u0 = performance.now();
              this._upload(this._gl, level, c, d, content);
              uploadMs += performance.now() - u0;
              early.add(c);
            }
            return d;
          }),
        ),
      );
      if (seq !== this._seq) return false;
      const read = performance.now();
      this.stats.readMs = read - started;
      if (!this.stretch && datas.length) {
        this.stretch = this._autoStretch(datas);
        this.onStretch?.(this.stretch);
      }
      const gl = this._gl;
      need.forEach((c, i) => {
        if (!early.has(c) || this._cells.get(cellKey(level, c))?.content !== content) this._upload(gl, level, c, datas[i], content);
      });
      this.stats.uploadMs = uploadMs + performance.now() - read;
      const uploaded = performance.now();
      this._shown = cells.map((c) => this._cells.get(cellKey(level, c)));
      this._shownInfo = { level, t, cells, key };
      if (this.readAhead) this._readAhead(level, cells, t);
      this._lastT = t;
      await new Promise((resolve) => {
        this._waiters.push(resolve);
        this._repaint();
      });
      this.stats.frames++;
      this.stats.renderWaitMs = performance.now() - uploaded;
      this.onLoading?.(false);
      this.onFrame?.({ t, level, cells, ms: performance.now() - started });
      return true;
    })()
      .catch((err) => {
        if (err?.name === "AbortError" || seq !== this._seq) return false;
        this.onLoading?.(false);
        if (this.onError) this.onError(err);
        else throw err;
        return false;
      })
      .finally(() => {
        if (this._want?.promise === promise) this._want = null;
      });
    this._want = { key, ctrl, promise };
    return promise;
  }

  // --- GL ------------------------------------------------------------------------------------

  /**
   * Draw the current view before the layer is on a map, e.g. while MapLibre's code loads.
   * `camera` is a stand-in map at the camera the map will open with (camera.js `cameraMap`),
   * `container` the element the map will fill. The layer's overlay canvas goes into `container`
   * now and shows the frame with the camera's matrix; when the layer is added to the map (which
   * must open at that camera), onAdd adopts the same canvas, context, textures and program, so
   * nothing is read, uploaded or compiled twice and the map frame replaces nothing. The
   * program is compiled here, while the first chunks are still in flight. Resolves true once
   * the frame is drawn, false where there is no WebGL2 context or "interleaved" rendering
   * (then the first frame is the map's, as before).
   */
  drawBeforeMap(camera, container, { preserveDrawingBuffer = false } = {}) {
    if (this.rendering !== "overlay" || this._map) return Promise.resolve(false);
    const { canvas, gl } = overlayCanvas(container.ownerDocument, preserveDrawingBuffer);
    if (!gl) return Promise.resolve(false);
    // Above whatever the map puts in the container until onAdd moves it after the map's canvas.
    canvas.style.zIndex = "1";
    container.append(canvas);
    this.canvas = canvas;
    this._gl = gl;
    this._map = camera;
    this._beforeMap = true;
    this._lutTex = gl.createTexture();
    this._lutDirty = true;
    this._matrix = translated(camera.matrix, this.origin);
    this._hiddenInMap = false;
    try {
      this._program = this._compile(gl);
    } catch {
      this._program = null; // compiled (and its error reported) by the first draw
    }
    return this._request();
  }

  onAdd(map, gl) {
    if (this._beforeMap) {
      // Adopt the canvas drawn before the map (drawBeforeMap): it goes where _addOverlay puts
      // its own, and MapLibre's next render gives it the map's matrix.
      this._beforeMap = false;
      this._map = map;
      this.canvas.style.zIndex = "";
      map.getCanvas().after(this.canvas);
      this._bindOverlay(map);
      this._onMove = () => this._request();
      map.on("moveend", this._onMove);
      map.on("resize", this._onMove);
      this._request();
      return;
    }
    this._map = map;
    this._gl = gl;
    if (this.rendering === "overlay") this._gl = this._addOverlay(map, gl) ?? gl;
    const own = this._gl;
    this._lutTex = own.createTexture();
    this._lutDirty = true;
    this._onMove = () => this._request();
    map.on("moveend", this._onMove);
    map.on("resize", this._onMove);
    this._request();
  }

  onRemove(map, gl) {
    const own = this._gl ?? gl;
    map.off("moveend", this._onMove);
    map.off("resize", this._onMove);
    this._want?.ctrl.abort();
    for (const c of this._cells.values()) this._freeCell(own, c);
    this._cells.clear();
    this._shown = [];
    if (this._program) own.deleteProgram(this._program.program);
    this._program = null;
    own.deleteTexture(this._lutTex);
    if (this._vlutTex) own.deleteTexture(this._vlutTex);
    this._vlutTex = null;
    this._vlutKey = null;
    if (this.canvas) {
      map.off("render", this._onMapRender);
      this.canvas.remove();
      this.canvas = null;
    }
    for (const w of this._waiters.splice(0)) w();
    this._map = null;
    this._gl = null;
  }

  /**
   * "overlay" rendering: a WebGL2 canvas of the layer's own, stacked on the map's canvas (same
   * device-pixel size, no pointer events), with the map's context attributes for
   * preserveDrawingBuffer (so a page that reads the map's pixels can read the layer's). Returns
   * its context, or null (then the layer draws interleaved) where a second context is refused.
   */
  _addOverlay(map, mapGl) {
    const mapCanvas = map.getCanvas();
    const preserve = mapGl.getContextAttributes?.()?.preserveDrawingBuffer ?? false;
    const { canvas, gl } = overlayCanvas(mapCanvas.ownerDocument, preserve);
    if (!gl) {
      this.rendering = "interleaved";
      return null;
    }
    mapCanvas.after(canvas);
    this.canvas = canvas;
    this._bindOverlay(map);
    return gl;
  }

  /** Keep the overlay in step with `map`'s frames (hidden or removed layers are cleared). */
  _bindOverlay(map) {
    this._renderedThisFrame = false;
    this._hiddenInMap = false;
    // After each map frame: a layer MapLibre did not render (hidden, outside its zoom range,
    // removed from the style) is cleared from the overlay, as it would be from the map.
    this._onMapRender = () => {
      if (!this._renderedThisFrame && !this._hiddenInMap) {
        this._hiddenInMap = true;
        this._drawOverlay();
      }
      this._renderedThisFrame = false;
    };
    map.on("render", this._onMapRender);
  }

  /** Ask for the layer to be drawn again: its overlay alone, or the whole map when interleaved. */
  _repaint() {
    if (!this._map) return;
    if (!this.canvas) {
      this._map.triggerRepaint();
      return;
    }
    if (this._overlayFrame) return;
    // One overlay draw per animation frame, however many changes ask for it: the first change
    // since the last frame draws now (it is shown in the next frame, and a playback tick that
    // asked for it inside an animation frame is shown in that one), later ones wait for the next
    // frame. The document timeline's time is the latest frame's, constant between frames.
    const frame = this.canvas.ownerDocument.timeline?.currentTime;
    if (frame != null && frame !== this._drawnInFrame) {
      this._drawOverlay();
      return;
    }
    this._overlayFrame = globalThis.requestAnimationFrame(() => {
      this._overlayFrame = 0;
      this._drawOverlay();
    });
  }

  /** Draw the overlay canvas with the camera of the map's last render (or clear it when hidden). */
  _drawOverlay() {
    const gl = this._gl;
    const canvas = this.canvas;
    if (!gl || !canvas) return;
    this._drawnInFrame = canvas.ownerDocument.timeline?.currentTime;
    const src = this._map.getCanvas();
    if (canvas.width !== src.width || canvas.height !== src.height) {
      canvas.width = src.width;
      canvas.height = src.height;
    }
    if (canvas.style.width !== src.style.width || canvas.style.height !== src.style.height) {
      canvas.style.width = src.style.width || `${src.clientWidth}px`;
      canvas.style.height = src.style.height || `${src.clientHeight}px`;
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(0, 0, 0, 0);
    gl.clear(gl.COLOR_BUFFER_BIT);
    if (this._hiddenInMap || !this._matrix) {
      this._resolveWaiters();
      return;
    }
    this._draw(gl, this._matrix);
  }

  _resolveWaiters() {
    for (const w of this._waiters.splice(0)) w();
  }

  /** A one-band display of an integer store draws through a table of every value's colour. */
  _usesValueLut() {
    const spec = this._display;
    return spec.kind === "scalar" && spec.bands.length === 1 && this.valueLut !== false && VALUE_LUT_DTYPES[this.store.dtype] !== undefined;
  }

  _compileValueLut(gl) {
    const s = this.store;
    const tex = TEX[s.dtype];
    const base = VALUE_LUT_DTYPES[s.dtype].base;
    const vs = `#version 300 es
      uniform mat4 u_matrix;
      in vec2 a_pos;
      in vec2 a_uv;
      out vec2 v_uv;
      void main() { v_uv = a_uv; gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0); }`;
    // Two fetches per fragment: the stored value, then its colour (value-lut.js); validity,
    // scale/offset, band math, stretch, colour map and opacity are in the table. The mask test
    // (spec 2.3) is compiled in only for a store that has a mask.
    const fs = `#version 300 es
      precision highp float;
      precision highp int;
      precision highp ${tex.sampler};
      precision highp usampler2D;
      uniform highp ${tex.sampler} u_data;
      uniform highp usampler2D u_mask;
      uniform sampler2D u_vlut;
      uniform ivec2 u_size;
      in vec2 v_uv;
      out vec4 outColor;
      void main() {
        ivec2 p = min(ivec2(v_uv), u_size - 1);
        ${s.hasMask ? "if (texelFetch(u_mask, p, 0).r != 1u) discard;" : ""}
        int v = int(texelFetch(u_data, ivec3(p, 0), 0).r) + ${base};
        vec4 c = texelFetch(u_vlut, ivec2(v & 255, v >> 8), 0);
        if (c.a == 0.0) discard;
        outColor = c;
      }`;
    const program = linkProgram(gl, vs, fs);
    const u = {};
    for (const name of ["u_matrix", "u_data", "u_mask", "u_vlut", "u_size"]) u[name] = gl.getUniformLocation(program, name);
    return { program, u, valueLut: true };
  }

  /** The value table for the current display, stretch, colour map and opacity (rebuilt on change). */
  _bindValueLut(gl) {
    const s = this.store;
    const b = this._display.bands[0];
    const key = `${this._displayKey}|${this.stretch.min}|${this.stretch.max}|${this.colormap}|${this.opacity}`;
    if (!this._vlutTex) this._vlutTex = gl.createTexture();
    gl.activeTexture(gl.TEXTURE2);
    gl.bindTexture(gl.TEXTURE_2D, this._vlutTex);
    if (this._vlutKey === key) return;
    const phys = new Array(s.nBands).fill(0);
    const fn = this._display.fn;
    const lut = buildValueLut({
      dtype: s.dtype,
      nodata: s.nodata,
      hasMask: s.hasMask,
      scale: s.bands[b].scale,
      offset: s.bands[b].offset,
      fn: (v) => {
        phys[b] = v;
        return fn(phys);
      },
      min: this.stretch.min,
      max: this.stretch.max,
      colormap: COLORMAPS[this.colormap].lut,
      opacity: this.opacity,
    });
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, lut.width, lut.height, 0, gl.RGBA, gl.UNSIGNED_BYTE, lut.data);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    this._vlutKey = key;
  }

  _compile(gl) {
    const s = this.store;
    if (this._usesValueLut()) return this._compileValueLut(gl);
    const tex = TEX[s.dtype];
    const spec = this._display;
    const nd = s.nodata;
    const ref = (b) => `phys(${spec.bands.indexOf(b)}, p)`;
    const okAll = spec.bands.map((_, l) => `ok(${l}, p)`).join(" && ");
    const body =
      spec.kind === "rgb"
        ? `if (!(${okAll})) discard;
           vec3 c = clamp((vec3(phys(0, p), phys(1, p), phys(2, p)) - u_min) / (u_max - u_min), 0.0, 1.0);
           outColor = vec4(c * u_opacity, u_opacity);`
        : `if (!(${okAll})) discard;
           float v = ${spec.glsl(ref)};
           if (isnan(v) || isinf(v)) discard;
           float k = clamp((v - u_min) / (u_max - u_min), 0.0, 1.0);
           vec3 c = texture(u_lut, vec2(k * (255.0 / 256.0) + 0.5 / 256.0, 0.5)).rgb;
           outColor = vec4(c * u_opacity, u_opacity);`;
    const nodataTest = nd === null ? "false" : Number.isNaN(nd) ? "isnan(raw(l, p))" : `raw(l, p) == ${glslNumber(nd)}`;
    const vs = `#version 300 es
      uniform mat4 u_matrix;
      in vec2 a_pos;
      in vec2 a_uv;
      out vec2 v_uv;
      void main() { v_uv = a_uv; gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0); }`;
    const fs = `#version 300 es
      precision highp float;
      precision highp int;
      precision highp ${tex.sampler};
      precision highp usampler2D;
      uniform highp ${tex.sampler} u_data;
      uniform highp usampler2D u_mask;
      uniform sampler2D u_lut;
      uniform bool u_hasMask;
      uniform ivec2 u_size;
      uniform float u_scale[${MAX_LAYERS}];
      uniform float u_offset[${MAX_LAYERS}];
      uniform float u_min;
      uniform float u_max;
      uniform float u_opacity;
      in vec2 v_uv;
      out vec4 outColor;
      float raw(int l, ivec2 p) { return float(texelFetch(u_data, ivec3(p, l), 0).r); }
      bool ok(int l, ivec2 p) { return u_hasMask || !(${nodataTest}); }
      float phys(int l, ivec2 p) { return raw(l, p) * u_scale[l] + u_offset[l]; }
      void main() {
        ivec2 p = clamp(ivec2(floor(v_uv)), ivec2(0), u_size - 1);
        if (u_hasMask && texelFetch(u_mask, p, 0).r != 1u) discard;
        ${body}
      }`;
    const program = linkProgram(gl, vs, fs);
    const u = {};
    for (const name of [
      "u_matrix",
      "u_data",
      "u_mask",
      "u_lut",
      "u_hasMask",
      "u_size",
      "u_scale",
      "u_offset",
      "u_min",
      "u_max",
      "u_opacity",
    ]) {
      u[name] = gl.getUniformLocation(program, name);
    }
    const scale = new Float32Array(MAX_LAYERS);
    const offset = new Float32Array(MAX_LAYERS);
    spec.bands.forEach((b, l) => {
      scale[l] = s.bands[b].scale;
      offset[l] = s.bands[b].offset;
    });
    return { program, u, scale, offset };
  }

  _glCell(gl, level, cell) {
    const key = cellKey(level, cell);
    let c = this._cells.get(key);
    if (c) {
      this._cells.delete(key); // LRU order
      this._cells.set(key, c);
      return c;
    }
    const s = this.store;
    const L = s.levels[level];
    const r0 = cell.row * L.cs;
    const c0 = cell.col * L.cs;
    const h = Math.min(L.cs, L.height - r0);
    const w = Math.min(L.cs, L.width - c0);
    const n = SUBDIV;
    const verts = new Float32Array((n + 1) * (n + 1) * 4);
    let o = 0;
    for (let i = 0; i <= n; i++) {
      for (let j = 0; j <= n; j++) {
        const row = r0 + (h * i) / n;
        const col = c0 + (w * j) / n;
        const [mx, my] = this._project(L, row, col);
        verts[o++] = mx - this.origin[0];
        verts[o++] = my - this.origin[1];
        verts[o++] = (w * j) / n;
        verts[o++] = (h * i) / n;
      }
    }
    const idx = new Uint16Array(n * n * 6);
    o = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const a = i * (n + 1) + j;
        idx.set([a, a + 1, a + n + 1, a + 1, a + n + 2, a + n + 1], o);
        o += 6;
      }
    }
    const vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    const vbo = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, vbo);
    gl.bufferData(gl.ARRAY_BUFFER, verts, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 2, gl.FLOAT, false, 16, 0);
    gl.enableVertexAttribArray(1);
    gl.vertexAttribPointer(1, 2, gl.FLOAT, false, 16, 8);
    const ibo = gl.createBuffer();
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ibo);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
    gl.bindVertexArray(null);
    c = {
      key,
      level,
      row: cell.row,
      col: cell.col,
      w,
      h,
      vao,
      vbo,
      ibo,
      count: idx.length,
      tex: null,
      layers: 0,
      maskTex: null,
      content: null,
    };
    this._cells.set(key, c);
    const shown = new Set(this._shown);
    for (const [k, old] of this._cells) {
      if (this._cells.size <= GL_CELLS) break;
      if (shown.has(old) || old === c) continue;
      this._freeCell(gl, old);
      this._cells.delete(k);
    }
    return c;
  }

  _freeCell(gl, c) {
    gl.deleteVertexArray(c.vao);
    gl.deleteBuffer(c.vbo);
    gl.deleteBuffer(c.ibo);
    if (c.tex) gl.deleteTexture(c.tex);
    if (c.maskTex) gl.deleteTexture(c.maskTex);
  }

  _upload(gl, level, cell, { data, mask }, content) {
    const s = this.store;
    const c = this._glCell(gl, level, cell);
    const tex = TEX[s.dtype];
    const bands = this._display.bands;
    const n = c.w * c.h;
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.pixelStorei(gl.UNPACK_FLIP_Y_WEBGL, false);
    gl.pixelStorei(gl.UNPACK_PREMULTIPLY_ALPHA_WEBGL, false);
    if (!c.tex || c.layers !== bands.length) {
      if (c.tex) gl.deleteTexture(c.tex);
      c.tex = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
      gl.texStorage3D(gl.TEXTURE_2D_ARRAY, 1, gl[tex.internal], c.w, c.h, bands.length);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D_ARRAY, p, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D_ARRAY, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      gl.texParameteri(gl.TEXTURE_2D_ARRAY, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
      c.layers = bands.length;
    } else {
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
    }
    bands.forEach((b, l) => {
      gl.texSubImage3D(gl.TEXTURE_2D_ARRAY, 0, 0, 0, l, c.w, c.h, 1, gl[tex.format], gl[tex.type], data.data.subarray(b * n, (b + 1) * n));
    });
    this.stats.uploadBytes += bands.length * n * data.data.BYTES_PER_ELEMENT;
    if (mask) {
      if (!c.maskTex) {
        c.maskTex = gl.createTexture();
        gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
        gl.texStorage2D(gl.TEXTURE_2D, 1, gl.R8UI, c.w, c.h);
        for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
      } else {
        gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
      }
      gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, c.w, c.h, gl.RED_INTEGER, gl.UNSIGNED_BYTE, mask);
      this.stats.uploadBytes += n;
    }
    this.stats.uploads++;
    c.content = content;
  }

  /** MapLibre's render call: the camera of this map frame. */
  render(gl, options) {
    const matrix = translated(options.defaultProjectionData?.mainMatrix ?? options.modelViewProjectionMatrix, this.origin);
    if (!this.canvas) {
      this._draw(gl, matrix);
      return;
    }
    // Overlay: redraw now, in the map's frame, so basemap and layer show the same camera.
    this._matrix = matrix;
    this._renderedThisFrame = true;
    this._hiddenInMap = false;
    if (this._overlayFrame) {
      globalThis.cancelAnimationFrame(this._overlayFrame);
      this._overlayFrame = 0;
    }
    this._drawOverlay();
  }

  /** Uniforms and colour map of the per-fragment path (scale, offset, band math, stretch). */
  _bindStretchUniforms(gl, u, scale, offset) {
    if (this._lutDirty) {
      gl.bindTexture(gl.TEXTURE_2D, this._lutTex);
      gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, 256, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, COLORMAPS[this.colormap].lut);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      this._lutDirty = false;
    }
    gl.uniform1fv(u.u_scale, scale);
    gl.uniform1fv(u.u_offset, offset);
    gl.uniform1f(u.u_min, this.stretch.min);
    gl.uniform1f(u.u_max, this.stretch.max);
    gl.uniform1f(u.u_opacity, this.opacity);
    gl.uniform1i(u.u_data, 0);
    gl.uniform1i(u.u_mask, 1);
    gl.uniform1i(u.u_lut, 2);
    gl.uniform1i(u.u_hasMask, this.store.hasMask ? 1 : 0);
    gl.activeTexture(gl.TEXTURE2);
    gl.bindTexture(gl.TEXTURE_2D, this._lutTex);
  }

  _draw(gl, matrix) {
    const started = performance.now();
    try {
      if (!this._shown.length || !this.stretch) return;
      if (!this._program) this._program = this._compile(gl);
      const { program, u, scale, offset } = this._program;
      gl.useProgram(program);
      gl.uniformMatrix4fv(u.u_matrix, false, matrix);
      if (this._program.valueLut) {
        gl.uniform1i(u.u_data, 0);
        gl.uniform1i(u.u_mask, 1);
        gl.uniform1i(u.u_vlut, 2);
        this._bindValueLut(gl);
      } else {
        this._bindStretchUniforms(gl, u, scale, offset);
      }
      // Opaque (opacity 1): every fragment is either written with alpha 1 or discarded, so
      // blending would give the same pixels; without it the software rasterizer (SwiftShader)
      // does not read the framebuffer back per fragment.
      if (this.opacity < 1) {
        gl.enable(gl.BLEND);
        gl.blendFunc(gl.ONE, gl.ONE_MINUS_SRC_ALPHA);
      } else {
        gl.disable(gl.BLEND);
      }
      gl.disable(gl.DEPTH_TEST);
      gl.disable(gl.STENCIL_TEST);
      gl.disable(gl.CULL_FACE);
      for (const c of this._shown) {
        if (!c?.tex) continue;
        gl.activeTexture(gl.TEXTURE0);
        gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
        gl.activeTexture(gl.TEXTURE1);
        gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
        gl.uniform2i(u.u_size, c.w, c.h);
        gl.bindVertexArray(c.vao);
        gl.drawElements(gl.TRIANGLES, c.count, gl.UNSIGNED_SHORT, 0);
      }
      gl.bindVertexArray(null);
      gl.activeTexture(gl.TEXTURE0);
    } finally {
      this.stats.drawMs = performance.now() - started;
      this._resolveWaiters();
    }
  }
}

/** The overlay's canvas (no pointer events, at the container's origin) and its WebGL2 context, or gl null. */
function overlayCanvas(doc, preserveDrawingBuffer) {
  const canvas = doc.createElement("canvas");
  canvas.className = "chronozarr-overlay";
  canvas.style.cssText = "position:absolute;left:0;top:0;pointer-events:none;";
  return { canvas, gl: canvas.getContext("webgl2", { ...OVERLAY_CONTEXT, preserveDrawingBuffer }) };
}

function linkProgram(gl, vs, fs) {
  const program = gl.createProgram();
  for (const [type, src] of [
    [gl.VERTEX_SHADER, vs],
    [gl.FRAGMENT_SHADER, fs],
  ]) {
    const sh = gl.createShader(type);
    gl.shaderSource(sh, src);
    gl.compileShader(sh);
    if (!gl.getShaderParameter(sh, gl.COMPILE_STATUS)) throw new Error(`chronozarr layer shader: ${gl.getShaderInfoLog(sh)}`);
    gl.attachShader(program, sh);
    gl.deleteShader(sh);
  }
  gl.bindAttribLocation(program, 0, "a_pos");
  gl.bindAttribLocation(program, 1, "a_uv");
  gl.linkProgram(program);
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) throw new Error(`chronozarr layer program: ${gl.getProgramInfoLog(program)}`);
  return program;
}

function cellKey(level, c) {
  return `${level}/${c.row}/${c.col}`;
}

function clampT(store, t) {
  const n = store.nTime;
  const v = Math.trunc(Number(t));
  return Number.isFinite(v) ? Math.max(0, Math.min(n - 1, v)) : 0;
}

function glslNumber(v) {
  const s = String(Math.fround(v));
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

/**
 * mainMatrix x translate(origin): float64 on the CPU, so float32 vertices stay small offsets.
 * @param {ArrayLike<number>} m
 * @param {number[]} origin
 */
function translated(m, [ox, oy]) {
  const out = new Float32Array(16);
  for (let i = 0; i < 16; i++) out[i] = m[i];
  for (let i = 0; i < 4; i++) out[12 + i] = m[i] * ox + m[4 + i] * oy + m[12 + i];
  return out;
}

// chronozarr/map/layer.js: a chronozarr store as a MapLibre GL JS custom WebGL2 layer. This
// module adapts MapLibre (the custom layer's onAdd, render and onRemove, the map's events) and
// holds the display state; the work is delegated, one concern per module:
//
//   cells.js     which cells to draw: level of detail (spec 10.3), the cells in view, their
//                meshes (the pixel lattice reprojected with proj4), pixel <-> lon/lat
//   loader.js    a frame in time: read the cells in view, upload them, swap the frame when complete
//   frames.js    the decoded cell-timesteps (a frame cache) and the read-ahead in the direction of travel
//   gl-cells.js  the GL cell cache: each cell's mesh and stored-value textures
//   program.js   the shader programs (per fragment, or through value-lut.js's value table)
//   renderer.js  a draw: program, uniforms, colour map or value table, one draw call per cell
//   overlay.js   "overlay" rendering: the layer's own canvas above the map's (decision 0024)
//   display.js   what is drawn (RGB, a band, an index, a formula); stretch.js its range
//
// Each visible cell (spec 2.1) is one textured mesh; its stored values are uploaded as they are
// and coloured on the GPU (scale and offset 3.6, validity 2.3, band math, stretch, colour map),
// so scrubbing time only uploads the new timestep's values. The module never imports MapLibre:
// it works with the map object it is given.

import { CellSelection } from "./cells.js";
import { COLORMAPS } from "./colormaps.js";
import { storeProjection } from "./crs.js";
import { displayValue, readBands, resolveDisplay } from "./display.js";
import { FrameReader } from "./frames.js";
import { GLCells } from "./gl-cells.js";
import { FrameLoader } from "./loader.js";
import { Overlay, fitsCanvas, overlayCanvas } from "./overlay.js";
import { Renderer, rendered } from "./renderer.js";
import { autoStretch } from "./stretch.js";

/**
 * @import {ChronozarrStore} from "../store.js"
 * @import {Cell, LngLatLike, MapView} from "./cells.js"
 * @import {DisplaySettings, DisplaySpec} from "./display.js"
 * @import {Frame} from "./frames.js"
 * @import {Stretch} from "./stretch.js"
 */

/**
 * The layer's options (see addChronozarrLayer).
 * @typedef {object} LayerOptions
 * @property {string} [id] "chronozarr"
 * @property {string} [beforeId] the style layer to draw under (implies "interleaved" rendering)
 * @property {number} [t] timestep (0)
 * @property {string} [mode] "rgb" | "band" | "ndvi" | "formula" (or another preset of expression.js)
 * @property {number} [band] band index, for "band"
 * @property {number[]} [rgb] [r, g, b] band indices (default: by common_name)
 * @property {string} [formula] band math over common_name, for "formula"
 * @property {Stretch | null} [stretch] default: 2-98 % of the first frame
 * @property {string} [colormap] "viridis"
 * @property {number} [opacity] 1
 * @property {"auto" | number | string} [level] "auto" (by zoom) or a level index
 * @property {"overlay" | "interleaved"} [rendering] default "overlay", "interleaved" with beforeId
 * @property {boolean} [readAhead] decode the next timesteps in the direction of travel (true)
 * @property {number} [aheadSteps] how many timesteps ahead (5)
 * @property {number} [frameCacheBytes] decoded cell-timesteps kept (128 MiB; 0: decode each time)
 * @property {boolean} [valueLut] false: colour one-band integer displays per fragment
 * @property {boolean} [cpuColour] false: one-band integer displays fetch their colours from the value table on the GPU instead of from cells coloured on the CPU (decision 0062)
 * @property {(f: {t: number, level: number, cells: Cell[], ms: number}) => void} [onFrame] after a timestep was drawn
 * @property {(loading: boolean) => void} [onLoading]
 * @property {(err: any) => void} [onError] without it, a read error rejects setTime's promise
 * @property {(s: Stretch) => void} [onStretch] the stretch was computed
 */

/**
 * The layer's figures of its last frame (and counts since it was made).
 * @typedef {object} LayerStats
 * @property {number} frames
 * @property {number} uploads
 * @property {number} uploadBytes
 * @property {number} readMs
 * @property {number} uploadMs
 * @property {number} drawMs
 * @property {number} renderWaitMs
 * @property {boolean} cpuColoured the last frame's cells were coloured on the CPU (decisions 0062, 0073)
 */

/**
 * Add a chronozarr layer to a MapLibre map. `store` is an open store (openStore from
 * chronozarr-tools). Returns the ChronozarrLayer (its methods change time, display and view).
 *
 * rendering "overlay" draws the layer in a WebGL canvas of its own above the map's, redrawn with
 * the map's camera whenever MapLibre renders: a new timestep repaints that canvas only, not the
 * basemap (MapLibre's software repaint of the whole map is what bounds scrubbing in SwiftShader).
 * The layer is then above every map layer (labels included). "interleaved" draws in MapLibre's
 * own context at its place in the style (beforeId), so each timestep repaints the whole map.
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
    /** MapLibre's custom layer interface. */
    this.id = options.id ?? "chronozarr";
    this.type = /** @type {const} */ ("custom");
    this.renderingMode = /** @type {const} */ ("2d");
    this.store = store;
    this.projection = storeProjection(store);
    this.t = clampT(store, options.t ?? 0);
    /** @type {"auto" | number | string} */
    this.levelMode = options.level ?? "auto";
    this.opacity = options.opacity ?? 1;
    this.colormap = options.colormap ?? "viridis";
    /** @type {Stretch | null} */
    this.stretch = options.stretch ?? null;
    /** The stretch of each display the layer has left (display key -> stretch), for setDisplay. @type {Map<string, Stretch>} */
    this._stretches = new Map();
    this.onFrame = options.onFrame ?? null;
    this.onLoading = options.onLoading ?? null;
    this.onError = options.onError ?? null;
    this.onStretch = options.onStretch ?? null;
    this.readAhead = options.readAhead ?? true;
    // false: colour one-band integer displays per fragment instead of through a value table.
    this.valueLut = options.valueLut ?? true;
    // false: a value-table display fetches its colours on the GPU instead of colouring the cells
    // on screen on the CPU (decision 0062).
    this.cpuColour = options.cpuColour ?? true;
    // The first frame fetches its colours from the value table on the GPU all the same (decision
    // 0073): its cells' values are uploaded as they arrive, so after the last one only the table
    // is made and drawn through, where colouring the cells on the CPU (and uploading 1 MiB of
    // RGBA8 a 512 x 512 cell) came between the last cell's arrival and the draw. The same table,
    // so the same pixels; frames of new content after it are coloured on the CPU.
    this._gpuFirst = true;
    /** @type {"overlay" | "interleaved"} */
    this.rendering = options.rendering ?? (options.beforeId ? "interleaved" : "overlay");
    if (this.rendering !== "overlay" && this.rendering !== "interleaved") {
      throw new RangeError(`rendering must be "overlay" or "interleaved", not ${JSON.stringify(this.rendering)}`);
    }
    /** The overlay canvas while the layer is on a map in "overlay" rendering, else null. @type {HTMLCanvasElement | null} */
    this.canvas = null;
    /** @type {LayerStats} */
    this.stats = { frames: 0, uploads: 0, uploadBytes: 0, readMs: 0, uploadMs: 0, drawMs: 0, renderWaitMs: 0, cpuColoured: false };
    /** @type {DisplaySettings} */
    this._settings = /** @type {DisplaySettings} */ ({});
    /** @type {DisplaySpec} */
    this._display = null;
    this._setDisplay(options);
    this._selection = new CellSelection(store, this.projection);
    this._frames = new FrameReader(store, { frameCacheBytes: options.frameCacheBytes, aheadSteps: options.aheadSteps });
    this._cells = new GLCells(this.stats);
    this._renderer = new Renderer(store, this._cells);
    /** @type {Overlay | null} */
    this._overlay = null;
    this._loader = new FrameLoader(this);
    /** The map (or camera.js stand-in) the layer draws for. @type {any} */
    this._map = null;
    /** @type {WebGL2RenderingContext | null} */
    this._gl = null;
    this._beforeMap = false;
    /** @type {(() => void) | null} */
    this._onMove = null;
  }

  // --- display state -------------------------------------------------------------------------

  /** @param {Partial<DisplaySettings>} request */
  _setDisplay(request) {
    const { settings, spec } = resolveDisplay(this.store, request, this._settings);
    this._settings = settings;
    this._display = spec;
  }

  /** The display mode: "rgb", "band", "formula" or a preset ("ndvi", ...). */
  get mode() {
    return this._settings.mode;
  }

  /** The band of "band" mode (the last one chosen). */
  get band() {
    return this._settings.band;
  }

  /** The [r, g, b] bands of "rgb" mode (the last ones chosen). */
  get rgb() {
    return this._settings.rgb;
  }

  /** The formula of "formula" mode (the last one given). */
  get formula() {
    return this._settings.formula;
  }

  /** The decoded cell-timesteps kept (frames.js). */
  get frameCache() {
    return this._frames.cache;
  }

  /** Timesteps decoded ahead of the one shown. */
  get aheadSteps() {
    return this._frames.aheadSteps;
  }

  set aheadSteps(n) {
    this._frames.aheadSteps = n;
  }

  /** Mercator origin of the layer's meshes. */
  get origin() {
    return this._selection.origin;
  }

  /**
   * Change what is drawn: {mode, band, rgb, formula}; resolves true once drawn. The stretch: kept
   * when `stretch` is not given; `stretch: {min, max}` sets it; `stretch: null` gives the display
   * its own: the one it had when the layer last left it (so a round trip through other modes
   * comes back to the same picture), else 2-98 % of its first frame. autoStretch() recomputes.
   * @param {Partial<DisplaySettings> & {stretch?: Stretch | null}} options
   * @returns {Promise<boolean>}
   */
  setDisplay(options) {
    if (this.stretch) this._stretches.set(this._display.key, this.stretch);
    this._setDisplay(options);
    if (options.stretch === null) {
      this.stretch = this._stretches.get(this._display.key) ?? null;
      if (this.stretch) this.onStretch?.(this.stretch);
    } else if (options.stretch !== undefined) this.stretch = options.stretch;
    this._renderer.displayChanged(); // recompiled for the new band math
    return this._request();
  }

  /**
   * @param {number} min
   * @param {number} max
   */
  setStretch(min, max) {
    this.stretch = { min, max };
    this._repaint();
  }

  /** @param {string} name a key of COLORMAPS */
  setColormap(name) {
    if (!COLORMAPS[name]) throw new RangeError(`unknown colormap ${JSON.stringify(name)}`);
    this.colormap = name;
    this._renderer.colormapChanged();
    this._repaint();
  }

  /** @param {number} value 0..1 */
  setOpacity(value) {
    this.opacity = Math.max(0, Math.min(1, value));
    this._repaint();
  }

  /**
   * "auto" (by zoom) or a level index.
   * @param {"auto" | number | string} level
   * @returns {Promise<boolean>}
   */
  setLevel(level) {
    this.levelMode = level;
    return this._request();
  }

  /**
   * Show timestep t; resolves true once it is drawn, false when superseded.
   * @param {number} t
   * @returns {Promise<boolean>}
   */
  setTime(t) {
    this.t = clampT(this.store, t);
    return this._request();
  }

  /**
   * Physical value of the display (band math) at a pixel, from a valueAt() answer; null if invalid.
   * @param {import("../types.js").ValueAt | {bands: {physical: number | null}[]} | null | undefined} v
   * @returns {number | null}
   */
  displayValueOf(v) {
    return displayValue(this._display, v);
  }

  /**
   * Recompute the stretch from the frame on screen (2-98 %); resolves to {min, max}.
   * @returns {Promise<Stretch | null>}
   */
  async autoStretch() {
    const info = this._loader.shownInfo;
    if (!info) return this.stretch;
    const datas = await Promise.all(info.cells.map((c) => this._read(info.level, info.t, c)));
    this.stretch = autoStretch(this.store, this._display, datas);
    this.onStretch?.(this.stretch);
    this._repaint();
    return this.stretch;
  }

  // --- geometry (cells.js) ---------------------------------------------------------------------

  /**
   * The level drawn: "auto" follows the map's zoom (10.3: the ground distance of one device pixel).
   * @returns {number}
   */
  currentLevel() {
    if (this.levelMode !== "auto") return Number(this.levelMode);
    return this._selection.levelFor(this._map);
  }

  /**
   * Cells of `level` whose reprojected footprint intersects the map's viewport.
   * @param {number} [level]
   * @returns {Cell[]}
   */
  visibleCells(level = this.currentLevel()) {
    return this._selection.visible(this._map, level);
  }

  /**
   * Level-0 pixel {row, col} under a lon/lat ([lng, lat], as lngLatOf returns, or MapLibre's
   * {lng, lat}), or null outside the store.
   * @param {LngLatLike} lngLat
   * @returns {Cell | null}
   */
  pixelAt(lngLat) {
    return this._selection.pixelAt(lngLat);
  }

  /**
   * [lng, lat] of the centre of a pixel (or of its outer corner with corner: true); pixelAt
   * takes it back to the pixel.
   * @param {{row: number, col: number, level?: number, corner?: boolean}} pixel
   * @returns {[number, number]}
   */
  lngLatOf(pixel) {
    return this._selection.lngLatOf(pixel);
  }

  /**
   * [[west, south], [east, north]] of the store's level 0, for map.fitBounds.
   * @returns {[[number, number], [number, number]]}
   */
  lngLatBounds() {
    return this._selection.lngLatBounds();
  }

  // --- reading (frames.js) ---------------------------------------------------------------------

  /**
   * @param {number} level
   * @param {number} t
   * @param {Cell} cell
   * @param {AbortSignal} [signal]
   * @returns {Promise<Frame>}
   */
  _read(level, t, cell, signal) {
    return this._frames.read(level, t, cell, readBands(this._display), signal);
  }

  /**
   * Decode timestep t of the visible cells ahead of display (playback read-ahead).
   * @param {number} t
   * @param {AbortSignal} [signal]
   */
  async preload(t, signal) {
    const level = this.currentLevel();
    const cells = this.visibleCells(level);
    const bands = readBands(this._display);
    await Promise.all(cells.map((c) => this._frames.read(level, clampT(this.store, t), c, bands, signal, true)));
  }

  /**
   * Start reading the current timestep for `map`'s view before the layer is added to it, e.g.
   * while the basemap style loads, so the first frame does not wait for the style.
   * @param {MapView} map
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

  /**
   * Resolves once the GPU has run every command the layer has issued so far (a WebGL2 fence;
   * at once without a context or fences): the frame drawn is then rendered, not only asked
   * for. Polled on tasks, never blocking the page's thread.
   * @returns {Promise<void>}
   */
  rendered() {
    return rendered(this._gl);
  }

  /**
   * Make the current (time, view, display) the drawn frame (loader.js); resolves true once drawn.
   * @returns {Promise<boolean>}
   */
  _request() {
    return this._loader.request();
  }

  /**
   * Upload a cell-timestep into its GL cell (made from its mesh when new).
   * @param {number} level
   * @param {Cell} cell
   * @param {Frame} frame
   * @param {string} content
   */
  _upload(level, cell, frame, content) {
    const textures = !this._renderer.coloursOnCpu(this._drawState());
    this._cells.upload(this._gl, this._prepare(level, cell), frame, this._display.bands, this.store.dtype, content, textures);
  }

  /**
   * The first frame is drawn (or a frame of new content is asked for): frames from now on are
   * coloured on the CPU (decisions 0062, 0073), and the program that does so is compiled now, in
   * a task after the first frame's, not at the next step's draw. Once only.
   */
  _afterFirstFrame() {
    if (!this._gpuFirst) return;
    this._gpuFirst = false;
    if (!this._gl) return;
    try {
      this._renderer.recompile(this._gl, this._drawState());
    } catch {
      this._renderer.displayChanged(); // compiled (and its error reported) by the next draw
    }
  }

  /**
   * The GL cell of (level, cell): made from its mesh (reprojected with proj4) when new, so the
   * loader makes it while the cell's data is in flight rather than after it arrives.
   * @param {number} level
   * @param {Cell} cell
   */
  _prepare(level, cell) {
    return this._cells.cell(this._gl, level, cell, () => this._selection.mesh(level, cell), this._loader.shown);
  }

  // --- GL and MapLibre ---------------------------------------------------------------------------

  /**
   * Draw the current view before the layer is on a map, e.g. while MapLibre's code loads.
   * `camera` is a stand-in map at the camera the map will open with (camera.js `cameraMap`),
   * `container` the element the map will fill. The layer's overlay canvas goes into `container`
   * now and shows the frame with the camera's matrix; when the layer is added to the map (which
   * must open at that camera), onAdd adopts the same canvas, context, textures and program, so
   * nothing is read, uploaded or compiled twice and the map frame replaces nothing. The
   * program is compiled here, while the first chunks are still in flight. Resolves true once
   * the frame is drawn, false where there is no WebGL2 context or "interleaved" rendering
   * (then the first frame is the map's, as before). Decision 0027. `made`: an overlay canvas and
   * context made earlier (overlay.js `overlayCanvas`, e.g. by the page's early script while it
   * waited on the network, decision 0066), used when it has the camera's canvas size and
   * `preserveDrawingBuffer`; otherwise the layer makes its own.
   * @param {ReturnType<typeof import("./camera.js").cameraMap>} camera
   * @param {HTMLElement} container
   * @param {{preserveDrawingBuffer?: boolean, made?: {canvas: HTMLCanvasElement, gl: WebGL2RenderingContext | null} | null}} [options]
   * @returns {Promise<boolean>}
   */
  drawBeforeMap(camera, container, { preserveDrawingBuffer = false, made = null } = {}) {
    if (this.rendering !== "overlay" || this._map) return Promise.resolve(false);
    const like = camera.getCanvas();
    const { canvas, gl } = fitsCanvas(made, like, preserveDrawingBuffer)
      ? made
      : overlayCanvas(container.ownerDocument, preserveDrawingBuffer, like);
    if (!gl) return Promise.resolve(false);
    // Above whatever the map puts in the container until onAdd moves it after the map's canvas.
    canvas.style.zIndex = "1";
    container.append(canvas);
    this._useOverlay(canvas, gl);
    this._map = camera;
    this._beforeMap = true;
    this._overlay.follow(camera, false);
    this._overlay.matrix = translated(camera.matrix, this.origin);
    try {
      this._renderer.compile(gl, this._drawState());
    } catch {
      this._renderer.displayChanged(); // compiled (and its error reported) by the first draw
    }
    return this._request();
  }

  /**
   * MapLibre's custom layer: added to `map`.
   * @param {any} map
   * @param {WebGL2RenderingContext} gl the map's context
   */
  onAdd(map, gl) {
    this._map = map;
    if (this._beforeMap) {
      // Adopt the canvas drawn before the map (drawBeforeMap): it goes where the overlay's own
      // canvas would, and MapLibre's next render gives it the map's matrix.
      this._beforeMap = false;
      this.canvas.style.zIndex = "";
      map.getCanvas().after(this.canvas);
      this._overlay.follow(map, true);
    } else {
      this._gl = gl;
      if (this.rendering === "overlay") this._addOverlay(map, gl);
      if (!this._overlay) this._renderer.attach(gl); // interleaved: MapLibre's context
    }
    this._onMove = () => this._request();
    map.on("moveend", this._onMove);
    map.on("resize", this._onMove);
    this._request();
  }

  /**
   * MapLibre's custom layer: removed from `map`; frees the layer's GL resources.
   * @param {any} map
   * @param {WebGL2RenderingContext} gl
   */
  onRemove(map, gl) {
    const own = this._gl ?? gl;
    map.off("moveend", this._onMove);
    map.off("resize", this._onMove);
    this._loader.stop();
    this._cells.clear(own);
    this._renderer.detach(own);
    if (this._overlay) {
      this._overlay.remove();
      this._overlay = null;
      this.canvas = null;
    }
    this._map = null;
    this._gl = null;
  }

  /**
   * MapLibre's custom layer: the camera of this map frame.
   * @param {WebGL2RenderingContext} gl
   * @param {any} options MapLibre's render options (defaultProjectionData.mainMatrix)
   */
  render(gl, options) {
    const matrix = translated(options.defaultProjectionData?.mainMatrix ?? options.modelViewProjectionMatrix, this.origin);
    if (this._overlay) this._overlay.mapFrame(matrix);
    else this._draw(gl, matrix);
  }

  /**
   * "overlay" rendering: a canvas of the layer's own stacked on the map's canvas (same device-pixel
   * size, no pointer events), with the map's preserveDrawingBuffer. Where a second context is
   * refused the layer draws interleaved.
   * @param {any} map
   * @param {WebGL2RenderingContext} mapGl
   */
  _addOverlay(map, mapGl) {
    const mapCanvas = map.getCanvas();
    const preserve = mapGl.getContextAttributes?.()?.preserveDrawingBuffer ?? false;
    const { canvas, gl } = overlayCanvas(mapCanvas.ownerDocument, preserve, mapCanvas);
    if (!gl) {
      this.rendering = "interleaved";
      return;
    }
    mapCanvas.after(canvas);
    this._useOverlay(canvas, gl);
    this._overlay.follow(map, true);
  }

  /**
   * @param {HTMLCanvasElement} canvas
   * @param {WebGL2RenderingContext} gl
   */
  _useOverlay(canvas, gl) {
    this.canvas = canvas;
    this._gl = gl;
    this._renderer.attach(gl);
    this._overlay = new Overlay(
      canvas,
      gl,
      (g, matrix) => this._draw(g, matrix),
      () => this._loader.drawn(),
      () => this._loader.shown.flatMap((c) => (c ? [c.bounds] : [])),
    );
  }

  /** Ask for the layer to be drawn again: its overlay alone, or the whole map when interleaved. */
  _repaint() {
    if (!this._map) return;
    if (this._overlay) this._overlay.repaint();
    else this._map.triggerRepaint();
  }

  /** @returns {import("./renderer.js").DrawState} */
  _drawState() {
    const { stretch, colormap, opacity, valueLut } = this;
    return { spec: this._display, stretch, colormap, opacity, valueLut, cpuColour: this.cpuColour && !this._gpuFirst };
  }

  /**
   * @param {WebGL2RenderingContext} gl
   * @param {Float32Array} matrix
   */
  _draw(gl, matrix) {
    const started = performance.now();
    try {
      this._renderer.draw(gl, matrix, this._loader.shown, this._drawState());
    } finally {
      this.stats.drawMs = performance.now() - started;
      this.stats.cpuColoured = Boolean(this._renderer.program?.cpuColour);
      this._loader.drawn();
    }
  }
}

/**
 * A timestep index clamped to the store's series (0 for anything not a number).
 * @param {{nTime: number}} store
 * @param {number} t
 */
function clampT(store, t) {
  const n = store.nTime;
  const v = Math.trunc(Number(t));
  return Number.isFinite(v) ? Math.max(0, Math.min(n - 1, v)) : 0;
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

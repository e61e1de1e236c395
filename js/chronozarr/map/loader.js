// chronozarr/map/loader.js: the layer's frames in time: make the current (timestep, view,
// display) the drawn frame. It reads the visible cells' data (frames.js), uploads each cell as
// its data comes in, computes the first stretch, swaps the frame on screen only once every cell
// of it is uploaded (no mixed frame), starts the read-ahead, and resolves once the frame is drawn.
// A newer request supersedes an older one (its reads are aborted, its promise resolves false).

import { readBands } from "./display.js";
import { FIXED_STRETCH, autoStretch, stretchOf, stretchSamples } from "./stretch.js";

/**
 * What the loader reads from the layer (layer.js) it loads for.
 * @typedef {object} LoaderHost
 * @property {any} _map the map (or camera.js stand-in); no request without one
 * @property {WebGL2RenderingContext | null} _gl
 * @property {number} t
 * @property {import("./display.js").DisplaySpec} _display
 * @property {import("./stretch.js").Stretch | null} stretch
 * @property {boolean} readAhead
 * @property {import("../store.js").ChronozarrStore} store
 * @property {{frames: number, readMs: number, uploadMs: number, renderWaitMs: number}} stats
 * @property {import("./frames.js").FrameReader} _frames
 * @property {import("./gl-cells.js").GLCells} _cells
 * @property {() => number} currentLevel
 * @property {(level: number) => Cell[]} visibleCells
 * @property {(level: number, t: number, cell: Cell, signal?: AbortSignal) => Promise<import("./frames.js").Frame>} _read
 * @property {(level: number, cell: Cell, frame: import("./frames.js").Frame, content: string) => void} _upload
 * @property {(level: number, cell: Cell) => void} _prepare
 * @property {() => void} _afterFirstFrame the first frame is drawn, or new content is asked for after it
 * @property {() => void} _repaint
 * @property {((loading: boolean) => void) | null} onLoading
 * @property {((f: {t: number, level: number, cells: Cell[], ms: number}) => void) | null} onFrame
 * @property {((err: any) => void) | null} onError
 * @property {((s: import("./stretch.js").Stretch) => void) | null} onStretch
 */
/** @typedef {{row: number, col: number}} Cell */

export class FrameLoader {
  /** @param {LoaderHost} host */
  constructor(host) {
    this.host = host;
    /** GL cells drawn now. @type {(import("./gl-cells.js").GLCell | undefined)[]} */
    this.shown = [];
    /** What is drawn now. @type {{level: number, t: number, cells: Cell[], key: string} | null} */
    this.shownInfo = null;
    /** The frame being read. @type {{key: string, ctrl: AbortController, promise: Promise<boolean>} | null} */
    this._want = null;
    this._seq = 0;
    /** Frames waiting for their draw. @type {(() => void)[]} */
    this._waiters = [];
    /** The timestep of the last frame drawn (read-ahead's direction of travel). @type {number | undefined} */
    this._lastT = undefined;
  }

  /** The layer drew (or cleared) its canvas: the frames waiting for it are on screen. */
  drawn() {
    for (const w of this._waiters.splice(0)) w();
  }

  /** The layer left its map: abort the read in flight, forget the cells on screen. */
  stop() {
    this._want?.ctrl.abort();
    this.shown = [];
    this.drawn();
  }

  /**
   * Make the current (time, view, display) the drawn frame; resolves true once drawn, false
   * when superseded (or without a map).
   * @returns {Promise<boolean>}
   */
  request() {
    const h = this.host;
    if (!h._map) return Promise.resolve(false);
    const level = h.currentLevel();
    const cells = h.visibleCells(level);
    const t = h.t;
    const spec = h._display;
    const key = `${level}|${t}|${spec.key}|${cells.map((c) => `${c.row},${c.col}`).join(";")}`;
    if (this._want?.key === key) return this._want.promise;
    if (this.shownInfo?.key === key) return Promise.resolve(true);
    const seq = ++this._seq;
    this._want?.ctrl.abort();
    const ctrl = new AbortController();
    const promise = this._load(seq, ctrl.signal, level, cells, t, spec, key)
      .catch((err) => {
        if (err?.name === "AbortError" || seq !== this._seq) return false;
        h.onLoading?.(false);
        if (h.onError) h.onError(err);
        else throw err;
        return false;
      })
      .finally(() => {
        if (this._want?.promise === promise) this._want = null;
      });
    this._want = { key, ctrl, promise };
    return promise;
  }

  /**
   * @param {number} seq
   * @param {AbortSignal} signal
   * @param {number} level
   * @param {Cell[]} cells
   * @param {number} t
   * @param {import("./display.js").DisplaySpec} spec
   * @param {string} key
   */
  async _load(seq, signal, level, cells, t, spec, key) {
    const h = this.host;
    if (this.shownInfo) h._afterFirstFrame();
    h.onLoading?.(true);
    const started = performance.now();
    const content = `${t}|${spec.key}`;
    const need = cells.filter((c) => h._cells.get(level, c)?.content !== content);
    // A cell not on screen is uploaded as soon as its data is in (its texture holds stored
    // values: the stretch is a uniform), so the first frame's uploads overlap the reads of the
    // other cells; a cell on screen keeps its texture until the whole frame is read (decision 0027).
    const onScreen = new Set(this.shown);
    let uploadMs = 0;
    const early = new Set();
    // The first stretch's samples are taken from each cell as it arrives, like its upload, so
    // after the last cell only the sort is left (decision 0061).
    const stretching = !h.stretch && !FIXED_STRETCH[spec.mode];
    /** @type {Float64Array[]} */
    const samples = [];
    const reads = need.map((c, i) =>
      h._read(level, t, c, signal).then((d) => {
        const glCell = h._cells.get(level, c);
        if (seq === this._seq && h._gl && !(glCell && onScreen.has(glCell))) {
          const u0 = performance.now();
          h._upload(level, c, d, content);
          uploadMs += performance.now() - u0;
          early.add(c);
        }
        if (stretching && seq === this._seq) samples[i] = stretchSamples(h.store, spec, d);
        return d;
      }),
    );
    // The new cells' meshes and vertex arrays while their data is in flight.
    if (h._gl) for (const c of need) h._prepare(level, c);
    const datas = await Promise.all(reads);
    if (seq !== this._seq) return false;
    const read = performance.now();
    h.stats.readMs = read - started;
    if (!h.stretch && datas.length) {
      h.stretch = stretching ? stretchOf(samples) : autoStretch(h.store, spec, datas);
      h.onStretch?.(h.stretch);
    }
    need.forEach((c, i) => {
      if (!early.has(c) || h._cells.get(level, c)?.content !== content) h._upload(level, c, datas[i], content);
    });
    h.stats.uploadMs = uploadMs + performance.now() - read;
    const uploaded = performance.now();
    this.shown = cells.map((c) => h._cells.get(level, c));
    this.shownInfo = { level, t, cells, key };
    h._cells.retain(h._gl, this.shown); // the values and colours of cells off screen go (decision 0062)
    if (h.readAhead) h._frames.readAhead(level, cells, t, this._lastT, readBands(spec));
    this._lastT = t;
    await new Promise((/** @type {(v?: unknown) => void} */ resolve) => {
      this._waiters.push(resolve);
      h._repaint();
    });
    h.stats.frames++;
    // (after the frame that shows it: a task of the next animation frame's)
    if (h.stats.frames === 1) (globalThis.requestAnimationFrame ?? setTimeout)(() => setTimeout(() => h._afterFirstFrame(), 0));
    h.stats.renderWaitMs = performance.now() - uploaded;
    h.onLoading?.(false);
    h.onFrame?.({ t, level, cells, ms: performance.now() - started });
    return true;
  }
}

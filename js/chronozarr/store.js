// The public store API (spec 10): openStore and ChronozarrStore. Opening reads the root
// zarr.json (one GET with consolidated metadata, 10.1, 10.2); reads locate chunks from metadata
// alone and go through the chunk reader (chunks.js), which caches decoded anchors so that, once
// the anchors of a viewport are resident, any timestep costs one delta read (10.4).

import { ChunkReader } from "./chunks.js";
import { CorruptStoreError, FetchError, NotAChronozarrStoreError, StoreNotFoundError } from "./errors.js";
import { HttpSource } from "./http.js";
import { MAX_DOCUMENT_BYTES, parseJson } from "./jsondoc.js";
import { loadLevels } from "./levels.js";
import { DTYPES, V01_DEFAULT_SCALE, levelForResolution, parseArray, parseBands, parseRoot, pixelCentre, pixelOf } from "./metadata.js";
import { anchorsFirst, cellVolatility, planPrefetch, pool } from "./prefetch.js";
import { trimCopy, trueValues } from "./reconstruct.js";
import { physical } from "./physical.js";
import { isValid, validityOf } from "./validity.js";

/**
 * @import {Band, Cell, CellRequest, CrsInfo, DType, Encoding, Level, OpenOptions, PixelRef, PrefetchResult, Series, Stats,
 *   StoredArray, Temporal, ValueAt, BandValue} from "./types.js"
 * @import {LRUCache} from "./lru.js"
 */

const MiB = 1024 * 1024;

/** Defaults of openStore's options. */
export const DEFAULTS = Object.freeze({
  cacheBytes: 256 * MiB, // decoded anchors (and every chunk of a `none` store)
  indexCacheBytes: 16 * MiB, // decoded shard indices
  rawCacheBytes: 64 * MiB, // compressed delta chunks (prefetched or read)
  timeout: 30_000, // ms per request, so a stalled host fails instead of hanging
  concurrency: 6, // parallel requests of prefetch and series (a browser's per-host limit)
});

/** One timestep of one cell: every band, trimmed to the array shape, in the stored dtype. */
export class CellData {
  /**
   * @param {{t: number, level: number, row: number, col: number, y0: number, x0: number, height: number,
   *   width: number, nBands: number, dtype: DType, data: StoredArray}} init
   */
  constructor(init) {
    /** @type {number} */ this.t = init.t;
    /** @type {number} */ this.level = init.level;
    /** @type {number} */ this.row = init.row;
    /** @type {number} */ this.col = init.col;
    /** @type {number} */ this.y0 = init.y0;
    /** @type {number} */ this.x0 = init.x0;
    /** @type {number} */ this.height = init.height;
    /** @type {number} */ this.width = init.width;
    /** @type {number} */ this.nBands = init.nBands;
    /** @type {DType} */ this.dtype = init.dtype;
    /** (band, height, width), exact stored values, trimmed to the array. @type {StoredArray} */
    this.data = init.data;
  }

  /**
   * Band `i` as a (height * width) view of `data`.
   * @param {number} i
   * @returns {StoredArray}
   */
  band(i) {
    const n = this.height * this.width;
    return this.data.subarray(i * n, (i + 1) * n);
  }
}

/**
 * Open a chronozarr store (spec 10.1, 10.2): one GET of the root zarr.json when it carries
 * consolidated metadata, per-array zarr.json otherwise.
 *
 * options: fetch (a fetch-compatible function, e.g. a counting wrapper), headers, signal,
 * timeout (ms per request), cacheBytes, indexCacheBytes, rawCacheBytes, concurrency,
 * v01Scale (scale of a 0.1.x store's string bands; 0.0001 by spec 3.6), makeDecoder (optional
 * `(array, makeChunkDecoder) => decoder promise`: where chunks are decoded, e.g. a Worker pool;
 * it must return what makeChunkDecoder(array) would, and may return that for arrays it declines),
 * deltaCache (the RequestInit.cache mode of delta chunk GETs, e.g. "no-store": a delta is read
 * once per session into rawCacheBytes, and a map that streams them can skip the browser's HTTP
 * cache, whose writes cost CPU per byte; default: the fetch default).
 *
 * @param {string | URL} url
 * @param {OpenOptions} [options]
 * @returns {Promise<ChronozarrStore>}
 */
export async function openStore(url, options = {}) {
  const store = new ChronozarrStore(url, options);
  await store._open(options.signal);
  return store;
}

/** Parse the root document's bytes; a 404 or unreachable root is StoreNotFoundError (10.1). */
async function readRoot(source, signal) {
  let bytes;
  try {
    bytes = await source.request("zarr.json", { signal, maxBytes: MAX_DOCUMENT_BYTES });
  } catch (err) {
    if (err instanceof FetchError) {
      throw new StoreNotFoundError(`cannot open a chronozarr store at ${source.url}: ${err.message}`, { cause: err });
    }
    throw err;
  }
  if (bytes === null) {
    throw new StoreNotFoundError(`no chronozarr store at ${source.url}: ${source.url}zarr.json returned HTTP 404`);
  }
  return parseJson(bytes, `${source.url}zarr.json`, NotAChronozarrStoreError);
}

export class ChronozarrStore {
  /**
   * Use openStore (this does not read anything).
   * @param {string | URL} url
   * @param {OpenOptions} [options]
   */
  constructor(url, options = {}) {
    this.source = new HttpSource(url, {
      fetch: options.fetch,
      headers: options.headers,
      timeout: options.timeout ?? DEFAULTS.timeout,
    });
    /** The store's URL, ending in "/". @type {string} */
    this.url = this.source.url;
    /** @type {Stats} */
    this.stats = this.source.stats;
    /** @internal */
    this._options = options;
    /** @internal */
    this._concurrency = options.concurrency ?? DEFAULTS.concurrency;
    /** @internal */
    this._v01Scale = options.v01Scale ?? V01_DEFAULT_SCALE;
    /** @internal @type {{rows: number, cols: number, data: Float32Array} | null | undefined} */
    this._volatility = undefined;
    /** @internal the time-series companion's parsed arrays by level path (C25) @type {Map<string, Promise<any>>} */
    this._historyArrays = new Map();
  }

  // --- open (10.1, 10.2) --------------------------------------------------------------------------

  /**
   * @internal
   * @param {AbortSignal} [signal]
   */
  async _open(signal) {
    const doc = await readRoot(this.source, signal);
    const meta = parseRoot(doc, `${this.url}zarr.json`);
    if (meta.isV01) meta.bands = parseBands(doc.attributes.chronozarr.bands, true, this._v01Scale);
    /** The root zarr.json as read. @type {Record<string, any>} */
    this.rootDocument = doc;
    /** @internal */
    this.meta = meta;
    /** @type {string} */
    this.specVersion = meta.specVersion;
    /** @type {string} */
    this.variable = meta.variable;
    /** @type {string[]} */
    this.times = meta.times;
    /** @type {number[]} */
    this.timesMs = meta.timesMs;
    /** @type {number} */
    this.nTime = meta.times.length;
    /** @type {Band[]} */
    this.bands = meta.bands;
    /** @type {string[]} */
    this.bandNames = meta.bands.map((b) => b.name);
    /** @type {number} */
    this.nBands = meta.bands.length;
    /** @type {number | null} */
    this.nodata = meta.nodata;
    /** chronozarr.crs as stored (a string, or a PROJJSON object). @type {any} */
    this.crs = meta.crs;
    /** The CRS as an EPSG code, or WKT2 and PROJJSON (docs/spec.md C16). @type {CrsInfo | null} */
    this.crsInfo = meta.crsInfo;
    /** @type {Temporal} */
    this.temporal = meta.temporal;
    /** @type {Encoding} */
    this.encoding = meta.temporal.encoding;
    /** @type {unknown} */
    this.provenance = meta.provenance;
    /** @type {boolean} */
    this.hasMask = meta.maskVariable != null;
    /** @type {boolean} */
    this.hasCoverage = meta.coverageVariable != null;
    const o = this._options;
    /** @internal */
    this.chunks = new ChunkReader(this.source, meta, {
      cacheBytes: o.cacheBytes ?? DEFAULTS.cacheBytes,
      indexCacheBytes: o.indexCacheBytes ?? DEFAULTS.indexCacheBytes,
      rawCacheBytes: o.rawCacheBytes ?? DEFAULTS.rawCacheBytes,
      makeDecoder: o.makeDecoder,
      deltaCache: o.deltaCache,
    });
    /** Decoded anchors (every chunk of a `none` store, mask and coverage planes). @type {LRUCache} */
    this.chunkCache = this.chunks.chunkCache;
    /** Decoded shard indices. @type {LRUCache} */
    this.indexCache = this.chunks.indexCache;
    /** Compressed delta chunks. @type {LRUCache} */
    this.rawCache = this.chunks.rawCache;
    /** @type {Level[]} */
    this.levels = await loadLevels(meta, (key, sig) => this.source.json(key, sig), signal);
    const first = this.levels[0];
    /** @type {DType} */
    this.dtype = first.data.dtype;
    /** @internal */
    this.TypedArray = DTYPES[this.dtype];
    /** Cell size of level 0 (pixels per cell side). @type {number} */
    this.cs = first.cs;
    /** @type {number[]} */
    this.resolutions = this.levels.map((l) => l.resolution);
    /** @internal */
    this._volatilityDoc = meta.volatilityPath ? (meta.consolidated?.[meta.volatilityPath] ?? null) : null;
    return this;
  }

  // --- geometry -----------------------------------------------------------------------------------

  /**
   * Level index for an output ground sample distance (10.3).
   * @param {number} gsd store-CRS units per output pixel
   * @returns {number}
   */
  levelFor(gsd) {
    return levelForResolution(this.resolutions, gsd);
  }

  /**
   * @param {number} [k]
   * @returns {Level}
   */
  level(k = 0) {
    const L = this.levels[k];
    if (!L) throw new RangeError(`level ${k} does not exist (the store has levels 0..${this.levels.length - 1})`);
    return L;
  }

  /**
   * Pixel (row, col) at level k containing projected (x, y), or null outside the array.
   * @param {{x: number, y: number, level?: number}} p
   * @returns {Cell | null}
   */
  pixelAt({ x, y, level = 0 }) {
    const L = this.level(level);
    const p = pixelOf(L.transform, x, y);
    if (p.row < 0 || p.col < 0 || p.row >= L.height || p.col >= L.width) return null;
    return p;
  }

  /**
   * Projected centre of pixel (row, col) at level k.
   * @param {{row: number, col: number, level?: number}} p
   * @returns {{x: number, y: number}}
   */
  pixelCentre({ row, col, level = 0 }) {
    return pixelCentre(this.level(level).transform, row, col);
  }

  /**
   * Projected bounds {x0, y0, x1, y1} of a level (north-up).
   * @param {number} [level]
   * @returns {{x0: number, y0: number, x1: number, y1: number}}
   */
  bounds(level = 0) {
    const L = this.level(level);
    const [a, , c, , e, f] = L.transform;
    const xs = [c, c + a * L.width];
    const ys = [f, f + e * L.height];
    return { x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys) };
  }

  /**
   * Cells of level k that intersect the pixel window [row0, row1) x [col0, col1).
   * @param {{level?: number, row0: number, col0: number, row1: number, col1: number}} w
   * @returns {Cell[]}
   */
  cellsInWindow({ level = 0, row0, col0, row1, col1 }) {
    const L = this.level(level);
    const r0 = Math.max(0, Math.floor(row0 / L.cs));
    const c0 = Math.max(0, Math.floor(col0 / L.cs));
    const r1 = Math.min(L.grid[0] - 1, Math.floor((row1 - 1) / L.cs));
    const c1 = Math.min(L.grid[1] - 1, Math.floor((col1 - 1) / L.cs));
    const cells = [];
    for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) cells.push({ row: r, col: c });
    return cells;
  }

  /**
   * Size (height, width) and origin of cell (row, col), trimmed to the array (2.1).
   * @param {number} level
   * @param {number} row
   * @param {number} col
   * @returns {{y0: number, x0: number, height: number, width: number}}
   */
  cellWindow(level, row, col) {
    const L = this.level(level);
    if (!Number.isInteger(row) || !Number.isInteger(col) || row < 0 || col < 0 || row >= L.grid[0] || col >= L.grid[1]) {
      throw new RangeError(`cell (${row}, ${col}) is outside level ${level}'s grid ${L.grid[0]} x ${L.grid[1]}`);
    }
    const y0 = row * L.cs;
    const x0 = col * L.cs;
    return { y0, x0, height: Math.min(L.cs, L.height - y0), width: Math.min(L.cs, L.width - x0) };
  }

  /**
   * @internal
   * @param {number} t
   */
  _checkT(t) {
    if (!Number.isInteger(t) || t < 0 || t >= this.nTime) {
      throw new RangeError(`timestep ${t} is outside 0..${this.nTime - 1}`);
    }
  }

  // --- chunk access (10.4) ------------------------------------------------------------------------

  /** Compressed bytes of an inner chunk (bench/js/bench.js times the decode alone with these). @internal */
  _chunkBytes(array, coords, signal) {
    return this.chunks.chunkBytes(array, coords, signal);
  }

  /** The decoder of an array (bench/js/bench.js). @internal */
  _decoder(array) {
    return this.chunks.decoder(array);
  }

  /**
   * The full decoded chunk(s) for timestep t of a cell: [chunk] or [anchor, delta] (10.4). With
   * `prefix` (elements from the chunk's start) a delta may be decoded only that far.
   * @internal
   */
  async _chunksFor(L, t, row, col, signal, prefix) {
    const ref = this.temporal.reference(t);
    if (ref === null) return [await this.chunks.trueChunk(L.data, [t, 0, row, col], signal)];
    return Promise.all([
      this.chunks.trueChunk(L.data, [ref, 0, row, col], signal),
      this.chunks.deltaChunk(L.data, [t, 0, row, col], signal, prefix),
    ]);
  }

  /**
   * The full (cs x cs, untrimmed) true chunk of timestep t of cell (row, col) at `level`: a
   * decoded anchor or none chunk is the cached instance (do not modify it), a reconstructed
   * delta is the caller's own. This is what a Zarr reader of true values expects (store-adapter.js).
   * @param {CellRequest} req
   * @returns {Promise<StoredArray>}
   */
  async trueChunk({ t, level = 0, row, col, signal }) {
    this._checkT(t);
    const L = this.level(level);
    this.cellWindow(level, row, col);
    return trueValues(await this._chunksFor(L, t, row, col, signal), L.data._fillChunk);
  }

  // --- public reads -------------------------------------------------------------------------------

  /**
   * Every band of timestep t of cell (row, col) at `level` (10.4, 10.5): at most two chunk reads
   * (one with the anchor cached), reconstructed in the stored dtype, trimmed to the array shape.
   * Returns a CellData {t, level, row, col, y0, x0, height, width, nBands, dtype, data}.
   *
   * `bands` (1..nBands, default all): only the first `bands` bands are read, so `nBands` and
   * `data` hold those. A chunk is C order, so they are a prefix of it, and a zstd delta is then
   * decoded only as far as they go (zstd-prefix.js): a map drawing one band of two decodes half.
   * @param {CellRequest & {bands?: number}} req
   * @returns {Promise<CellData>}
   */
  async readCell({ t, level = 0, row, col, signal, bands }) {
    this._checkT(t);
    const nb = bands ?? this.nBands;
    if (!Number.isInteger(nb) || nb < 1 || nb > this.nBands)
      throw new RangeError(`bands must be an integer in 1..${this.nBands}, not ${bands}`);
    const L = this.level(level);
    const win = this.cellWindow(level, row, col);
    const prefix = nb * L.cs * L.cs;
    const chunks = await this._chunksFor(L, t, row, col, signal, nb < this.nBands ? prefix : undefined);
    const full = trueValues(chunks, L.data._fillChunk);
    // A reconstructed delta of exactly the bands asked for is ours to return untrimmed; a cached
    // chunk (and a delta decoded beyond them) is copied.
    const data =
      chunks.length === 2 && win.height === L.cs && win.width === L.cs && full.length === prefix
        ? full
        : trimCopy(full, nb, L.cs, win.height, win.width, this.TypedArray);
    return new CellData({ t, level, row, col, ...win, nBands: nb, dtype: this.dtype, data });
  }

  /**
   * The mask or coverage plane ("mask" | "coverage") of timestep t of a cell, trimmed, as a
   * Uint8Array(height * width); null when the store has no such variable (10.7).
   * @param {"mask" | "coverage"} variable
   * @param {CellRequest} req
   * @returns {Promise<Uint8Array | null>}
   */
  async readPlane(variable, { t, level = 0, row, col, signal }) {
    this._checkT(t);
    const L = this.level(level);
    const arr = variable === "mask" ? L.mask : variable === "coverage" ? L.coverage : undefined;
    if (arr === undefined) throw new TypeError(`readPlane: variable must be "mask" or "coverage", not ${variable}`);
    if (arr === null) return null;
    const win = this.cellWindow(level, row, col);
    const chunk = await this.chunks.trueChunk(arr, [t, row, col], signal);
    return trimCopy(chunk, 1, L.cs, win.height, win.width, Uint8Array);
  }

  /**
   * Validity of every band and pixel of a cell (spec 2.3) as Uint8Array(nBands * h * w), 1 valid:
   * the mask when the store has one (never also nodata), else value != nodata, else all valid.
   * Pass `cell` (a CellData) to reuse values already read.
   * @param {CellRequest & {cell?: CellData}} req
   * @returns {Promise<Uint8Array>}
   */
  async validity({ t, level = 0, row, col, signal, cell }) {
    const data = cell ?? (await this.readCell({ t, level, row, col, signal }));
    const mask = this.hasMask ? await this.readPlane("mask", { t, level, row, col, signal }) : null;
    return validityOf(data.data, mask, this.nodata, this.nBands, data.height * data.width);
  }

  /** Stored values of every band at pixel (iy, ix) of a cell: TypedArray(nBands). @internal */
  async _pixel(L, t, row, col, iy, ix, signal) {
    const chunks = await this._chunksFor(L, t, row, col, signal);
    const out = new this.TypedArray(this.nBands);
    const plane = L.cs * L.cs;
    const at = iy * L.cs + ix;
    for (let b = 0; b < this.nBands; b++) {
      // Storing the sum into the typed array wraps it mod 2^bits (4.2) without reconstructing all.
      out[b] = chunks.length === 1 ? chunks[0][b * plane + at] : chunks[0][b * plane + at] + chunks[1][b * plane + at];
    }
    return out;
  }

  /** @internal */
  async _planeValue(arr, t, row, col, iy, ix, cs, signal) {
    if (!arr) return null;
    const chunk = await this.chunks.trueChunk(arr, [t, row, col], signal);
    return chunk[iy * cs + ix];
  }

  /**
   * @internal
   * @param {PixelRef} p
   */
  _locate({ x, y, row, col, level = 0 }) {
    const L = this.level(level);
    let p;
    if (Number.isInteger(row) && Number.isInteger(col)) {
      p = row >= 0 && col >= 0 && row < L.height && col < L.width ? { row, col } : null;
    } else {
      if (typeof x !== "number" || typeof y !== "number") throw new TypeError("give projected {x, y} or pixel {row, col}");
      p = this.pixelAt({ x, y, level });
    }
    if (!p) return null;
    const cr = Math.floor(p.row / L.cs);
    const cc = Math.floor(p.col / L.cs);
    return { L, ...p, cellRow: cr, cellCol: cc, iy: p.row - cr * L.cs, ix: p.col - cc * L.cs };
  }

  /** Stored, mask and coverage values of one pixel at timestep t. @internal */
  _pixelValues(p, t, signal) {
    const { L } = p;
    return Promise.all([
      this._pixel(L, t, p.cellRow, p.cellCol, p.iy, p.ix, signal),
      this._planeValue(L.mask, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
      this._planeValue(L.coverage, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
    ]);
  }

  /**
   * @internal
   * @returns {BandValue[]}
   */
  _describe(stored, maskValue) {
    return this.bands.map((band, b) => {
      const value = stored[b];
      const valid = isValid(value, maskValue, this.nodata);
      return {
        name: band.name,
        common_name: band.common_name,
        units: band.units,
        scale: band.scale,
        offset: band.offset,
        stored: value,
        physical: valid ? physical(value, band) : null,
        valid,
      };
    });
  }

  /**
   * The exact stored and physical value of every band at projected (x, y) (or pixel {row, col})
   * of timestep t (10.5, 10.7, 10.8), with validity, mask and coverage. null outside the array.
   * @param {PixelRef & {t: number}} req
   * @returns {Promise<ValueAt | null>}
   */
  async valueAt({ x, y, row, col, t, level = 0, signal }) {
    this._checkT(t);
    const p = this._locate({ x, y, row, col, level });
    if (!p) return null;
    const [stored, maskValue, coverage] = await this._pixelValues(p, t, signal);
    const bands = this._describe(stored, maskValue);
    const centre = pixelCentre(p.L.transform, p.row, p.col);
    return {
      t,
      time: this.times[t],
      level,
      row: p.row,
      col: p.col,
      x: centre.x,
      y: centre.y,
      valid: bands.every((b) => b.valid),
      mask: maskValue,
      coverage,
      bands,
    };
  }

  /**
   * The time-series companion's `values` array of level L (docs/spec.md C25), parsed and checked
   * against the level, or null when the level carries none. Read once per level and session.
   * @internal
   */
  _historyArray(L, signal) {
    const block = this.meta.history;
    if (!block || !block.levels.includes(L.path)) return Promise.resolve(null);
    let got = this._historyArrays.get(L.path);
    if (!got) {
      const path = `${L.path}/${block.path}/values`;
      got = (async () => {
        const doc = this.meta.consolidated?.[path] ?? (await this.source.json(`${path}/zarr.json`, signal));
        const arr = parseArray(doc, path, [this.dtype]);
        const nFields = this.nBands + (L.mask ? 1 : 0) + (L.coverage ? 1 : 0);
        const want = [this.nTime, nFields, L.height, L.width];
        const [, cf, by, bx] = arr.chunkShape;
        if (arr.sharding !== null || want.some((n, i) => arr.shape[i] !== n) || cf !== nFields || by !== bx) {
          throw new CorruptStoreError(
            `${this.url}${path}/zarr.json: the companion must be an unsharded ${this.dtype} array of shape ${JSON.stringify(want)} in chunks (T, ${nFields}, B, B) (C25); found ${JSON.stringify(arr.shape)} in ${JSON.stringify(arr.chunkShape)}`,
          );
        }
        return arr;
      })();
      got.catch(() => this._historyArrays.delete(L.path)); // a failed read is tried again next time
      this._historyArrays.set(L.path, got);
    }
    return got;
  }

  /**
   * A pixel's whole history from the companion: one chunk per time block (T timesteps of the
   * pixel's B x B block, every band then mask then coverage), `concurrency` at a time; decoded
   * chunks stay in the chunk cache, so the next pixel of the block costs no request. @internal
   */
  async _historySeries(arr, p, out, signal, onProgress) {
    const [T, nF, B] = arr.chunkShape;
    const by = Math.floor(p.row / B);
    const bx = Math.floor(p.col / B);
    const at = (p.row - by * B) * B + (p.col - bx * B);
    const nT = this.nTime;
    const blocks = [...Array(Math.ceil(nT / T)).keys()];
    let done = 0;
    await pool(
      blocks,
      this._concurrency,
      async (tb) => {
        const chunk = await this.chunks.trueChunk(arr, [tb, 0, by, bx], signal);
        for (let i = 0; i < T && tb * T + i < nT; i++) {
          const t = tb * T + i;
          const field = (f) => chunk[(i * nF + f) * B * B + at];
          for (let b = 0; b < this.nBands; b++) out.stored[b][t] = field(b);
          if (out.mask) out.mask[t] = field(this.nBands);
          if (out.coverage) out.coverage[t] = field(this.nBands + (out.mask ? 1 : 0));
          onProgress?.(++done, nT);
        }
      },
      signal,
    );
  }

  /**
   * Every timestep at one pixel (projected {x, y} or pixel {row, col}): per band the stored values
   * (TypedArray), physical values (Float64Array, NaN where invalid) and validity (Uint8Array).
   * With the time-series companion at the level (docs/spec.md C25) the history is one small object
   * per time block (`source` "history"); else, or with `history: false`, every timestep's chunks,
   * `concurrency` at a time, anchors first (`source` "chunks"). Both give the same values.
   * @param {PixelRef & {onProgress?: (done: number, total: number) => void, history?: boolean}} req
   * @returns {Promise<Series | null>}
   */
  async series({ x, y, row, col, level = 0, signal, onProgress, history = true }) {
    const p = this._locate({ x, y, row, col, level });
    if (!p) return null;
    const { L } = p;
    const nT = this.nTime;
    const stored = this.bands.map(() => new this.TypedArray(nT));
    const mask = L.mask ? new Uint8Array(nT) : null;
    const coverage = L.coverage ? new Uint8Array(nT) : null;
    const companion = history ? await this._historyArray(L, signal) : null;
    if (companion) {
      await this._historySeries(companion, p, { stored, mask, coverage }, signal, onProgress);
    } else {
      let done = 0;
      await pool(
        anchorsFirst(nT, this.temporal), // so that every delta finds its anchor resident (10)
        this._concurrency,
        async (t) => {
          const [v, m, c] = await this._pixelValues(p, t, signal);
          for (let b = 0; b < this.nBands; b++) stored[b][t] = v[b];
          if (mask) mask[t] = m;
          if (coverage) coverage[t] = c;
          onProgress?.(++done, nT);
        },
        signal,
      );
    }
    const bands = this.bands.map((band, b) => {
      const valid = new Uint8Array(nT);
      const values = new Float64Array(nT);
      for (let t = 0; t < nT; t++) {
        const v = stored[b][t];
        valid[t] = isValid(v, mask ? mask[t] : null, this.nodata) ? 1 : 0;
        values[t] = valid[t] ? physical(v, band) : NaN;
      }
      return { ...band, stored: stored[b], physical: values, valid };
    });
    const centre = pixelCentre(L.transform, p.row, p.col);
    const source = companion ? "history" : "chunks";
    return {
      level,
      row: p.row,
      col: p.col,
      x: centre.x,
      y: centre.y,
      times: this.times,
      timesMs: this.timesMs,
      bands,
      mask,
      coverage,
      source,
    };
  }

  /**
   * The volatility array (spec 5) as {rows, cols, data: Float32Array}, or null when absent.
   * Read once per session.
   * @param {{signal?: AbortSignal}} [o]
   * @returns {Promise<{rows: number, cols: number, data: Float32Array} | null>}
   */
  async volatility({ signal } = {}) {
    if (this._volatility !== undefined) return this._volatility;
    const path = this.meta.volatilityPath;
    if (!path) return (this._volatility = null);
    const doc = this._volatilityDoc ?? (await this.source.json(`${path}/zarr.json`, signal, { required: false }));
    if (!doc) return (this._volatility = null);
    const arr = parseArray(doc, path, ["float32"]);
    // Spec 5: shape (grid_rows_0, grid_cols_0); checked before the plane is allocated (decision 0016).
    const grid = this.levels[0].grid;
    if (arr.shape.length !== 2 || arr.shape[0] !== grid[0] || arr.shape[1] !== grid[1]) {
      throw new CorruptStoreError(
        `${path}/zarr.json: volatility has shape ${JSON.stringify(arr.shape)}, expected the level 0 cell grid ${JSON.stringify(grid)} (spec 5)`,
      );
    }
    const [rows, cols] = arr.shape;
    const data = new Float32Array(rows * cols);
    const [ch, cw] = arr.innerShape;
    for (let i = 0; i < arr.chunkGrid[0]; i++) {
      for (let j = 0; j < arr.chunkGrid[1]; j++) {
        const chunk = await this.chunks.decode(arr, await this.chunks.chunkBytes(arr, [i, j], signal));
        for (let y = 0; y < ch && i * ch + y < rows; y++) {
          for (let x = 0; x < cw && j * cw + x < cols; x++) data[(i * ch + y) * cols + j * cw + x] = chunk[y * cw + x];
        }
      }
    }
    return (this._volatility = { rows, cols, data });
  }

  /**
   * Cells of a level ordered by volatility, most volatile first (level k takes the max of its level-0 cells).
   * @param {{level?: number, cells?: Cell[] | null, signal?: AbortSignal}} [o]
   * @returns {Promise<Array<Cell & {volatility?: number}>>}
   */
  async cellsByVolatility({ level = 0, cells = null, signal } = {}) {
    const L = this.level(level);
    const list = cells
      ? cells.map((c) => ({ row: c.row, col: c.col }))
      : this.cellsInWindow({ level, row0: 0, col0: 0, row1: L.height, col1: L.width });
    const vol = await this.volatility({ signal });
    if (!vol) return list;
    return list.map((c) => ({ ...c, volatility: cellVolatility(vol, level, c) })).sort((a, b) => b.volatility - a.volatility);
  }

  /**
   * Load what scrubbing `times` over `cells` of `level` needs: every anchor first (decoded into
   * the anchor cache, cells ordered by volatility), then, with deltas (default), the compressed
   * delta chunks into the raw cache. Under none every chunk is a true chunk and is decoded.
   * times: priority order (default all, in order). Returns {anchors, deltas, bytes, ms}.
   * @param {{level?: number, cells?: Cell[] | null, times?: number[] | null, deltas?: boolean, signal?: AbortSignal,
   *   concurrency?: number, onProgress?: (done: number, total: number, task: {kind: "anchor" | "delta", t: number, row: number, col: number}) => void}} [o]
   * @returns {Promise<PrefetchResult>}
   */
  async prefetch({ level = 0, cells = null, times = null, deltas = true, signal, onProgress, concurrency } = {}) {
    const started = Date.now();
    const L = this.level(level);
    const ts = times ?? [...Array(this.nTime).keys()];
    ts.forEach((t) => this._checkT(t));
    const ordered = await this.cellsByVolatility({ level, cells, signal });
    const tasks = planPrefetch(this.temporal, ts, ordered, deltas);
    const bytes0 = this.stats.bytes;
    let done = 0;
    let nAnchors = 0;
    let nDeltas = 0;
    await pool(
      tasks,
      concurrency ?? this._concurrency,
      async (task) => {
        const coords = [task.t, 0, task.row, task.col];
        if (task.kind === "anchor") {
          await this.chunks.trueChunk(L.data, coords, signal);
          nAnchors++;
        } else {
          await this.chunks.warmDelta(L.data, coords, signal);
          nDeltas++;
        }
        onProgress?.(++done, tasks.length, task);
      },
      signal,
    );
    return { anchors: nAnchors, deltas: nDeltas, bytes: this.stats.bytes - bytes0, ms: Date.now() - started };
  }

  /**
   * True when timestep t of these cells needs no request: its anchor (or true chunk) is decoded in
   * the cache and, for a delta, its compressed bytes are in the raw cache (after prefetch).
   * @param {{level?: number, cells: Cell[], t: number}} o
   * @returns {boolean}
   */
  isResident({ level = 0, cells, t }) {
    const { data } = this.level(level);
    const ref = this.temporal.reference(t);
    return cells.every(
      (c) => this.chunks.hasTrue(data, [ref ?? t, 0, c.row, c.col]) && (ref === null || this.chunks.hasRaw(data, [t, 0, c.row, c.col])),
    );
  }

  /**
   * True when the anchor (or true chunk) timestep t of these cells needs is decoded in the cache.
   * @param {{level?: number, cells: Cell[], t: number}} o
   * @returns {boolean}
   */
  isAnchorResident({ level = 0, cells, t }) {
    const { data } = this.level(level);
    const a = this.temporal.reference(t) ?? t;
    return cells.every((c) => this.chunks.hasTrue(data, [a, 0, c.row, c.col]));
  }

  /** Drop every cache and abort every in-flight request. */
  close() {
    this.chunks?.close(new DOMException("store closed", "AbortError"));
  }
}

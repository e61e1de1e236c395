// chronozarr/decoder.js: the DOM-free JavaScript reader of chronozarr v0.2 stores (spec 10).
//
// It opens a store from its root zarr.json (one GET with consolidated metadata), locates every
// chunk from metadata alone (2.1, 7.1), reads shard indices with a bounded range from shard_bytes
// (7.2, 7.3) and checks their crc32c, decodes chunk bytes with the codecs of zarrita's registry
// (numcodecs WASM zstd and blosc, DecompressionStream gzip; spec 8), reconstructs star-delta
// timesteps with modular addition in the stored dtype (4.2), and keeps decoded anchors and shard
// indices in byte-budgeted LRU caches so that, once the anchors of a viewport are resident, any
// timestep costs one delta read (10). It uses fetch and nothing else from its host, so it runs
// unchanged in Node, a browser page and a Web Worker.

import { registry } from "zarrita";
import { crc32c } from "./crc32c.js";
import {
  ChronozarrError,
  CorruptStoreError,
  FetchError,
  NotAChronozarrStoreError,
  StoreNotFoundError,
  UnsupportedError,
} from "./errors.js";
import { LRUCache } from "./lru.js";
import {
  DTYPES,
  V01_DEFAULT_SCALE,
  decodeShardIndex,
  levelForResolution,
  locateChunk,
  parseArray,
  parseBands,
  parseRoot,
  pixelCentre,
  pixelOf,
} from "./metadata.js";

export {
  ChronozarrError,
  CorruptStoreError,
  FetchError,
  NotAChronozarrStoreError,
  StoreNotFoundError,
  UnsupportedError,
  LRUCache,
  crc32c,
};

const MiB = 1024 * 1024;

/** Defaults of openStore's options. */
export const DEFAULTS = Object.freeze({
  cacheBytes: 256 * MiB, // decoded anchors (and every chunk of a `none` store)
  indexCacheBytes: 16 * MiB, // decoded shard indices
  rawCacheBytes: 64 * MiB, // compressed delta chunks (prefetched or read)
  timeout: 30_000, // ms per request, so a stalled host fails instead of hanging
  concurrency: 6, // parallel requests of prefetch and series (a browser's per-host limit)
});

const MISSING = Symbol("missing"); // a shard that does not exist (404): all fill (7.2)

// --- small helpers --------------------------------------------------------------------------------

function abortError(signal) {
  return signal.reason ?? new DOMException("The operation was aborted.", "AbortError");
}

/** Reject as soon as `signal` aborts, otherwise settle with `promise`; `onAbort` runs once on abort. */
function raceSignal(promise, signal, onAbort, onSettle) {
  if (!signal) return promise.finally(onSettle);
  if (signal.aborted) {
    onAbort?.();
    return Promise.reject(abortError(signal));
  }
  return new Promise((resolve, reject) => {
    let done = false;
    const abort = () => {
      if (done) return;
      done = true;
      onAbort?.();
      reject(abortError(signal));
    };
    signal.addEventListener("abort", abort, { once: true });
    promise.then(
      (v) => {
        if (done) return;
        done = true;
        signal.removeEventListener("abort", abort);
        onSettle?.();
        resolve(v);
      },
      (e) => {
        if (done) return;
        done = true;
        signal.removeEventListener("abort", abort);
        onSettle?.();
        reject(e);
      },
    );
  });
}

/**
 * Shares one in-flight load per key among concurrent callers. Each caller may abort its own
 * wait; the load itself is aborted only when every caller waiting for it has aborted, so a
 * scrub that cancels a frame does not cancel an anchor another frame still needs.
 */
class InFlight {
  constructor() {
    this.map = new Map();
  }

  run(key, factory, signal) {
    let entry = this.map.get(key);
    if (!entry) {
      const ctrl = new AbortController();
      entry = { ctrl, waiters: 0 };
      entry.promise = Promise.resolve()
        .then(() => factory(ctrl.signal))
        .finally(() => {
          if (this.map.get(key) === entry) this.map.delete(key);
        });
      entry.promise.catch(() => {}); // a load every waiter abandoned must not be unhandled
      this.map.set(key, entry);
    }
    entry.waiters++;
    const e = entry;
    return raceSignal(
      e.promise,
      signal,
      () => {
        if (--e.waiters === 0) {
          if (this.map.get(key) === e) this.map.delete(key);
          e.ctrl.abort(abortError(signal));
        }
      },
      () => {
        e.waiters--;
      },
    );
  }

  abortAll(reason) {
    for (const e of this.map.values()) e.ctrl.abort(reason);
    this.map.clear();
  }
}

/** Run `task(item)` over `items` with at most `limit` in flight; stops at the first failure. */
async function pool(items, limit, task, signal) {
  let next = 0;
  let failed = null;
  const worker = async () => {
    while (next < items.length && !failed) {
      if (signal?.aborted) throw abortError(signal);
      const i = next++;
      try {
        await task(items[i], i);
      } catch (err) {
        failed = failed ?? err;
        throw err;
      }
    }
  };
  const workers = [];
  for (let k = 0; k < Math.max(1, Math.min(limit, items.length)); k++) workers.push(worker());
  const results = await Promise.allSettled(workers);
  if (failed) throw failed;
  const bad = results.find((r) => r.status === "rejected");
  if (bad) throw bad.reason;
}

function resolveStoreUrl(url) {
  const text = String(url ?? "");
  if (!text) throw new TypeError("openStore: a store URL is required");
  let u;
  try {
    u = globalThis.location?.href ? new URL(text, globalThis.location.href) : new URL(text);
  } catch {
    throw new TypeError(`openStore: ${JSON.stringify(text)} is not a URL (give an absolute http(s) URL)`);
  }
  u.hash = "";
  const query = u.search;
  u.search = "";
  let base = u.href;
  if (base.endsWith("/zarr.json")) base = base.slice(0, -"zarr.json".length);
  if (!base.endsWith("/")) base += "/";
  return { base, query };
}

/** Copy a full chunk's bands, trimmed to h x w of the array (2.1: discard beyond shape). */
function trimCopy(src, nb, cs, h, w, T) {
  if (h === cs && w === cs) return src.slice(0, nb * cs * cs);
  const out = new T(nb * h * w);
  let o = 0;
  for (let b = 0; b < nb; b++) {
    const base = b * cs * cs;
    for (let y = 0; y < h; y++) {
      const s = base + y * cs;
      out.set(src.subarray(s, s + w), o);
      o += w;
    }
  }
  return out;
}

/**
 * Star-delta reconstruction in place (4.2): delta[i] = (anchor[i] + delta[i]) mod 2^bits in the
 * stored dtype, no clamp (10.5). Storing an int sum into a Uint8Array/Uint16Array wraps it, which
 * is exactly the unsigned modular add; the fast path adds two uint16 (or four uint8) lanes per
 * 32-bit word (SWAR): the low bits of each lane are added without crossing into the next lane,
 * and the lane's top bit is restored by XOR, which drops the carry out of the lane (mod 2^bits).
 */
export function addWrappedInPlace(anchor, delta) {
  const n = delta.length;
  const bpe = delta.BYTES_PER_ELEMENT;
  const words = (n * bpe) >> 2;
  if (
    bpe <= 2 &&
    (n * bpe) % 4 === 0 &&
    anchor.length >= n &&
    anchor.byteOffset % 4 === 0 &&
    delta.byteOffset % 4 === 0
  ) {
    const a32 = new Uint32Array(anchor.buffer, anchor.byteOffset, words);
    const d32 = new Uint32Array(delta.buffer, delta.byteOffset, words);
    const low = bpe === 2 ? 0x7fff7fff : 0x7f7f7f7f;
    const high = bpe === 2 ? 0x80008000 | 0 : 0x80808080 | 0;
    for (let i = 0; i < words; i++) {
      const x = a32[i];
      const y = d32[i];
      d32[i] = ((x & low) + (y & low)) ^ ((x ^ y) & high);
    }
  } else {
    for (let i = 0; i < n; i++) delta[i] = anchor[i] + delta[i];
  }
  return delta;
}

/** Star-delta reconstruction into a new array trimmed to h x w (anchor and delta untouched). */
export function reconstruct(anchor, delta, nb, cs, h, w, T) {
  const full = addWrappedInPlace(anchor, delta.slice(0, nb * cs * cs));
  return h === cs && w === cs ? full : trimCopy(full, nb, cs, h, w, T);
}

/** One timestep of one cell: every band, trimmed to the array shape, in the stored dtype. */
export class CellData {
  constructor(init) {
    Object.assign(this, init);
  }

  /** Band `i` as a (height * width) view of `data`. */
  band(i) {
    const n = this.height * this.width;
    return this.data.subarray(i * n, (i + 1) * n);
  }
}

// --- the store ------------------------------------------------------------------------------------

/**
 * Open a chronozarr store (spec 10.1, 10.2): one GET of the root zarr.json when it carries
 * consolidated metadata, per-array zarr.json otherwise.
 *
 * options: fetch (a fetch-compatible function, e.g. a counting wrapper), headers, signal,
 * timeout (ms per request), cacheBytes, indexCacheBytes, rawCacheBytes, concurrency,
 * v01Scale (scale of a 0.1.x store's string bands; 0.0001 by spec 3.6).
 */
export async function openStore(url, options = {}) {
  const store = new ChronozarrStore(url, options);
  await store._open(options.signal);
  return store;
}

export class ChronozarrStore {
  constructor(url, options = {}) {
    const { base, query } = resolveStoreUrl(url);
    this.url = base;
    this._query = query;
    this._fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this._headers = options.headers ?? {};
    this._timeout = options.timeout ?? DEFAULTS.timeout;
    this._concurrency = options.concurrency ?? DEFAULTS.concurrency;
    this._v01Scale = options.v01Scale ?? V01_DEFAULT_SCALE;
    this.chunkCache = new LRUCache(options.cacheBytes ?? DEFAULTS.cacheBytes);
    this.indexCache = new LRUCache(options.indexCacheBytes ?? DEFAULTS.indexCacheBytes);
    this.rawCache = new LRUCache(options.rawCacheBytes ?? DEFAULTS.rawCacheBytes);
    this._inflight = new InFlight();
    this._decoders = new Map();
    this._volatility = undefined;
    this.stats = { requests: 0, heads: 0, bytes: 0, chunkReads: 0, indexReads: 0 };
  }

  // --- I/O ----------------------------------------------------------------------------------------

  /**
   * GET (or HEAD) one object, optionally a byte range. Returns a Uint8Array, or null on 404 (an
   * absent key: spec 9). range: [first, last] inclusive, or {suffix: n}.
   */
  async _request(key, { method = "GET", range = null, signal } = {}) {
    const url = this.url + key + this._query;
    const headers = { ...this._headers };
    if (range) headers.Range = range.suffix ? `bytes=-${range.suffix}` : `bytes=${range[0]}-${range[1]}`;
    signal?.throwIfAborted();
    const ctrl = new AbortController();
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort(new FetchError(`timed out after ${this._timeout} ms: ${method} ${url}`, { url }));
    }, this._timeout);
    const onAbort = () => ctrl.abort(abortError(signal));
    signal?.addEventListener("abort", onAbort, { once: true });
    this.stats.requests++;
    if (method === "HEAD") this.stats.heads++;
    try {
      let res;
      try {
        res = await this._fetch(url, { method, headers, signal: ctrl.signal });
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        if (timedOut) throw new FetchError(`timed out after ${this._timeout} ms: ${method} ${url}`, { url });
        throw new FetchError(`${method} ${url} failed: ${err?.message ?? err}`, { url, cause: err });
      }
      if (res.status === 404) {
        res.body?.cancel?.().catch(() => {});
        return null;
      }
      if (res.status === 416) {
        throw new CorruptStoreError(
          `${url}: range ${headers.Range} not satisfiable (HTTP 416): shard_bytes is stale or the object is truncated; reopen the store`,
        );
      }
      if (!res.ok) {
        res.body?.cancel?.().catch(() => {});
        throw new FetchError(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""} for ${method} ${url}`, {
          url,
          status: res.status,
        });
      }
      if (method === "HEAD") {
        const len = res.headers.get("content-length");
        return len === null ? { length: null } : { length: Number(len) };
      }
      let bytes;
      try {
        bytes = new Uint8Array(await res.arrayBuffer());
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        if (timedOut) throw new FetchError(`timed out after ${this._timeout} ms reading ${url}`, { url });
        throw new FetchError(`reading ${url} failed: ${err?.message ?? err}`, { url, cause: err });
      }
      this.stats.bytes += bytes.byteLength;
      if (range) bytes = this._checkRange(bytes, res.status, range, url);
      return bytes;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** A host that ignores Range answers 200 with the whole object: cut the range out of it. */
  _checkRange(bytes, status, range, url) {
    if (range.suffix) {
      if (status === 200) return bytes.subarray(Math.max(0, bytes.byteLength - range.suffix));
      return bytes;
    }
    const want = range[1] - range[0] + 1;
    if (status === 200) {
      if (bytes.byteLength < range[1] + 1) {
        throw new CorruptStoreError(`${url}: object is ${bytes.byteLength} bytes, range ends at ${range[1]}`);
      }
      return bytes.subarray(range[0], range[1] + 1);
    }
    if (bytes.byteLength !== want) {
      throw new CorruptStoreError(
        `${url}: asked for bytes ${range[0]}-${range[1]} (${want} bytes), got ${bytes.byteLength}: the object is shorter than its index or shard_bytes says`,
      );
    }
    return bytes;
  }

  async _json(key, signal, { required = true } = {}) {
    const bytes = await this._request(key, { signal });
    if (bytes === null) {
      if (!required) return null;
      throw new CorruptStoreError(`${this.url}${key} is missing (HTTP 404)`);
    }
    try {
      return JSON.parse(new TextDecoder().decode(bytes));
    } catch (err) {
      throw new CorruptStoreError(`${this.url}${key} is not valid JSON: ${err.message}`);
    }
  }

  // --- open (10.1, 10.2) --------------------------------------------------------------------------

  async _open(signal) {
    let bytes;
    try {
      bytes = await this._request("zarr.json", { signal });
    } catch (err) {
      if (err instanceof FetchError) {
        throw new StoreNotFoundError(`cannot open a chronozarr store at ${this.url}: ${err.message}`, { cause: err });
      }
      throw err;
    }
    if (bytes === null) {
      throw new StoreNotFoundError(`no chronozarr store at ${this.url}: ${this.url}zarr.json returned HTTP 404`);
    }
    let doc;
    try {
      doc = JSON.parse(new TextDecoder().decode(bytes));
    } catch {
      throw new NotAChronozarrStoreError(`${this.url}zarr.json is not JSON: not a Zarr v3 store`);
    }
    const meta = parseRoot(doc, `${this.url}zarr.json`);
    if (meta.isV01) meta.bands = parseBands(doc.attributes.chronozarr.bands, true, this._v01Scale);
    this.meta = meta;
    this.specVersion = meta.specVersion;
    this.variable = meta.variable;
    this.times = meta.times;
    this.timesMs = meta.timesMs;
    this.nTime = meta.times.length;
    this.bands = meta.bands;
    this.bandNames = meta.bands.map((b) => b.name);
    this.nBands = meta.bands.length;
    this.nodata = meta.nodata;
    this.crs = meta.crs;
    this.temporal = meta.temporal;
    this.encoding = meta.temporal.encoding;
    this.provenance = meta.provenance;
    this.hasMask = meta.maskVariable != null;
    this.hasCoverage = meta.coverageVariable != null;

    const arrayDoc = async (path) => {
      if (meta.consolidated && meta.consolidated[path]) return meta.consolidated[path];
      return this._json(`${path}/zarr.json`, signal);
    };

    this.levels = await Promise.all(
      meta.levelPaths.map(async (path, index) => {
        const mirror = meta.levels?.[index];
        let resolution = mirror?.resolution;
        let transform = mirror?.transform;
        if (!mirror) {
          const g = meta.consolidated?.[path] ?? (await this._json(`${path}/zarr.json`, signal));
          const a = g?.attributes ?? {};
          if (!Array.isArray(a.transform) || typeof a.resolution !== "number") {
            throw new CorruptStoreError(`${path}/zarr.json: level group lacks transform or resolution (spec 3.3)`);
          }
          transform = a.transform.map(Number);
          resolution = a.resolution;
        }
        const dataPath = `${path}/${meta.variable}`;
        const data = parseArray(await arrayDoc(dataPath), dataPath);
        this._checkDataArray(data);
        const plane = async (name) => {
          if (name == null) return null;
          const p = `${path}/${name}`;
          const arr = parseArray(await arrayDoc(p), p, ["uint8"]);
          if (arr.shape.length !== 3 || arr.innerShape[0] !== 1) {
            throw new CorruptStoreError(`${p}/zarr.json: expected (time, y, x) with one timestep per chunk (spec 2.4)`);
          }
          return arr;
        };
        const [mask, coverage] = await Promise.all([plane(meta.maskVariable), plane(meta.coverageVariable)]);
        const [, , height, width] = data.shape;
        const cs = data.innerShape[2];
        return {
          index,
          path,
          resolution,
          transform,
          shape: data.shape.slice(),
          height,
          width,
          cs,
          grid: [Math.ceil(height / cs), Math.ceil(width / cs)],
          dtype: data.dtype,
          sharded: data.sharding !== null,
          shardTime: data.sharding ? data.chunkShape[0] : null,
          data,
          mask,
          coverage,
        };
      }),
    );
    const first = this.levels[0];
    this.dtype = first.data.dtype;
    this.TypedArray = DTYPES[this.dtype];
    this.cs = first.cs;
    this.resolutions = this.levels.map((l) => l.resolution);
    this._volatilityDoc = meta.volatilityPath ? (meta.consolidated?.[meta.volatilityPath] ?? null) : null;
    return this;
  }

  _checkDataArray(arr) {
    const where = `${arr.path}/zarr.json`;
    if (arr.shape.length !== 4) throw new CorruptStoreError(`${where}: data array must be (time, band, y, x) (spec 2.1)`);
    const [nt, nb] = arr.shape;
    const inner = arr.innerShape;
    if (nt !== this.meta.times.length) {
      throw new CorruptStoreError(`${where}: ${nt} timesteps but chronozarr.times lists ${this.meta.times.length}`);
    }
    if (nb !== this.meta.bands.length) {
      throw new CorruptStoreError(`${where}: ${nb} bands but chronozarr.bands lists ${this.meta.bands.length}`);
    }
    if (inner[0] !== 1 || inner[1] !== nb || inner[2] !== inner[3]) {
      throw new CorruptStoreError(`${where}: inner chunk ${JSON.stringify(inner)} is not (1, n_band, cs, cs) (spec 2.1)`);
    }
    if (this.meta.temporal.encoding === "star-delta" && arr.dtype !== "uint8" && arr.dtype !== "uint16") {
      throw new UnsupportedError(`${where}: star-delta is defined for uint8 and uint16 only, not ${arr.dtype} (spec 4.1)`);
    }
  }

  // --- geometry -----------------------------------------------------------------------------------

  /** Level index for an output ground sample distance (10.3). */
  levelFor(gsd) {
    return levelForResolution(this.resolutions, gsd);
  }

  level(k = 0) {
    const L = this.levels[k];
    if (!L) throw new RangeError(`level ${k} does not exist (the store has levels 0..${this.levels.length - 1})`);
    return L;
  }

  /** Pixel (row, col) at level k containing projected (x, y), or null outside the array. */
  pixelAt({ x, y, level = 0 }) {
    const L = this.level(level);
    const p = pixelOf(L.transform, x, y);
    if (p.row < 0 || p.col < 0 || p.row >= L.height || p.col >= L.width) return null;
    return p;
  }

  /** Projected centre of pixel (row, col) at level k. */
  pixelCentre({ row, col, level = 0 }) {
    return pixelCentre(this.level(level).transform, row, col);
  }

  /** Projected bounds {x0, y0, x1, y1} of a level (north-up). */
  bounds(level = 0) {
    const L = this.level(level);
    const [a, , c, , e, f] = L.transform;
    const xs = [c, c + a * L.width];
    const ys = [f, f + e * L.height];
    return { x0: Math.min(...xs), x1: Math.max(...xs), y0: Math.min(...ys), y1: Math.max(...ys) };
  }

  /** Cells of level k that intersect the pixel window [row0, row1) x [col0, col1). */
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

  /** Size (height, width) and origin of cell (row, col), trimmed to the array (2.1). */
  cellWindow(level, row, col) {
    const L = this.level(level);
    if (!Number.isInteger(row) || !Number.isInteger(col) || row < 0 || col < 0 || row >= L.grid[0] || col >= L.grid[1]) {
      throw new RangeError(`cell (${row}, ${col}) is outside level ${level}'s grid ${L.grid[0]} x ${L.grid[1]}`);
    }
    const y0 = row * L.cs;
    const x0 = col * L.cs;
    return { y0, x0, height: Math.min(L.cs, L.height - y0), width: Math.min(L.cs, L.width - x0) };
  }

  _checkT(t) {
    if (!Number.isInteger(t) || t < 0 || t >= this.nTime) {
      throw new RangeError(`timestep ${t} is outside 0..${this.nTime - 1}`);
    }
  }

  // --- chunk access (2.1, 7) ----------------------------------------------------------------------

  async _decoder(array) {
    let dec = this._decoders.get(array);
    if (!dec) {
      dec = this._makeDecoder(array);
      this._decoders.set(array, dec);
    }
    return dec;
  }

  async _makeDecoder(array) {
    const steps = await Promise.all(
      array.compressors.map(async (c) => {
        if (c.name === "crc32c") {
          return {
            name: c.name,
            decode: (bytes) => {
              const n = bytes.byteLength - 4;
              const stored = new DataView(bytes.buffer, bytes.byteOffset + n, 4).getUint32(0, true);
              if (crc32c(bytes.subarray(0, n)) !== stored) throw new Error("crc32c checksum mismatch");
              return bytes.subarray(0, n);
            },
          };
        }
        const load = registry.get(c.name);
        if (!load) throw new UnsupportedError(`${array.path}: codec "${c.name}" is not in zarrita's registry`);
        const Codec = await load();
        let conf = c.configuration ?? {};
        if (c.name === "blosc") {
          // numcodecs' Blosc takes the numeric shuffle of the C library; decoding reads the blosc header.
          conf = {
            cname: conf.cname ?? "lz4",
            clevel: conf.clevel ?? 5,
            shuffle: conf.shuffle === "shuffle" ? 1 : 0,
            blocksize: conf.blocksize ?? 0,
          };
        }
        const codec = Codec.fromConfig(conf, { dataType: array.dtype, shape: array.innerShape, codecs: [] });
        return { name: c.name, decode: (bytes) => codec.decode(bytes) };
      }),
    );
    const T = array.TypedArray;
    const bpe = array.bytesPerElement;
    const want = array.innerLength * bpe;
    const swap = array.endian === "big" && bpe > 1;
    return async (bytes, where) => {
      // The result must own its buffer (deltas are reconstructed in place; raw bytes are cached).
      if (steps.length === 0) bytes = bytes.slice();
      for (let i = steps.length - 1; i >= 0; i--) {
        try {
          bytes = await steps[i].decode(bytes);
        } catch (err) {
          throw new CorruptStoreError(`${where}: ${steps[i].name} decoding failed: ${err?.message ?? err}`, {
            cause: err,
          });
        }
        if (!(bytes instanceof Uint8Array)) bytes = new Uint8Array(bytes.buffer ?? bytes);
      }
      if (bytes.byteLength !== want) {
        throw new CorruptStoreError(`${where}: chunk decodes to ${bytes.byteLength} bytes, expected ${want}`);
      }
      if (swap) {
        bytes = bytes.slice();
        for (let i = 0; i < bytes.length; i += bpe) bytes.subarray(i, i + bpe).reverse();
      } else if (bytes.byteOffset % bpe !== 0) {
        bytes = bytes.slice();
      }
      return new T(bytes.buffer, bytes.byteOffset, array.innerLength);
    };
  }

  _fill(array) {
    if (!array._fillChunk) array._fillChunk = new array.TypedArray(array.innerLength).fill(array.fillValue);
    return array._fillChunk;
  }

  /** Length of a data shard from shard_bytes (7.3): only the data array is listed. */
  _listedLength(array, loc) {
    const sb = this.meta.shardBytes;
    if (!sb) return null;
    const levelPath = array.path.slice(0, array.path.lastIndexOf("/"));
    if (array.path !== `${levelPath}/${this.variable}`) return null;
    const entry = sb[levelPath];
    if (!entry) return null;
    const [ts, , r, c] = loc.shard;
    const n = entry[`${ts}/${r}/${c}`];
    return typeof n === "number" ? n : null;
  }

  /** The decoded index of the shard holding `loc` (7.2), or null for a shard that does not exist. */
  async _shardIndex(array, loc, signal) {
    const key = loc.key;
    const cached = this.indexCache.get(key);
    if (cached !== undefined) return cached === MISSING ? null : cached;
    return this._inflight.run(
      `index:${key}`,
      async (sig) => {
        const sh = array.sharding;
        const N = sh.indexBytes;
        let range;
        let length = null;
        if (sh.indexLocation === "start") {
          range = [0, N - 1];
        } else {
          length = this._listedLength(array, loc);
          if (length === null) {
            // 7.3: HEAD fallback for a shard that shard_bytes does not list.
            const head = await this._request(key, { method: "HEAD", signal: sig });
            if (head === null) {
              this.indexCache.set(key, MISSING, 64);
              return null;
            }
            length = head.length;
          }
          range = length === null ? { suffix: N } : [length - N, length - 1];
          if (length !== null && length < N) {
            throw new CorruptStoreError(`${this.url}${key}: shard is ${length} bytes, shorter than its ${N}-byte index`);
          }
        }
        this.stats.indexReads++;
        const bytes = await this._request(key, { range, signal: sig });
        if (bytes === null) {
          this.indexCache.set(key, MISSING, 64);
          return null;
        }
        const index = decodeShardIndex(bytes, sh.nEntries, sh.indexCrc ? crc32c : null, `${this.url}${key}`);
        if (length !== null) {
          const limit = sh.indexLocation === "end" ? length - N : length;
          for (let i = 0; i < sh.nEntries; i++) {
            if (index[2 * i] >= 0 && index[2 * i] + index[2 * i + 1] > limit) {
              throw new CorruptStoreError(
                `${this.url}${key}: index entry ${i} points past the end of the shard (${length} bytes)`,
              );
            }
          }
        }
        this.indexCache.set(key, index, index.byteLength + 64);
        return index;
      },
      signal,
    );
  }

  /** Compressed bytes of the inner chunk at `coords`, or null when it is fill (absent, empty). */
  async _chunkBytes(array, coords, signal) {
    const loc = locateChunk(array, coords);
    if (!loc.sharded) {
      this.stats.chunkReads++;
      return { bytes: await this._request(loc.key, { signal }), where: `${this.url}${loc.key}` };
    }
    const index = await this._shardIndex(array, loc, signal);
    const where = `${this.url}${loc.key} (inner chunk ${loc.entry})`;
    if (index === null) return { bytes: null, where };
    const off = index[2 * loc.entry];
    const n = index[2 * loc.entry + 1];
    if (off < 0) return { bytes: null, where };
    this.stats.chunkReads++;
    const bytes = await this._request(loc.key, { range: [off, off + n - 1], signal });
    if (bytes === null) throw new CorruptStoreError(`${this.url}${loc.key}: shard vanished (HTTP 404) after its index was read`);
    return { bytes, where };
  }

  async _decodeChunk(array, got) {
    if (got.bytes === null) return this._fill(array);
    const decode = await this._decoder(array);
    return decode(got.bytes, got.where);
  }

  /**
   * A decoded chunk that holds true values (an anchor, any chunk of a none store, a mask or
   * coverage plane), cached in the byte-budgeted LRU and shared among concurrent callers.
   */
  async _trueChunk(array, coords, signal) {
    const key = `${array.path}|${coords.join(",")}`;
    const hit = this.chunkCache.get(key);
    if (hit !== undefined) return hit;
    return this._inflight.run(
      `chunk:${key}`,
      async (sig) => {
        const chunk = await this._decodeChunk(array, await this._chunkBytes(array, coords, sig));
        this.chunkCache.set(key, chunk, chunk === array._fillChunk ? 64 : chunk.byteLength);
        return chunk;
      },
      signal,
    );
  }

  /** A decoded delta chunk; its compressed bytes are kept in the raw cache, the decode is not. */
  async _deltaChunk(array, coords, signal) {
    const key = `${array.path}|${coords.join(",")}`;
    let got = this.rawCache.get(key);
    if (got === undefined) {
      got = await this._inflight.run(`raw:${key}`, (sig) => this._chunkBytes(array, coords, sig), signal);
      this.rawCache.set(key, got, (got.bytes?.byteLength ?? 0) + 64);
    }
    return this._decodeChunk(array, got);
  }

  /** Fetch a delta chunk's bytes into the raw cache (prefetch). */
  async _warmDelta(array, coords, signal) {
    const key = `${array.path}|${coords.join(",")}`;
    if (this.rawCache.has(key)) return 0;
    const got = await this._inflight.run(`raw:${key}`, (sig) => this._chunkBytes(array, coords, sig), signal);
    this.rawCache.set(key, got, (got.bytes?.byteLength ?? 0) + 64);
    return got.bytes?.byteLength ?? 0;
  }

  /** The full decoded chunk(s) for timestep t of a cell: [chunk] or [anchor, delta] (10.4). */
  async _chunksFor(L, t, row, col, signal) {
    const ref = this.temporal.reference(t);
    if (ref === null) return [await this._trueChunk(L.data, [t, 0, row, col], signal)];
    return Promise.all([
      this._trueChunk(L.data, [ref, 0, row, col], signal),
      this._deltaChunk(L.data, [t, 0, row, col], signal),
    ]);
  }

  // --- public reads -------------------------------------------------------------------------------

  /**
   * Every band of timestep t of cell (row, col) at `level` (10.4, 10.5): at most two chunk reads
   * (one with the anchor cached), reconstructed in the stored dtype, trimmed to the array shape.
   * Returns a CellData {t, level, row, col, y0, x0, height, width, nBands, dtype, data}.
   */
  async readCell({ t, level = 0, row, col, signal } = {}) {
    this._checkT(t);
    const L = this.level(level);
    const win = this.cellWindow(level, row, col);
    const chunks = await this._chunksFor(L, t, row, col, signal);
    const nb = this.nBands;
    let data;
    if (chunks.length === 1) {
      data = trimCopy(chunks[0], nb, L.cs, win.height, win.width, this.TypedArray);
    } else {
      // A decoded delta is ours alone (never cached), so reconstruct into it; the fill chunk is shared.
      const [anchor, delta] = chunks;
      const own = delta === L.data._fillChunk ? delta.slice() : delta;
      addWrappedInPlace(anchor, own);
      data = win.height === L.cs && win.width === L.cs ? own : trimCopy(own, nb, L.cs, win.height, win.width, this.TypedArray);
    }
    return new CellData({ t, level, row, col, ...win, nBands: nb, dtype: this.dtype, data });
  }

  /**
   * The mask or coverage plane ("mask" | "coverage") of timestep t of a cell, trimmed, as a
   * Uint8Array(height * width); null when the store has no such variable (10.7).
   */
  async readPlane(variable, { t, level = 0, row, col, signal } = {}) {
    this._checkT(t);
    const L = this.level(level);
    const arr = variable === "mask" ? L.mask : variable === "coverage" ? L.coverage : undefined;
    if (arr === undefined) throw new TypeError(`readPlane: variable must be "mask" or "coverage", not ${variable}`);
    if (arr === null) return null;
    const win = this.cellWindow(level, row, col);
    const chunk = await this._trueChunk(arr, [t, row, col], signal);
    return trimCopy(chunk, 1, L.cs, win.height, win.width, Uint8Array);
  }

  /**
   * Validity of every band and pixel of a cell (spec 2.3) as Uint8Array(nBands * h * w), 1 valid:
   * the mask when the store has one (never also nodata), else value != nodata, else all valid.
   * Pass `cell` (a CellData) to reuse values already read.
   */
  async validity({ t, level = 0, row, col, signal, cell } = {}) {
    const data = cell ?? (await this.readCell({ t, level, row, col, signal }));
    const n = data.height * data.width;
    const out = new Uint8Array(this.nBands * n);
    if (this.hasMask) {
      const mask = await this.readPlane("mask", { t, level, row, col, signal });
      for (let b = 0; b < this.nBands; b++) out.set(mask, b * n);
    } else if (this.nodata === null) {
      out.fill(1);
    } else {
      const nd = this.nodata;
      for (let i = 0; i < out.length; i++) out[i] = data.data[i] !== nd ? 1 : 0;
    }
    return out;
  }

  /** Stored values of every band at pixel (iy, ix) of a cell: TypedArray(nBands). */
  async _pixel(L, t, row, col, iy, ix, signal) {
    const chunks = await this._chunksFor(L, t, row, col, signal);
    const out = new this.TypedArray(this.nBands);
    const plane = L.cs * L.cs;
    const at = iy * L.cs + ix;
    for (let b = 0; b < this.nBands; b++) {
      out[b] = chunks.length === 1 ? chunks[0][b * plane + at] : chunks[0][b * plane + at] + chunks[1][b * plane + at];
    }
    return out;
  }

  async _planeValue(arr, t, row, col, iy, ix, cs, signal) {
    if (!arr) return null;
    const chunk = await this._trueChunk(arr, [t, row, col], signal);
    return chunk[iy * cs + ix];
  }

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

  _describe(stored, maskValue) {
    return this.bands.map((band, b) => {
      const value = stored[b];
      const valid = maskValue !== null ? maskValue === 1 : this.nodata === null ? true : value !== this.nodata;
      return {
        name: band.name,
        common_name: band.common_name,
        units: band.units,
        scale: band.scale,
        offset: band.offset,
        stored: value,
        physical: valid ? value * band.scale + band.offset : null,
        valid,
      };
    });
  }

  /**
   * The exact stored and physical value of every band at projected (x, y) (or pixel {row, col})
   * of timestep t (10.5, 10.7, 10.8), with validity, mask and coverage. null outside the array.
   */
  async valueAt({ x, y, row, col, t, level = 0, signal } = {}) {
    this._checkT(t);
    const p = this._locate({ x, y, row, col, level });
    if (!p) return null;
    const { L } = p;
    const [stored, maskValue, coverage] = await Promise.all([
      this._pixel(L, t, p.cellRow, p.cellCol, p.iy, p.ix, signal),
      this._planeValue(L.mask, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
      this._planeValue(L.coverage, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
    ]);
    const bands = this._describe(stored, maskValue);
    const centre = pixelCentre(L.transform, p.row, p.col);
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
   * Every timestep at one pixel (projected {x, y} or pixel {row, col}): per band the stored values
   * (TypedArray), physical values (Float64Array, NaN where invalid) and validity (Uint8Array).
   */
  async series({ x, y, row, col, level = 0, signal, onProgress } = {}) {
    const p = this._locate({ x, y, row, col, level });
    if (!p) return null;
    const { L } = p;
    const nT = this.nTime;
    const stored = this.bands.map(() => new this.TypedArray(nT));
    const mask = L.mask ? new Uint8Array(nT) : null;
    const coverage = L.coverage ? new Uint8Array(nT) : null;
    // Anchors first so that every delta finds its anchor resident (10, prefetch order).
    const order = [...Array(nT).keys()].sort((a, b) => this.temporal.isAnchor(b) - this.temporal.isAnchor(a) || a - b);
    let done = 0;
    await pool(
      order,
      this._concurrency,
      async (t) => {
        const [v, m, c] = await Promise.all([
          this._pixel(L, t, p.cellRow, p.cellCol, p.iy, p.ix, signal),
          this._planeValue(L.mask, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
          this._planeValue(L.coverage, t, p.cellRow, p.cellCol, p.iy, p.ix, L.cs, signal),
        ]);
        for (let b = 0; b < this.nBands; b++) stored[b][t] = v[b];
        if (mask) mask[t] = m;
        if (coverage) coverage[t] = c;
        onProgress?.(++done, nT);
      },
      signal,
    );
    const bands = this.bands.map((band, b) => {
      const valid = new Uint8Array(nT);
      const physical = new Float64Array(nT);
      for (let t = 0; t < nT; t++) {
        const v = stored[b][t];
        valid[t] = mask ? mask[t] : this.nodata === null ? 1 : v !== this.nodata ? 1 : 0;
        physical[t] = valid[t] ? v * band.scale + band.offset : NaN;
      }
      return { ...band, stored: stored[b], physical, valid };
    });
    const centre = pixelCentre(L.transform, p.row, p.col);
    return { level, row: p.row, col: p.col, x: centre.x, y: centre.y, times: this.times, timesMs: this.timesMs, bands, mask, coverage };
  }

  /**
   * The volatility array (spec 5) as {rows, cols, data: Float32Array}, or null when absent.
   * Read once per session.
   */
  async volatility({ signal } = {}) {
    if (this._volatility !== undefined) return this._volatility;
    const path = this.meta.volatilityPath;
    if (!path) return (this._volatility = null);
    const doc = this._volatilityDoc ?? (await this._json(`${path}/zarr.json`, signal, { required: false }));
    if (!doc) return (this._volatility = null);
    const arr = parseArray(doc, path, ["float32"]);
    if (arr.shape.length !== 2) throw new CorruptStoreError(`${path}/zarr.json: volatility must be 2-D (spec 5)`);
    const [rows, cols] = arr.shape;
    const data = new Float32Array(rows * cols);
    const [ch, cw] = arr.innerShape;
    for (let i = 0; i < arr.chunkGrid[0]; i++) {
      for (let j = 0; j < arr.chunkGrid[1]; j++) {
        const chunk = await this._decodeChunk(arr, await this._chunkBytes(arr, [i, j], signal));
        for (let y = 0; y < ch && i * ch + y < rows; y++) {
          for (let x = 0; x < cw && j * cw + x < cols; x++) data[(i * ch + y) * cols + j * cw + x] = chunk[y * cw + x];
        }
      }
    }
    return (this._volatility = { rows, cols, data });
  }

  /** Cells of a level ordered by volatility, most volatile first (level k takes the max of its level-0 cells). */
  async cellsByVolatility({ level = 0, cells = null, signal } = {}) {
    const L = this.level(level);
    const list = cells ? cells.map((c) => ({ row: c.row, col: c.col })) : this.cellsInWindow({ level, row0: 0, col0: 0, row1: L.height, col1: L.width });
    const vol = await this.volatility({ signal });
    if (!vol) return list;
    const f = 2 ** level;
    const score = (c) => {
      let best = 0;
      for (let r = c.row * f; r < Math.min(vol.rows, (c.row + 1) * f); r++) {
        for (let q = c.col * f; q < Math.min(vol.cols, (c.col + 1) * f); q++) best = Math.max(best, vol.data[r * vol.cols + q]);
      }
      return best;
    };
    return list.map((c) => ({ ...c, volatility: score(c) })).sort((a, b) => b.volatility - a.volatility);
  }

  /**
   * Load what scrubbing `times` over `cells` of `level` needs: every anchor first (decoded into
   * the anchor cache, cells ordered by volatility), then, with deltas (default), the compressed
   * delta chunks into the raw cache. Under none every chunk is a true chunk and is decoded.
   * times: priority order (default all, in order). Returns {anchors, deltas, bytes, ms}.
   */
  async prefetch({ level = 0, cells = null, times = null, deltas = true, signal, onProgress, concurrency } = {}) {
    const started = Date.now();
    const L = this.level(level);
    const ts = times ?? [...Array(this.nTime).keys()];
    ts.forEach((t) => this._checkT(t));
    const ordered = await this.cellsByVolatility({ level, cells, signal });
    const anchorOrder = [];
    const seen = new Set();
    for (const t of ts) {
      const a = this.temporal.reference(t) ?? t;
      if (!seen.has(a)) {
        seen.add(a);
        anchorOrder.push(a);
      }
    }
    const tasks = [];
    for (const a of anchorOrder) for (const c of ordered) tasks.push({ kind: "anchor", t: a, ...c });
    if (deltas) {
      for (const t of ts) {
        if (this.temporal.reference(t) === null) continue;
        for (const c of ordered) tasks.push({ kind: "delta", t, ...c });
      }
    }
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
          await this._trueChunk(L.data, coords, signal);
          nAnchors++;
        } else {
          await this._warmDelta(L.data, coords, signal);
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
   */
  isResident({ level = 0, cells, t }) {
    const L = this.level(level);
    const ref = this.temporal.reference(t);
    const key = (tt, c) => `${L.data.path}|${tt},0,${c.row},${c.col}`;
    return cells.every((c) => this.chunkCache.has(key(ref ?? t, c)) && (ref === null || this.rawCache.has(key(t, c))));
  }

  /** True when the anchor (or true chunk) timestep t of these cells needs is decoded in the cache. */
  isAnchorResident({ level = 0, cells, t }) {
    const L = this.level(level);
    const a = this.temporal.reference(t) ?? t;
    return cells.every((c) => this.chunkCache.has(`${L.data.path}|${a},0,${c.row},${c.col}`));
  }

  /** Drop every cache and abort every in-flight request. */
  close() {
    this._inflight.abortAll(new DOMException("store closed", "AbortError"));
    this.chunkCache.clear();
    this.indexCache.clear();
    this.rawCache.clear();
  }
}

// chronozarr/store-adapter.js: a chronozarr store presented to other Zarr readers (zarrita,
// CarbonPlan zarr-layer, anything that takes a zarrita store) as a plain Zarr v3 store of true
// values.
//
// Why: star-delta cannot be a per-chunk Zarr codec (spec 1, 4.2): a plain reader of a star-delta
// store sees residuals at every non-anchor timestep. The adapter answers each chunk request of the
// data array with the reconstructed chunk (anchor + delta mod 2^bits, through the reader's caches,
// so an anchor is read and decoded once), and serves metadata that describes exactly what it
// returns:
//
// - chronozarr.temporal is {"encoding": "none"} (4.1: no anchors, no references), and
//   chronozarr.shard_bytes is dropped (there are no shards in the view);
// - data, mask and coverage are served unsharded with one inner chunk per object and
//   the codec chain [bytes little-endian] (the values are already decoded in memory), with
//   chunk_key_encoding default "/";
// - the consolidated metadata of the root holds those documents, so one GET opens the view;
// - time is served as ISO-8601 strings (dates when every timestep is at 00:00 UTC), so a value
//   selector such as {time: "2024-04-01"} finds it; the time and band coordinates are also
//   served at the root (zarr-layer resolves selector values against root-level arrays);
// - every other object (level groups, coordinate arrays y, x, band, volatility) is served as stored.
//
// Nothing is written anywhere: the view exists only in memory, for one session.

import { UnsupportedError } from "./errors.js";
import { openStore } from "./store.js";

/**
 * @import {ChronozarrStore} from "./store.js"
 * @import {OpenOptions} from "./types.js"
 */

/**
 * Options for @carbonplan/zarr-layer's ZarrLayer, taken from the store (zarrLayerOptions).
 * @typedef {object} ZarrLayerStoreOptions
 * @property {TrueValueStore} store
 * @property {string} variable
 * @property {[number, number, number, number]} bounds
 * @property {{time: string, band: string}} selector
 * @property {"EPSG:4326" | "EPSG:3857"} [crs]
 * @property {string | object} [proj4]
 * @property {number} [fillValue]
 */

const ENC = new TextEncoder();
const BYTES_LE = Object.freeze([{ name: "bytes", configuration: { endian: "little" } }]);
const V2_METADATA = /(^|\/)\.z(array|group|attrs|metadata)$/;
const clone = (v) => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));
const jsonBytes = (doc) => ENC.encode(JSON.stringify(doc));

/**
 * The vlen-utf8 encoding of a list of strings (count, then length-prefixed UTF-8 items).
 * @param {string[]} strings
 * @returns {Uint8Array}
 */
export function vlenUtf8(strings) {
  const items = strings.map((s) => ENC.encode(s));
  const out = new Uint8Array(4 + items.reduce((n, b) => n + 4 + b.byteLength, 0));
  const view = new DataView(out.buffer);
  view.setUint32(0, items.length, true);
  let pos = 4;
  for (const b of items) {
    view.setUint32(pos, b.byteLength, true);
    out.set(b, pos + 4);
    pos += 4 + b.byteLength;
  }
  return out;
}

/**
 * The time coordinate as strings: "YYYY-MM-DD" when every timestep is at 00:00:00 UTC (monthly
 * composites are), else chronozarr.times as written (spec 3.9 form).
 * @param {string[]} times
 * @param {number[]} timesMs
 * @returns {string[]}
 */
export function timeLabels(times, timesMs) {
  const midnight = timesMs.every((ms) => ms % 86_400_000 === 0);
  return midnight ? timesMs.map((ms) => new Date(ms).toISOString().slice(0, 10)) : times.slice();
}

/**
 * proj4 definition of EPSG:4326, EPSG:3857 and the WGS 84 UTM zones (326zz, 327zz), else null.
 * @param {string | null | undefined} crs
 * @returns {string | null}
 */
export function proj4ForEpsg(crs) {
  const m = /^EPSG:(\d+)$/i.exec(String(crs ?? "").trim());
  if (!m) return null;
  const code = Number(m[1]);
  if (code === 4326) return "+proj=longlat +datum=WGS84 +no_defs";
  if (code === 3857) {
    return "+proj=merc +a=6378137 +b=6378137 +lat_ts=0 +lon_0=0 +x_0=0 +y_0=0 +k=1 +units=m +nadgrids=@null +wktext +no_defs";
  }
  const zone = code % 100;
  if ((code - zone === 32600 || code - zone === 32700) && zone >= 1 && zone <= 60) {
    return `+proj=utm +zone=${zone}${code >= 32700 ? " +south" : ""} +datum=WGS84 +units=m +no_defs`;
  }
  return null;
}

/** A 1-D string array document (data_type string, vlen-utf8), as zarr-python writes them. */
function stringArrayDoc(n, dim, attributes = {}) {
  return {
    zarr_format: 3,
    node_type: "array",
    shape: [n],
    data_type: "string",
    chunk_grid: { name: "regular", configuration: { chunk_shape: [Math.max(1, n)] } },
    chunk_key_encoding: { name: "default", configuration: { separator: "/" } },
    fill_value: "",
    codecs: [{ name: "vlen-utf8", configuration: {} }],
    dimension_names: [dim],
    attributes: { _ARRAY_DIMENSIONS: [dim], ...attributes },
  };
}

/** The served document of an array held decoded in memory: unsharded, bytes only. */
function decodedArrayDoc(doc, innerShape) {
  const out = clone(doc);
  out.chunk_grid = { name: "regular", configuration: { chunk_shape: innerShape.slice() } };
  out.chunk_key_encoding = { name: "default", configuration: { separator: "/" } };
  out.codecs = clone(BYTES_LE);
  delete out.storage_transformers;
  return out;
}

/**
 * The bytes of a typed array in a buffer of their own. Typed arrays hold host byte order, which is
 * little-endian on every platform JavaScript runs on today, as the served [bytes] codec says.
 */
function ownBytes(typed, copy) {
  const view = new Uint8Array(typed.buffer, typed.byteOffset, typed.byteLength);
  return copy || typed.byteOffset !== 0 || typed.buffer.byteLength !== typed.byteLength ? view.slice() : view;
}

/**
 * A zarrita-compatible store (`get(key)`) of the true values of an opened ChronozarrStore.
 * Use chronozarrStore(url) to open one.
 */
export class TrueValueStore {
  /** @param {ChronozarrStore} reader an opened store */
  constructor(reader) {
    /** @readonly */
    this.reader = reader;
    /** @readonly */
    this.url = reader.url;
    /** The time coordinate as served: dates ("2024-04-01") when every timestep is at 00:00 UTC. @readonly */
    this.times = timeLabels(reader.times, reader.timesMs);
    this.stats = { served: 0, chunks: 0, reconstructed: 0, passthrough: 0 };
    /** @internal @type {Map<string, {kind: string, level: number, array: any}>} served path -> array */
    this._arrays = new Map();
    /** @internal @type {Map<string, Uint8Array>} served path of a zarr.json -> bytes */
    this._docs = new Map();
    /** @internal @type {Map<string, Uint8Array>} served path of a synthesized chunk -> bytes */
    this._objects = new Map();
    /** The root document the view serves. @type {Record<string, any>} */
    this.rootDocument = {};
    this._build();
  }

  /**
   * The store's CRS (chronozarr.crs).
   * @returns {string | null}
   */
  get crs() {
    return this.reader.crs;
  }

  /**
   * proj4 definition of the store's CRS when the adapter knows one (EPSG:4326, EPSG:3857, WGS 84 / UTM), else null.
   * @returns {string | null}
   */
  get proj4() {
    return proj4ForEpsg(this.reader.crs);
  }

  /**
   * Level-0 bounds [xMin, yMin, xMax, yMax] in the store's CRS (outer pixel edges, spec 3.3).
   * @returns {[number, number, number, number]}
   */
  get bounds() {
    const b = this.reader.bounds(0);
    return [b.x0, b.y0, b.x1, b.y1];
  }

  /** @internal */
  _build() {
    const r = this.reader;
    const root = clone(r.rootDocument);
    const consolidated = clone(root.consolidated_metadata?.metadata ?? {});
    const cz = root.attributes.chronozarr;
    cz.temporal = { encoding: "none" }; // 4.1: what the view returns is true values
    delete cz.shard_bytes;

    const served = (path, doc) => {
      consolidated[path] = doc;
      this._docs.set(`${path}/zarr.json`, jsonBytes(doc));
    };
    const timeDoc = () => stringArrayDoc(r.nTime, "time", { description: "chronozarr.times, as served by the chronozarr store adapter" });
    const bandLabels = vlenUtf8(r.bandNames);
    const timeBytes = vlenUtf8(this.times);

    for (const L of r.levels) {
      const add = (arr, kind) => {
        if (!arr) return;
        served(arr.path, decodedArrayDoc(r.meta.consolidated?.[arr.path] ?? this._rawDoc(arr), arr.innerShape));
        this._arrays.set(arr.path, { kind, level: L.index, array: arr });
      };
      add(L.data, "data");
      add(L.mask, "mask");
      add(L.coverage, "coverage");
      served(`${L.path}/time`, timeDoc());
      this._objects.set(`${L.path}/time/c/0`, timeBytes);
      if (!consolidated[`${L.path}/band`]) {
        served(`${L.path}/band`, stringArrayDoc(r.nBands, "band"));
        this._objects.set(`${L.path}/band/c/0`, bandLabels);
      }
    }
    // Root-level time and band (zarr-layer looks selector values up at the root).
    served("time", timeDoc());
    this._objects.set("time/c/0", timeBytes);
    served("band", stringArrayDoc(r.nBands, "band"));
    this._objects.set("band/c/0", bandLabels);
    // Without consolidated metadata in the store, the view has none either (other documents pass through).
    if (root.consolidated_metadata) root.consolidated_metadata = { kind: "inline", must_understand: false, metadata: consolidated };
    this.rootDocument = root;
    this._docs.set("zarr.json", jsonBytes(root));
  }

  /** @internal */
  _rawDoc(arr) {
    // A store without consolidated metadata: rebuild the array document from the parse.
    return {
      zarr_format: 3,
      node_type: "array",
      shape: arr.shape,
      data_type: arr.dtype,
      chunk_grid: { name: "regular", configuration: { chunk_shape: arr.innerShape } },
      fill_value: arr.fillValue,
      codecs: BYTES_LE,
      dimension_names: arr.shape.length === 4 ? ["time", "band", "y", "x"] : ["time", "y", "x"],
      attributes: arr.attributes,
    };
  }

  /**
   * The root document the view serves (parsed), e.g. to inspect what other readers see.
   * @returns {Record<string, any>}
   */
  describe() {
    return clone(this.rootDocument);
  }

  /**
   * zarrita's Readable: the bytes of `key` ("/zarr.json", "/0/data/c/3/0/1/2", ...), or undefined
   * when the view has no such object.
   * @param {string} key
   * @param {{signal?: AbortSignal}} [options]
   * @returns {Promise<Uint8Array | undefined>}
   */
  async get(key, options = {}) {
    const path = String(key).replace(/^\/+/, "");
    const signal = options.signal;
    this.stats.served++;
    const doc = this._docs.get(path);
    if (doc) return doc.slice();
    const obj = this._objects.get(path);
    if (obj) return obj.slice();
    // The view is Zarr v3: a reader probing for v2 metadata (zarr-layer without zarrVersion: 3)
    // learns that without a request.
    if (V2_METADATA.test(path)) return undefined;
    const chunk = this._parseChunkKey(path);
    if (chunk) return this._chunk(chunk, signal);
    this.stats.passthrough++;
    const bytes = await this.reader.source.request(path, { signal });
    return bytes === null ? undefined : bytes;
  }

  /** @internal */
  _parseChunkKey(path) {
    const i = path.indexOf("/c/");
    if (i < 0) return null;
    const entry = this._arrays.get(path.slice(0, i));
    if (!entry) return null;
    const parts = path.slice(i + 3).split("/");
    const coords = parts.map(Number);
    const rank = entry.array.shape.length;
    const canonical = (c, d) => String(c) === parts[d] && Number.isInteger(c) && c >= 0 && c < entry.array.chunkGrid[d];
    if (coords.length !== rank || !coords.every(canonical)) {
      return { entry, coords: null };
    }
    return { entry, coords };
  }

  /** @internal */
  async _chunk({ entry, coords }, signal) {
    if (coords === null) return undefined; // not a chunk of this array: absent
    this.stats.chunks++;
    const r = this.reader;
    if (entry.kind === "data") {
      const [t, , row, col] = coords;
      const delta = r.temporal.reference(t) !== null;
      if (delta) this.stats.reconstructed++;
      const values = await r.trueChunk({ t, level: entry.level, row, col, signal });
      return ownBytes(values, !delta); // a cached anchor is copied; a reconstruction is ours
    }
    const values = await r.chunks.trueChunk(entry.array, coords, signal);
    return ownBytes(values, true);
  }
}

/**
 * Open a chronozarr store as a zarrita-compatible store of true values (see the module comment).
 * options: those of openStore (fetch, headers, timeout, cache budgets, ...).
 *
 *   const store = await chronozarrStore("https://bucket.example/ucayali.zarr");
 *   const arr = await zarr.open.v3(zarr.root(store).resolve("0/data"), { kind: "array" });
 *
 * @param {string | URL} url
 * @param {OpenOptions} [options]
 * @returns {Promise<TrueValueStore>}
 */
export async function chronozarrStore(url, options = {}) {
  return new TrueValueStore(await openStore(url, options));
}

/**
 * Options for CarbonPlan zarr-layer's ZarrLayer that place and read the store without
 * page-side CRS or bounds overrides: {store, variable, bounds, selector, crs | proj4, fillValue}.
 * Merge your own (id, colormap, clim, selector) over them. zarr-layer 0.5.0 reads no CRS
 * attribute, so a CRS other than EPSG:4326 / 3857 needs a proj4 definition: derived here for the
 * WGS 84 / UTM zones, else give `proj4` (a proj4 string or PROJJSON, e.g. from chronozarr/map's
 * crsDefinition). Without one this throws UnsupportedError rather than misplace the layer.
 * @param {TrueValueStore} store
 * @param {{proj4?: string | object | null}} [options]
 * @returns {ZarrLayerStoreOptions}
 */
export function zarrLayerOptions(store, { proj4 = null } = {}) {
  const r = store.reader;
  /** @type {ZarrLayerStoreOptions} */
  const opts = {
    store,
    variable: r.variable,
    bounds: store.bounds,
    selector: { time: store.times[0], band: r.bandNames[0] },
  };
  const crs = String(r.crs ?? "").toUpperCase();
  if (proj4) opts.proj4 = proj4;
  else if (crs === "EPSG:4326" || crs === "EPSG:3857") opts.crs = crs;
  else if (store.proj4) opts.proj4 = store.proj4;
  else {
    throw new UnsupportedError(
      `${r.url}: zarr-layer needs a proj4 definition for CRS ${JSON.stringify(r.crs)}; pass zarrLayerOptions(store, {proj4})`,
    );
  }
  if (r.nodata !== null) opts.fillValue = r.nodata;
  return opts;
}

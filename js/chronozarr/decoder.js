// chronozarr/decoder.js: the public entry of the DOM-free JavaScript reader of chronozarr v0.2
// stores (spec 10). It re-exports the reader's public API from its modules, one concern each:
//
//   store.js        openStore, ChronozarrStore, CellData: open, geometry and reads (10)
//   levels.js       the levels and arrays of an opened store (3.3, 3.7, 2.1, 2.4)
//   metadata.js     I/O-free parser of every zarr.json the reader touches (2, 3, 4, 7, 8)
//   http.js         GET / HEAD / byte ranges with timeouts (7.3, 10.1)
//   shard.js        shard indices from shard_bytes or HEAD, crc32c checked (7.2, 7.3)
//   codecs.js       chunk decoding through zarrita's codec registry (8)
//   bounded.js      decompression held to a chunk's expected size (8; decision 0016)
//   names.js        the node-name rule and joinUrl, which cannot leave the store (3.2, 3.7)
//   jsondoc.js      metadata JSON with size and depth limits (decision 0016)
//   reconstruct.js  star-delta modular addition and trimming (4.2, 2.1, 10.5)
//   chunks.js       chunk access with byte-budgeted caches and shared in-flight loads (10)
//   cache.js        the one cache key, in-flight sharing
//   prefetch.js     prefetch planning and the concurrency pool (10)
//   validity.js     the one validity rule (2.3)
//   store-adapter.js  chronozarrStore: a zarrita store of true values for other Zarr readers
//
// It uses fetch and nothing else from its host, so it runs unchanged in Node, a browser page
// and a Web Worker. Its types are the JSDoc of these modules (types.js holds the shapes), from
// which `npm pack` writes the package's .d.ts files.

/** @typedef {import("./types.js").Band} Band */
/** @typedef {import("./types.js").BandValue} BandValue */
/** @typedef {import("./types.js").Cell} Cell */
/** @typedef {import("./types.js").CellRequest} CellRequest */
/** @typedef {import("./types.js").CrsInfo} CrsInfo */
/** @typedef {import("./types.js").DType} DType */
/** @typedef {import("./types.js").Encoding} Encoding */
/** @typedef {import("./types.js").Level} Level */
/** @typedef {import("./types.js").OpenOptions} OpenOptions */
/** @typedef {import("./types.js").PixelRef} PixelRef */
/** @typedef {import("./types.js").PrefetchResult} PrefetchResult */
/** @typedef {import("./types.js").Series} Series */
/** @typedef {import("./types.js").Stats} Stats */
/** @typedef {import("./types.js").StoredArray} StoredArray */
/** @typedef {import("./types.js").Temporal} Temporal */
/** @typedef {import("./types.js").Transform} Transform */
/** @typedef {import("./types.js").ValueAt} ValueAt */

export { crc32c } from "./crc32c.js";
export {
  ChronozarrError,
  CorruptStoreError,
  FetchError,
  NotAChronozarrStoreError,
  StoreNotFoundError,
  UnsupportedError,
} from "./errors.js";
export { LRUCache } from "./lru.js";
export { physical } from "./physical.js";
export { addWrappedInPlace, reconstruct } from "./reconstruct.js";
export { CellData, ChronozarrStore, DEFAULTS, openStore } from "./store.js";
export { isValid, validityOf } from "./validity.js";

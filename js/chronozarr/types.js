// Shapes the reader's public API takes and returns, as JSDoc typedefs: `tsc` checks the code
// against them (`npm test`, tsconfig.json) and writes the package's .d.ts files from them
// (tsconfig.types.json). No runtime code.

/** @typedef {"uint8" | "uint16" | "int16" | "float32"} DType */
/** @typedef {Uint8Array | Uint16Array | Int16Array | Float32Array} StoredArray */
/** @typedef {"none" | "star-delta"} Encoding */
/**
 * Affine [a, b, c, d, e, f]: x = a*col + b*row + c, y = d*col + e*row + f (spec 3.3).
 * @typedef {[number, number, number, number, number, number]} Transform
 */

/**
 * A band of the root block (spec 3.6): physical = stored * scale + offset.
 * @typedef {object} Band
 * @property {string} name
 * @property {string} [common_name]
 * @property {number} scale
 * @property {number} offset
 * @property {string} [units]
 */

/**
 * The temporal block (spec 4).
 * @typedef {object} Temporal
 * @property {Encoding} encoding
 * @property {number | null} anchorInterval
 * @property {number[]} anchorIndices
 * @property {Record<string, number>} deltaReference
 * @property {unknown} selection
 * @property {(t: number) => number | null} reference the anchor a delta timestep references, or null for a true timestep
 * @property {(t: number) => boolean} isAnchor
 */

/**
 * A level of the pyramid (spec 2.1, 3.3, 3.7).
 * @typedef {object} Level
 * @property {number} index
 * @property {string} path
 * @property {number} resolution
 * @property {Transform} transform
 * @property {[number, number, number, number]} shape
 * @property {number} height
 * @property {number} width
 * @property {number} cs cell size (pixels per cell side)
 * @property {[number, number]} grid cell rows and columns
 * @property {DType} dtype
 * @property {boolean} sharded
 * @property {number | null} shardTime
 * @property {any} data the data array (metadata.js parseArray)
 * @property {any} mask the mask array, or null
 * @property {any} coverage the coverage array, or null
 */

/**
 * Where an array's chunks are decoded (e.g. a Worker pool): returns what makeChunkDecoder(array) would.
 * `prefix`: elements from the chunk's start that are needed (a zstd chunk may be decoded only that far).
 * @typedef {(bytes: Uint8Array, where: string, prefix?: number) => Promise<any>} ChunkDecoder
 * @typedef {(array: any, makeChunkDecoder: (array: any) => Promise<ChunkDecoder>) => Promise<ChunkDecoder>} MakeDecoder
 */

/**
 * openStore's options.
 * @typedef {object} OpenOptions
 * @property {typeof globalThis.fetch} [fetch] any fetch-compatible function
 * @property {Record<string, string>} [headers] added to every request
 * @property {AbortSignal} [signal] aborts the open
 * @property {number} [timeout] ms per request
 * @property {number} [cacheBytes] decoded anchors
 * @property {number} [indexCacheBytes] decoded shard indices
 * @property {number} [rawCacheBytes] compressed delta chunks
 * @property {number} [concurrency] requests in flight for prefetch and series
 * @property {number} [v01Scale] scale of a 0.1.x store's string bands (spec 3.6)
 * @property {RequestCache} [deltaCache] the RequestInit.cache mode of delta chunk GETs
 * @property {MakeDecoder} [makeDecoder] where chunks are decoded
 */

/**
 * A cell-timestep (spec 2.1).
 * @typedef {object} CellRequest
 * @property {number} t
 * @property {number} [level]
 * @property {number} row
 * @property {number} col
 * @property {AbortSignal} [signal]
 */

/** @typedef {{row: number, col: number}} Cell */

/**
 * A pixel, by projected coordinates or by row and column.
 * @typedef {object} PixelRef
 * @property {number} [x]
 * @property {number} [y]
 * @property {number} [row]
 * @property {number} [col]
 * @property {number} [level]
 * @property {AbortSignal} [signal]
 */

/**
 * @typedef {Band & {stored: number, physical: number | null, valid: boolean}} BandValue
 */

/**
 * valueAt's answer (spec 10.5, 10.7, 10.8).
 * @typedef {object} ValueAt
 * @property {number} t
 * @property {string} time
 * @property {number} level
 * @property {number} row
 * @property {number} col
 * @property {number} x
 * @property {number} y
 * @property {boolean} valid
 * @property {number | null} mask
 * @property {number | null} coverage
 * @property {BandValue[]} bands
 */

/**
 * series's answer: every timestep at one pixel.
 * @typedef {object} Series
 * @property {number} level
 * @property {number} row
 * @property {number} col
 * @property {number} x
 * @property {number} y
 * @property {string[]} times
 * @property {number[]} timesMs
 * @property {Array<Band & {stored: StoredArray, physical: Float64Array, valid: Uint8Array}>} bands physical is NaN where invalid
 * @property {Uint8Array | null} mask
 * @property {Uint8Array | null} coverage
 * @property {"history" | "chunks"} source the time-series companion (docs/spec.md C25) or every timestep's chunks
 */

/**
 * Requests and bytes of a store so far.
 * @typedef {object} Stats
 * @property {number} requests
 * @property {number} heads
 * @property {number} bytes
 * @property {number} chunkReads
 * @property {number} indexReads
 */

/**
 * The CRS as an EPSG code, or WKT2 and PROJJSON for a CRS without one (docs/spec.md C16).
 * @typedef {object} CrsInfo
 * @property {string} text
 * @property {number | null} epsg
 * @property {string | null} wkt2
 * @property {Record<string, unknown> | null} projjson
 */

/**
 * What prefetch loaded.
 * @typedef {object} PrefetchResult
 * @property {number} anchors
 * @property {number} deltas
 * @property {number} bytes
 * @property {number} ms
 */

export {};

// Types of the chronozarr reader (package entry "chronozarr", file chronozarr/decoder.js).
// Hand-written to match the JavaScript; js/test/package.test.js compiles a consumer against them.

export type DType = "uint8" | "uint16" | "int16" | "float32";
export type StoredArray = Uint8Array | Uint16Array | Int16Array | Float32Array;
export type Encoding = "none" | "star-delta";
/** Affine [a, b, c, d, e, f]: x = a*col + b*row + c, y = d*col + e*row + f (spec 3.3). */
export type Transform = [number, number, number, number, number, number];

export class ChronozarrError extends Error {}
/** No root zarr.json at the URL (HTTP 404, or the host could not be reached). */
export class StoreNotFoundError extends ChronozarrError {}
/** The root is not a chronozarr store. */
export class NotAChronozarrStoreError extends ChronozarrError {}
/** A spec_version, encoding, data_type or codec this reader does not support. */
export class UnsupportedError extends ChronozarrError {}
/** Malformed metadata or object (bad JSON, bad index checksum, short read). */
export class CorruptStoreError extends ChronozarrError {}
/** An HTTP request failed (status other than 2xx/404, network error, timeout). */
export class FetchError extends ChronozarrError {
  url: string;
  status: number | null;
}

export class LRUCache<V = unknown> {
  constructor(maxBytes: number);
  maxBytes: number;
  bytes: number;
  hits: number;
  misses: number;
  readonly size: number;
  has(key: string): boolean;
  get(key: string): V | undefined;
  set(key: string, value: V, bytes: number): boolean;
  delete(key: string): boolean;
  clear(): void;
  keys(): IterableIterator<string>;
}

export function crc32c(bytes: Uint8Array): number;
/** delta[i] = (anchor[i] + delta[i]) mod 2^bits, in place (spec 4.2); returns delta. */
export function addWrappedInPlace<T extends StoredArray>(anchor: T, delta: T): T;
export function reconstruct<T extends StoredArray>(
  anchor: T,
  delta: T,
  nBands: number,
  cs: number,
  height: number,
  width: number,
  Typed: { new (n: number): T },
): T;
/** Validity of one value (spec 2.3): the mask alone when present, else value != nodata. */
export function isValid(value: number, maskValue: number | null | undefined, nodata: number | null): boolean;
export function validityOf(
  values: ArrayLike<number>,
  mask: Uint8Array | null,
  nodata: number | null,
  nBands: number,
  n: number,
): Uint8Array;

export interface Band {
  name: string;
  common_name?: string;
  scale: number;
  offset: number;
  units?: string;
}

export interface Temporal {
  encoding: Encoding;
  anchorInterval: number | null;
  anchorIndices: number[];
  deltaReference: Record<string, number>;
  selection: unknown;
  /** The anchor a delta timestep references, or null for a true timestep. */
  reference(t: number): number | null;
  isAnchor(t: number): boolean;
}

export interface Level {
  index: number;
  path: string;
  resolution: number;
  transform: Transform;
  shape: [number, number, number, number];
  height: number;
  width: number;
  cs: number;
  grid: [number, number];
  dtype: DType;
  sharded: boolean;
  shardTime: number | null;
}

export interface OpenOptions {
  fetch?: typeof globalThis.fetch;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  timeout?: number;
  cacheBytes?: number;
  indexCacheBytes?: number;
  rawCacheBytes?: number;
  concurrency?: number;
  v01Scale?: number;
  /** Where chunks are decoded (e.g. a Worker pool): returns what makeChunkDecoder(array) would. */
  makeDecoder?: (
    array: unknown,
    makeChunkDecoder: (array: unknown) => Promise<(bytes: Uint8Array, where: string) => Promise<ArrayBufferView>>,
  ) => Promise<(bytes: Uint8Array, where: string) => Promise<ArrayBufferView>>;
}

export const DEFAULTS: Readonly<{
  cacheBytes: number;
  indexCacheBytes: number;
  rawCacheBytes: number;
  timeout: number;
  concurrency: number;
}>;

export interface CellRequest {
  t: number;
  level?: number;
  row: number;
  col: number;
  signal?: AbortSignal;
}

export class CellData {
  t: number;
  level: number;
  row: number;
  col: number;
  y0: number;
  x0: number;
  height: number;
  width: number;
  nBands: number;
  dtype: DType;
  /** (band, height, width), exact stored values, trimmed to the array. */
  data: StoredArray;
  band(i: number): StoredArray;
}

export interface PixelRef {
  x?: number;
  y?: number;
  row?: number;
  col?: number;
  level?: number;
  signal?: AbortSignal;
}

export interface BandValue extends Band {
  stored: number;
  physical: number | null;
  valid: boolean;
}

export interface ValueAt {
  t: number;
  time: string;
  level: number;
  row: number;
  col: number;
  x: number;
  y: number;
  valid: boolean;
  mask: number | null;
  coverage: number | null;
  bands: BandValue[];
}

export interface Series {
  level: number;
  row: number;
  col: number;
  x: number;
  y: number;
  times: string[];
  timesMs: number[];
  bands: Array<Band & { stored: StoredArray; physical: Float64Array; valid: Uint8Array }>;
  mask: Uint8Array | null;
  coverage: Uint8Array | null;
}

export interface Cell {
  row: number;
  col: number;
}

export interface Stats {
  requests: number;
  heads: number;
  bytes: number;
  chunkReads: number;
  indexReads: number;
}

export interface CrsInfo {
  text: string;
  epsg: number | null;
  wkt2: string | null;
  projjson: Record<string, unknown> | null;
}

export class ChronozarrStore {
  constructor(url: string | URL, options?: OpenOptions);
  readonly url: string;
  specVersion: string;
  variable: string;
  times: string[];
  timesMs: number[];
  nTime: number;
  bands: Band[];
  bandNames: string[];
  nBands: number;
  nodata: number | null;
  crs: string | null;
  /** The CRS as an EPSG code, or WKT2 and PROJJSON for a CRS without one (docs/spec.md C16). */
  crsInfo: CrsInfo | null;
  temporal: Temporal;
  encoding: Encoding;
  provenance: unknown;
  hasMask: boolean;
  hasCoverage: boolean;
  levels: Level[];
  dtype: DType;
  cs: number;
  resolutions: number[];
  /** The root zarr.json as read. */
  rootDocument: Record<string, unknown>;
  stats: Stats;
  chunkCache: LRUCache;
  indexCache: LRUCache;
  rawCache: LRUCache;

  levelFor(gsd: number): number;
  level(k?: number): Level;
  pixelAt(p: { x: number; y: number; level?: number }): { row: number; col: number } | null;
  pixelCentre(p: { row: number; col: number; level?: number }): { x: number; y: number };
  bounds(level?: number): { x0: number; y0: number; x1: number; y1: number };
  cellsInWindow(w: { level?: number; row0: number; col0: number; row1: number; col1: number }): Cell[];
  cellWindow(level: number, row: number, col: number): { y0: number; x0: number; height: number; width: number };

  /** The full cs x cs true chunk of a cell-timestep (what a Zarr reader of true values gets). */
  trueChunk(req: CellRequest): Promise<StoredArray>;
  /** `bands`: only the first `bands` bands (1..nBands); a zstd delta is then decoded only that far. */
  readCell(req: CellRequest & { bands?: number }): Promise<CellData>;
  readPlane(variable: "mask" | "coverage", req: CellRequest): Promise<Uint8Array | null>;
  validity(req: CellRequest & { cell?: CellData }): Promise<Uint8Array>;
  valueAt(req: PixelRef & { t: number }): Promise<ValueAt | null>;
  series(req: PixelRef & { onProgress?: (done: number, total: number) => void }): Promise<Series | null>;
  volatility(o?: { signal?: AbortSignal }): Promise<{ rows: number; cols: number; data: Float32Array } | null>;
  cellsByVolatility(o?: { level?: number; cells?: Cell[] | null; signal?: AbortSignal }): Promise<Array<Cell & { volatility?: number }>>;
  prefetch(o?: {
    level?: number;
    cells?: Cell[] | null;
    times?: number[] | null;
    deltas?: boolean;
    signal?: AbortSignal;
    concurrency?: number;
    onProgress?: (done: number, total: number, task: { kind: "anchor" | "delta"; t: number; row: number; col: number }) => void;
  }): Promise<{ anchors: number; deltas: number; bytes: number; ms: number }>;
  isResident(o: { level?: number; cells: Cell[]; t: number }): boolean;
  isAnchorResident(o: { level?: number; cells: Cell[]; t: number }): boolean;
  close(): void;
}

/** Open a chronozarr store: one GET of the root zarr.json with consolidated metadata (spec 10). */
export function openStore(url: string | URL, options?: OpenOptions): Promise<ChronozarrStore>;

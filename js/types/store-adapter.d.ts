// Types of the store adapter (package entry "chronozarr/store", file chronozarr/store-adapter.js).

import type { ChronozarrStore, OpenOptions } from "./decoder.js";

/** A zarrita Readable of the true values of a chronozarr store. */
export class TrueValueStore {
  constructor(reader: ChronozarrStore);
  readonly reader: ChronozarrStore;
  readonly url: string;
  /** The time coordinate as served: dates ("2024-04-01") when every timestep is at 00:00 UTC. */
  readonly times: string[];
  readonly crs: string | null;
  /** proj4 definition of the store's CRS (EPSG:4326, EPSG:3857, WGS 84 / UTM), else null. */
  readonly proj4: string | null;
  /** Level-0 bounds [xMin, yMin, xMax, yMax] in the store's CRS. */
  readonly bounds: [number, number, number, number];
  stats: { served: number; chunks: number; reconstructed: number; passthrough: number };
  rootDocument: Record<string, unknown>;
  get(key: string, options?: { signal?: AbortSignal }): Promise<Uint8Array | undefined>;
  /** The root document the view serves. */
  describe(): Record<string, unknown>;
}

export function chronozarrStore(url: string | URL, options?: OpenOptions): Promise<TrueValueStore>;

export interface ZarrLayerStoreOptions {
  store: TrueValueStore;
  variable: string;
  bounds: [number, number, number, number];
  selector: { time: string; band: string };
  crs?: "EPSG:4326" | "EPSG:3857";
  proj4?: string | object;
  fillValue?: number;
}

/** Options for @carbonplan/zarr-layer's ZarrLayer, taken from the store (merge yours over them). */
/** Throws UnsupportedError for a CRS without a known proj4 definition unless `proj4` is given. */
export function zarrLayerOptions(store: TrueValueStore, options?: { proj4?: string | object | null }): ZarrLayerStoreOptions;
export function proj4ForEpsg(crs: string | null | undefined): string | null;
export function timeLabels(times: string[], timesMs: number[]): string[];
export function vlenUtf8(strings: string[]): Uint8Array;

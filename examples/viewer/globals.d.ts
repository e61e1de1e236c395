// What the viewer page puts on `window` (type-checking only: js/tsconfig.viewer.json).
interface Window {
  /** The page's configuration (the config block) and its early work (CHRONOZARR_VIEWER.early). */
  CHRONOZARR_VIEWER: any;
  /** The offline basemap style, written into the built page by js/tools/build-viewer.mjs. */
  CHRONOZARR_OFFLINE_STYLE?: () => object;
  /** The viewer's state and helpers, for tests and benchmarks. */
  viewer: any;
}

/** The chunk fetcher Worker's bundled source (early-fetcher.js), a string the build puts in early.js. */
declare module "cz:early-fetcher" {
  const source: string;
  export default source;
}

/** The chunk decoder Worker's bundled source (decode-worker.js), a string the build puts in early.js. */
declare module "cz:decode-worker" {
  const source: string;
  export default source;
}

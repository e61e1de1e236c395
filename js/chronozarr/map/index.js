// chronozarr/map: put a chronozarr store on a MapLibre GL JS map (the npm package exports this
// as "chronozarr/map"). The layer reads through the DOM-free reader (../decoder.js). The decode
// Worker is exported on its own ("chronozarr/map/decode-worker.js"): bundle it for a page.

export { COLORMAPS, gradientCss, ticks } from "./colormaps.js";
export { crsDefinition, epsgDefinition, lonLatOfMercator, mercatorOf, storeProjection } from "./crs.js";
export { EPSG } from "./epsg.js";
export { ExpressionError, PRESETS, parseExpression, toFunction, toGlsl } from "./expression.js";
export { DecodePool } from "./decode-pool.js";
export { ChronozarrLayer, addChronozarrLayer } from "./layer.js";
export { cameraMap, fitCamera } from "./camera.js";

/** @typedef {import("./layer.js").LayerOptions} LayerOptions */
/** @typedef {import("./layer.js").LayerStats} LayerStats */
/** @typedef {import("./cells.js").LngLatLike} LngLatLike */
/** @typedef {import("./display.js").DisplaySettings} DisplaySettings */
/** @typedef {import("./stretch.js").Stretch} Stretch */

// chronozarr/map/display.js: what the layer draws, as one spec that the reads, the shader program,
// the value table and the stretch share: RGB from three bands, one band, a preset index (NDVI,
// expression.js PRESETS) or a formula over the bands' common names. Values are physical (spec 3.6).

import { PRESETS, parseExpression, toFunction, toGlsl } from "./expression.js";

/** Bands one display may use (texture layers of a cell, uniforms of the shader). */
export const MAX_LAYERS = 8;

/**
 * The display settings a layer keeps: the mode and the last band, RGB bands and formula chosen
 * (so switching mode and back restores them).
 * @typedef {object} DisplaySettings
 * @property {string} mode "rgb" | "band" | "formula" | a key of PRESETS
 * @property {number} [band] for "band"
 * @property {number[]} [rgb] for "rgb": [r, g, b] band indices
 * @property {string} [formula] for "formula"
 */

/**
 * What a display draws. `bands` are the band indices it uses, in texture-layer order; a scalar
 * display computes one value per pixel (`fn` on the CPU, `glsl` in the shader), RGB three.
 * @typedef {object} DisplaySpec
 * @property {string} mode
 * @property {"rgb" | "scalar"} kind
 * @property {number[]} bands
 * @property {(ref: (band: number) => string) => string} [glsl] GLSL of the display value, `ref(b)` giving band b's physical value
 * @property {(physical: ArrayLike<number>) => number} [fn] the display value of physical values per band
 * @property {string} [text] the expression, for a preset or a formula
 * @property {string} key names the display: equal keys draw alike
 */

/** @import {Band} from "../types.js" */

/**
 * The settings and spec for `request` ({mode, band, rgb, formula}, each optional: absent ones
 * keep `previous`'s, and a store of 3 bands or more opens in RGB, else in band 0). RGB without
 * bands takes red, green, blue by common_name (or name), else bands 0, 1, 2. Throws RangeError
 * (a band out of range, an unknown mode, a formula of more than MAX_LAYERS bands) or
 * ExpressionError (a formula that does not parse).
 * @param {{nBands: number, bands: Band[]}} store
 * @param {Partial<DisplaySettings>} request
 * @param {Partial<DisplaySettings>} [previous]
 * @returns {{settings: DisplaySettings, spec: DisplaySpec}}
 */
export function resolveDisplay(store, { mode, band, rgb, formula }, previous = {}) {
  const byName = (/** @type {string} */ n) => {
    let i = store.bands.findIndex((x) => x.common_name === n);
    if (i < 0) i = store.bands.findIndex((x) => x.name.toLowerCase() === n);
    return i;
  };
  const settings = { ...previous, mode: mode ?? previous.mode ?? (store.nBands >= 3 ? "rgb" : "band") };
  const m = settings.mode;
  let spec;
  if (m === "rgb") {
    let idx = rgb ?? previous.rgb;
    if (!idx) {
      idx = ["red", "green", "blue"].map(byName);
      if (!idx.every((i) => i >= 0)) idx = [0, Math.min(1, store.nBands - 1), Math.min(2, store.nBands - 1)];
    }
    settings.rgb = idx;
    spec = { mode: m, kind: /** @type {const} */ ("rgb"), bands: idx };
  } else if (m === "band") {
    const b = band ?? previous.band ?? 0;
    if (!(b >= 0 && b < store.nBands)) throw new RangeError(`band ${b} out of range 0..${store.nBands - 1}`);
    settings.band = b;
    spec = {
      mode: m,
      kind: /** @type {const} */ ("scalar"),
      bands: [b],
      glsl: (/** @type {(b: number) => string} */ ref) => ref(b),
      fn: (/** @type {ArrayLike<number>} */ p) => p[b],
    };
  } else {
    const text = m === "formula" ? (formula ?? previous.formula) : PRESETS[m];
    if (!text) throw new RangeError(`unknown display mode ${JSON.stringify(m)}`);
    const { tree, bands } = parseExpression(text, store.bands);
    if (bands.length > MAX_LAYERS) throw new RangeError(`a formula may use at most ${MAX_LAYERS} bands`);
    if (m === "formula") settings.formula = text;
    spec = {
      mode: m,
      kind: /** @type {const} */ ("scalar"),
      bands,
      glsl: (/** @type {(b: number) => string} */ ref) => toGlsl(tree, ref),
      fn: toFunction(tree),
      text,
    };
  }
  return { settings, spec: { ...spec, key: `${m}|${spec.bands.join(",")}|${spec.text ?? ""}` } };
}

/**
 * Bands a read must decode for `spec`: up to the last band it uses (a chunk is C order, so the
 * bands before it are a prefix of the chunk and a zstd delta is decoded only that far).
 * @param {DisplaySpec} spec
 */
export function readBands(spec) {
  return Math.max(...spec.bands) + 1;
}

/**
 * The display value (band math on physical values) of a valueAt() answer, as the shader computes
 * it; null for RGB, an invalid band or a value that is not finite.
 * @param {DisplaySpec} spec
 * @param {{bands: {physical: number | null}[]} | null | undefined} v
 * @returns {number | null}
 */
export function displayValue(spec, v) {
  if (!v || spec.kind !== "scalar") return null;
  const phys = v.bands.map((b) => b.physical);
  if (spec.bands.some((b) => phys[b] === null)) return null;
  const r = spec.fn(/** @type {number[]} */ (phys));
  return Number.isFinite(r) ? r : null;
}

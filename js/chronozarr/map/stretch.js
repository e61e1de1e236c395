// chronozarr/map/stretch.js: the display range a layer maps to its colours. Auto: the 2 and 98 %
// points of the display values of the valid pixels of a frame (sampled), as remote-sensing
// viewers stretch; a mode with a range of its own (NDVI) takes that range.

import { physical } from "../physical.js";

/** @typedef {{min: number, max: number}} Stretch */
/** @import {DisplaySpec} from "./display.js" */

/** Modes whose values have a known range: their stretch is that range, not the frame's. */
export const FIXED_STRETCH = Object.freeze({ ndvi: Object.freeze({ min: -0.2, max: 0.9 }) });

/** Pixels sampled per cell for the auto stretch (every pixel of a smaller cell). */
const SAMPLES_PER_CELL = 20000;

/**
 * Stretch of a frame: 2-98 % of the display values of its valid pixels (spec 2.3: the mask when
 * the store has one, else value != nodata), sampled every n / 20000 pixels of each cell; RGB pools
 * the three bands' physical values. A constant frame gets a range of 1 % around its value.
 * Equal to stretchOf(frames.map((f) => stretchSamples(store, spec, f))).
 * @param {{nBands: number, nodata: number | null, bands: {scale: number, offset: number}[]}} store
 * @param {DisplaySpec} spec
 * @param {{data: {height: number, width: number, data: ArrayLike<number>}, mask: Uint8Array | null}[]} frames
 * @returns {Stretch}
 */
export function autoStretch(store, spec, frames) {
  const fixed = FIXED_STRETCH[spec.mode];
  if (fixed) return { ...fixed };
  return stretchOf(frames.map((f) => stretchSamples(store, spec, f)));
}

/**
 * The samples one cell gives the auto stretch (its display values, as autoStretch takes them).
 * The layer takes each cell's as the cell arrives, so the first frame's stretch after its last
 * cell is a sort, not a pass over every cell (decision 0061).
 * @param {{nBands: number, nodata: number | null, bands: {scale: number, offset: number}[]}} store
 * @param {DisplaySpec} spec
 * @param {{data: {height: number, width: number, data: ArrayLike<number>}, mask: Uint8Array | null}} frame
 * @returns {number[]}
 */
export function stretchSamples(store, spec, { data, mask }) {
  /** @type {number[]} */
  const values = [];
  if (FIXED_STRETCH[spec.mode]) return values;
  const nodata = store.nodata;
  const n = data.height * data.width;
  const step = Math.max(1, Math.floor(n / SAMPLES_PER_CELL));
  const phys = new Array(store.nBands);
  for (let i = 0; i < n; i += step) {
    if (mask && mask[i] !== 1) continue;
    let ok = true;
    for (const b of spec.bands) {
      const v = data.data[b * n + i];
      if (!mask && nodata !== null && (v === nodata || (Number.isNaN(nodata) && Number.isNaN(v)))) ok = false;
      phys[b] = physical(v, store.bands[b]);
    }
    if (!ok) continue;
    if (spec.kind === "rgb") for (const b of spec.bands) values.push(phys[b]);
    else {
      const r = spec.fn(phys);
      if (Number.isFinite(r)) values.push(r);
    }
  }
  return values;
}

/**
 * The 2-98 % stretch of the cells' samples (stretchSamples), pooled.
 * @param {number[][]} samples
 * @returns {Stretch}
 */
export function stretchOf(samples) {
  const sorted = new Float64Array(samples.reduce((a, v) => a + v.length, 0));
  let o = 0;
  for (const v of samples) {
    sorted.set(v, o);
    o += v.length;
  }
  // A typed array sorts numerically in native code: ~20x faster than Array#sort with a
  // comparator on the first frame's ~80k samples, which ran on the main thread before it drew.
  sorted.sort();
  const pick = (/** @type {number} */ p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.round(p * (sorted.length - 1))))];
  const min = sorted.length ? pick(0.02) : 0;
  let max = sorted.length ? pick(0.98) : 1;
  if (!(max > min)) max = min + (Math.abs(min) || 1) * 0.01;
  return { min, max };
}

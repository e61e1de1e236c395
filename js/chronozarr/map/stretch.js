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
 * The samples one cell gives the auto stretch (its display values, as autoStretch takes them),
 * sorted. The layer takes each cell's as the cell arrives, so the first frame's stretch after its
 * last cell is that cell's sort and a selection, not a pass over every cell nor a sort of all of
 * them (decisions 0061, 0073).
 * @param {{nBands: number, nodata: number | null, bands: {scale: number, offset: number}[]}} store
 * @param {DisplaySpec} spec
 * @param {{data: {height: number, width: number, data: ArrayLike<number>}, mask: Uint8Array | null}} frame
 * @returns {Float64Array}
 */
export function stretchSamples(store, spec, { data, mask }) {
  /** @type {number[]} */
  const values = [];
  if (FIXED_STRETCH[spec.mode]) return new Float64Array(0);
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
  // A typed array sorts numerically in native code (NaN last): ~20x faster than Array#sort
  // with a comparator.
  return Float64Array.from(values).sort();
}

/**
 * The 2-98 % stretch of the cells' samples (stretchSamples: each sorted), pooled: the values at
 * ranks round(p * (n - 1)) of their union in ascending order (NaN last).
 * @param {Float64Array[]} samples
 * @returns {Stretch}
 */
export function stretchOf(samples) {
  const n = samples.reduce((a, v) => a + v.length, 0);
  const pick = (/** @type {number} */ p) => rankOf(samples, Math.min(n - 1, Math.max(0, Math.round(p * (n - 1)))));
  const min = n ? pick(0.02) : 0;
  let max = n ? pick(0.98) : 1;
  if (!(max > min)) max = min + (Math.abs(min) || 1) * 0.01;
  return { min, max };
}

/**
 * The value of rank `k` (0-based, ascending, NaN last) in the union of sorted arrays: binary
 * searches, no merge. An array holding it has an element x with fewer than k + 1 values below it
 * and more than k at or below it in the union.
 * @param {Float64Array[]} sorted
 * @param {number} k
 * @returns {number}
 */
function rankOf(sorted, k) {
  const finite = sorted.map(finiteCount);
  if (k >= finite.reduce((a, n) => a + n, 0)) return NaN; // (the NaNs sort last)
  for (const [i, a] of sorted.entries()) {
    let lo = 0;
    let hi = finite[i] - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const x = a[mid];
      let below = 0;
      let atOrBelow = 0;
      for (const b of sorted) {
        below += bound(b, x, false);
        atOrBelow += bound(b, x, true);
      }
      if (k < below) hi = mid - 1;
      else if (k >= atOrBelow) lo = mid + 1;
      else return x;
    }
  }
  throw new Error("rankOf: the arrays are not sorted"); // (unreachable for sorted input)
}

/** The number of non-NaN values of a sorted array (NaN sorts last). @param {Float64Array} a */
function finiteCount(a) {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (Number.isNaN(a[mid])) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * The number of values of sorted `a` below `x` (or at or below it, with `orEqual`). A NaN
 * compares false both ways, so the NaNs at the end are never counted.
 * @param {Float64Array} a
 * @param {number} x
 * @param {boolean} orEqual
 */
function bound(a, x, orEqual) {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid] < x || (orEqual && a[mid] === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

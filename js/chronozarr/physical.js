// The physical value of a stored value (spec 3.6): physical = stored * scale + offset, per band.
// The one place the rule is written: the reader's valueAt and series, the map's auto-stretch and
// its value table all call it (the fragment shader's `phys()` is its GLSL twin, map/program.js).

const exact = (/** @type {number} */ x) => x;

/**
 * stored * scale + offset of `band`. `round` rounds each operand and step: Math.fround gives what
 * a float32 GPU computes (the map's value table must colour as its shader does).
 * @param {number} stored
 * @param {{scale: number, offset: number}} band
 * @param {(x: number) => number} [round]
 * @returns {number}
 */
export function physical(stored, { scale, offset }, round = exact) {
  return round(round(stored * round(scale)) + round(offset));
}

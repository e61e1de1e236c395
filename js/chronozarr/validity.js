// Validity (spec 2.3): with a mask the mask alone decides (1 = valid, and nodata is then not
// consulted); without one a band's value is valid where it differs from nodata (per band, as
// GDAL treats per-band nodata); with neither every value is valid. Every read of the reader
// (valueAt, series, validity) decides through `isValid`.

/**
 * Whether a stored value is valid: maskValue is the pixel's mask (0/1) or null without a mask.
 * @param {number} value
 * @param {number | null | undefined} maskValue
 * @param {number | null} nodata
 * @returns {boolean}
 */
export function isValid(value, maskValue, nodata) {
  if (maskValue !== null && maskValue !== undefined) return maskValue === 1;
  return nodata === null || value !== nodata;
}

/**
 * Validity of every band and pixel of a (band, n) block as Uint8Array(nBands * n), 1 valid.
 * values: the block's stored values; mask: Uint8Array(n) or null.
 * @param {ArrayLike<number>} values
 * @param {Uint8Array | null} mask
 * @param {number | null} nodata
 * @param {number} nBands
 * @param {number} n
 * @returns {Uint8Array}
 */
export function validityOf(values, mask, nodata, nBands, n) {
  const out = new Uint8Array(nBands * n);
  for (let b = 0; b < nBands; b++) {
    for (let i = 0; i < n; i++) out[b * n + i] = isValid(values[b * n + i], mask ? mask[i] : null, nodata) ? 1 : 0;
  }
  return out;
}

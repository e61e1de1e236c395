// chronozarr/map/value-lut.js: the colour of every stored value of an integer band, precomputed.
//
// A one-band display of a uint8 / uint16 / int16 store has at most 65,536 distinct stored values,
// so validity (nodata, spec 2.3), scale and offset (3.6), the display's band math, the stretch and
// the colour map can all be applied once per value on the CPU into an RGBA8 table, and the
// fragment shader is left with two texel fetches (the stored value, then its colour) instead of
// per-fragment arithmetic: in SwiftShader, where every fragment runs on the CPU, that is what a
// scrub frame's draw costs. The table is rebuilt when the display, stretch, colour map or opacity
// changes (about 65,536 evaluations, a millisecond or two).

import { physical } from "../physical.js";

/** dtypes a value table can cover: their values index a table of `size` entries from `base`. */
export const VALUE_LUT_DTYPES = {
  uint8: { size: 256, base: 0 },
  uint16: { size: 65536, base: 0 },
  int16: { size: 65536, base: 32768 },
};

/** Table row width: index v sits at texel (v & 255, v >> 8) of a 256-wide texture. */
export const VALUE_LUT_WIDTH = 256;

/**
 * RGBA8 colours (premultiplied by `opacity`) of every value of `dtype`, indexed by value + base.
 * A value that is not valid (equal to `nodata` when the store has no mask, spec 2.3) or whose
 * display value is not finite gets alpha 0, which the shader discards.
 *
 * fn(physical) is the display value of a physical value (scale * stored + offset, spec 3.6); the
 * colour is the colour map's entry for round(255 * clamp((v - min) / (max - min), 0, 1)), the
 * texel the shader's own stretch path samples. `values`: displayValues() of the same display, when
 * it was computed beforehand.
 */
export function buildValueLut({
  dtype,
  nodata = null,
  hasMask = false,
  scale = 1,
  offset = 0,
  fn = (v) => v,
  min,
  max,
  colormap,
  opacity = 1,
  values = displayValues({ dtype, nodata, hasMask, scale, offset, fn }),
}) {
  const kind = VALUE_LUT_DTYPES[dtype];
  if (!kind) throw new RangeError(`no value table for dtype ${dtype}`);
  if (colormap.length !== 256 * 4) throw new RangeError("colormap must hold 256 RGBA entries");
  const height = Math.ceil(kind.size / VALUE_LUT_WIDTH);
  const out = new Uint8Array(VALUE_LUT_WIDTH * height * 4);
  const alpha = Math.round(Math.max(0, Math.min(1, opacity)) * 255);
  if (alpha === 0) return { data: out, width: VALUE_LUT_WIDTH, height, base: kind.base };
  const a = alpha / 255;
  const span = max - min;
  // The colour map's 256 entries premultiplied once, as RGBA8 words in the platform's byte
  // order (the table is read as bytes), so each of the 2^16 values costs an index and a copy:
  // the table is made after the first frame's last cell arrives, before its draw.
  const palette = new Uint8Array(256 * 4);
  for (let e = 0; e < 256 * 4; e += 4) {
    palette[e] = Math.round(colormap[e] * a);
    palette[e + 1] = Math.round(colormap[e + 1] * a);
    palette[e + 2] = Math.round(colormap[e + 2] * a);
    palette[e + 3] = alpha;
  }
  const words = new Uint32Array(palette.buffer);
  const out32 = new Uint32Array(out.buffer);
  for (let i = 0; i < kind.size; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) continue;
    const k = Math.max(0, Math.min(1, (v - min) / span));
    out32[i] = words[Math.min(255, Math.floor(k * 255 + 0.5))];
  }
  return { data: out, width: VALUE_LUT_WIDTH, height, base: kind.base };
}

/**
 * The display value of every value of `dtype`, indexed by value + base: fn(physical), with the
 * shader's float32 rounding; NaN where the value is not valid (nodata without a mask, spec 2.3)
 * or its display value is not finite. It depends on the display alone, not on the stretch, so a
 * layer computes it while its first frame's chunks are in flight and colours it once the
 * stretch is known (buildValueLut's `values`, decision 0061).
 * @param {{dtype: string, nodata?: number | null, hasMask?: boolean, scale?: number, offset?: number, fn?: (v: number) => number}} display
 * @returns {Float64Array}
 */
export function displayValues({ dtype, nodata = null, hasMask = false, scale = 1, offset = 0, fn = (v) => v }) {
  const kind = VALUE_LUT_DTYPES[dtype];
  if (!kind) throw new RangeError(`no value table for dtype ${dtype}`);
  const out = new Float64Array(kind.size).fill(NaN);
  // The shader's float32 path: the same operations, rounded to float32 as the GPU would.
  const f32 = Math.fround;
  const band = { scale, offset };
  for (let i = 0; i < kind.size; i++) {
    const raw = i - kind.base;
    if (!hasMask && nodata !== null && raw === nodata) continue;
    const v = fn(physical(raw, band, f32));
    if (Number.isFinite(v)) out[i] = v;
  }
  return out;
}

/**
 * Colour a cell's stored values through a value table on the CPU (decision 0062): `out[i]` is
 * the table's RGBA8 entry of `values[i]` (the texel the value-table shader would fetch), or 0
 * (transparent: the cleared canvas shows through) where `mask` marks the pixel not valid
 * (spec 2.3: a mask value other than 1). The table and `out` are RGBA8 bytes viewed as 32-bit
 * words, so each pixel is one copy whatever the platform's byte order.
 * @param {ArrayLike<number>} values stored values (uint8 / uint16 / int16)
 * @param {Uint8Array | null} mask
 * @param {Uint32Array} table the value table's data (buildValueLut) as 32-bit words
 * @param {number} base added to a value to index the table (VALUE_LUT_DTYPES)
 * @param {Uint32Array} out one word per value
 */
export function colourValues(values, mask, table, base, out) {
  const n = out.length;
  if (mask) {
    for (let i = 0; i < n; i++) out[i] = mask[i] === 1 ? table[values[i] + base] : 0;
  } else if (base === 0) {
    for (let i = 0; i < n; i++) out[i] = table[values[i]];
  } else {
    for (let i = 0; i < n; i++) out[i] = table[values[i] + base];
  }
}

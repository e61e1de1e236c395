// chronozarr/map/colormaps.js: colour ramps as 256-entry RGB lookup tables (uploaded once as a
// texture; the fragment shader maps a stretched value through it) and the colour bar's ticks.

function ramp(stops) {
  const lut = new Uint8Array(256 * 4);
  for (let i = 0; i < 256; i++) {
    const x = (i / 255) * (stops.length - 1);
    const k = Math.min(stops.length - 2, Math.floor(x));
    const f = x - k;
    for (let c = 0; c < 3; c++) lut[i * 4 + c] = Math.round(stops[k][c] + (stops[k + 1][c] - stops[k][c]) * f);
    lut[i * 4 + 3] = 255;
  }
  return lut;
}

/** name -> {label, lut: Uint8Array(256 * 4) RGBA}. Matplotlib's perceptual ramps, sampled. */
export const COLORMAPS = Object.freeze({
  viridis: {
    label: "viridis",
    lut: ramp([
      [68, 1, 84],
      [72, 40, 120],
      [62, 74, 137],
      [49, 104, 142],
      [38, 130, 142],
      [31, 158, 137],
      [53, 183, 121],
      [109, 205, 89],
      [180, 222, 44],
      [253, 231, 37],
    ]),
  },
  magma: {
    label: "magma",
    lut: ramp([
      [0, 0, 4],
      [28, 16, 68],
      [79, 18, 123],
      [129, 37, 129],
      [181, 54, 122],
      [229, 80, 100],
      [251, 135, 97],
      [254, 194, 135],
      [252, 253, 191],
    ]),
  },
  rdylgn: {
    label: "RdYlGn",
    lut: ramp([
      [165, 0, 38],
      [215, 48, 39],
      [244, 109, 67],
      [253, 174, 97],
      [254, 224, 139],
      [217, 239, 139],
      [166, 217, 106],
      [102, 189, 99],
      [26, 152, 80],
      [0, 104, 55],
    ]),
  },
  greys: {
    label: "greys",
    lut: ramp([
      [0, 0, 0],
      [255, 255, 255],
    ]),
  },
  rdbu: {
    label: "RdBu",
    lut: ramp([
      [103, 0, 31],
      [178, 24, 43],
      [214, 96, 77],
      [244, 165, 130],
      [253, 219, 199],
      [247, 247, 247],
      [209, 229, 240],
      [146, 197, 222],
      [67, 147, 195],
      [33, 102, 172],
      [5, 48, 97],
    ]),
  },
});

/**
 * CSS linear-gradient of a ramp, for the colour bar.
 * @param {string} name a key of COLORMAPS
 * @returns {string}
 */
export function gradientCss(name) {
  const lut = (COLORMAPS[name] ?? COLORMAPS.viridis).lut;
  const stops = [];
  for (let k = 0; k <= 8; k++) {
    const i = Math.round((k * 255) / 8) * 4;
    stops.push(`rgb(${lut[i]},${lut[i + 1]},${lut[i + 2]}) ${(k * 100) / 8}%`);
  }
  return `linear-gradient(90deg, ${stops.join(", ")})`;
}

/**
 * "Nice" tick values in [min, max]: about `count` of them at 1, 2 or 5 x 10^k steps.
 * @param {number} min
 * @param {number} max
 * @param {number} [count]
 * @returns {number[]}
 */
export function ticks(min, max, count = 5) {
  if (!(max > min)) return [min];
  const raw = (max - min) / Math.max(1, count - 1);
  const p = 10 ** Math.floor(Math.log10(raw));
  const n = raw / p;
  const step = (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * p;
  const out = [];
  for (let v = Math.ceil(min / step) * step; v <= max + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

// The offline basemap's geographic reference: meridians and parallels at a step that suits the
// view (at least four lines each way across it, at 1, 2 or 5 x 10^k degrees), computed in the page
// for the view on screen, so it needs no network and no tiles. The offline style (style.json,
// js/tools/build-viewer.mjs) opens with a 10-degree world graticule in its "graticule" source;
// the viewer replaces that source's data with this one's after every move (decision 0038).

/** Lines across the view, at least. */
const MIN_LINES = 4;
/** Vertices per line: parallels are straight in Web Mercator, meridians too; a few per line for clipping. */
const SEGMENTS = 8;
const MAX_LAT = 85;

/**
 * The step in degrees for a view `span` degrees wide: the largest 1, 2 or 5 x 10^k giving at
 * least MIN_LINES lines.
 * @param {number} span
 */
export function graticuleStep(span) {
  const raw = Math.max(span, 1e-9) / MIN_LINES;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [5, 2, 1].map((m) => m * p).find((s) => s <= raw) ?? p;
  return Math.min(step, 10);
}

/**
 * Meridians and parallels covering `bounds` ([[west, south], [east, north]], lon/lat) with a
 * margin of one step, as a GeoJSON FeatureCollection; each line's `kind` is "meridian",
 * "parallel", "prime" or "equator", its `deg` its value.
 * @param {[[number, number], [number, number]]} bounds
 */
export function graticule([[west, south], [east, north]]) {
  const step = graticuleStep(Math.min(east - west, north - south)); // lines both ways
  const s = Math.max(-MAX_LAT, Math.floor(south / step) * step - step);
  const n = Math.min(MAX_LAT, Math.ceil(north / step) * step + step);
  const w = Math.floor(west / step) * step - step;
  const e = Math.ceil(east / step) * step + step;
  const round = (/** @type {number} */ v) => Number(v.toPrecision(12));
  const features = [];
  const line = (/** @type {string} */ kind, /** @type {number} */ deg, /** @type {number[][]} */ coordinates) =>
    features.push({ type: "Feature", properties: { kind, deg }, geometry: { type: "LineString", coordinates } });
  for (let k = Math.round(w / step); k * step <= e + step / 2; k++) {
    const lon = round(k * step);
    line(
      lon === 0 ? "prime" : "meridian",
      lon,
      [...Array(SEGMENTS + 1).keys()].map((i) => [lon, s + ((n - s) * i) / SEGMENTS]),
    );
  }
  for (let k = Math.round(s / step); k * step <= n + step / 2; k++) {
    const lat = round(k * step);
    line(
      lat === 0 ? "equator" : "parallel",
      lat,
      [...Array(SEGMENTS + 1).keys()].map((i) => [w + ((e - w) * i) / SEGMENTS, lat]),
    );
  }
  return { type: "FeatureCollection", features, step };
}

// chronozarr/map/crs.js: the store's CRS (spec 3.2, 3.3) as a proj4 projection, so a store in
// UTM or any projected CRS is drawn georegistered on a Web Mercator map.
//
// Where the CRS comes from, first match wins:
//   1. chronozarr.crs as "EPSG:<code>" found in the bundled table (epsg.js, generated with pyproj);
//   2. chronozarr.crs as WKT (WKT1 or WKT2), a PROJJSON object or a "+proj=" string;
//   3. the level-0 data array's attributes (spec 3.3, optional): proj:wkt2, proj:projjson,
//      _CRS.wkt (GDAL's convention), proj:code (again through the table).
// Nothing here fetches: a code missing from the table is an UnsupportedError naming it and the
// remedy (store WKT2 or PROJJSON beside the code).

import proj4 from "proj4";
import { UnsupportedError } from "../errors.js";
import { EPSG } from "./epsg.js";

/**
 * Between the store CRS and WGS84 lon/lat.
 * @typedef {object} StoreProjection
 * @property {(p: number[]) => [number, number]} forward [x, y] -> [lon, lat]
 * @property {(p: number[]) => [number, number]} inverse [lon, lat] -> [x, y]
 * @property {string | object} definition
 * @property {string} source
 */

const WKT_HEAD = /^\s*(PROJCRS|PROJCS|GEOGCRS|GEOGCS|GEODCRS|BOUNDCRS|COMPOUNDCRS|PROJECTEDCRS)\s*\[/i;

/**
 * proj4 definition (string or PROJJSON object) of an EPSG code from the bundled table, or null.
 * @param {string | number} code "EPSG:<n>", an OGC URN or URL of it
 * @returns {string | object | null}
 */
export function epsgDefinition(code) {
  const m = /^\s*(?:EPSG:|urn:ogc:def:crs:EPSG::|https?:\/\/www\.opengis\.net\/def\/crs\/EPSG\/0\/)(\d+)\s*$/i.exec(String(code));
  if (!m) return null;
  return EPSG[m[1]] ?? null;
}

function fromValue(value) {
  if (value && typeof value === "object") return value; // PROJJSON (proj4 parses it)
  if (typeof value !== "string" || !value.trim()) return null;
  const byCode = epsgDefinition(value);
  if (byCode) return byCode;
  if (WKT_HEAD.test(value) || value.trim().startsWith("+proj=")) return value;
  return null;
}

/**
 * The proj4 definition for a store: {definition, source} where source names the attribute used.
 * Throws UnsupportedError when the store names a CRS this module cannot resolve offline.
 * @param {any} store an open store (its crs, levels, variable and consolidated metadata)
 * @returns {{definition: string | object, source: string}}
 */
export function crsDefinition(store) {
  const named = store.crs;
  const direct = fromValue(named);
  if (direct) return { definition: direct, source: "chronozarr.crs" };
  const level0 = store.levels?.[0];
  const attrs = (level0 && store.meta?.consolidated?.[`${level0.path}/${store.variable}`]?.attributes) ?? {};
  for (const [key, value] of [
    ["proj:wkt2", attrs["proj:wkt2"]],
    ["proj:projjson", attrs["proj:projjson"]],
    ["_CRS.wkt", attrs._CRS?.wkt],
    ["proj:code", attrs["proj:code"]],
  ]) {
    const d = fromValue(value);
    if (d) return { definition: d, source: `${level0.path}/${store.variable} ${key}` };
  }
  throw new UnsupportedError(
    named
      ? `CRS ${JSON.stringify(named)} is not in the map's EPSG table (js/chronozarr/map/epsg.js) and the store carries no WKT2 or PROJJSON for it`
      : "the store has no CRS (chronozarr.crs is absent), so it cannot be placed on a map",
  );
}

/**
 * A projector between the store CRS and WGS84 lon/lat: {forward([x, y]) -> [lon, lat],
 * inverse([lon, lat]) -> [x, y], definition, source}.
 * @param {any} store an open store
 * @returns {StoreProjection}
 */
export function storeProjection(store) {
  const { definition, source } = crsDefinition(store);
  let conv;
  try {
    conv = proj4(/** @type {any} */ (definition), "EPSG:4326");
  } catch (err) {
    throw new UnsupportedError(`cannot parse the store CRS (${source}): ${err?.message ?? err}`);
  }
  return { forward: (p) => conv.forward(p), inverse: (p) => conv.inverse(p), definition, source };
}

/**
 * Web Mercator "world" coordinates in [0, 1] (MapLibre's MercatorCoordinate) of lon/lat.
 * @param {number} lon
 * @param {number} lat
 * @returns {[number, number]}
 */
export function mercatorOf(lon, lat) {
  const s = Math.sin((lat * Math.PI) / 180);
  return [(lon + 180) / 360, 0.5 - Math.log((1 + s) / (1 - s)) / (4 * Math.PI)];
}

/**
 * Inverse of mercatorOf.
 * @param {number} mx
 * @param {number} my
 * @returns {[number, number]} [lon, lat]
 */
export function lonLatOfMercator(mx, my) {
  const lon = mx * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - 2 * my))) * 180) / Math.PI;
  return [lon, lat];
}

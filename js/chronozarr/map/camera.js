// chronozarr/map/camera.js: the camera of a north-up, unpitched Web Mercator map, without the map.
//
// MapLibre GL JS draws the world as 512 * 2^zoom CSS pixels (its tile size), north up, the centre
// of the container at the camera's centre. `fitCamera` gives the centre and zoom that frame a
// lon/lat box with a padding (what `map.fitBounds(bounds, {padding})` does at bearing 0 and pitch
// 0), and `cameraMap` is an object with the few methods of a MapLibre map the layer's geometry
// uses (getCenter, project, unproject, getCanvas, getPixelRatio) plus the clip-space matrix of
// Web Mercator [0, 1], so a ChronozarrLayer can pick its level (spec 10.3), its visible cells
// and draw its first frame before MapLibre has loaded (ChronozarrLayer#drawBeforeMap). The
// viewer then opens its map at the same camera (`center`, `zoom`): one camera by construction.

import { lonLatOfMercator, mercatorOf } from "./crs.js";

export const TILE_SIZE = 512; // MapLibre's world size at zoom 0, in CSS pixels
export const MAX_ZOOM = 22; // MapLibre's default maxZoom
const MAX_LAT = 85.051129;

/** @typedef {[[number, number], [number, number]]} LngLatBounds [[west, south], [east, north]] */

/** @param {number} lat */
const clampLat = (lat) => Math.max(-MAX_LAT, Math.min(MAX_LAT, lat));

/**
 * {center: [lon, lat], zoom} framing `bounds` ([[west, south], [east, north]]) in a map of
 * `width` x `height` CSS pixels with `padding` pixels on every side: the largest zoom at which
 * the box's Web Mercator extent fits, centred on the extent's mercator midpoint.
 * @param {LngLatBounds} bounds
 * @param {{width: number, height: number}} size
 * @param {number} [padding]
 * @returns {{center: [number, number], zoom: number}}
 */
export function fitCamera(bounds, { width, height }, padding = 40) {
  const [[w, s], [e, n]] = bounds;
  const [x0, y1] = mercatorOf(w, clampLat(s));
  const [x1, y0] = mercatorOf(e, clampLat(n));
  const dx = Math.max(x1 - x0, 1e-12);
  const dy = Math.max(y1 - y0, 1e-12);
  const scale = Math.min((width - 2 * padding) / (dx * TILE_SIZE), (height - 2 * padding) / (dy * TILE_SIZE));
  const zoom = Math.max(0, Math.min(MAX_ZOOM, Math.log2(scale)));
  const center = lonLatOfMercator((x0 + x1) / 2, (y0 + y1) / 2);
  return { center, zoom: Number.isFinite(zoom) ? zoom : 0 };
}

/**
 * A stand-in for a MapLibre map at a fixed camera: {center: [lon, lat], zoom, width, height (CSS
 * px), dpr}. `matrix` maps Web Mercator [0, 1] (z = 0) to clip space, as MapLibre's main matrix
 * does for this camera (float64, column-major); `on`, `off` and `triggerRepaint` do nothing.
 * @param {{center: [number, number] | number[], zoom: number, width: number, height: number, dpr?: number}} camera
 */
export function cameraMap({ center, zoom, width, height, dpr = 1 }) {
  const ws = TILE_SIZE * 2 ** zoom;
  const [cx, cy] = mercatorOf(center[0], clampLat(center[1]));
  const project = (ll) => {
    const [lon, lat] = Array.isArray(ll) ? ll : [ll.lng, ll.lat];
    const [mx, my] = mercatorOf(lon, clampLat(lat));
    return { x: (mx - cx) * ws + width / 2, y: (my - cy) * ws + height / 2 };
  };
  const unproject = (p) => {
    const [x, y] = Array.isArray(p) ? p : [p.x, p.y];
    const [lng, lat] = lonLatOfMercator(cx + (x - width / 2) / ws, cy + (y - height / 2) / ws);
    return { lng, lat };
  };
  const sx = (2 * ws) / width;
  const sy = (-2 * ws) / height;
  const matrix = new Float64Array([sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, -cx * sx, -cy * sy, 0, 1]);
  const canvas = {
    clientWidth: width,
    clientHeight: height,
    width: Math.round(width * dpr),
    height: Math.round(height * dpr),
    style: { width: `${width}px`, height: `${height}px` },
  };
  return {
    center,
    zoom,
    width,
    height,
    dpr,
    worldSize: ws,
    matrix,
    getCenter: () => ({ lng: center[0], lat: center[1] }),
    getZoom: () => zoom,
    project,
    unproject,
    getCanvas: () => canvas,
    getPixelRatio: () => dpr,
    on: () => {},
    off: () => {},
    triggerRepaint: () => {},
  };
}

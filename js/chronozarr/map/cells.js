// chronozarr/map/cells.js: which cells the layer draws and where: the level for the map's zoom
// (spec 10.3), the cells whose reprojected footprint meets the viewport, each cell's mesh (its
// pixel lattice in the store CRS, reprojected with proj4 to Web Mercator, so a UTM store lands
// where GDAL would put it), and the pixel <-> lon/lat helpers. CPU only: no GL, no MapLibre (a
// map is any object with getCenter, project, unproject, getCanvas and getPixelRatio).
//
// The cells of one level share one mercator origin and their shared edges are the same
// reprojected vertices, so there is no seam between cells.

import { lonLatOfMercator, mercatorOf } from "./crs.js";

/** Mesh quads per cell side: sub-millimetre error against the exact reprojection. */
export const SUBDIV = 16;

const MAX_LAT = 85.0511;

/**
 * A lon/lat as the layer takes it: [lng, lat] (what lngLatOf returns) or MapLibre's {lng, lat}
 * (a map event's `lngLat`, map.getCenter()).
 * @typedef {[number, number] | number[] | {lng: number, lat: number}} LngLatLike
 */
/** @typedef {{row: number, col: number}} Cell */
/**
 * The parts of a MapLibre map (or camera.js cameraMap) the geometry reads.
 * @typedef {object} MapView
 * @property {() => {lng: number, lat: number}} getCenter
 * @property {(ll: any) => {x: number, y: number}} project
 * @property {(p: any) => {lng: number, lat: number}} unproject
 * @property {() => {clientWidth: number, clientHeight: number, width: number, height: number}} getCanvas
 * @property {() => number} [getPixelRatio]
 */
/**
 * A cell's mesh: (SUBDIV + 1)^2 vertices of [mercator x, y relative to the origin, u, v] (u, v in
 * the cell's pixels) and the triangles' indices; w, h the cell's size trimmed to the array.
 * @typedef {{verts: Float32Array, idx: Uint16Array, w: number, h: number}} CellMesh
 */

/** @import {Level} from "../types.js" */
/** @import {StoreProjection} from "./crs.js" */

/**
 * @param {LngLatLike} ll
 * @returns {[number, number]}
 */
export function lngLatPair(ll) {
  if (Array.isArray(ll)) return [ll[0], ll[1]];
  return [ll.lng, ll.lat];
}

export class CellSelection {
  /**
   * @param {{levels: Level[], bounds: (level?: number) => {x0: number, y0: number, x1: number, y1: number},
   *   levelFor: (gsd: number) => number, pixelAt: (p: {x: number, y: number, level?: number}) => Cell | null,
   *   cellsInWindow: (w: {level?: number, row0: number, col0: number, row1: number, col1: number}) => Cell[]}} store
   * @param {StoreProjection} projection
   */
  constructor(store, projection) {
    this.store = store;
    this.projection = projection;
    const b = store.bounds(0);
    const [lon, lat] = projection.forward([(b.x0 + b.x1) / 2, (b.y0 + b.y1) / 2]);
    /** Mercator origin of every mesh (vertices are float32 offsets from it). */
    this.origin = mercatorOf(lon, lat);
    /** @type {Map<number, {mx: Float64Array, my: Float64Array, gc: number}>} level -> cell-corner lattice in mercator */
    this._lattice = new Map();
  }

  /**
   * The level for `map`'s zoom (10.3): the ground distance of one device pixel at the map's centre,
   * in store units; level 0 without a map.
   * @param {MapView | null | undefined} map
   * @returns {number}
   */
  levelFor(map) {
    if (!map) return 0;
    const c = map.getCenter();
    const p = map.project(c);
    const q = map.unproject([p.x + 1, p.y]);
    const a = this.projection.inverse([c.lng, c.lat]);
    const b = this.projection.inverse([q.lng, q.lat]);
    const perCssPx = Math.hypot(b[0] - a[0], b[1] - a[1]);
    const dpr = map.getPixelRatio?.() ?? globalThis.devicePixelRatio ?? 1;
    const gsd = perCssPx / dpr;
    return Number.isFinite(gsd) ? this.store.levelFor(gsd) : 0;
  }

  /**
   * Mercator [0, 1] of the outer corner (row, col) of a level's pixel lattice (3.3 affine).
   * @param {Level} L
   * @param {number} row
   * @param {number} col
   * @returns {[number, number]}
   */
  project(L, row, col) {
    const [a, b, c, d, e, f] = L.transform;
    const [lon, lat] = this.projection.forward([a * col + b * row + c, d * col + e * row + f]);
    return mercatorOf(lon, lat);
  }

  /**
   * Mercator lattice of the cell corners of a level (computed once per level).
   * @param {number} level
   */
  lattice(level) {
    let lat = this._lattice.get(level);
    if (lat) return lat;
    const L = this.store.levels[level];
    const [gr, gc] = L.grid;
    const mx = new Float64Array((gr + 1) * (gc + 1));
    const my = new Float64Array((gr + 1) * (gc + 1));
    for (let r = 0; r <= gr; r++) {
      for (let c = 0; c <= gc; c++) {
        const [x, y] = this.project(L, Math.min(r * L.cs, L.height), Math.min(c * L.cs, L.width));
        mx[r * (gc + 1) + c] = x;
        my[r * (gc + 1) + c] = y;
      }
    }
    lat = { mx, my, gc };
    this._lattice.set(level, lat);
    return lat;
  }

  /**
   * Cells of `level` whose reprojected footprint intersects `map`'s viewport (every cell without a map).
   * @param {MapView | null | undefined} map
   * @param {number} level
   * @returns {Cell[]}
   */
  visible(map, level) {
    const L = this.store.levels[level];
    if (!map) return this.store.cellsInWindow({ level, row0: 0, col0: 0, row1: L.height, col1: L.width });
    const canvas = map.getCanvas();
    const w = canvas.clientWidth || canvas.width;
    const h = canvas.clientHeight || canvas.height;
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (const [sx, sy] of [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
      [w / 2, 0],
      [w / 2, h],
      [0, h / 2],
      [w, h / 2],
    ]) {
      const ll = map.unproject([sx, sy]);
      const [mx, my] = mercatorOf(ll.lng, Math.max(-MAX_LAT, Math.min(MAX_LAT, ll.lat)));
      x0 = Math.min(x0, mx);
      x1 = Math.max(x1, mx);
      y0 = Math.min(y0, my);
      y1 = Math.max(y1, my);
    }
    const { mx, my, gc } = this.lattice(level);
    const out = [];
    const [gr] = L.grid;
    for (let r = 0; r < gr; r++) {
      for (let c = 0; c < L.grid[1]; c++) {
        const k = [r * (gc + 1) + c, r * (gc + 1) + c + 1, (r + 1) * (gc + 1) + c, (r + 1) * (gc + 1) + c + 1];
        const cx0 = Math.min(...k.map((i) => mx[i]));
        const cx1 = Math.max(...k.map((i) => mx[i]));
        const cy0 = Math.min(...k.map((i) => my[i]));
        const cy1 = Math.max(...k.map((i) => my[i]));
        const pad = (cx1 - cx0 + cy1 - cy0) * 0.01; // edges bow slightly between the corners
        if (cx1 + pad >= x0 && cx0 - pad <= x1 && cy1 + pad >= y0 && cy0 - pad <= y1) out.push({ row: r, col: c });
      }
    }
    return out;
  }

  /**
   * The mesh of a cell: its pixel lattice, SUBDIV x SUBDIV quads, reprojected.
   * @param {number} level
   * @param {Cell} cell
   * @returns {CellMesh}
   */
  mesh(level, cell) {
    const L = this.store.levels[level];
    const r0 = cell.row * L.cs;
    const c0 = cell.col * L.cs;
    const h = Math.min(L.cs, L.height - r0);
    const w = Math.min(L.cs, L.width - c0);
    const n = SUBDIV;
    const verts = new Float32Array((n + 1) * (n + 1) * 4);
    let o = 0;
    for (let i = 0; i <= n; i++) {
      for (let j = 0; j <= n; j++) {
        const [mx, my] = this.project(L, r0 + (h * i) / n, c0 + (w * j) / n);
        verts[o++] = mx - this.origin[0];
        verts[o++] = my - this.origin[1];
        verts[o++] = (w * j) / n;
        verts[o++] = (h * i) / n;
      }
    }
    const idx = new Uint16Array(n * n * 6);
    o = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < n; j++) {
        const a = i * (n + 1) + j;
        idx.set([a, a + 1, a + n + 1, a + 1, a + n + 2, a + n + 1], o);
        o += 6;
      }
    }
    return { verts, idx, w, h };
  }

  /**
   * Level-0 pixel {row, col} under a lon/lat, or null outside the store.
   * @param {LngLatLike} lngLat
   * @returns {Cell | null}
   */
  pixelAt(lngLat) {
    const [x, y] = this.projection.inverse(lngLatPair(lngLat));
    return this.store.pixelAt({ x, y, level: 0 });
  }

  /**
   * [lng, lat] of the centre of a pixel (or of its outer corner with corner: true).
   * @param {{row: number, col: number, level?: number, corner?: boolean}} p
   * @returns {[number, number]}
   */
  lngLatOf({ row, col, level = 0, corner = false }) {
    const L = this.store.levels[level];
    const d = corner ? 0 : 0.5;
    const [a, b, c, dd, e, f] = L.transform;
    return this.projection.forward([a * (col + d) + b * (row + d) + c, dd * (col + d) + e * (row + d) + f]);
  }

  /**
   * [[west, south], [east, north]] of the store's level 0 (its edges sampled, reprojected).
   * @returns {[[number, number], [number, number]]}
   */
  lngLatBounds() {
    const L = this.store.levels[0];
    const pts = [];
    for (let k = 0; k <= 8; k++) {
      const r = (k / 8) * L.height;
      const c = (k / 8) * L.width;
      pts.push(this.project(L, r, 0), this.project(L, r, L.width), this.project(L, 0, c), this.project(L, L.height, c));
    }
    const lls = pts.map(([mx, my]) => lonLatOfMercator(mx, my));
    const lon = lls.map((p) => p[0]);
    const lat = lls.map((p) => p[1]);
    return [
      [Math.min(...lon), Math.min(...lat)],
      [Math.max(...lon), Math.max(...lat)],
    ];
  }
}

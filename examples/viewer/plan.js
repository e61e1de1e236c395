// The first view's chunks, named the moment the store's root parses (early.js, decision 0023):
// the level and cells the viewer's fitted first view will draw, at timestep 0, each chunk's URL
// exactly as the reader will request it. The reader's own code parses and names what it uses
// (metadata.js parseLevels, parseArray, chunkKey, levelForResolution, compressedBound; names.js
// checkName, joinUrl), so levels or an array the reader refuses are not guessed at, and a wrong
// guess costs bytes only: the reader and the decode pool take an early answer for the exact URL
// and length alone. (Not parseRoot: the rest of the root block is the reader's to check, and
// its parser would double the page's first script.)

import { chunkKey, compressedBound, levelForResolution, parseArray, parseLevels } from "../../js/chronozarr/metadata.js";
import { checkName, joinUrl } from "../../js/chronozarr/names.js";

/** The fitted view's padding (viewer.js fits the store's bounds with 40 px on every side). */
const PADDING = 40;
/** A first view of more cells than this is not guessed (the page would GET too much at once). */
const MAX_CELLS = 16;

/**
 * A chunk the page names: its URL (as the reader requests it), its key (the reader's `where`:
 * base + object key), and what the decoder and the fetcher need.
 * @typedef {{url: string, key: string, path: string, doc: object, cap: number}} PlannedChunk
 */

/**
 * The chunks of timestep 0 of the first view of a store fitted into a `box` of CSS pixels: the
 * coarsest level whose resolution is at most the ground size of one device pixel (spec 10.3),
 * every cell of it (a fitted view shows the whole store). null where the page does not guess: no
 * levels mirror or consolidated metadata, a sharded level, more than MAX_CELLS cells, a root or
 * array the reader would refuse (it then says why).
 * @param {any} doc the root zarr.json
 * @param {{width: number, height: number, dpr: number}} box
 * @param {string} base the store's URL, ending in "/"
 * @param {string} query the store URL's query string ("" or "?...")
 * @returns {PlannedChunk[] | null}
 */
export function planChunks(doc, box, base, query) {
  if (!box.width) return null;
  const cz = doc?.attributes?.chronozarr;
  const consolidated = doc?.consolidated_metadata?.metadata;
  if (!cz?.levels || !consolidated || typeof consolidated !== "object") return null;
  let levels;
  let variable;
  try {
    levels = parseLevels(cz.levels);
    variable = checkName(cz.variable ?? "data", "chronozarr.variable");
  } catch {
    return null;
  }
  const L0 = levels[0];
  const w = Math.abs(L0.transform[0]) * L0.shape[3];
  const h = Math.abs(L0.transform[4]) * L0.shape[2];
  const gsd = Math.max(w / (box.width - 2 * PADDING), h / (box.height - 2 * PADDING)) / box.dpr;
  const L =
    levels[
      levelForResolution(
        levels.map((l) => l.resolution),
        gsd,
      )
    ];
  if (L.grid[0] * L.grid[1] > MAX_CELLS) return null;
  const path = `${L.path}/${variable}`;
  const raw = consolidated[path];
  let array;
  try {
    array = parseArray(raw, path);
  } catch {
    return null;
  }
  if (array.sharding) return null;
  const cap = compressedBound(array.innerLength * array.bytesPerElement);
  const out = [];
  for (let r = 0; r < L.grid[0]; r++) {
    for (let c = 0; c < L.grid[1]; c++) {
      const k = chunkKey(array, [0, 0, r, c]);
      out.push({ key: `${base}${k}`, url: joinUrl(base, k, query), path, doc: raw, cap });
    }
  }
  return out;
}

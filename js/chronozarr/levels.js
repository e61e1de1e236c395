// The levels of an opened store (spec 3.3, 3.7, 2.1, 2.4): each level's geometry and its data,
// mask and coverage arrays, from the consolidated metadata when the root carries it, else from
// each level's and array's own zarr.json (10.2). Checks the array shapes against the root block
// before any data is read.

import { CorruptStoreError, UnsupportedError } from "./errors.js";
import { own, parseArray } from "./metadata.js";
import { shown } from "./names.js";

/** The data array must be (time, band, y, x) chunked (1, n_band, cs, cs) (2.1), dtype per 4.1. */
function checkDataArray(meta, arr) {
  const where = `${arr.path}/zarr.json`;
  if (arr.shape.length !== 4) throw new CorruptStoreError(`${where}: data array must be (time, band, y, x) (spec 2.1)`);
  const [nt, nb] = arr.shape;
  const inner = arr.innerShape;
  if (nt !== meta.times.length) {
    throw new CorruptStoreError(`${where}: ${nt} timesteps but chronozarr.times lists ${meta.times.length}`);
  }
  if (nb !== meta.bands.length) {
    throw new CorruptStoreError(`${where}: ${nb} bands but chronozarr.bands lists ${meta.bands.length}`);
  }
  if (inner[0] !== 1 || inner[1] !== nb || inner[2] !== inner[3]) {
    throw new CorruptStoreError(`${where}: inner chunk ${shown(inner)} is not (1, n_band, cs, cs) (spec 2.1)`);
  }
  if (meta.temporal.encoding === "star-delta" && arr.dtype !== "uint8" && arr.dtype !== "uint16") {
    throw new UnsupportedError(`${where}: star-delta is defined for uint8 and uint16 only, not ${arr.dtype} (spec 4.1)`);
  }
  checkNodata(meta.nodata, arr.dtype);
}

const INT_RANGES = { uint8: [0, 255], uint16: [0, 65535], int16: [-32768, 32767] };
const FLOAT32_MAX = 3.4028234663852886e38;

/**
 * nodata must be a value of the data's dtype (spec 2.3), as the Python reader's mirror.py
 * requires: 2^64 or 1.5 in a uint16 store can never equal a stored value, so the validity rule
 * would silently call every pixel valid.
 */
function checkNodata(nodata, dtype) {
  if (nodata === null) return;
  const range = INT_RANGES[dtype];
  const ok = range ? Number.isInteger(nodata) && nodata >= range[0] && nodata <= range[1] : Math.abs(nodata) <= FLOAT32_MAX;
  if (!ok) throw new CorruptStoreError(`chronozarr.nodata ${shown(nodata)} is not a ${dtype} value (spec 2.3)`);
}

/**
 * The levels mirror (3.7) must describe the array it mirrors: the same band, y and x sizes (the
 * time axis may have grown past it, spec 14), and the grid of that shape in cells of cs. Issue
 * 14: a reader never sizes anything by a mirror that disagrees (the Python reader's mirror.py).
 */
function checkMirror(mirror, arr, index) {
  const where = `chronozarr.levels[${index}]`;
  const [, nb, h, w] = arr.shape;
  const cs = arr.innerShape[2];
  if (mirror.shape[1] !== nb || mirror.shape[2] !== h || mirror.shape[3] !== w || mirror.shape[0] > arr.shape[0]) {
    throw new CorruptStoreError(`${where}.shape ${shown(mirror.shape)} does not mirror ${arr.path} shape ${shown(arr.shape)} (spec 3.7)`);
  }
  const grid = [Math.ceil(h / cs), Math.ceil(w / cs)];
  if (mirror.grid[0] !== grid[0] || mirror.grid[1] !== grid[1]) {
    throw new CorruptStoreError(
      `${where}.grid ${shown(mirror.grid)} does not match shape ${shown(arr.shape)} in cells of ${cs} (expected ${shown(grid)}, spec 3.7)`,
    );
  }
}

/**
 * Every level of the store described by `meta` (metadata.parseRoot), reading documents the
 * consolidated metadata lacks through `json(key, signal)`. Returns [{index, path, resolution,
 * transform, shape, height, width, cs, grid, dtype, sharded, shardTime, data, mask, coverage}].
 */
export async function loadLevels(meta, json, signal) {
  const arrayDoc = async (path) => own(meta.consolidated, path) ?? json(`${path}/zarr.json`, signal);
  return Promise.all(
    meta.levelPaths.map(async (path, index) => {
      const mirror = meta.levels?.[index];
      let resolution = mirror?.resolution;
      let transform = mirror?.transform;
      if (!mirror) {
        const g = own(meta.consolidated, path) ?? (await json(`${path}/zarr.json`, signal));
        const a = own(g, "attributes") ?? {};
        const ok = Array.isArray(a.transform) && a.transform.length === 6 && a.transform.every(Number.isFinite);
        if (!ok || !Number.isFinite(a.resolution) || a.resolution <= 0) {
          throw new CorruptStoreError(`${path}/zarr.json: level group lacks transform (6 numbers) or resolution (spec 3.3)`);
        }
        transform = a.transform.slice();
        resolution = a.resolution;
      }
      const dataPath = `${path}/${meta.variable}`;
      const data = parseArray(await arrayDoc(dataPath), dataPath);
      checkDataArray(meta, data);
      if (mirror) checkMirror(mirror, data, index);
      const plane = async (name) => {
        if (name == null) return null;
        const p = `${path}/${name}`;
        const arr = parseArray(await arrayDoc(p), p, ["uint8"]);
        // The plane is read cell by cell with the data array's cs (spec 2.4, 2.5).
        const [nt, , h, w] = data.shape;
        const cs = data.innerShape[2];
        const same = arr.shape.length === 3 && arr.shape[0] === nt && arr.shape[1] === h && arr.shape[2] === w;
        if (!same || arr.innerShape[0] !== 1 || arr.innerShape[1] !== cs || arr.innerShape[2] !== cs) {
          throw new CorruptStoreError(
            `${p}/zarr.json: expected shape (${nt}, ${h}, ${w}) in chunks of (1, ${cs}, ${cs}), got ${shown(arr.shape)} in ${shown(arr.innerShape)} (spec 2.4)`,
          );
        }
        return arr;
      };
      const [mask, coverage] = await Promise.all([plane(meta.maskVariable), plane(meta.coverageVariable)]);
      const [, , height, width] = data.shape;
      const cs = data.innerShape[2];
      return {
        index,
        path,
        resolution,
        transform,
        shape: data.shape.slice(),
        height,
        width,
        cs,
        grid: [Math.ceil(height / cs), Math.ceil(width / cs)],
        dtype: data.dtype,
        sharded: data.sharding !== null,
        shardTime: data.sharding ? data.chunkShape[0] : null,
        data,
        mask,
        coverage,
      };
    }),
  );
}

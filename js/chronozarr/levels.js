// The levels of an opened store (spec 3.3, 3.7, 2.1, 2.4): each level's geometry and its data,
// mask and coverage arrays, from the consolidated metadata when the root carries it, else from
// each level's and array's own zarr.json (10.2). Checks the array shapes against the root block
// before any data is read.

import { CorruptStoreError, UnsupportedError } from "./errors.js";
import { parseArray } from "./metadata.js";

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
    throw new CorruptStoreError(`${where}: inner chunk ${JSON.stringify(inner)} is not (1, n_band, cs, cs) (spec 2.1)`);
  }
  if (meta.temporal.encoding === "star-delta" && arr.dtype !== "uint8" && arr.dtype !== "uint16") {
    throw new UnsupportedError(`${where}: star-delta is defined for uint8 and uint16 only, not ${arr.dtype} (spec 4.1)`);
  }
}

/**
 * Every level of the store described by `meta` (metadata.parseRoot), reading documents the
 * consolidated metadata lacks through `json(key, signal)`. Returns [{index, path, resolution,
 * transform, shape, height, width, cs, grid, dtype, sharded, shardTime, data, mask, coverage}].
 */
export async function loadLevels(meta, json, signal) {
  const arrayDoc = async (path) => meta.consolidated?.[path] ?? json(`${path}/zarr.json`, signal);
  return Promise.all(
    meta.levelPaths.map(async (path, index) => {
      const mirror = meta.levels?.[index];
      let resolution = mirror?.resolution;
      let transform = mirror?.transform;
      if (!mirror) {
        const g = meta.consolidated?.[path] ?? (await json(`${path}/zarr.json`, signal));
        const a = g?.attributes ?? {};
        if (!Array.isArray(a.transform) || typeof a.resolution !== "number") {
          throw new CorruptStoreError(`${path}/zarr.json: level group lacks transform or resolution (spec 3.3)`);
        }
        transform = a.transform.map(Number);
        resolution = a.resolution;
      }
      const dataPath = `${path}/${meta.variable}`;
      const data = parseArray(await arrayDoc(dataPath), dataPath);
      checkDataArray(meta, data);
      const plane = async (name) => {
        if (name == null) return null;
        const p = `${path}/${name}`;
        const arr = parseArray(await arrayDoc(p), p, ["uint8"]);
        if (arr.shape.length !== 3 || arr.innerShape[0] !== 1) {
          throw new CorruptStoreError(`${p}/zarr.json: expected (time, y, x) with one timestep per chunk (spec 2.4)`);
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

// Shard indices (spec 7.2, 7.3): read the index of a sharded array's shard with one bounded range.
// With index_location "end" the range needs the shard's length: from chronozarr.shard_bytes when
// it lists the shard (no HEAD, no CORS preflight), else from a HEAD (7.3 fallback). With "start"
// the range is bytes 0..N-1. The index crc32c is verified, and no entry may point past the shard.

import { crc32c } from "./crc32c.js";
import { CorruptStoreError } from "./errors.js";
import { decodeShardIndex } from "./metadata.js";

/**
 * Length of a data shard from shard_bytes (7.3), or null: shard_bytes lists the data array's
 * shards only, keyed by level path and "ts/r/c" (the shard coordinates without the band axis).
 */
export function listedShardLength(shardBytes, variable, array, loc) {
  if (!shardBytes) return null;
  const levelPath = array.path.slice(0, array.path.lastIndexOf("/"));
  if (array.path !== `${levelPath}/${variable}`) return null;
  const entry = shardBytes[levelPath];
  if (!entry) return null;
  const [ts, , r, c] = loc.shard;
  const n = entry[`${ts}/${r}/${c}`];
  return typeof n === "number" ? n : null;
}

/**
 * Fetch and decode the index of the shard holding `loc` (metadata.locateChunk) through `source`
 * (an HttpSource). Returns Float64Array [off0, n0, ...] (-1 = empty), or null when the shard does
 * not exist (404: all fill, 7.2). `listed` is its length from shard_bytes, or null.
 */
export async function fetchShardIndex(source, array, loc, listed, signal) {
  const key = loc.key;
  const sh = array.sharding;
  const N = sh.indexBytes;
  let range;
  let length = null;
  if (sh.indexLocation === "start") {
    range = [0, N - 1];
  } else {
    length = listed;
    if (length === null) {
      const head = await source.request(key, { method: "HEAD", signal });
      if (head === null) return null;
      length = head.length;
    }
    range = length === null ? { suffix: N } : [length - N, length - 1];
    if (length !== null && length < N) {
      throw new CorruptStoreError(`${source.url}${key}: shard is ${length} bytes, shorter than its ${N}-byte index`);
    }
  }
  source.stats.indexReads++;
  const bytes = await source.request(key, { range, signal });
  if (bytes === null) return null;
  const index = decodeShardIndex(bytes, sh.nEntries, sh.indexCrc ? crc32c : null, `${source.url}${key}`);
  if (length !== null) {
    const limit = sh.indexLocation === "end" ? length - N : length;
    for (let i = 0; i < sh.nEntries; i++) {
      if (index[2 * i] >= 0 && index[2 * i] + index[2 * i + 1] > limit) {
        throw new CorruptStoreError(`${source.url}${key}: index entry ${i} points past the end of the shard (${length} bytes)`);
      }
    }
  }
  return index;
}

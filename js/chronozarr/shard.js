// Shard indices (spec 7.2, 7.3): read the index of a sharded array's shard with one bounded range.
// With index_location "end" the range needs the shard's length: from chronozarr.shard_bytes when
// it lists the shard (no HEAD, no CORS preflight), else from a HEAD (7.3 fallback). With "start"
// the range is bytes 0..N-1. The index crc32c is verified, and no entry may point past the shard.

import { crc32c } from "./crc32c.js";
import { CorruptStoreError } from "./errors.js";
import { compressedBound, decodeShardIndex, own } from "./metadata.js";

/**
 * Length of a data shard from shard_bytes (7.3), or null: shard_bytes lists the data array's
 * shards only, keyed by level path and "ts/r/c" (the shard coordinates without the band axis).
 */
export function listedShardLength(shardBytes, variable, array, loc) {
  if (!shardBytes) return null;
  const levelPath = array.path.slice(0, array.path.lastIndexOf("/"));
  if (array.path !== `${levelPath}/${variable}`) return null;
  const entry = own(shardBytes, levelPath);
  if (entry === undefined) return null;
  const [ts, , r, c] = loc.shard;
  const key = `${ts}/${r}/${c}`;
  const n = own(entry, key);
  if (n === undefined) return null;
  // Decision 0016: a length is a byte count, not any JSON value.
  if (!Number.isSafeInteger(n) || n < 0) {
    throw new CorruptStoreError(`chronozarr.shard_bytes["${levelPath}"]["${key}"]: ${JSON.stringify(n) ?? String(n)} is not a byte length`);
  }
  return n;
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
      if (length !== null && !(Number.isSafeInteger(length) && length >= 0)) {
        throw new CorruptStoreError(`${source.url}${key}: HEAD gave Content-Length ${length}, not a byte length`);
      }
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
  checkIndexEntries(index, sh, length, compressedBound(array.innerLength * array.bytesPerElement), `${source.url}${key}`);
  return index;
}

/**
 * Decision 0016: every (offset, nbytes) entry is checked before any range is requested: offsets are
 * exact integers (a 2^63 offset is not), an inner chunk holds at least one byte and at most what
 * a compressed chunk of its decoded size can hold (`bound`), and, when the shard's length is
 * known, it lies inside the shard's data (before an end index, after a start index).
 */
export function checkIndexEntries(index, sh, length, bound, where) {
  const N = sh.indexBytes;
  const lo = sh.indexLocation === "start" ? N : 0;
  const hi = length === null ? Number.MAX_SAFE_INTEGER : sh.indexLocation === "end" ? length - N : length;
  for (let i = 0; i < sh.nEntries; i++) {
    const off = index[2 * i];
    const n = index[2 * i + 1];
    if (off < 0) continue; // empty (spec 7.2)
    if (!Number.isSafeInteger(off) || !Number.isSafeInteger(n) || n < 1 || n > bound) {
      throw new CorruptStoreError(`${where}: index entry ${i} (offset ${off}, ${n} bytes) is not a chunk of at most ${bound} bytes`);
    }
    if (off < lo || off + n > hi) {
      throw new CorruptStoreError(
        `${where}: index entry ${i} (offset ${off}, ${n} bytes) points outside the shard's data${length === null ? "" : ` (${length} bytes)`}`,
      );
    }
  }
}

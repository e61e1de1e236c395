// Chunk access (spec 2.1, 7, 10): locate an inner chunk from metadata alone, read its bytes (one
// GET unsharded; the shard index, then one bounded range, sharded), decode it, and keep what is
// worth keeping in byte-budgeted caches: decoded true chunks (anchors, every chunk of a none
// store, mask and coverage planes), compressed delta chunks, and shard indices. Concurrent reads
// of the same object share one request.

import { InFlight, cacheKey } from "./cache.js";
import { fillChunk, makeChunkDecoder } from "./codecs.js";
import { CorruptStoreError } from "./errors.js";
import { LRUCache } from "./lru.js";
import { compressedBound, locateChunk } from "./metadata.js";
import { fetchShardIndex, listedShardLength } from "./shard.js";

const MISSING = Symbol("missing"); // a shard that does not exist (404): all fill (7.2)

export class ChunkReader {
  /**
   * source: an HttpSource; shardBytes and variable: chronozarr.shard_bytes and .variable (7.3);
   * budgets: {cacheBytes, indexCacheBytes, rawCacheBytes, makeDecoder, deltaCache}; makeDecoder
   * (optional) builds an array's decoder elsewhere (a Worker pool) and is given makeChunkDecoder
   * to fall back on; deltaCache (optional) is the RequestInit.cache mode of delta chunk GETs.
   */
  constructor(source, { shardBytes, variable }, budgets) {
    this.source = source;
    this.shardBytes = shardBytes ?? null;
    this.variable = variable;
    this.chunkCache = new LRUCache(budgets.cacheBytes);
    this.indexCache = new LRUCache(budgets.indexCacheBytes);
    this.rawCache = new LRUCache(budgets.rawCacheBytes);
    this.inflight = new InFlight();
    this._decoders = new Map();
    this._makeDecoder = budgets.makeDecoder ?? null;
    this._deltaCache = budgets.deltaCache;
  }

  /** The decoder of `array` (codecs.makeChunkDecoder), built once per array. */
  decoder(array) {
    let dec = this._decoders.get(array);
    if (!dec) {
      dec = this._makeDecoder ? this._makeDecoder(array, makeChunkDecoder) : makeChunkDecoder(array);
      this._decoders.set(array, dec);
    }
    return dec;
  }

  /** The decoded index of the shard holding `loc` (7.2), or null for a shard that does not exist. */
  async shardIndex(array, loc, signal) {
    const key = loc.key;
    const cached = this.indexCache.get(key);
    if (cached !== undefined) return cached === MISSING ? null : cached;
    return this.inflight.run(
      `index:${key}`,
      async (sig) => {
        const listed = listedShardLength(this.shardBytes, this.variable, array, loc);
        const index = await fetchShardIndex(this.source, array, loc, listed, sig);
        this.indexCache.set(key, index ?? MISSING, index ? index.byteLength + 64 : 64);
        return index;
      },
      signal,
    );
  }

  /**
   * {bytes, where} of the inner chunk at `coords`; bytes null when it is fill (absent, empty).
   * `cache`: the RequestInit.cache mode of the chunk's GET (a shard index's GET keeps the default).
   */
  async chunkBytes(array, coords, signal, cache) {
    const loc = locateChunk(array, coords);
    // The decoder (its codec's WebAssembly compiled on first use) is built while the GET is in
    // flight, not after the bytes arrive (issue 10: the first frame's path). Its failure (an
    // unsupported codec) is still raised by decode(), only for a chunk that has bytes.
    Promise.resolve(this.decoder(array)).catch(() => {});
    const { url } = this.source;
    if (!loc.sharded) {
      this.source.stats.chunkReads++;
      // Issue 14: no chunk object may be longer than a compressed chunk of its decoded size.
      const maxBytes = compressedBound(array.innerLength * array.bytesPerElement);
      return { bytes: await this.source.request(loc.key, { signal, maxBytes, cache }), where: `${url}${loc.key}` };
    }
    const index = await this.shardIndex(array, loc, signal);
    const where = `${url}${loc.key} (inner chunk ${loc.entry})`;
    if (index === null) return { bytes: null, where };
    const off = index[2 * loc.entry];
    const n = index[2 * loc.entry + 1];
    if (off < 0) return { bytes: null, where };
    this.source.stats.chunkReads++;
    const bytes = await this.source.request(loc.key, { range: [off, off + n - 1], signal, cache });
    if (bytes === null) throw new CorruptStoreError(`${url}${loc.key}: shard vanished (HTTP 404) after its index was read`);
    return { bytes, where };
  }

  /**
   * Decode {bytes, where}; fill bytes give the array's shared fill chunk. With `prefix` (elements
   * from the chunk's start) the result may hold only those (codecs.makeChunkDecoder).
   */
  async decode(array, got, prefix) {
    if (got.bytes === null) return fillChunk(array);
    const decode = await this.decoder(array);
    return prefix === undefined ? decode(got.bytes, got.where) : decode(got.bytes, got.where, prefix);
  }

  /**
   * A decoded chunk that holds true values (an anchor, any chunk of a none store, a mask or
   * coverage plane), cached in the byte-budgeted LRU and shared among concurrent callers.
   * Callers must not modify it.
   */
  async trueChunk(array, coords, signal) {
    const key = cacheKey(array.path, coords);
    const hit = this.chunkCache.get(key);
    if (hit !== undefined) return hit;
    return this.inflight.run(
      `chunk:${key}`,
      async (sig) => {
        const chunk = await this.decode(array, await this.chunkBytes(array, coords, sig));
        this.chunkCache.set(key, chunk, chunk === array._fillChunk ? 64 : chunk.byteLength);
        return chunk;
      },
      signal,
    );
  }

  async _rawDelta(array, coords, signal) {
    const key = cacheKey(array.path, coords);
    let got = this.rawCache.get(key);
    if (got === undefined) {
      got = await this.inflight.run(`raw:${key}`, (sig) => this.chunkBytes(array, coords, sig, this._deltaCache), signal);
      this.rawCache.set(key, got, (got.bytes?.byteLength ?? 0) + 64);
    }
    return got;
  }

  /**
   * A decoded delta chunk, the caller's own; its compressed bytes are kept in the raw cache.
   * `prefix`: only the first that many elements are needed (the first bands, C order).
   */
  async deltaChunk(array, coords, signal, prefix) {
    return this.decode(array, await this._rawDelta(array, coords, signal), prefix);
  }

  /** Fetch a delta chunk's bytes into the raw cache (prefetch); returns the bytes fetched. */
  async warmDelta(array, coords, signal) {
    if (this.rawCache.has(cacheKey(array.path, coords))) return 0;
    const got = await this._rawDelta(array, coords, signal);
    return got.bytes?.byteLength ?? 0;
  }

  /** True when the decoded true chunk at `coords` is cached. */
  hasTrue(array, coords) {
    return this.chunkCache.has(cacheKey(array.path, coords));
  }

  /** True when the compressed delta chunk at `coords` is cached. */
  hasRaw(array, coords) {
    return this.rawCache.has(cacheKey(array.path, coords));
  }

  /** Drop every cache and abort every in-flight request. */
  close(reason) {
    this.inflight.abortAll(reason);
    this.chunkCache.clear();
    this.indexCache.clear();
    this.rawCache.clear();
  }
}

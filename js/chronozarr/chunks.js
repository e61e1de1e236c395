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
import { zstdPrefixEnd } from "./zstd-prefix.js";

const MISSING = Symbol("missing"); // a shard that does not exist (404): all fill (7.2)
// A range read of a delta's first blocks asks for this much more than the densest chunk of the
// array needed so far, per content byte, plus a few KiB (a block header, a denser chunk).
const PREFIX_MARGIN = 1.15;
const PREFIX_SLACK = 4096;

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
    this._prefixRatio = new Map(); // array -> compressed bytes per content byte where a prefix ends
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
   * `first` (unsharded only): read the object's first `first` bytes or fewer (HttpSource
   * {range: {prefix}}; a host that ignores Range answers whole).
   */
  async chunkBytes(array, coords, signal, cache, first) {
    const loc = locateChunk(array, coords);
    // The decoder (its codec's WebAssembly compiled on first use) is built while the GET is in
    // flight, not after the bytes arrive (decision 0023: the first frame's path). Its failure (an
    // unsupported codec) is still raised by decode(), only for a chunk that has bytes.
    Promise.resolve(this.decoder(array)).catch(() => {});
    const { url } = this.source;
    if (!loc.sharded) {
      this.source.stats.chunkReads++;
      // Decision 0016: no chunk object may be longer than a compressed chunk of its decoded size.
      const maxBytes = compressedBound(array.innerLength * array.bytesPerElement);
      const range = first === undefined ? null : { prefix: first };
      return { bytes: await this.source.request(loc.key, { range, signal, maxBytes, cache }), where: `${url}${loc.key}` };
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

  /**
   * The content bytes a read of the first `prefix` elements of `array`'s chunk needs, when its
   * first bytes alone can serve it: an unsharded chunk compressed by zstd alone (zstd-prefix.js);
   * null when the whole object is needed.
   */
  _prefixWant(array, prefix) {
    if (array.sharding || prefix === undefined || !(prefix >= 1) || prefix >= array.innerLength) return null;
    if (array.compressors.length !== 1 || array.compressors[0].name !== "zstd") return null;
    return Math.ceil(prefix) * array.bytesPerElement;
  }

  /** Record how far into `bytes` the blocks of the first `want` content bytes reach. */
  _learnPrefix(array, bytes, want) {
    const reach = bytes ? zstdPrefixEnd(bytes, want) : null;
    if (!reach || reach.end < 0) return false;
    this._prefixRatio.set(array, Math.max(this._prefixRatio.get(array) ?? 0, reach.end / want));
    return true;
  }

  /**
   * {bytes, where, partial} of a delta chunk for a read of `want` content bytes from its start
   * (decision 0030): a range read of its first bytes, sized from how far the prefix reached in the
   * array's chunks read before, when that covers the blocks holding `want` bytes (partial: true);
   * else, and before any chunk of the array was read whole, the whole object.
   */
  async _deltaBytes(array, coords, signal, want) {
    const ratio = want === null ? undefined : this._prefixRatio.get(array);
    const bound = compressedBound(array.innerLength * array.bytesPerElement);
    const n = ratio === undefined ? bound : Math.ceil(want * ratio * PREFIX_MARGIN) + PREFIX_SLACK;
    if (n < bound) {
      const got = await this.chunkBytes(array, coords, signal, this._deltaCache, n);
      // Fewer bytes than asked for is the whole object; more, a host that ignored Range.
      if (got.bytes === null || got.bytes.byteLength !== n) return { ...got, partial: false };
      if (this._learnPrefix(array, got.bytes, want)) return { ...got, partial: true };
    }
    const got = await this.chunkBytes(array, coords, signal, this._deltaCache);
    if (want !== null) this._learnPrefix(array, got.bytes, want);
    return { ...got, partial: false };
  }

  async _rawDelta(array, coords, signal, prefix) {
    const key = cacheKey(array.path, coords);
    const want = this._prefixWant(array, prefix);
    let got = this.rawCache.get(key);
    // A cached first part serves a read whose blocks it holds; any other read needs the whole.
    const serves = (g) => !g.partial || (want !== null && (zstdPrefixEnd(g.bytes, want)?.end ?? -1) > 0);
    if (got !== undefined && serves(got)) return got;
    const whole = got !== undefined || want === null;
    got = await this.inflight.run(
      `raw${whole ? "" : "-first"}:${key}`,
      (sig) => this._deltaBytes(array, coords, sig, whole ? null : want),
      signal,
    );
    // A concurrent read of fewer bands may have shared its first part with this one: read on.
    if (!serves(got)) got = await this.inflight.run(`raw:${key}`, (sig) => this._deltaBytes(array, coords, sig, null), signal);
    this.rawCache.set(key, got, (got.bytes?.byteLength ?? 0) + 64);
    return got;
  }

  /**
   * A decoded delta chunk, the caller's own; its compressed bytes are kept in the raw cache.
   * `prefix`: only the first that many elements are needed (the first bands, C order); the
   * chunk's first bytes may then be all that is read. Where they do not decode as the first
   * blocks (a writer whose blocks are not all full, zstd-prefix.js), the whole object is read
   * and decoded, and this array's chunks are read whole from then on.
   */
  async deltaChunk(array, coords, signal, prefix) {
    const got = await this._rawDelta(array, coords, signal, prefix);
    if (!got.partial) return this.decode(array, got, prefix);
    try {
      return await this.decode(array, got, prefix);
    } catch (err) {
      if (!(err instanceof CorruptStoreError)) throw err;
      this._prefixRatio.set(array, Infinity); // no more first parts of this array
      this.rawCache.delete(cacheKey(array.path, coords));
      return this.decode(array, await this._rawDelta(array, coords, signal), prefix);
    }
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

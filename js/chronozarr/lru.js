// A least-recently-used cache bounded by a byte budget (spec 10: "cache decoded anchors and
// shard indices for the session"). A Map keeps insertion order, so the first key is the least
// recently used one; `get` re-inserts to mark use.

/** @template [V=any] */
export class LRUCache {
  /** @param {number} maxBytes budget; an entry larger than the whole budget is not kept */
  constructor(maxBytes) {
    this.maxBytes = maxBytes;
    this.bytes = 0;
    this.hits = 0;
    this.misses = 0;
    /** @internal @type {Map<string, {value: V, bytes: number}>} */
    this._map = new Map();
  }

  get size() {
    return this._map.size;
  }

  /** @param {string} key */
  has(key) {
    return this._map.has(key);
  }

  /**
   * The value under `key`, or undefined. Marks the entry as most recently used.
   * @param {string} key
   * @returns {V | undefined}
   */
  get(key) {
    const entry = this._map.get(key);
    if (entry === undefined) {
      this.misses++;
      return undefined;
    }
    this.hits++;
    this._map.delete(key);
    this._map.set(key, entry);
    return entry.value;
  }

  /**
   * Store `value` costing `bytes`; evicts least recently used entries to stay in budget.
   * @param {string} key
   * @param {V} value
   * @param {number} bytes
   * @returns {boolean} false when the entry is larger than the whole budget (not kept)
   */
  set(key, value, bytes) {
    this.delete(key);
    if (bytes > this.maxBytes) return false;
    this._map.set(key, { value, bytes });
    this.bytes += bytes;
    for (const [k, e] of this._map) {
      if (this.bytes <= this.maxBytes) break;
      this._map.delete(k);
      this.bytes -= e.bytes;
    }
    return true;
  }

  /** @param {string} key */
  delete(key) {
    const entry = this._map.get(key);
    if (entry === undefined) return false;
    this._map.delete(key);
    this.bytes -= entry.bytes;
    return true;
  }

  clear() {
    this._map.clear();
    this.bytes = 0;
  }

  keys() {
    return this._map.keys();
  }
}

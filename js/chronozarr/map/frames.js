// chronozarr/map/frames.js: the layer's decoded cell-timesteps, kept like a video player's
// frames, and its read-ahead in the direction of travel. The reader keeps deltas compressed
// (spec 10), so without this cache every pass over a series decodes every delta again; with the
// read-ahead a scrub or playback step costs a texture upload only (decision 0015).

import { LRUCache } from "../lru.js";

/** Decoded cell-timesteps kept for playback read-ahead until a frame takes them. */
export const AHEAD_ENTRIES = 48;
/** Decoded cell-timesteps kept (scrubbing back and forth), in bytes. */
export const FRAME_CACHE_BYTES = 128 * 1024 * 1024;

/** @typedef {{data: import("../store.js").CellData, mask: Uint8Array | null}} Frame */
/** @typedef {{row: number, col: number}} Cell */

export class FrameReader {
  /**
   * @param {import("../store.js").ChronozarrStore} store
   * @param {{frameCacheBytes?: number, aheadSteps?: number}} [options]
   */
  constructor(store, { frameCacheBytes = FRAME_CACHE_BYTES, aheadSteps = 5 } = {}) {
    this.store = store;
    /** @type {LRUCache<Frame>} */
    this.cache = new LRUCache(frameCacheBytes);
    /** Timesteps read ahead of the one shown. */
    this.aheadSteps = aheadSteps;
    /** @type {Map<string, Promise<Frame>>} "level/row/col/t/bands" -> read in flight or done, until a frame takes it */
    this._ahead = new Map();
  }

  /**
   * The decoded data of one cell-timestep: {data, mask}, data holding bands 0..bands-1. With
   * `ahead`, the read is kept (as its promise, so a frame that asks for it while it is still
   * being decoded waits for the same read) until a frame takes it: playback and scrub read-ahead.
   * @param {number} level
   * @param {number} t
   * @param {Cell} cell
   * @param {number} bands
   * @param {AbortSignal} [signal]
   * @param {boolean} [ahead]
   * @returns {Promise<Frame>}
   */
  async read(level, t, cell, bands, signal, ahead = false) {
    const key = `${level}/${cell.row}/${cell.col}/${t}/${bands}`;
    const kept = this.cache.get(key);
    if (kept) return kept;
    const hit = this._ahead.get(key);
    if (hit) {
      if (!ahead) this._ahead.delete(key);
      try {
        return await hit;
      } catch (err) {
        // A read-ahead abandoned (playback stopped) is read again for the frame that wants it.
        if (ahead || err?.name !== "AbortError" || signal?.aborted) throw err;
      }
    }
    const s = this.store;
    const read = Promise.all([
      s.readCell({ t, level, row: cell.row, col: cell.col, signal, bands }),
      s.hasMask ? s.readPlane("mask", { t, level, row: cell.row, col: cell.col, signal }) : null,
    ]).then(([data, mask]) => {
      const frame = { data, mask };
      this.cache.set(key, frame, data.data.byteLength + (mask?.byteLength ?? 0));
      return frame;
    });
    if (ahead) {
      this._ahead.set(key, read);
      read.catch(() => {
        if (this._ahead.get(key) === read) this._ahead.delete(key);
      });
      while (this._ahead.size > AHEAD_ENTRIES) this._ahead.delete(this._ahead.keys().next().value);
    }
    return read;
  }

  /**
   * Decode-ahead while scrubbing or playing: once timestep t is shown after `previous`, read the
   * next `aheadSteps` timesteps in the direction of travel (wrapping around the series; their
   * chunks are decoded in the store's decode Workers when it has a pool), so the next frames cost
   * a texture upload only. Nothing without a previous timestep or when t did not change.
   * @param {number} level
   * @param {Cell[]} cells
   * @param {number} t
   * @param {number | undefined} previous
   * @param {number} bands
   */
  readAhead(level, cells, t, previous, bands) {
    const n = this.store.nTime;
    if (n < 2 || previous === undefined || previous === t) return;
    const dir = (t - previous + n) % n <= n / 2 ? 1 : -1;
    // Several timesteps ahead: a delta that must be fetched (anchors resident) takes longer than
    // a display frame, so one read in flight would bound the rate by its latency; with
    // `aheadSteps` in flight the reads overlap (bounded by AHEAD_ENTRIES).
    const steps = Math.max(1, Math.min(this.aheadSteps, n - 1, Math.floor(AHEAD_ENTRIES / Math.max(1, cells.length)) - 1));
    for (let k = 1; k <= steps; k++) {
      const next = (((t + dir * k) % n) + n) % n;
      for (const c of cells) this.read(level, next, c, bands, undefined, true).catch(() => {});
    }
  }
}

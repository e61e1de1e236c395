// Caches (spec 10: "cache decoded anchors and shard indices for the session"): the one key under
// which a chunk is cached, and the sharing of in-flight loads among concurrent readers. The
// byte-budgeted LRU itself is lru.js.

import { abortError, raceSignal } from "./abort.js";

/**
 * The cache key of the inner chunk at grid `coords` of the array at `path` (relative to the
 * store root). Every cache and every residency check uses this function, so a reader that
 * warms a chunk and a reader that looks for it agree on its name.
 */
export function cacheKey(path, coords) {
  return `${path}|${coords.join(",")}`;
}

/**
 * Shares one in-flight load per key among concurrent callers. Each caller may abort its own
 * wait; the load itself is aborted only when every caller waiting for it has aborted, so a
 * scrub that cancels a frame does not cancel an anchor another frame still needs.
 */
export class InFlight {
  constructor() {
    this.map = new Map();
  }

  run(key, factory, signal) {
    let entry = this.map.get(key);
    if (!entry) {
      const ctrl = new AbortController();
      entry = { ctrl, waiters: 0 };
      entry.promise = Promise.resolve()
        .then(() => factory(ctrl.signal))
        .finally(() => {
          if (this.map.get(key) === entry) this.map.delete(key);
        });
      entry.promise.catch(() => {}); // a load every waiter abandoned must not be unhandled
      this.map.set(key, entry);
    }
    entry.waiters++;
    const e = entry;
    return raceSignal(
      e.promise,
      signal,
      () => {
        if (--e.waiters === 0) {
          if (this.map.get(key) === e) this.map.delete(key);
          e.ctrl.abort(abortError(signal));
        }
      },
      () => {
        e.waiters--;
      },
    );
  }

  abortAll(reason) {
    for (const e of this.map.values()) e.ctrl.abort(reason);
    this.map.clear();
  }
}

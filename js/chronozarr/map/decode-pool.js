// chronozarr/map/decode-pool.js: decode a store's chunks in Web Workers (decode-worker.js), so the
// page's main thread stays free for the map while zstd runs (first frame, scrubbing, playback).
//
//   const pool = new DecodePool(new URL("decode-worker.js", import.meta.url), { size: 2 });
//   const store = await openStore(url, { makeDecoder: pool.makeDecoder(() => store.rootDocument) });
//
// The worker decodes with the reader's own decoder (codecs.makeChunkDecoder), so the values are
// the same bytes. An array without a zarr.json document in the root's consolidated metadata
// (spec 3.7) is decoded on the main thread as before. The pool also adopts decodes that a page
// started before its code loaded (the viewer's early script: `early` below).

import { CorruptStoreError, UnsupportedError } from "../errors.js";
import { DTYPES } from "../metadata.js";

const ERRORS = { CorruptStoreError, UnsupportedError };
const EARLY_WAIT_MS = 10_000;

export class DecodePool {
  /**
   * workers: a worker script URL (module worker), or Worker objects already started (each
   * speaking decode-worker.js's protocol). options: size (workers to start from a URL; default
   * the number of cores, at most 4), early ({[chunk URL]: Promise<{n, data}>}: decodes started
   * before the pool, used once each when their compressed length matches).
   * @param {string | URL | Worker[]} workers
   * @param {{size?: number, early?: Record<string, Promise<any>> | null}} [options]
   */
  constructor(workers, { size, early = null } = {}) {
    const n = size ?? Math.max(1, Math.min(4, globalThis.navigator?.hardwareConcurrency ?? 2));
    this.workers = Array.isArray(workers)
      ? [...workers]
      : Array.from({ length: n }, () => new globalThis.Worker(workers, { type: "module" }));
    this.busy = this.workers.map(() => 0);
    this.early = early;
    this.stats = { decoded: 0, early: 0, ms: 0 };
    this._next = 1;
    this._pending = new Map();
    this.broken = false; // a Worker failed (its script did not load): decode on this thread
    this.workers.forEach((w) => this._listen(w));
  }

  /** @internal */
  _listen(w) {
    w.addEventListener("error", () => {
      this.broken = true;
      for (const p of this._pending.values()) p.done({ ok: false, name: "WorkerError", message: "decode worker failed" });
      this._pending.clear();
    });
    w.addEventListener("message", (ev) => {
      const p = this._pending.get(ev.data?.id);
      if (!p) return; // not ours (the page's early script)
      this._pending.delete(ev.data.id);
      this.busy[p.k]--;
      p.done(ev.data);
    });
  }

  /**
   * Start workers from `url` until the pool has `size` (default: the number of cores, at most
   * 4), each warmed (zstd compiled) before it is the least busy: a page that started fewer
   * early (the viewer starts one, decision 0061) grows the pool once its first frame is drawn.
   * @param {string | URL} url
   * @param {number} [size]
   */
  grow(url, size = Math.max(1, Math.min(4, globalThis.navigator?.hardwareConcurrency ?? 2))) {
    while (this.workers.length < size) {
      const w = new globalThis.Worker(url, { type: "module" });
      const k = this.workers.push(w) - 1;
      this.busy.push(0);
      this._listen(w);
      this._warmOne(w, k);
    }
  }

  /**
   * Post a job to the least busy worker; resolves to the worker's answer.
   * @internal
   */
  _post(msg, transfer) {
    if (this.broken) return Promise.resolve({ ok: false, name: "WorkerError", message: "decode worker failed" });
    let k = 0;
    for (let i = 1; i < this.workers.length; i++) if (this.busy[i] < this.busy[k]) k = i;
    const id = this._next++;
    this.busy[k]++;
    return new Promise((done) => {
      this._pending.set(id, { k, done });
      this.workers[k].postMessage({ ...msg, id }, transfer);
    });
  }

  /** Compile zstd in every worker now (before the first chunk arrives). */
  warm() {
    return Promise.all(this.workers.map((w, k) => this._warmOne(w, k)));
  }

  /** @internal */
  _warmOne(w, k) {
    const id = this._next++;
    this.busy[k]++;
    return new Promise((done) => {
      this._pending.set(id, { k, done });
      w.postMessage({ id, warm: true });
    });
  }

  /**
   * openStore's makeDecoder: decoders that post to the pool. `rootDocument` returns the store's
   * root zarr.json (the arrays' documents are its consolidated metadata).
   * @param {() => Record<string, any> | null | undefined} rootDocument
   * @returns {import("../types.js").MakeDecoder}
   */
  makeDecoder(rootDocument) {
    return async (array, fallback) => {
      const doc = rootDocument()?.consolidated_metadata?.metadata?.[array.path];
      const T = DTYPES[array.dtype];
      if (!doc || !T) return fallback(array);
      let here = null; // the main-thread decoder, built if the Workers fail
      const onThisThread = (bytes, where, prefix) => (here ??= fallback(array)).then((decode) => decode(bytes, where, prefix));
      // prefix: elements from the chunk's start that are needed (the reader's readCell `bands`);
      // the Worker then decodes a zstd chunk only that far (codecs.makeChunkDecoder).
      return async (bytes, where, prefix) => {
        if (this.broken) return onThisThread(bytes, where, prefix);
        const started = performance.now();
        const early = this.early?.[where];
        if (early) {
          delete this.early[where];
          // An early decode that never answers (its Worker failed) must not hold the frame.
          const got = await Promise.race([early, new Promise((r) => setTimeout(r, EARLY_WAIT_MS, null))]).catch(() => null);
          if (got?.ok && got.n === bytes.byteLength && got.data.length === array.innerLength) {
            this.stats.early++;
            return got.data;
          }
        }
        // A copy goes to the worker: the reader keeps compressed deltas in its raw cache.
        const copy = bytes.slice();
        const res = await this._post({ path: array.path, doc, bytes: copy, where, prefix }, [copy.buffer]);
        this.stats.decoded++;
        this.stats.ms += performance.now() - started;
        if (!res.ok) {
          if (res.name === "WorkerError") return onThisThread(bytes, where, prefix);
          if (res.name === "AbortError") throw new DOMException(res.message, "AbortError");
          const E = ERRORS[res.name] ?? CorruptStoreError;
          throw new E(res.message);
        }
        return res.data;
      };
    };
  }

  close() {
    for (const w of this.workers) w.terminate();
    for (const p of this._pending.values()) p.done({ ok: false, name: "AbortError", message: "decode pool closed" });
    this._pending.clear();
  }
}

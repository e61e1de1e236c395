// HTTP and byte ranges (spec 7.3, 10.1): every object the reader touches is one GET (or, for a
// shard that shard_bytes does not list, a HEAD) of `{base}{key}{query}` through a
// fetch-compatible function. A 404 is an absent key (spec 9: a chunk of fill values); a host
// that ignores Range and answers 200 with the whole object still works (the range is cut out).

import { abortError } from "./abort.js";
import { CorruptStoreError, FetchError } from "./errors.js";
import { MAX_DOCUMENT_BYTES, parseJson } from "./jsondoc.js";
import { joinUrl } from "./names.js";

/**
 * The store's base URL (ending in "/") and query string ("" or "?..."), from a store URL given
 * with or without its trailing "zarr.json". A relative URL resolves against the page.
 */
export function resolveStoreUrl(url, caller = "openStore") {
  const text = String(url ?? "");
  if (!text) throw new TypeError(`${caller}: a store URL is required`);
  let u;
  try {
    u = globalThis.location?.href ? new URL(text, globalThis.location.href) : new URL(text);
  } catch {
    throw new TypeError(`${caller}: ${JSON.stringify(text)} is not a URL (give an absolute http(s) URL)`);
  }
  u.hash = "";
  const query = u.search;
  u.search = "";
  let base = u.href;
  if (base.endsWith("/zarr.json")) base = base.slice(0, -"zarr.json".length);
  if (!base.endsWith("/")) base += "/";
  return { base, query };
}

/** A host that ignores Range answers 200 with the whole object: cut the range out of it. */
function checkRange(bytes, status, range, url) {
  if (range.prefix) return bytes; // at most the first `prefix` bytes (206), or the whole object (200)
  if (range.suffix) {
    if (status === 200) return bytes.subarray(Math.max(0, bytes.byteLength - range.suffix));
    return bytes;
  }
  const want = range[1] - range[0] + 1;
  if (status === 200) {
    if (bytes.byteLength < range[1] + 1) {
      throw new CorruptStoreError(`${url}: object is ${bytes.byteLength} bytes, range ends at ${range[1]}`);
    }
    return bytes.subarray(range[0], range[1] + 1);
  }
  if (bytes.byteLength !== want) {
    throw new CorruptStoreError(
      `${url}: asked for bytes ${range[0]}-${range[1]} (${want} bytes), got ${bytes.byteLength}: the object is shorter than its index or shard_bytes says`,
    );
  }
  return bytes;
}

/** The objects of one store over HTTP, with a timeout per request and request counters. */
export class HttpSource {
  /** options: fetch, headers, timeout (ms per request). */
  constructor(url, { fetch, headers, timeout }, caller = "openStore") {
    const { base, query } = resolveStoreUrl(url, caller);
    this.url = base;
    this.query = query;
    this.fetch = fetch ?? globalThis.fetch.bind(globalThis);
    this.headers = headers ?? {};
    this.timeout = timeout;
    this.stats = { requests: 0, heads: 0, bytes: 0, chunkReads: 0, indexReads: 0 };
  }

  /**
   * GET (or HEAD) one object, optionally a byte range. Returns a Uint8Array (HEAD: {length}), or
   * null on 404 (an absent key: spec 9). range: [first, last] inclusive, {suffix: n}, or
   * {prefix: n}: the first n bytes or fewer (an object shorter than n answers with all of it;
   * a host that ignores Range answers 200 with the whole object, bounded by maxBytes, and that
   * comes back whole: a caller can tell it from its length).
   * maxBytes: the most a whole-object answer may hold (Content-Length checked before the body
   * is read, the byte count while it is read); a 206 answer may hold exactly its range.
   * cache: the request's RequestInit.cache mode (e.g. "no-store"); absent, the fetch default.
   * @param {string} key
   * @param {{method?: string, range?: any, signal?: AbortSignal, maxBytes?: number, cache?: RequestCache}} [options]
   * @returns {Promise<any>}
   */
  async request(key, { method = "GET", range = null, signal, maxBytes = Infinity, cache } = {}) {
    // Decision 0016: the URL is built so that no key can leave the store's prefix (names.js).
    const url = joinUrl(this.url, key, this.query);
    const headers = { ...this.headers };
    if (range?.prefix !== undefined && !(Number.isSafeInteger(range.prefix) && range.prefix > 0)) {
      throw new CorruptStoreError(`${url}: byte range ${JSON.stringify(range)} is not a valid range`);
    }
    if (range && !range.suffix && range.prefix === undefined) {
      const ok = Number.isSafeInteger(range[0]) && Number.isSafeInteger(range[1]) && range[0] >= 0 && range[1] >= range[0];
      if (!ok) throw new CorruptStoreError(`${url}: byte range ${JSON.stringify(range)} is not a valid range (a corrupt shard index?)`);
    }
    if (range) {
      headers.Range = range.prefix
        ? `bytes=0-${range.prefix - 1}`
        : range.suffix
          ? `bytes=-${range.suffix}`
          : `bytes=${range[0]}-${range[1]}`;
    }
    signal?.throwIfAborted();
    const ctrl = new AbortController();
    let timedOut = false;
    const timeoutError = (what) => new FetchError(`timed out after ${this.timeout} ms${what}`, { url });
    const timer = setTimeout(() => {
      timedOut = true;
      ctrl.abort(timeoutError(`: ${method} ${url}`));
    }, this.timeout);
    const onAbort = () => ctrl.abort(abortError(signal));
    signal?.addEventListener("abort", onAbort, { once: true });
    this.stats.requests++;
    if (method === "HEAD") this.stats.heads++;
    try {
      let res;
      try {
        const init = { method, headers, signal: ctrl.signal };
        if (cache !== undefined) init.cache = cache;
        res = await this.fetch(url, init);
      } catch (err) {
        if (signal?.aborted) throw abortError(signal);
        if (timedOut) throw timeoutError(`: ${method} ${url}`);
        throw new FetchError(`${method} ${url} failed: ${err?.message ?? err}`, { url, cause: err });
      }
      if (res.status === 404) {
        res.body?.cancel?.().catch(() => {});
        return null;
      }
      if (res.status === 416) {
        throw new CorruptStoreError(
          `${url}: range ${headers.Range} not satisfiable (HTTP 416): shard_bytes is stale or the object is truncated; reopen the store`,
        );
      }
      if (!res.ok) {
        res.body?.cancel?.().catch(() => {});
        throw new FetchError(`HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""} for ${method} ${url}`, {
          url,
          status: res.status,
        });
      }
      if (method === "HEAD") {
        const len = res.headers.get("content-length");
        return len === null ? { length: null } : { length: Number(len) };
      }
      let limit = maxBytes;
      if (range && res.status === 206) limit = range.prefix ?? range.suffix ?? range[1] - range[0] + 1;
      let bytes;
      try {
        bytes = await readBody(res, limit, url);
      } catch (err) {
        if (err instanceof CorruptStoreError) throw err;
        if (signal?.aborted) throw abortError(signal);
        if (timedOut) throw timeoutError(` reading ${url}`);
        throw new FetchError(`reading ${url} failed: ${err?.message ?? err}`, { url, cause: err });
      }
      this.stats.bytes += bytes.byteLength;
      return range ? checkRange(bytes, res.status, range, url) : bytes;
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }

  /** A JSON document (size and depth limited, jsondoc.js); null when absent and not `required`. */
  async json(key, signal, { required = true } = {}) {
    const bytes = await this.request(key, { signal, maxBytes: MAX_DOCUMENT_BYTES });
    if (bytes === null) {
      if (!required) return null;
      throw new CorruptStoreError(`${this.url}${key} is missing (HTTP 404)`);
    }
    return parseJson(bytes, `${this.url}${key}`);
  }
}

/**
 * The body of `res` as a Uint8Array of at most `limit` bytes, else CorruptStoreError: a declared
 * length (Content-Length) over the limit is refused before anything is read, a body that passes
 * it while it is read is cancelled there (decision 0016). The viewer's early chunk fetcher reads
 * the first view's chunks with it too (examples/viewer/early-fetcher.js).
 * @param {Response} res
 * @param {number} limit
 * @param {string} url named in the error
 * @returns {Promise<Uint8Array>}
 */
export async function readBody(res, limit, url) {
  const declared = res.headers?.get?.("content-length");
  if (declared != null && Number(declared) > limit) {
    res.body?.cancel?.().catch(() => {});
    throw new CorruptStoreError(`${url}: ${declared} bytes (Content-Length) is more than the ${limit} bytes this object may hold`);
  }
  return readBounded(res, limit, url, declared == null ? null : Number(declared));
}

/**
 * The body of `res` as a Uint8Array, refused (CorruptStoreError) once it passes `limit` bytes.
 * With a declared length (Content-Length) the body is read straight into one buffer of that
 * size where the stream allows it (a BYOB reader): no part copied twice, no part list. The
 * declared length may be less than the body (a cross-origin answer hides Content-Encoding, and a
 * decompressed body outgrows the compressed length), so a body that fills the buffer is read on.
 */
async function readBounded(res, limit, url, declared = null) {
  const tooLong = () => new CorruptStoreError(`${url}: the answer is longer than the ${limit} bytes this object may hold`);
  if (!res.body?.getReader) {
    const bytes = new Uint8Array(await res.arrayBuffer());
    if (bytes.byteLength > limit) throw tooLong();
    return bytes;
  }
  if (declared > 0 && declared <= limit) {
    let byob;
    try {
      byob = res.body.getReader({ mode: "byob" });
    } catch {
      byob = null; // not a byte stream (a constructed or polyfilled Response): read it in parts
    }
    if (byob) return readInto(byob, declared, limit, tooLong);
  }
  const reader = res.body.getReader();
  return readRest(reader, () => reader.read(), [], 0, limit, tooLong);
}

/** Read a BYOB reader into a buffer of `size` bytes; a longer body goes on in parts, to `limit`. */
async function readInto(reader, size, limit, tooLong) {
  let buf = new ArrayBuffer(size);
  let at = 0;
  while (at < size) {
    const { done, value } = await reader.read(new Uint8Array(buf, at, size - at));
    if (value) buf = value.buffer; // the read transfers the buffer: keep its new handle
    if (done) return new Uint8Array(buf, 0, at);
    at += value.byteLength;
  }
  // Full: the body ends here unless it is longer than declared.
  return readRest(reader, () => reader.read(new Uint8Array(65536)), [new Uint8Array(buf)], size, limit, tooLong);
}

/** The rest of a body, read in parts by `next()` after `parts` (`total` bytes), refused past `limit`. */
async function readRest(reader, next, parts, total, limit, tooLong) {
  for (;;) {
    const { done, value } = await next();
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      reader.cancel().catch(() => {});
      throw tooLong();
    }
    parts.push(value);
  }
  return concat(parts, total);
}

/** The parts as one Uint8Array (the part itself when there is one). */
function concat(parts, total) {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.byteLength;
  }
  return out;
}

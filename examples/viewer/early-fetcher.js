// The viewer's chunk fetcher: a small Worker the early script (early.js) starts with the page, from
// a Blob of this file's bundle written into the page by the build (no request). It GETs the
// chunks the page names (the page names them the moment the root parses) and hands each one's
// bytes to a decoder port (one that has compiled zstd, so a chunk never waits behind a decoder
// still starting) and to the page. Why a Worker: a response body is read by the thread that
// fetched it, and the page's main thread is busy evaluating the bundle when the chunks arrive
// (decision 0023). Each body is read as the reader reads it (http.js readBody), no further
// than the reader's bound for a chunk: what it refuses, the reader GETs itself and refuses by name.
//
// In: {ports} (one per decoder; each says on its port when its decoder is warm), then
// {chunks: [{url, key, path, doc, cap}], decode}, and {drop: true} (no decoder will be ready).
// Out: {kind: "started"} (the ports arrived) | {kind: "chunk", url, key, status, statusText, buf,
// decoding} | {kind: "chunk", url, key, failed: true} | {kind: "timing", timeOrigin, entries}.

import { readBody } from "../../js/chronozarr/http.js";

/** The Worker's global scope (this file runs in a dedicated Worker). @type {any} */
const scope = globalThis;

/** @typedef {{url: string, key: string, path: string, doc: object, cap: number}} PlannedChunk */

/** @type {MessagePort[]} */
const ready = [];
/** @type {{id: string, path: string, doc: object, bytes: Uint8Array, where: string}[]} */
let queue = [];
let turn = 0;
let fetched = false;

/** @param {{bytes: Uint8Array} & Record<string, any>} job */
const send = (job) => ready[turn++ % ready.length].postMessage(job, [job.bytes.buffer]);

/** Resource Timing goes to the page once every chunk is fetched and handed to a decoder. */
function finish() {
  if (!fetched || queue.length) return;
  fetched = false;
  const entries = /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByType("resource")).map((x) => ({
    name: x.name,
    startTime: x.startTime,
    requestStart: x.requestStart,
    responseStart: x.responseStart,
    responseEnd: x.responseEnd,
    connectStart: x.connectStart,
    connectEnd: x.connectEnd,
  }));
  scope.postMessage({ kind: "timing", timeOrigin: performance.timeOrigin, entries });
}

/**
 * The body as an ArrayBuffer of its own (to transfer), read as the reader reads it.
 * @param {Response} res
 * @param {PlannedChunk} c
 */
async function body(res, c) {
  const bytes = await readBody(res, c.cap, c.url);
  return bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength ? bytes.buffer : bytes.slice().buffer;
}

/**
 * @param {PlannedChunk} c
 * @param {boolean} decode
 */
async function getChunk(c, decode) {
  try {
    const res = await fetch(c.url, { priority: "high" });
    const b = await body(res, c);
    const decoding = res.ok && decode;
    if (decoding) {
      const job = { id: `early-${c.key}`, path: c.path, doc: c.doc, bytes: new Uint8Array(b.slice(0)), where: c.key };
      if (ready.length) send(job);
      else queue.push(job);
    }
    scope.postMessage({ kind: "chunk", url: c.url, key: c.key, status: res.status, statusText: res.statusText, buf: b, decoding }, [b]);
  } catch {
    scope.postMessage({ kind: "chunk", url: c.url, key: c.key, failed: true });
  }
}

scope.onmessage = (/** @type {MessageEvent} */ e) => {
  const m = e.data;
  if (m.ports) {
    scope.postMessage({ kind: "started" }); // the page's messages reach this Worker now (early.js)
    for (const port of /** @type {MessagePort[]} */ (m.ports)) {
      port.onmessage = (ev) => {
        if (!ev.data?.ready) return;
        if (ev.data.ok) ready.push(port);
        while (ready.length && queue.length) send(queue.shift());
        finish();
      };
    }
    return;
  }
  if (m.drop) {
    queue = [];
    finish();
    return;
  }
  Promise.all(m.chunks.map((/** @type {PlannedChunk} */ c) => getChunk(c, m.decode))).then(() => {
    fetched = true;
    finish();
  });
};

// chronozarr/map/decode-worker.js: a Web Worker that decodes chunks (spec 8) off the page's main
// thread, with the reader's own decoder (codecs.makeChunkDecoder of metadata.parseArray), so a
// chunk decoded here is bit for bit what the reader would decode itself.
//
// Protocol (decode-pool.js and the viewer's early script speak it):
//   in:  {id, path, doc, bytes, prefix?}   doc = the array's zarr.json, bytes = the inner chunk
//                                 (transferred), prefix = elements needed from the chunk's start
//                                 (a zstd chunk is then decoded only that far; data may be shorter)
//        {id, warm: true, port?}  load zstd and compile its WebAssembly now (answers {id, ok});
//                                 with a port, {received: id} first, as soon as it arrives;
//                                 jobs that arrive on `port` are answered to the page as well,
//                                 and the warm-up's answer goes to `port` too ({id, ok, ready:
//                                 true}), so whoever holds the port (the viewer's chunk fetcher)
//                                 sends chunks only to a decoder that is ready
//   out: {id, ok: true, data, n}  data: the decoded chunk as a typed array (its buffer
//                                 transferred), n: the compressed length
//        {id, ok: false, name, message}
//
// zstd (the project's default codec, spec 8) is decoded here by zstddec (a decode-only
// WebAssembly build of zstd, 75 kB with its WASM inlined), so a Worker is ready for the first
// frame's chunks soon after its script arrives: numcodecs' zstd, which the main thread uses, is
// 0.75 MB to fetch, parse and compile, and on 2 cores the first frame waited for its decoders.
// Warm, zstddec decodes the bench store's chunks in 1.04-1.10x numcodecs' time
// (bench/js/zstd_decoders.mjs), to the same bytes; decode-pool.test.js checks every zstd fixture
// against the Python reader. A frame reaches it only after bounded.js checkZstd has checked its
// declared size (decision 0016), and its output length is checked against that size.
//
// This file imports zarrita's codec registry and zstddec (bare specifiers): bundle it for a page
// (`npm run build:viewer` writes dist/viewer/decode-worker.js).

import { registry } from "zarrita";
import { ZSTDDecoder } from "zstddec";
import { zstdContentSize } from "../bounded.js";
import { makeChunkDecoder } from "../codecs.js";
import { parseArray } from "../metadata.js";

const small = new ZSTDDecoder();
let smallReady = null;

/** The zstd codec of zarrita's registry in this Worker: zstddec. */
class WorkerZstd {
  static fromConfig() {
    return new WorkerZstd();
  }

  async decode(bytes) {
    await (smallReady ??= small.init());
    const n = zstdContentSize(bytes);
    if (n === null) throw new Error("zstd frame without a declared content size");
    const out = small.decode(bytes, n);
    if (out.byteLength !== n) throw new Error(`zstd frame decodes to ${out.byteLength} bytes, declares ${n}`);
    return out;
  }

  encode() {
    throw new Error("this Worker only decodes");
  }
}
registry.set("zstd", async () => WorkerZstd);

const decoders = new Map(); // JSON of (path, dtype, grid, codecs) -> decoder promise

function decoderOf(path, doc) {
  const key = JSON.stringify([path, doc.data_type, doc.chunk_grid, doc.codecs]);
  let dec = decoders.get(key);
  if (!dec) {
    dec = Promise.resolve().then(() => makeChunkDecoder(parseArray(doc, path)));
    dec.catch(() => decoders.delete(key));
    decoders.set(key, dec);
  }
  return dec;
}

/** Compile zstddec's WebAssembly now, before the first chunk arrives. */
async function warm() {
  await (smallReady ??= small.init());
}

/** Answer one job to `reply` (the page): {id, ok, data, n} with n the compressed length. */
async function handle(msg, reply) {
  const { id, path, doc, bytes } = msg ?? {};
  try {
    if (msg?.warm) {
      await warm();
      reply({ id, ok: true });
      return;
    }
    const n = bytes.byteLength;
    const decode = await decoderOf(path, doc);
    let data = msg.prefix === undefined ? await decode(bytes, msg.where ?? path) : await decode(bytes, msg.where ?? path, msg.prefix);
    if (data.byteOffset !== 0 || data.byteLength !== data.buffer.byteLength) data = data.slice();
    reply({ id, ok: true, data, n }, [data.buffer]);
  } catch (err) {
    reply({ id, ok: false, name: err?.name ?? "Error", message: err?.message ?? String(err) });
  }
}

const toPage = (m, transfer) => globalThis.postMessage(m, transfer ?? []);

globalThis.onmessage = (ev) => {
  // A port (sent with the warm-up) lets another Worker (the page's chunk fetcher) hand chunks
  // straight to this one; the answers still go to the page.
  const port = ev.data?.port;
  if (!port) return handle(ev.data, toPage);
  // Received (before zstd compiles): the page's messages to a Worker wait in the page until its
  // script has run and the page's thread has taken note, so the page waits for this before it
  // blocks its thread in a WebGL context's creation (decision 0055).
  toPage({ received: ev.data.id });
  port.onmessage = (e) => handle(e.data, toPage);
  handle(ev.data, (m, transfer) => {
    toPage(m, transfer);
    port.postMessage({ id: m.id, ok: m.ok, ready: true });
  });
};

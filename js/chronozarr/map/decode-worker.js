// chronozarr/map/decode-worker.js: a Web Worker that decodes chunks (spec 8) off the page's main
// thread, with the reader's own decoder (codecs.makeChunkDecoder of metadata.parseArray), so a
// chunk decoded here is bit for bit what the reader would decode itself.
//
// Protocol (decode-pool.js and the viewer's early script speak it):
//   in:  {id, path, doc, bytes}   doc = the array's zarr.json, bytes = the inner chunk (transferred)
//        {id, warm: true}         load zstd and compile its WebAssembly now (answers {id, ok})
//   out: {id, ok: true, data}     data: the decoded chunk as a typed array (its buffer transferred)
//        {id, ok: false, name, message}
//
// This file imports zarrita's codec registry (bare specifiers): bundle it for a page
// (`npm run build:viewer` writes dist/viewer/decode-worker.js).

import { registry } from "zarrita";
import { makeChunkDecoder } from "../codecs.js";
import { parseArray } from "../metadata.js";

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

/** Load zstd and run it once, so its WebAssembly is compiled before the first chunk arrives. */
async function warm() {
  const Zstd = await registry.get("zstd")();
  const codec = Zstd.fromConfig({ level: 1 }, { dataType: "uint8", shape: [16], codecs: [] });
  await codec.decode(await codec.encode(new Uint8Array(16)));
}

globalThis.onmessage = async (ev) => {
  const { id, path, doc, bytes } = ev.data ?? {};
  try {
    if (ev.data?.warm) {
      await warm();
      globalThis.postMessage({ id, ok: true });
      return;
    }
    const decode = await decoderOf(path, doc);
    let data = await decode(bytes, ev.data.where ?? path);
    if (data.byteOffset !== 0 || data.byteLength !== data.buffer.byteLength) data = data.slice();
    globalThis.postMessage({ id, ok: true, data }, [data.buffer]);
  } catch (err) {
    globalThis.postMessage({ id, ok: false, name: err?.name ?? "Error", message: err?.message ?? String(err) });
  }
};

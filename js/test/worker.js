// Module Web Worker entry for the browser test: the unchanged decoder.js, bundled by esbuild
// (import maps do not reach workers), reads a whole store and answers with its digest.

import * as cz from "../chronozarr/decoder.js";
import { digestStore } from "./digest.js";

self.onmessage = async (event) => {
  try {
    const result = await digestStore(cz, event.data.url);
    self.postMessage({ ok: true, ...result, inWorker: typeof document === "undefined" && typeof importScripts === "function" });
  } catch (err) {
    self.postMessage({ ok: false, error: `${err?.name}: ${err?.message}` });
  }
};

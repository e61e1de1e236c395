// Parse a store's JSON metadata with limits, so every malformed document is a typed error
// (decision 0016), the same limits as the Python library's chronozarr/jsondoc.py:
//
// - at most MAX_DOCUMENT_BYTES (64 MiB; a decade of monthly shard_bytes is about 1 MB), checked
//   from Content-Length before the body is read and from the byte count while it is read
//   (http.js), and here again;
// - brackets nested at most MAX_NESTING (64) deep, checked by a scan of the bytes before
//   JSON.parse, so neither the parser nor any later walk over the value meets a deep document;
// - numbers that overflow to Infinity (1e999) are refused wherever a size is taken from them
//   (metadata.js checks Number.isFinite / Number.isSafeInteger), and NaN / Infinity literals are
//   not JSON, which JSON.parse already refuses.

import { CorruptStoreError } from "./errors.js";

/** Larger than any zarr.json a store writes. */
export const MAX_DOCUMENT_BYTES = 64 * 1024 * 1024;
/** Deeper than any metadata the spec describes (provenance included). */
export const MAX_NESTING = 64;

/** The deepest bracket nesting of JSON text `bytes` (a Uint8Array), strings skipped. */
export function nestingDepth(bytes) {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (inString) {
      if (b === 0x5c)
        i++; // backslash: skip the escaped character
      else if (b === 0x22) inString = false;
    } else if (b === 0x22) {
      inString = true;
    } else if (b === 0x5b || b === 0x7b) {
      if (++depth > max) max = depth;
    } else if (b === 0x5d || b === 0x7d) {
      depth--;
    }
  }
  return max;
}

/**
 * The JSON value of `bytes` (a Uint8Array holding a zarr.json), or CorruptStoreError naming
 * `where`; text that is not JSON at all raises `NotJson` (default CorruptStoreError: the root
 * document's caller passes NotAChronozarrStoreError).
 */
export function parseJson(bytes, where, NotJson = CorruptStoreError) {
  const Err = CorruptStoreError;
  if (bytes.byteLength > MAX_DOCUMENT_BYTES) {
    throw new Err(`${where}: ${bytes.byteLength} bytes is larger than any metadata document (at most ${MAX_DOCUMENT_BYTES})`);
  }
  if (nestingDepth(bytes) > MAX_NESTING) throw new Err(`${where}: JSON nested deeper than ${MAX_NESTING} levels`);
  let text;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw new NotJson(`${where} is not JSON: not UTF-8 text`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new NotJson(`${where} is not JSON (${err?.message ?? err})`);
  }
}

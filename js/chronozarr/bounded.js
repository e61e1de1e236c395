// Decompression that never produces more than a chunk's expected size (spec 8, decision 0016).
//
// A chunk's decoded size is fixed by its array metadata (inner chunk shape x itemsize), so the
// reader knows it before decoding. Decoding first and comparing afterwards let a 1 MB gzip
// object or a small zstd frame drive the reader to gigabytes; here each compressor is held to
// the expected size before or while it decodes (the rules of the Python chronozarr/bounded.py):
//
// - zstd: the frame header's Frame_Content_Size (RFC 8878 3.1.1.1.4) must be present and equal
//   to the expected size before the WASM decoder runs; numcodecs' decoder then allocates exactly
//   that and fails on anything longer (a second frame, a lying block). A frame without a declared
//   size is refused: numcodecs-js would decode it into a buffer grown without bound.
// - gzip: DecompressionStream fed a slice at a time and read with a running count, cancelled one
//   piece past the expected size, so at most about a slice's worth (x 1032, deflate's largest
//   ratio) is ever produced beyond it.
// - blosc: the c-blosc 1.x header's nbytes (bytes 4-8) must equal the expected size and its
//   cbytes (bytes 12-16) the object's length before anything is allocated.

import { CorruptStoreError } from "./errors.js";

const ZSTD_MAGIC = 0xfd2fb528;
const FCS_BYTES = [0, 2, 4, 8]; // by Frame_Content_Size_flag; flag 0 with Single_Segment means 1

/** The content size a zstd frame header declares, or null when the frame omits it. */
export function zstdContentSize(bytes) {
  if (bytes.byteLength < 5) throw new CorruptStoreError("not a zstd frame (shorter than a frame header)");
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== ZSTD_MAGIC) throw new CorruptStoreError("not a zstd frame (bad magic number)");
  const fhd = bytes[4];
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const dictFlag = fhd & 3;
  const pos = 5 + (single ? 0 : 1) + [0, 1, 2, 4][dictFlag];
  const size = FCS_BYTES[fcsFlag] || (single ? 1 : 0);
  if (size === 0) return null;
  if (bytes.byteLength < pos + size) throw new CorruptStoreError("truncated zstd frame header");
  let value = 0;
  for (let i = size - 1; i >= 0; i--) value = value * 256 + bytes[pos + i];
  return size === 2 ? value + 256 : value;
}

/** Check a zstd frame's declared size against `expected` before it is decoded. */
export function checkZstd(bytes, expected) {
  const declared = zstdContentSize(bytes);
  if (declared === null) {
    throw new CorruptStoreError(
      `zstd frame without a declared content size (this reader needs it to bound the decode to the chunk's ${expected} bytes)`,
    );
  }
  if (declared !== expected) throw new CorruptStoreError(`zstd frame declares ${declared} bytes, expected ${expected}`);
}

/** Check a blosc 1.x header against `expected` decoded bytes and the object's length. */
export function checkBlosc(bytes, expected) {
  if (bytes.byteLength < 16) throw new CorruptStoreError(`blosc: ${bytes.byteLength} bytes is shorter than the 16-byte header`);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const nbytes = view.getUint32(4, true);
  const cbytes = view.getUint32(12, true);
  if (nbytes !== expected) throw new CorruptStoreError(`blosc header declares ${nbytes} bytes, expected ${expected}`);
  if (cbytes !== bytes.byteLength) {
    throw new CorruptStoreError(`blosc header declares ${cbytes} compressed bytes, got ${bytes.byteLength}`);
  }
}

/**
 * Compressed bytes written to the gzip decoder at a time: at most ~16 MiB of output each, and
 * 1.07-1.09x the time of zarrita's whole-stream decode of a 2 MiB chunk (bench/js/bounded.mjs).
 */
export const GZIP_SLICE = 16384;

/**
 * gunzip `bytes` into exactly `expected` bytes with the platform's DecompressionStream, refusing
 * (CorruptStoreError) as soon as the output passes `expected`, and a stream that ends short.
 */
export async function gunzipBounded(bytes, expected) {
  const ds = new DecompressionStream("gzip");
  const writer = ds.writable.getWriter();
  const reader = ds.readable.getReader();
  let stopped = false;
  const pump = (async () => {
    for (let at = 0; at < bytes.byteLength && !stopped; at += GZIP_SLICE) {
      await writer.ready;
      await writer.write(bytes.subarray(at, Math.min(bytes.byteLength, at + GZIP_SLICE)));
    }
    if (!stopped) await writer.close();
  })();
  pump.catch(() => {}); // its failure surfaces through the reader below
  const out = new Uint8Array(expected);
  let n = 0;
  try {
    for (;;) {
      let got;
      try {
        got = await reader.read();
      } catch (err) {
        throw new CorruptStoreError(`gzip: ${err?.message ?? err}`);
      }
      if (got.done) break;
      const piece = got.value;
      if (n + piece.byteLength > expected) {
        throw new CorruptStoreError(`gzip data decodes to more than ${expected} bytes`);
      }
      out.set(piece, n);
      n += piece.byteLength;
    }
  } catch (err) {
    stopped = true;
    reader.cancel().catch(() => {});
    writer.abort().catch(() => {});
    throw err;
  }
  if (n !== expected) throw new CorruptStoreError(`gzip data decodes to ${n} bytes, expected ${expected}`);
  return out;
}

// Codecs (spec 8): decode one inner chunk's bytes with the chain of its array: crc32c checked
// here, zstd / blosc through the codec classes of zarrita's registry (numcodecs WASM) after their
// headers are checked against the chunk's expected size, gzip through a bounded
// DecompressionStream (bounded.js, decision 0016), then the bytes codec's endianness, viewed as the
// stored dtype.

import { registry } from "zarrita";
import { checkBlosc, checkZstd, gunzipBounded } from "./bounded.js";
import { crc32c } from "./crc32c.js";
import { CorruptStoreError, UnsupportedError } from "./errors.js";
import { zstdPrefixFrame } from "./zstd-prefix.js";

/**
 * One decode step of the chain: {name, decode(bytes) -> bytes | Promise<bytes>}. `expected` is
 * the decoded size of the chunk (a chain holds one compressor, spec 8, so it is that step's
 * output size).
 */
async function codecStep(array, c, expected) {
  if (c.name === "crc32c") {
    return {
      name: c.name,
      decode: (bytes) => {
        if (bytes.byteLength < 4) throw new Error(`${bytes.byteLength} bytes, shorter than its 4-byte checksum`);
        const n = bytes.byteLength - 4;
        const stored = new DataView(bytes.buffer, bytes.byteOffset + n, 4).getUint32(0, true);
        if (crc32c(bytes.subarray(0, n)) !== stored) throw new Error("crc32c checksum mismatch");
        return bytes.subarray(0, n);
      },
    };
  }
  const load = registry.get(c.name);
  if (!load) throw new UnsupportedError(`${array.path}: codec "${c.name}" is not in zarrita's registry`);
  if (c.name === "gzip") return { name: c.name, decode: (bytes) => gunzipBounded(bytes, expected) };
  const Codec = await load();
  let conf = c.configuration ?? {};
  if (c.name === "blosc") {
    // numcodecs' Blosc takes the numeric shuffle of the C library; decoding reads the blosc header.
    conf = {
      cname: conf.cname ?? "lz4",
      clevel: conf.clevel ?? 5,
      shuffle: conf.shuffle === "shuffle" ? 1 : 0,
      blocksize: conf.blocksize ?? 0,
    };
  }
  let codec;
  try {
    codec = Codec.fromConfig(conf, /** @type {any} */ ({ dataType: array.dtype, shape: array.innerShape, codecs: [] }));
  } catch (err) {
    throw new CorruptStoreError(
      `${array.path}/zarr.json: ${c.name} configuration ${JSON.stringify(c.configuration)}: ${err?.message ?? err}`,
    );
  }
  const check = c.name === "zstd" ? checkZstd : c.name === "blosc" ? checkBlosc : null;
  return {
    name: c.name,
    /** `prefix`: only the content's first `prefix` bytes are needed (at least those come back). */
    decode: async (bytes, prefix = expected) => {
      check?.(bytes, expected); // before the WASM decoder allocates anything (decision 0016)
      const cut = c.name === "zstd" && prefix < expected ? zstdPrefixFrame(bytes, prefix) : null;
      if (!cut) return codec.decode(bytes);
      const out = await codec.decode(cut.frame);
      if (out.byteLength !== cut.size) throw new Error(`the frame's first blocks decode to ${out.byteLength} bytes, expected ${cut.size}`);
      return out;
    },
  };
}

/**
 * The decoder of one parsed array (metadata.parseArray): an async function (bytes, where,
 * prefix) that returns the inner chunk as a typed array of the stored dtype owning its buffer
 * (deltas are reconstructed in place and raw bytes are cached, so the result must not alias them).
 * With `prefix` (a count of elements from the chunk's start, C order: the first bands), the
 * result may stop after them: a zstd chunk whose block headers prove where the prefix ends
 * (zstd-prefix.js) is decoded only that far, any other chunk whole (then all of it comes back).
 */
export async function makeChunkDecoder(array) {
  const T = array.TypedArray;
  const bpe = array.bytesPerElement;
  const want = array.innerLength * bpe;
  const steps = await Promise.all(array.compressors.map((c) => codecStep(array, c, want)));
  const swap = array.endian === "big" && bpe > 1;
  return async (bytes, where, prefix) => {
    // A prefix cut to whole elements; the compressor (one per chain, spec 8) is told it.
    const wantBytes = prefix !== undefined && prefix >= 1 && prefix < array.innerLength ? Math.ceil(prefix) * bpe : want;
    if (steps.length === 0) bytes = bytes.slice();
    for (let i = steps.length - 1; i >= 0; i--) {
      try {
        bytes = await steps[i].decode(bytes, wantBytes);
      } catch (err) {
        throw new CorruptStoreError(`${where}: ${steps[i].name} decoding failed: ${err?.message ?? err}`, {
          cause: err,
        });
      }
      if (!(bytes instanceof Uint8Array)) bytes = new Uint8Array(bytes.buffer ?? bytes);
    }
    // The whole chunk, or (prefix asked for) whole elements from its start covering the prefix.
    const partial = wantBytes < want && bytes.byteLength >= wantBytes && bytes.byteLength < want && bytes.byteLength % bpe === 0;
    if (bytes.byteLength !== want && !partial) {
      throw new CorruptStoreError(`${where}: chunk decodes to ${bytes.byteLength} bytes, expected ${want}`);
    }
    if (swap) {
      bytes = bytes.slice();
      for (let i = 0; i < bytes.length; i += bpe) bytes.subarray(i, i + bpe).reverse();
    } else if (bytes.byteOffset % bpe !== 0) {
      bytes = bytes.slice();
    }
    return new T(bytes.buffer, bytes.byteOffset, bytes.byteLength / bpe);
  };
}

/** The chunk of an absent key (Zarr: fill_value everywhere), one shared instance per array. */
export function fillChunk(array) {
  if (!array._fillChunk) array._fillChunk = new array.TypedArray(array.innerLength).fill(array.fillValue);
  return array._fillChunk;
}

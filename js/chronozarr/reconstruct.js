// Star-delta reconstruction (spec 4.2, 10.5) and trimming to the array shape (2.1). Pure
// functions over typed arrays: no I/O, no caches.

/** @import {StoredArray} from "./types.js" */

/**
 * Copy a full chunk's bands, trimmed to h x w of the array (2.1: discard beyond shape).
 * @param {StoredArray} src
 * @param {number} nb
 * @param {number} cs
 * @param {number} h
 * @param {number} w
 * @param {{new (n: number): any}} T
 */
export function trimCopy(src, nb, cs, h, w, T) {
  if (h === cs && w === cs) return src.slice(0, nb * cs * cs);
  const out = new T(nb * h * w);
  let o = 0;
  for (let b = 0; b < nb; b++) {
    const base = b * cs * cs;
    for (let y = 0; y < h; y++) {
      const s = base + y * cs;
      out.set(src.subarray(s, s + w), o);
      o += w;
    }
  }
  return out;
}

/**
 * Star-delta reconstruction in place (4.2): delta[i] = (anchor[i] + delta[i]) mod 2^bits in the
 * stored dtype, no clamp (10.5). Storing an int sum into a Uint8Array/Uint16Array wraps it, which
 * is exactly the unsigned modular add; the fast path adds two uint16 (or four uint8) lanes per
 * 32-bit word (SWAR): the low bits of each lane are added without crossing into the next lane,
 * and the lane's top bit is restored by XOR, which drops the carry out of the lane (mod 2^bits).
 * @template {StoredArray} T
 * @param {T} anchor
 * @param {T} delta
 * @returns {T} delta
 */
export function addWrappedInPlace(anchor, delta) {
  const n = delta.length;
  const bpe = delta.BYTES_PER_ELEMENT;
  const words = (n * bpe) >> 2;
  if (bpe <= 2 && (n * bpe) % 4 === 0 && anchor.length >= n && anchor.byteOffset % 4 === 0 && delta.byteOffset % 4 === 0) {
    const a32 = new Uint32Array(anchor.buffer, anchor.byteOffset, words);
    const d32 = new Uint32Array(delta.buffer, delta.byteOffset, words);
    const low = bpe === 2 ? 0x7fff7fff : 0x7f7f7f7f;
    const high = bpe === 2 ? 0x80008000 | 0 : 0x80808080 | 0;
    for (let i = 0; i < words; i++) {
      const x = a32[i];
      const y = d32[i];
      d32[i] = ((x & low) + (y & low)) ^ ((x ^ y) & high);
    }
  } else {
    for (let i = 0; i < n; i++) delta[i] = anchor[i] + delta[i];
  }
  return delta;
}

/**
 * Star-delta reconstruction into a new array trimmed to h x w (anchor and delta untouched).
 * @template {StoredArray} A
 * @param {A} anchor
 * @param {A} delta
 * @param {number} nb bands
 * @param {number} cs cell size
 * @param {number} h trimmed height
 * @param {number} w trimmed width
 * @param {{new (n: number): A}} T the stored dtype's typed array
 * @returns {A}
 */
export function reconstruct(anchor, delta, nb, cs, h, w, T) {
  const full = addWrappedInPlace(anchor, /** @type {A} */ (delta.slice(0, nb * cs * cs)));
  return h === cs && w === cs ? full : trimCopy(full, nb, cs, h, w, T);
}

/**
 * The true values of a full chunk from the decoded chunk(s) of a timestep: [chunk] (an anchor, a
 * none store) or [anchor, delta]. A decoded delta is owned by the caller (never cached), so it is
 * reconstructed in place; the shared fill chunk is copied first.
 */
export function trueValues(chunks, fill) {
  if (chunks.length === 1) return chunks[0];
  const [anchor, delta] = chunks;
  return addWrappedInPlace(anchor, delta === fill ? delta.slice() : delta);
}

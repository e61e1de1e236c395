// The first bytes of a zstd frame's content without decoding the rest (spec 8; decisions 0025, 0030).
//
// A chunk of a data array is (1, n_band, cs, cs) in C order, so its first k bands are a prefix
// of its bytes. A map that draws one band of two needs half of each chunk, and zstd decoding is
// the largest CPU cost of a scrub step when deltas are fetched: decoding only the blocks that
// hold the prefix halves it. numcodecs-js decodes whole frames only, so the frame is cut here
// (RFC 8878 3.1.1): a new frame header declaring the prefix's size, then the first k blocks of
// the original frame, the k-th marked last. Blocks decode in order and depend only on what was
// decoded before them (their matches, repeat offsets and entropy tables), so the cut frame
// decodes to exactly the original content's first bytes.
//
// A block's decoded size is not in its header, so the cut is made only where the headers prove
// where the prefix ends: every block holds at most Block_Maximum_Size = min(Window_Size, 128 KiB)
// bytes, and when the frame declares a content size of exactly N such blocks and holds exactly N
// blocks, each holds exactly that many (which is what zstd writes for chunks of a multiple of
// 128 KiB). Anything else (a dictionary, a reserved bit, another count of blocks, a truncated
// frame) returns null and the caller decodes the whole frame, as before.

const ZSTD_MAGIC = 0xfd2fb528;
export const ZSTD_BLOCK_MAX = 131072; // 128 KiB (RFC 8878 3.1.1.2.3)

/**
 * Where the first blocks holding `want` content bytes end in `bytes`, a zstd frame or the first
 * bytes of one: null when the frame's headers do not prove where its blocks' contents start (or
 * the cut would hold the whole content); otherwise {first, keep, blockMax, keptEnd, lastHeader,
 * complete, proven}: `keptEnd` the offset just past the `keep`-th block (-1 when `bytes` ends
 * before it), `complete` whether `bytes` holds the whole frame, `proven` whether the whole frame
 * was walked and holds exactly the blocks its content size implies.
 */
function walk(bytes, want) {
  if (!(want > 0) || bytes.byteLength < 6) return null;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (view.getUint32(0, true) !== ZSTD_MAGIC) return null;
  const fhd = bytes[4];
  const fcsFlag = fhd >> 6;
  const single = (fhd >> 5) & 1;
  const reserved = (fhd >> 3) & 1;
  const dictFlag = fhd & 3;
  if (reserved || dictFlag) return null; // a dictionary is not ours to re-declare
  let pos = 5;
  let window = 0;
  if (!single) {
    const wd = bytes[pos++];
    const base = 2 ** (10 + (wd >> 3));
    window = base + (base / 8) * (wd & 7);
  }
  const fcsBytes = [0, 2, 4, 8][fcsFlag] || (single ? 1 : 0);
  if (fcsBytes === 0 || bytes.byteLength < pos + fcsBytes) return null;
  let content = 0;
  for (let i = fcsBytes - 1; i >= 0; i--) content = content * 256 + bytes[pos + i];
  if (fcsBytes === 2) content += 256;
  pos += fcsBytes;
  if (single) window = content;
  const blockMax = Math.min(window, ZSTD_BLOCK_MAX);
  if (!(blockMax > 0) || content % blockMax !== 0 || want >= content) return null;
  const nBlocks = content / blockMax;
  const keep = Math.ceil(want / blockMax);
  if (keep >= nBlocks) return null; // the cut would be the whole frame
  // Walk the block headers (3 bytes each: Last_Block, Block_Type, Block_Size) as far as `bytes` goes.
  const out = { first: pos, keep, blockMax, keptEnd: -1, lastHeader: -1, complete: false, proven: false };
  for (let k = 0; ; k++) {
    if (pos + 3 > bytes.byteLength) return out; // the first bytes of a frame end here
    const header = bytes[pos] | (bytes[pos + 1] << 8) | (bytes[pos + 2] << 16);
    const type = (header >> 1) & 3;
    if (type === 3) return null; // reserved: corrupt, the whole decode reports it
    const size = header >>> 3;
    const stored = type === 1 ? 1 : size; // an RLE block stores one byte
    if (k === keep - 1) out.lastHeader = pos;
    pos += 3 + stored;
    if (pos > bytes.byteLength) return out;
    if (k === keep - 1) out.keptEnd = pos;
    if (header & 1) {
      out.complete = true;
      out.proven = k + 1 === nBlocks;
      return out;
    }
    if (k + 1 >= nBlocks) {
      out.complete = true; // more blocks than the content size allows: not ours to cut
      return out;
    }
  }
}

/**
 * How far into `bytes` (a zstd frame or its first bytes) the blocks holding the first `want`
 * content bytes reach: {end, complete}, end -1 when `bytes` stops before them; null when the
 * frame cannot be cut there (zstdPrefixFrame would return null for the whole frame).
 */
export function zstdPrefixEnd(bytes, want) {
  const w = walk(bytes, want);
  if (!w || (w.complete && !w.proven)) return null;
  return { end: w.keptEnd, complete: w.complete };
}

/**
 * A zstd frame whose content is the first `size` bytes of `bytes`' content, for the smallest
 * `size` that is a whole number of blocks and at least `want`: {frame, size}; null when the
 * frame's headers do not prove where its blocks' contents start, or when the cut would hold the
 * whole content anyway. `bytes` may be only the first bytes of the frame (a range read that
 * reaches past the blocks needed): the blocks past them are then unseen, so nothing proves each
 * kept block holds Block_Maximum_Size bytes, and the caller's check that the cut frame decodes to
 * exactly `size` bytes is the proof (codecs.js). `bytes` is not modified.
 */
export function zstdPrefixFrame(bytes, want) {
  const w = walk(bytes, want);
  if (!w || w.keptEnd < 0 || (w.complete && !w.proven)) return null;
  const { first, keptEnd, lastHeader, keep, blockMax } = w;
  const size = keep * blockMax;
  // Single_Segment_flag set, Frame_Content_Size_flag 2 (4 bytes), no checksum, no dictionary.
  const head = 4 + 1 + 4;
  const frame = new Uint8Array(head + (keptEnd - first));
  const out = new DataView(frame.buffer);
  out.setUint32(0, ZSTD_MAGIC, true);
  frame[4] = (2 << 6) | (1 << 5);
  out.setUint32(5, size, true);
  frame.set(bytes.subarray(first, keptEnd), head);
  frame[head + (lastHeader - first)] |= 1; // the kept block that ends the cut frame is its last
  return { frame, size };
}

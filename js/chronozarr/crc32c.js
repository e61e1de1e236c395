// CRC-32C (Castagnoli), the checksum of the Zarr v3 `crc32c` codec that ends every shard index
// (spec 7.2). Table-driven, one byte at a time: shard indices are 16 * shard_time + 4 bytes, so
// speed is irrelevant and a small, obviously correct implementation wins.

const POLY = 0x82f63b78; // reflected 0x1EDC6F41

const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ POLY : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/**
 * CRC-32C of `bytes` (a Uint8Array) as an unsigned 32-bit integer.
 * @param {Uint8Array} bytes
 * @param {number} [crc] the CRC so far, to continue it
 * @returns {number}
 */
export function crc32c(bytes, crc = 0) {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

// FNV-1a digest of every cell-timestep of level 0 of a store, in (t, row, col) order, over the
// cells' raw bytes. The browser test computes it with the reader in a page and in a Worker and
// compares it with the same digest of the Python reader's answers computed in Node.

export function fnv1a(bytes, h = 0x811c9dc5) {
  for (let i = 0; i < bytes.length; i++) {
    h ^= bytes[i];
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export function viewBytes(a) {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** Digest the store at `url` with the reader module `cz` (decoder.js or its bundle). */
export async function digestStore(cz, url) {
  const store = await cz.openStore(url);
  const L = store.levels[0];
  let h = 0x811c9dc5;
  let cells = 0;
  for (let t = 0; t < store.nTime; t++) {
    for (let r = 0; r < L.grid[0]; r++) {
      for (let c = 0; c < L.grid[1]; c++) {
        const cell = await store.readCell({ t, level: 0, row: r, col: c });
        h = fnv1a(viewBytes(cell.data), h);
        cells++;
      }
    }
  }
  return { digest: h, cells, dtype: store.dtype };
}

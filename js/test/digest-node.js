// The digest of test/digest.js computed in Node from the Python reader's answers.

import { fnv1a, viewBytes } from "./digest.js";
import { cellOf } from "./fixtures.js";

const TYPED = { uint8: Uint8Array, uint16: Uint16Array, int16: Int16Array, float32: Float32Array };

export function digestOfExpected(entry, expected) {
  const [nt, nb, h, w] = entry.levels[0].shape;
  const [rows, cols] = entry.levels[0].grid;
  const cs = entry.case.cs;
  const T = TYPED[entry.dtype];
  let digest = 0x811c9dc5;
  let cells = 0;
  for (let t = 0; t < nt; t++) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        digest = fnv1a(viewBytes(cellOf(expected[0][t].data, nb, h, w, cs, r, c, T)), digest);
        cells++;
      }
    }
  }
  return { digest, cells };
}

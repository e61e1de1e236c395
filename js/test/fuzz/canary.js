// A deliberately broken "reader" for the harness's own test (fuzz.test.js): on the base stores it
// is the real reader, on a mutated store it misbehaves as CZ_FUZZ_CANARY says (escape, untyped,
// memory, hang), so the test can check that the harness classes each misbehaviour as bad.

import * as real from "../../chronozarr/decoder.js";

export const { ChronozarrError } = real;

export async function openStore(url, options) {
  const mode = process.env.CZ_FUZZ_CANARY;
  if (url.includes("/bases/") || !mode) return real.openStore(url, options);
  if (mode === "escape") {
    // what main did with a level path "../secret/0": a request beside the store, straight to fetch
    await fetch(new URL("../secret/zarr.json", url));
    return real.openStore(url, options);
  }
  if (mode === "untyped") return null.levels; // a TypeError from deep inside
  if (mode === "memory") {
    const hold = [];
    for (;;) {
      hold.push(new Uint8Array(64 << 20).fill(1)); // what a bomb decoded in full does
      await new Promise((r) => setTimeout(r, 5));
    }
  }
  if (mode === "hang") return new Promise(() => setInterval(() => {}, 1000));
  throw new Error(`unknown CZ_FUZZ_CANARY ${mode}`);
}

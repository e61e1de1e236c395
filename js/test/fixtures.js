// Test stores written by the Python writer (make_fixtures.py), and the Python reader's answers.
//
// `npm test` (test/run.js) generates them once into a temporary folder and passes it to every
// test file as CHRONOZARR_FIXTURES; a test file run alone generates its own and removes it at
// exit. Nothing is written inside the repository.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";
import { startServer } from "./server.js";

export const HERE = path.dirname(fileURLToPath(import.meta.url));
export const JS_DIR = path.resolve(HERE, "..");
export const REPO = path.resolve(JS_DIR, "..");

/** ../.venv/bin/python when the repo has a venv, else python3 on PATH. */
export function python() {
  const venv = path.join(REPO, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

/** Run make_fixtures.py into `dir`; throws with the script's output when it fails. */
export function generateFixtures(dir) {
  const res = spawnSync(python(), [path.join(HERE, "make_fixtures.py"), dir], {
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  if (res.status !== 0) {
    throw new Error(
      `make_fixtures.py failed (${python()}, exit ${res.status}):\n${res.stdout}\n${res.stderr}${res.error ? `\n${res.error}` : ""}`,
    );
  }
  return res.stdout.trim();
}

let cached = null;

/** {dir, manifest}: the shared fixtures, generating them on first use when run standalone. */
export function fixtures() {
  if (cached) return cached;
  let dir = process.env.CHRONOZARR_FIXTURES;
  if (!dir) {
    dir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-js-"));
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
    generateFixtures(dir);
  }
  const manifest = JSON.parse(readFileSync(path.join(dir, "manifest.json"), "utf8"));
  cached = { dir, manifest };
  return cached;
}

/**
 * The fixture stores served over HTTP on 127.0.0.1 for the test file that calls this at its top
 * level: node:test hooks start one server before the file's tests and stop it after them.
 * Returns {dir, manifest, server}; server.url is the server's once the hooks have run.
 */
export function servedFixtures() {
  const { dir, manifest } = fixtures();
  let running = null;
  before(async () => {
    running = await startServer({ mounts: { "/": dir } });
  });
  after(async () => {
    await running?.close();
  });
  return {
    dir,
    manifest,
    server: {
      get url() {
        return running.url;
      },
    },
  };
}

const TYPED = { uint8: Uint8Array, uint16: Uint16Array, int16: Int16Array, float32: Float32Array };

/**
 * The Python reader's answers for one store, as typed-array views:
 * expected[level][t] = {data (band*H*W), mask?, coverage?, valid (band*H*W)}.
 */
export function loadExpected(dir, entry) {
  const buf = readFileSync(path.join(dir, entry.expected));
  const T = TYPED[entry.dtype];
  const out = [];
  let off = 0;
  const take = (Ctor, n) => {
    const bytes = buf.subarray(off, off + n * Ctor.BYTES_PER_ELEMENT);
    off += bytes.length;
    const copy = new Uint8Array(bytes); // aligned copy
    return new Ctor(copy.buffer, 0, n);
  };
  for (const level of entry.levels) {
    const [nt, nb, h, w] = level.shape;
    const perLevel = [];
    for (let t = 0; t < nt; t++) {
      const data = take(T, nb * h * w);
      const mask = entry.has_mask ? take(Uint8Array, h * w) : null;
      const coverage = entry.has_coverage ? take(Uint8Array, h * w) : null;
      const valid = take(Uint8Array, nb * h * w);
      perLevel.push({ data, mask, coverage, valid });
    }
    out.push(perLevel);
  }
  if (off !== buf.length) throw new Error(`${entry.expected}: ${buf.length - off} bytes left over (layout mismatch)`);
  return out;
}

/** Cut cell (row, col) of cs out of a (bands, H, W) array: what readCell must return. */
export function cellOf(full, nb, h, w, cs, row, col, T) {
  const y0 = row * cs;
  const x0 = col * cs;
  const ch = Math.min(cs, h - y0);
  const cw = Math.min(cs, w - x0);
  const out = new T(nb * ch * cw);
  let o = 0;
  for (let b = 0; b < nb; b++) {
    for (let y = 0; y < ch; y++) {
      const s = b * h * w + (y0 + y) * w + x0;
      out.set(full.subarray(s, s + cw), o);
      o += cw;
    }
  }
  return out;
}

/** Byte-for-byte equality of two typed arrays (NaN-safe, -0 distinct). */
export function sameBytes(a, b) {
  if (a.byteLength !== b.byteLength) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  for (let i = 0; i < x.length; i++) if (x[i] !== y[i]) return false;
  return true;
}

export function fileSize(p) {
  return statSync(p).size;
}

/** A fetch that records every request: {url, method, range}. */
export function countingFetch(inner = globalThis.fetch) {
  const log = [];
  const f = (url, init = {}) => {
    const headers = init.headers ?? {};
    log.push({ url: String(url), method: init.method ?? "GET", range: headers.Range ?? headers.range ?? null });
    return inner(url, init);
  };
  f.log = log;
  return f;
}

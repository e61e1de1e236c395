// What the browser benchmarks share in reporting (viewer.mjs, first_frame_nodevtools.mjs, run.mjs,
// adapter.mjs): the median of a run's figures, and writing a benchmark's section into the
// notebook, docs/benchmarks-archive.md, in place (the headline table, docs/benchmarks.md, is
// edited by hand).
//
// - median(xs): the middle value (the mean of the two middle ones for an even count).
// - ratioInterval(xs, peers): the 95 % bootstrap interval of median(xs) / the smallest of the
//   peers' medians (a first frame against the best peer's): the runs of each library resampled
//   with replacement, 2,000 times, with a fixed seed (the same runs give the same interval).
// - pairedInterval(xs, ys): an A/B of runs interleaved one for one (xs[i] and ys[i] taken side
//   by side): the median of ys[i] - xs[i] and its 95 % bootstrap interval, the pairs resampled.
// - writeSection(file, section, { after }): `section` starts with its "## " title; in the section
//   of that title in `file` only the block between the generated-text markers is replaced (the
//   hand-written analysis around it is kept), else the section is inserted after the section
//   titled `after` (when given and present), else appended. One blank line separates sections.

import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** The median of `xs`. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** A seeded uniform [0, 1) generator (mulberry32): a report's interval repeats for the same runs. */
function uniform(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * The 95 % percentile bootstrap interval of `statistic` over `resamples` draws: `statistic` is
 * called with `resample`, which gives a sample of an array's values drawn with replacement.
 * [lo, hi].
 * @param {(resample: (v: number[]) => number[]) => number} statistic
 */
function bootstrap(statistic, { resamples = 2000, seed = 1 } = {}) {
  const next = uniform(seed);
  const resample = (v) => Array.from(v, () => v[Math.floor(next() * v.length)]);
  const draws = Array.from({ length: resamples }, () => statistic(resample)).sort((a, b) => a - b);
  return [draws[Math.floor(0.025 * (resamples - 1))], draws[Math.ceil(0.975 * (resamples - 1))]];
}

/**
 * The 95 % percentile bootstrap interval of median(xs) / min over `peers` of median(peer): each
 * library's runs resampled with replacement. [lo, hi].
 * @param {number[]} xs
 * @param {number[][]} peers
 */
export function ratioInterval(xs, peers, options = {}) {
  return bootstrap((resample) => median(resample(xs)) / Math.min(...peers.map((p) => median(resample(p)))), options);
}

/**
 * The median of the paired differences ys[i] - xs[i] (runs taken side by side, so a slow stretch
 * of the machine falls on both) and its 95 % percentile bootstrap interval: {median, lo, hi}.
 * @param {number[]} xs
 * @param {number[]} ys
 */
export function pairedInterval(xs, ys, options = {}) {
  const diffs = Array.from({ length: Math.min(xs.length, ys.length) }, (_, i) => ys[i] - xs[i]);
  const [lo, hi] = bootstrap((resample) => median(resample(diffs)), options);
  return { median: median(diffs), lo, hi };
}

export const GENERATED_BEGIN = "<!-- written by the benchmark script: begin -->";
export const GENERATED_END = "<!-- written by the benchmark script: end -->";

/**
 * Write `section`, which begins with its "## " title line, into the Markdown `file`. Only the
 * block between the section's GENERATED_BEGIN / GENERATED_END markers is the script's and is
 * replaced; the hand-written analysis around it is kept. A section written before the markers
 * existed keeps its whole old text below the new block: a run never loses what a person wrote.
 */
export function writeSection(file, section, { after = null } = {}) {
  let doc = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n\n";
  const text = section.replace(/\s*$/, "\n");
  const title = text.slice(0, text.indexOf("\n"));
  const block = `${GENERATED_BEGIN}\n${text.slice(title.length + 1).trim()}\n${GENERATED_END}`;
  const body = `${title}\n\n${block}\n`;
  const start = doc.indexOf(`${title}\n`);
  const nextAfter = (from) => doc.indexOf("\n## ", from + 1);
  if (start >= 0) {
    const next = nextAfter(start);
    const stop = next >= 0 ? next + 1 : doc.length;
    const old = doc.slice(start, stop);
    const [b, e] = [old.indexOf(GENERATED_BEGIN), old.indexOf(GENERATED_END)];
    const kept = old.slice(title.length + 1).trim();
    const replaced =
      b >= 0 && e > b
        ? `${old.slice(0, b)}${block}${old.slice(e + GENERATED_END.length)}`.replace(/\s*$/, "\n")
        : `${body}${kept ? `\n${kept}\n` : ""}`;
    doc = doc.slice(0, start) + replaced + (next >= 0 ? `\n${doc.slice(next + 1)}` : "");
  } else {
    const anchor = after === null ? -1 : doc.indexOf(`${after}\n`);
    const next = anchor >= 0 ? nextAfter(anchor) : -1;
    doc = next >= 0 ? `${doc.slice(0, next + 1)}${body}\n${doc.slice(next + 1)}` : `${doc.replace(/\s*$/, "\n\n")}${body}`;
  }
  writeFileSync(file, doc);
  console.error(
    `wrote the section ${JSON.stringify(title.slice(3))} of ${file};` +
      " if it holds a headline figure, update its row in docs/benchmarks.md",
  );
}

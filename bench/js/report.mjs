// What the browser benchmarks share in reporting (viewer.mjs, first_frame_nodevtools.mjs, run.mjs,
// adapter.mjs): the median of a run's figures, and writing a benchmark's section into the
// notebook, docs/benchmarks-archive.md, in place (the headline table, docs/benchmarks.md, is
// edited by hand).
//
// - median(xs): the middle value (the mean of the two middle ones for an even count).
// - writeSection(file, section, { after }): `section` starts with its "## " title; the section of
//   that title in `file` is replaced, else it is inserted after the section titled `after` (when
//   given and present), else appended. One blank line separates it from the next section.

import { existsSync, readFileSync, writeFileSync } from "node:fs";

/** The median of `xs`. */
export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

/** Replace (or insert) `section`, which begins with its "## " title line, in the Markdown `file`. */
export function writeSection(file, section, { after = null } = {}) {
  let doc = existsSync(file) ? readFileSync(file, "utf8") : "# Benchmarks\n\n";
  const body = section.replace(/\s*$/, "\n");
  const title = body.slice(0, body.indexOf("\n"));
  const start = doc.indexOf(`${title}\n`);
  const nextAfter = (from) => doc.indexOf("\n## ", from + 1);
  if (start >= 0) {
    const next = nextAfter(start);
    doc = doc.slice(0, start) + body + (next >= 0 ? `\n${doc.slice(next + 1)}` : "");
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

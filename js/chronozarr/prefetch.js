// Prefetch planning (spec 10: anchors first, then deltas; most volatile cells first) and the
// bounded-concurrency pool that runs reads. Pure planning plus one scheduling helper; the
// chunk reads themselves are chunks.js.

import { abortError } from "./abort.js";

/** Run `task(item, i)` over `items` with at most `limit` in flight; stops at the first failure. */
export async function pool(items, limit, task, signal) {
  let next = 0;
  let failed = null;
  const worker = async () => {
    while (next < items.length && !failed) {
      if (signal?.aborted) throw abortError(signal);
      const i = next++;
      try {
        await task(items[i], i);
      } catch (err) {
        failed = failed ?? err;
        throw err;
      }
    }
  };
  const workers = [];
  for (let k = 0; k < Math.max(1, Math.min(limit, items.length)); k++) workers.push(worker());
  const results = await Promise.allSettled(workers);
  if (failed) throw failed;
  const bad = results.find((r) => r.status === "rejected");
  if (bad) throw bad.reason;
}

/** Timesteps 0..nTime-1, anchors first, each group in time order (so deltas find anchors resident). */
export function anchorsFirst(nTime, temporal) {
  return [...Array(nTime).keys()].sort((a, b) => temporal.isAnchor(b) - temporal.isAnchor(a) || a - b);
}

/**
 * Volatility score of a level-k cell (spec 5): the max over the level-0 cells it covers of the
 * volatility array {rows, cols, data}.
 */
export function cellVolatility(vol, level, cell) {
  const f = 2 ** level;
  let best = 0;
  for (let r = cell.row * f; r < Math.min(vol.rows, (cell.row + 1) * f); r++) {
    for (let q = cell.col * f; q < Math.min(vol.cols, (cell.col + 1) * f); q++) best = Math.max(best, vol.data[r * vol.cols + q]);
  }
  return best;
}

/**
 * The tasks of a prefetch, in order: for the timesteps `times` (priority order), every anchor
 * they reference (a true timestep is its own anchor), for every cell of `cells` (already in
 * priority order); then, with `deltas`, every delta timestep for every cell.
 * Returns [{kind: "anchor" | "delta", t, row, col, ...cell}].
 */
export function planPrefetch(temporal, times, cells, deltas) {
  const anchorOrder = [];
  const seen = new Set();
  for (const t of times) {
    const a = temporal.reference(t) ?? t;
    if (!seen.has(a)) {
      seen.add(a);
      anchorOrder.push(a);
    }
  }
  const tasks = [];
  for (const a of anchorOrder) for (const c of cells) tasks.push({ kind: "anchor", t: a, ...c });
  if (deltas) {
    for (const t of times) {
      if (temporal.reference(t) === null) continue;
      for (const c of cells) tasks.push({ kind: "delta", t, ...c });
    }
  }
  return tasks;
}

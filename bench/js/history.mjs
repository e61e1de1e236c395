// One pixel's whole history with the JS reader (store.series, what the viewer's click chart
// calls), cold, through nginx behind the 80 ms delay proxy the browser benches use: requests,
// bytes and time until the series is in hand, with the time-series companion (docs/spec.md C25)
// and without it (every timestep's chunks, 6 in flight), in the same run. Node's fetch, not
// Chromium: the reader's own concurrency (6) bounds the requests in flight either way.
//
//   node bench/js/history.mjs STORES_DIR [--rtt 80] [--reps 3] [--stores none,T12-B16,T240-B16]
//
// STORES_DIR holds the stores bench/bench_history.py leaves with --out (120 months, 4 bands).

import path from "node:path";
import { openStore } from "../../js/chronozarr/decoder.js";
import { startDelayProxy } from "./delay_proxy.mjs";
import { startNginx } from "./servers.mjs";

const args = process.argv.slice(2);
const root = path.resolve(args[0]);
const opt = (name, d) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : d;
};
const rtt = Number(opt("rtt", 80));
const reps = Number(opt("reps", 3));
const names = opt("stores", "none,T12-B16,T240-B16").split(",");

const nginx = await startNginx(root, { accessLog: false });
const proxy = await startDelayProxy(nginx.port, rtt);
const rows = [];
try {
  for (const name of names) {
    for (let r = 0; r < reps; r++) {
      const store = await openStore(`${proxy.url}/${name}/`);
      const h = store.levels[0].height;
      const w = store.levels[0].width;
      const req0 = store.stats.requests;
      const bytes0 = store.stats.bytes;
      const t0 = performance.now();
      const s = await store.series({ row: Math.floor(h / 2) + 3 + r, col: Math.floor(w / 2) + 5 });
      const ms = performance.now() - t0;
      rows.push({
        name,
        rep: r,
        source: s.source,
        requests: store.stats.requests - req0,
        bytes: store.stats.bytes - bytes0,
        ms: Math.round(ms),
      });
      console.log(JSON.stringify(rows.at(-1)));
    }
  }
} finally {
  await proxy.close();
  nginx.stop();
}

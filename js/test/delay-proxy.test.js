// The benchmarks' simulated link (bench/js/delay_proxy.mjs) charges what it says: one round trip
// per request and one more per new TCP connection (decision 0028: it once charged nothing for
// connections, and every first-frame figure understated the GETs that opened one).

import assert from "node:assert/strict";
import http from "node:http";
import path from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath, pathToFileURL } from "node:url";

const BENCH = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "bench", "js");
const RTT = 120;
let origin;
let proxy;

before(async () => {
  const { startDelayProxy } = await import(pathToFileURL(path.join(BENCH, "delay_proxy.mjs")).href);
  origin = http.createServer((req, res) => res.end("ok"));
  await new Promise((r) => origin.listen(0, "127.0.0.1", r));
  proxy = await startDelayProxy(origin.address().port, RTT);
});
after(async () => {
  await proxy?.close();
  await new Promise((r) => origin?.close(r));
});

/** GET `url` with `agent`; resolves the milliseconds to the response's end. */
function timedGet(url, agent) {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent }, (res) => {
        res.resume();
        res.on("end", () => resolve(performance.now() - t0));
      })
      .on("error", reject);
  });
}

test("a request on a new connection costs two round trips, on a kept-alive one one", async () => {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    const fresh = await timedGet(`${proxy.url}/a`, agent);
    const reused = await timedGet(`${proxy.url}/b`, agent);
    assert.ok(fresh >= 2 * RTT - 5, `new connection: ${fresh.toFixed(0)} ms, expected at least ${2 * RTT}`);
    assert.ok(reused >= RTT - 5 && reused < 2 * RTT - 20, `kept-alive connection: ${reused.toFixed(0)} ms, expected ${RTT} to ${2 * RTT}`);
  } finally {
    agent.destroy();
  }
});

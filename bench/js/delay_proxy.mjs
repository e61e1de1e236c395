// The simulated link of the browser benchmarks: an HTTP/1.1 proxy on 127.0.0.1 that adds `rtt` ms
// to every request (the request waits RTT before it is forwarded) and to every new TCP connection
// (the handshake), so HTTP/1.1 with Chromium's 6 connections per host behaves as over a real link.
//
// startDelayProxy(targetPort, rtt) runs it in a process of its own, at a higher scheduling
// priority than the browser where this process may raise it (root): the proxy and nginx stand for
// the network and a remote server, which on a real link do not share the browser's two cores, so
// the browser's own CPU work must not delay them. Returns { url, close }.
//
//   node delay_proxy.mjs TARGET_PORT RTT   (prints the port it listens on, then serves)

import { spawn } from "node:child_process";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import { fileURLToPath } from "node:url";

/** Serve the delay proxy in this process; resolves the port it listens on. */
function serve(targetPort, rtt) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 });
  const server = http.createServer((req, res) => {
    const t0 = performance.now();
    if (process.env.CZ_PROXY_LOG) res.on("finish", () => console.error(`proxy ${t0.toFixed(0)} +${(performance.now() - t0).toFixed(0)} ${req.url}`));
    setTimeout(() => {
      const up = http.request({ host: "127.0.0.1", port: targetPort, method: req.method, path: req.url, headers: req.headers, agent }, (r) => {
        res.writeHead(r.statusCode, r.headers);
        r.pipe(res);
      });
      up.on("error", () => res.destroy());
      req.pipe(up);
    }, rtt);
  });
  // The TCP handshake costs one round trip: a connection is handed to the HTTP server (which
  // reads its first request) RTT after it was accepted. (Pausing the socket inside the HTTP
  // server does not hold its parser back: Node's server reads the socket's handle directly.)
  const accept = net.createServer({ pauseOnConnect: true }, (socket) => {
    setTimeout(() => {
      server.emit("connection", socket);
      socket.resume();
    }, rtt);
  });
  return new Promise((r) => accept.listen(0, "127.0.0.1", () => r(accept.address().port)));
}

/** Raise `pid`'s scheduling priority (a remote machine's work is not the browser's); a no-op when not permitted. */
function prioritize(pid) {
  try {
    os.setPriority(pid, -10);
  } catch {
    // not root: the proxy shares the cores at the browser's priority (figures are noisier)
  }
}

/** The delay proxy in a child process, in front of 127.0.0.1:`targetPort`. */
export async function startDelayProxy(targetPort, rtt) {
  const proc = spawn(process.execPath, [fileURLToPath(import.meta.url), String(targetPort), String(rtt)], { stdio: ["ignore", "pipe", "inherit"] });
  process.on("exit", () => proc.kill("SIGTERM")); // never leave it behind
  prioritize(proc.pid);
  const port = await new Promise((resolve, reject) => {
    let out = "";
    proc.stdout.on("data", (d) => {
      out += d;
      if (out.includes("\n")) resolve(Number(out.trim()));
    });
    proc.on("exit", (code) => reject(new Error(`delay proxy exited (${code})`)));
  });
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((r) => { proc.once("exit", r); proc.kill("SIGTERM"); }),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const port = await serve(Number(process.argv[2]), Number(process.argv[3]));
  process.stdout.write(`${port}\n`);
}

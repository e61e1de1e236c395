// The servers the browser benchmarks start on 127.0.0.1 (viewer.mjs, viewer_nodevtools.mjs,
// viewer_frame_costs.mjs), in one place so that they serve alike:
//
// - freePort(): a TCP port free on 127.0.0.1 at the time of the call.
// - startNginx(root, { accessLog, priority }): nginx serving `root` on a free port with the CORS
//   and no-cache headers of docs/hosting.md, keep-alive on; `priority: true` runs its worker at a
//   higher scheduling priority than the browser (when root: it stands for a remote server, which
//   does not share the browser's cores); returns { url, port, dir, stop }. The
//   process is killed when this process exits (never left behind); `dir` holds its config and
//   logs (the caller removes it).
// - startStaticServer(root): a small Node static file server (whole files, no Range), for
//   stores that are unsharded; returns { url, close }.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";

/** A TCP port free on 127.0.0.1 at the time of the call. */
export const freePort = () =>
  new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

/** Resolves true once `port` on 127.0.0.1 accepts a connection (up to 5 s), false otherwise. */
async function waitForPort(port) {
  for (let i = 0; i < 100; i++) {
    const ok = await new Promise((r) => {
      const s = net.connect(port, "127.0.0.1", () => (s.end(), r(true)));
      s.on("error", () => r(false));
    });
    if (ok) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** nginx serving `root` on 127.0.0.1 (a free port); `accessLog: false` logs no request. */
export async function startNginx(root, { accessLog = true, priority = false } = {}) {
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-nginx-"));
  const conf = path.join(dir, "nginx.conf");
  writeFileSync(
    conf,
    `worker_processes 1; daemon off; ${priority && process.getuid?.() === 0 ? "worker_priority -10;" : ""} pid ${dir}/nginx.pid; error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  types { text/html html; text/javascript js mjs; text/css css; application/json json; application/wasm wasm; }
  default_type application/octet-stream;
  access_log ${accessLog ? `${dir}/access.log` : "off"}; client_body_temp_path ${dir}; proxy_temp_path ${dir}; fastcgi_temp_path ${dir}; uwsgi_temp_path ${dir}; scgi_temp_path ${dir};
  sendfile on; keepalive_timeout 65; etag on;
  server { listen 127.0.0.1:${port}; root ${root};
    location / { add_header Access-Control-Allow-Origin * always; add_header Cache-Control "no-cache" always; } }
}
`,
  );
  const proc = spawn("nginx", ["-p", dir, "-c", conf], { stdio: ["ignore", "ignore", "pipe"] });
  process.on("exit", () => proc.kill("SIGTERM")); // never leave nginx behind
  if (!(await waitForPort(port))) {
    proc.kill("SIGTERM");
    throw new Error(`nginx did not start on 127.0.0.1:${port} (see ${dir}/error.log)`);
  }
  return { url: `http://127.0.0.1:${port}`, port, dir, stop: () => proc.kill("SIGTERM") };
}

const TYPES = { ".html": "text/html", ".js": "text/javascript", ".mjs": "text/javascript", ".css": "text/css", ".json": "application/json", ".wasm": "application/wasm" };

/** A Node static file server of `root` on 127.0.0.1 (a free port): whole files, 404 otherwise. */
export async function startStaticServer(root) {
  const server = http.createServer((req, res) => {
    const file = path.join(root, decodeURIComponent(new URL(req.url, "http://x").pathname));
    if (!file.startsWith(root) || !existsSync(file) || statSync(file).isDirectory()) {
      res.writeHead(404);
      return res.end();
    }
    res.writeHead(200, { "content-type": TYPES[path.extname(file)] ?? "application/octet-stream" });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }),
  };
}

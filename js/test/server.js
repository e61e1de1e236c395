// A tiny static file server for the tests and the benchmark, with full HTTP Range support
// (bounded "a-b", open "a-", suffix "-n", several ranges as multipart/byteranges, 416 when
// unsatisfiable), HEAD, CORS (so a page on another origin may read stores) and a request log.
// `python -m http.server` ignores Range, which breaks sharded reads; this one does not.
//
//   node test/server.js [root] [port]      serve a folder on 127.0.0.1 (default: the repo root)

import { createReadStream, promises as fsp } from "node:fs";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".map": "application/json",
  ".png": "image/png",
  ".svg": "image/svg+xml",
  ".wasm": "application/wasm",
  ".ico": "image/x-icon",
};

/** Parse a Range header against a size: [[start, end], ...], null (ignore), or "unsatisfiable". */
export function parseRange(header, size) {
  const m = /^bytes=(.+)$/.exec(header.trim());
  if (!m) return null;
  const out = [];
  for (const part of m[1].split(",")) {
    const p = /^\s*(\d*)-(\d*)\s*$/.exec(part);
    if (!p || (p[1] === "" && p[2] === "")) return null;
    let start;
    let end;
    if (p[1] === "") {
      const n = Number(p[2]);
      if (n === 0) continue;
      start = Math.max(0, size - n);
      end = size - 1;
    } else {
      start = Number(p[1]);
      end = p[2] === "" ? size - 1 : Math.min(Number(p[2]), size - 1);
      if (p[2] !== "" && Number(p[2]) < start) return null;
    }
    if (start >= size) continue;
    out.push([start, end]);
  }
  return out.length ? out : "unsatisfiable";
}

/**
 * Start a server. mounts: {"/url/prefix/": "/dir"} (longest prefix wins). Returns
 * {url, port, log, close()}; `log` receives {method, path, range, status} per request.
 */
export async function startServer({ mounts, port = 0, host = "127.0.0.1", onRequest } = {}) {
  const entries = Object.entries(mounts).sort((a, b) => b[0].length - a[0].length);
  const log = [];
  const server = http.createServer(async (req, res) => {
    const u = new URL(req.url, "http://x");
    const entry = { method: req.method, path: decodeURIComponent(u.pathname), range: req.headers.range ?? null, status: 0 };
    log.push(entry);
    onRequest?.(entry);
    res.setHeader("Access-Control-Allow-Origin", "*");
    res.setHeader("Access-Control-Expose-Headers", "Content-Length, Content-Range, Accept-Ranges, ETag");
    res.setHeader("Timing-Allow-Origin", "*");
    const send = (status, body = "", headers = {}) => {
      entry.status = status;
      res.writeHead(status, headers);
      res.end(req.method === "HEAD" ? undefined : body);
    };
    if (req.method === "OPTIONS") {
      return send(204, "", {
        "Access-Control-Allow-Methods": "GET, HEAD, OPTIONS",
        "Access-Control-Allow-Headers": "Range, Content-Type",
        "Access-Control-Max-Age": "600",
      });
    }
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, "method not allowed");
    const hit = entries.find(([prefix]) => entry.path.startsWith(prefix) || `${entry.path}/` === prefix);
    if (!hit) return send(404, "not found");
    const [prefix, dir] = hit;
    const rel = entry.path.slice(prefix.length);
    let file = path.resolve(dir, `./${rel}`);
    if (!file.startsWith(path.resolve(dir))) return send(403, "forbidden");
    let stat;
    try {
      stat = await fsp.stat(file);
      if (stat.isDirectory()) {
        file = path.join(file, "index.html");
        stat = await fsp.stat(file);
      }
    } catch {
      return send(404, "not found");
    }
    const size = stat.size;
    const type = TYPES[path.extname(file)] ?? "application/octet-stream";
    const base = {
      "Accept-Ranges": "bytes",
      "Last-Modified": stat.mtime.toUTCString(),
      ETag: `"${size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`,
      "Cache-Control": "no-cache",
    };
    const ranges = req.headers.range ? parseRange(req.headers.range, size) : null;
    if (ranges === "unsatisfiable") return send(416, "", { ...base, "Content-Range": `bytes */${size}` });
    const stream = (start, end) => createReadStream(file, { start, end });
    if (!ranges) {
      entry.status = 200;
      res.writeHead(200, { ...base, "Content-Type": type, "Content-Length": size });
      if (req.method === "HEAD" || size === 0) return res.end();
      return stream(0, size - 1).pipe(res);
    }
    if (ranges.length === 1) {
      const [start, end] = ranges[0];
      entry.status = 206;
      res.writeHead(206, {
        ...base,
        "Content-Type": type,
        "Content-Length": end - start + 1,
        "Content-Range": `bytes ${start}-${end}/${size}`,
      });
      if (req.method === "HEAD") return res.end();
      return stream(start, end).pipe(res);
    }
    const boundary = `cz${Math.random().toString(16).slice(2)}`;
    const parts = [];
    for (const [start, end] of ranges) {
      const head = Buffer.from(`--${boundary}\r\nContent-Type: ${type}\r\nContent-Range: bytes ${start}-${end}/${size}\r\n\r\n`);
      const fh = await fsp.open(file);
      const body = Buffer.alloc(end - start + 1);
      await fh.read(body, 0, body.length, start);
      await fh.close();
      parts.push(head, body, Buffer.from("\r\n"));
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    const body = Buffer.concat(parts);
    send(206, body, {
      ...base,
      "Content-Type": `multipart/byteranges; boundary=${boundary}`,
      "Content-Length": body.length,
    });
  });
  server.keepAliveTimeout = 2000;
  await new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, resolve);
  });
  const actual = server.address().port;
  return {
    url: `http://${host}:${actual}`,
    port: actual,
    log,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root = path.resolve(process.argv[2] ?? path.join(here, "..", ".."));
  const srv = await startServer({ mounts: { "/": root }, port: Number(process.argv[3] ?? 8000) });
  console.log(`serving ${root} at ${srv.url}/ (Range, HEAD, CORS); Ctrl-C to stop`);
}

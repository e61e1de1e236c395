// The store root's GET, the page's first script (decision 0069): js/tools/build-viewer.mjs bundles
// this file and writes it inline right after the config block, before early.js's bundle. That
// bundle carries the chunk fetcher's and the decoder's bundles as strings (decision 0066), and
// reading and running it before its own root GET cost the first frame's request chain 9-21 ms
// (traced cold loads); this script is small. early.js takes the response as its root GET when
// the URL is the one it would GET (`rootGet`), and GETs the root itself otherwise.
//
// It also warms the connections the first view's chunks take (`?warm=0` does not): the chunks
// are named once the root has parsed, one round trip after this GET, and three of the four of a
// fitted view each opened a connection of their own then, a round trip for the handshake before
// their own GET. A HEAD of the root on WARM_CONNECTIONS connections, sent now with no cache, opens
// them while the root is in flight. With the root's and the bundle's connections that is
// HTTP/1.1's 6 per host: a chunk named before the HEADs are answered waits for one of these
// (it was sent a round trip earlier than a connection opened then) rather than opening another.

import { resolveStoreUrl } from "../../js/chronozarr/http.js";
import { joinUrl } from "../../js/chronozarr/names.js";

/** Connections opened for the first view's chunks beside the root's and the bundle's (6 in all). */
const WARM_CONNECTIONS = 4;

function rootGet() {
  const c = window.CHRONOZARR_VIEWER || (window.CHRONOZARR_VIEWER = {});
  const q = new URLSearchParams(location.search);
  const store = q.get("store") || c.store;
  if (!store) return;
  try {
    const { base, query } = resolveStoreUrl(store, "viewer");
    const url = joinUrl(base, "zarr.json", query);
    const response = fetch(url, /** @type {RequestInit} */ ({ priority: "high" }));
    response.catch(() => {}); // (the reader reports a failure, as its own)
    c.rootGet = { url, response };
    const warm = q.get("warm") ?? (c.warm === undefined ? null : String(c.warm));
    if (warm === "0") return;
    for (let i = 0; i < WARM_CONNECTIONS; i++) fetch(url, { method: "HEAD", cache: "no-store" }).catch(() => {});
  } catch {
    // (a store URL that does not parse: the reader says so)
  }
}

rootGet();

// The store root's GET, the page's first script (decision 0069): js/tools/build-viewer.mjs bundles
// this file and writes it inline right after the config block, before early.js's bundle. That
// bundle carries the chunk fetcher's and the decoder's bundles as strings (decision 0066), and
// reading and running it before its own root GET took 9-21 ms of the first frame's request chain
// (traced cold loads); this script is small. early.js takes the response as its root GET when
// the URL is the one it would GET (`rootGet`), and GETs the root itself otherwise.

import { resolveStoreUrl } from "../../js/chronozarr/http.js";
import { joinUrl } from "../../js/chronozarr/names.js";

function rootGet() {
  const c = window.CHRONOZARR_VIEWER || (window.CHRONOZARR_VIEWER = {});
  const store = new URLSearchParams(location.search).get("store") || c.store;
  if (!store) return;
  try {
    const { base, query } = resolveStoreUrl(store, "viewer");
    const url = joinUrl(base, "zarr.json", query);
    const response = fetch(url, /** @type {RequestInit} */ ({ priority: "high" }));
    response.catch(() => {}); // (the reader reports a failure, as its own)
    c.rootGet = { url, response };
  } catch {
    // (a store URL that does not parse: the reader says so)
  }
}

rootGet();

// The store root's GET, the page's first script (decision 0069): js/tools/build-viewer.mjs bundles
// this file and writes it inline right after the config block, before early.js's bundle. That
// bundle carries the chunk fetcher's and the decoder's bundles as strings (decision 0066), and
// reading and running it before its own root GET took 9-21 ms of the first frame's request chain
// (traced cold loads); this script is small. early.js takes the response as its root GET when
// the URL is the one it would GET (`rootGet`), and GETs the root itself otherwise.
//
// It also asks for the bundle (viewer.js, a modulepreload), right after the root's GET so the root
// keeps the page's own connection (decision 0071): from early.js, after that script's 125 kB
// were read and run, the bundle's GET left 6-40 ms later in cold loads, and the first frame
// waits on the bundle's arrival, compile and set-up more than on the chunks.

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

/** The bundle, as a modulepreload: it is not in the page's markup, where the preload scanner would GET it before the root. */
function preloadCode() {
  const c = window.CHRONOZARR_VIEWER || (window.CHRONOZARR_VIEWER = {});
  const link = document.createElement("link");
  link.rel = "modulepreload";
  link.href = "viewer.js";
  document.head.appendChild(link);
  c.codePreloaded = true;
}

rootGet();
preloadCode();

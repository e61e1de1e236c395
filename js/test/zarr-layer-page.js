// Bundled by zarr-layer.test.js with esbuild into a page: stock MapLibre GL JS and stock CarbonPlan
// zarr-layer (npm, unmodified), with or without the chronozarr store adapter. window.czMap drives
// it from the test.

import { ZarrLayer } from "@carbonplan/zarr-layer";
import * as maplibregl from "maplibre-gl";
import proj4 from "proj4";
import { chronozarrStore, zarrLayerOptions } from "../chronozarr/store-adapter.js";

const STYLE = {
  version: 8,
  sources: {},
  layers: [{ id: "background", type: "background", paint: { "background-color": "#000000" } }],
};
const GREYS = ["#000000", "#ffffff"];

let map = null;
let layer = null;

// MapLibre 6 runs its worker from a module of its own, served by the test beside the bundle.
maplibregl.setWorkerUrl("/maplibre/maplibre-gl-worker.mjs");

function newMap(center, zoom) {
  const el = document.getElementById("map");
  map = new maplibregl.Map({
    container: el,
    style: STYLE,
    center,
    zoom,
    attributionControl: false,
    fadeDuration: 0,
    canvasContextAttributes: { preserveDrawingBuffer: true, antialias: false },
  });
  return new Promise((resolve, reject) => {
    map.once("load", resolve);
    map.once("error", (e) => reject(e.error ?? e));
  });
}

/** Resolve when the layer has loaded its metadata and every chunk it asked for, and has drawn. */
function settled(state) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (state.error) return reject(state.error);
      if (state.done && map.loaded()) {
        map.once("idle", () => resolve());
        map.triggerRepaint();
        return;
      }
      setTimeout(check, 50);
    };
    check();
  });
}

window.czMap = {
  ready: true,

  /**
   * Open a layer. url: the store; adapter: go through chronozarrStore; options: ZarrLayer
   * options merged over the defaults; view: {center: [lon, lat], zoom}.
   */
  async open({ url, adapter, options = {}, view }) {
    if (layer) map.removeLayer(layer.id);
    layer = null;
    if (!map) await newMap(view.center, view.zoom);
    else map.jumpTo({ center: view.center, zoom: view.zoom });
    const state = { done: false, error: null, sawLoading: false };
    let base = { source: url, variable: "data" };
    let store = null;
    if (adapter) {
      store = await chronozarrStore(url);
      base = zarrLayerOptions(store);
    }
    layer = new ZarrLayer({
      id: "cz",
      colormap: GREYS,
      clim: [0, 6000],
      ...base,
      ...options,
      selector: { ...(base.selector ?? {}), ...(options.selector ?? {}) },
      onLoadingStateChange: (s) => {
        if (s.error) state.error = s.error;
        if (s.loading) state.sawLoading = true;
        if (!s.loading && state.sawLoading) state.done = true;
      },
    });
    map.addLayer(layer);
    await settled(state);
    // queryData answers empty until the layer has picked its level for the view (its own state).
    for (let i = 0; i < 100 && !layer.mode?.activeLevel; i++) await new Promise((r) => setTimeout(r, 50));
    return { adapter: !!adapter, stats: store ? { ...store.stats } : null, proj4: base.proj4 ?? null };
  },

  /** queryData at a point of the store's CRS (projected x, y), through proj4 to lon/lat. */
  async query(def, x, y, selector) {
    const [lon, lat] = proj4(def, "EPSG:4326", [x, y]);
    const res = await layer.queryData({ type: "Point", coordinates: [lon, lat] }, selector);
    return { values: res.data ?? res[Object.keys(res).find((k) => k !== "dimensions" && k !== "coordinates")], dimensions: res.dimensions };
  },

  lonLat(def, x, y) {
    return proj4(def, "EPSG:4326", [x, y]);
  },

  /** Share of the map canvas that is not black (a 2D copy of the WebGL canvas). */
  lit() {
    const src = map.getCanvas();
    const c = document.createElement("canvas");
    c.width = src.width;
    c.height = src.height;
    const ctx = c.getContext("2d");
    ctx.drawImage(src, 0, 0);
    const px = ctx.getImageData(0, 0, c.width, c.height).data;
    let lit = 0;
    for (let i = 0; i < px.length; i += 4) if (px[i] > 8 || px[i + 1] > 8 || px[i + 2] > 8) lit++;
    return lit / (c.width * c.height);
  },
};

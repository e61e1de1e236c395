// The zarr-layer page of bench/js/peers.mjs (bundled by it with esbuild): stock MapLibre GL JS and
// stock CarbonPlan zarr-layer on the store by URL, the array's name and the CRS from the store's
// own proj:code as its proj4 option (zarr-layer 0.5.0 reads no proj: attribute; docs/js.md), one
// band through a greyscale colormap. window.peer: firstFrameAt (the first map render after the
// layer's first load finished), nTime, step(t).
//
//   peer-zarr-layer.html?store=../store.zarr/&proj4=EPSG:32631&center=lon,lat&zoom=z&nt=24

import { ZarrLayer } from "@carbonplan/zarr-layer";
import * as maplibregl from "maplibre-gl";

const params = new URL(location.href).searchParams;
const url = new URL(params.get("store"), location.href).href;
maplibregl.setWorkerUrl(new URL("maplibre-gl-worker.mjs", location.href).href);
const STYLE = { version: 8, sources: {}, layers: [{ id: "bg", type: "background", paint: { "background-color": "#000" } }] };
const map = new maplibregl.Map({
  container: "map",
  style: STYLE,
  center: params.get("center").split(",").map(Number),
  zoom: Number(params.get("zoom")),
  attributionControl: false,
  fadeDuration: 0,
  pixelRatio: 1,
});

const peer = { firstFrameAt: 0, nTime: Number(params.get("nt")), error: null, loading: true };
window.peer = peer;
let seenLoading = false;
const layer = new ZarrLayer({
  id: "zarr",
  source: url,
  variable: "data",
  zarrVersion: 3,
  proj4: params.get("proj4"),
  colormap: ["#000000", "#ffffff"],
  clim: [500, 4500],
  selector: { time: { selected: 0, type: "index" }, band: "B04" },
  onLoadingStateChange: (s) => {
    if (s.error) peer.error = String(s.error);
    if (s.loading) seenLoading = true;
    peer.loading = s.loading;
    if (!s.loading && seenLoading && !peer.firstFrameAt) map.once("render", () => (peer.firstFrameAt = performance.now()));
  },
});
map.on("load", () => map.addLayer(layer));
peer.ready = Promise.resolve();

/** Select timestep t; resolves at the first map render after its chunks are loaded. */
peer.step = async (t) => {
  await layer.setSelector({ time: { selected: t, type: "index" }, band: "B04" });
  await new Promise((r) => setTimeout(r, 0));
  while (peer.loading) await new Promise((r) => setTimeout(r, 2));
  await new Promise((resolve) => {
    map.once("render", () => resolve());
    map.triggerRepaint();
  });
};

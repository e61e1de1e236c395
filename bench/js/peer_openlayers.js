// The OpenLayers page of bench/js/peers.mjs (bundled by it with esbuild): stock `ol`'s GeoZarr
// source on the store by URL with the array's name, nothing else (docs/js.md), in a WebGL tile
// layer with a linear stretch of the band; the page registers proj4 (OpenLayers' rule for a
// projected CRS). window.peer: firstFrameAt (the first render complete with the store's data on
// screen), nTime, step(t) (select timestep t; resolves once it is drawn).
//
//   peer-openlayers.html?store=../store.zarr/

import Map from "ol/Map.js";
import WebGLTileLayer from "ol/layer/WebGLTile.js";
import { register } from "ol/proj/proj4.js";
import GeoZarr from "ol/source/GeoZarr.js";
import proj4 from "proj4";

register(proj4);
const params = new URL(location.href).searchParams;
const url = new URL(params.get("store"), location.href).href;
const source = new GeoZarr({ url, variable: "data" });
const stretch = ["/", ["-", ["band", 1], 500], 4000];
const layer = new WebGLTileLayer({ source, style: { color: ["array", stretch, stretch, stretch, ["band", 2]] } });
const map = new Map({ target: "map", layers: [layer], pixelRatio: 1, view: source.getView() });

const peer = { firstFrameAt: 0, nTime: 0, error: null };
window.peer = peer;

function drawn() {
  if (source.getState() !== "ready") return false;
  const size = map.getSize();
  return !!size && !!layer.getData([size[0] / 2, size[1] / 2]);
}

map.on("rendercomplete", () => {
  if (!peer.firstFrameAt && drawn()) peer.firstFrameAt = performance.now();
});
source.on("change", () => {
  if (source.getState() === "error") peer.error = String(source.getError?.() ?? "source error");
});

peer.ready = source.getDimensions().then((dims) => {
  peer.nTime = dims.time.size;
});

/** Select timestep t; resolves when the map has rendered it. */
peer.step = (t) =>
  new Promise((resolve) => {
    map.once("rendercomplete", () => resolve());
    source.updateDimensions({ time: t });
  });

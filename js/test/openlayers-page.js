// Bundled by openlayers.test.js with esbuild into a page: stock OpenLayers (npm `ol`, its
// `ol/source/GeoZarr`) opening a chronozarr store by URL, with the array's name and nothing
// else (docs/js.md). The page registers proj4 with OpenLayers, as any OpenLayers page does for
// a CRS other than EPSG:4326/3857. window.czOl drives it from the test.

import Map from "ol/Map.js";
import View from "ol/View.js";
import WebGLTileLayer from "ol/layer/WebGLTile.js";
import { fromLonLat } from "ol/proj.js";
import { register } from "ol/proj/proj4.js";
import GeoZarr from "ol/source/GeoZarr.js";
import proj4 from "proj4";

register(proj4);

let map = null;
let layer = null;
let source = null;

function rendered() {
  return new Promise((resolve) => {
    map.once("rendercomplete", () => resolve());
    map.render();
  });
}

window.czOl = {
  ready: true,

  /**
   * Open `url` with GeoZarr({url, variable, ...extra}); view: {lonLat, resolution} in a Web
   * Mercator view (the default of a web map). Resolves with the source's state and projection.
   */
  async open({ url, extra = {}, view }) {
    if (map) map.setTarget(undefined);
    source = new GeoZarr({ url, variable: "data", ...extra });
    layer = new WebGLTileLayer({ source });
    map = new Map({
      target: "map",
      layers: [layer],
      pixelRatio: 1,
      view: new View({ center: fromLonLat(view.lonLat), resolution: view.resolution }),
    });
    await new Promise((resolve, reject) => {
      const check = () => {
        const state = source.getState();
        if (state === "ready") return resolve();
        if (state === "error") return reject(source.getError?.() ?? new Error("source error"));
        setTimeout(check, 20);
      };
      check();
    }).catch((err) => {
      throw new Error(String(err?.message ?? err));
    });
    await rendered();
    const grid = source.getTileGrid();
    return {
      projection: source.getProjection()?.getCode() ?? null,
      resolutions: grid.getResolutions(),
      extent: grid.getExtent(),
    };
  },

  /** Switch the selected time (and band) without rebuilding the source. */
  async select(dims) {
    source.updateDimensions(dims);
    await rendered();
  },

  /** The layer's data at each [lon, lat] (pyproj's), read back through the map's pixel with
   * the view centred there (so that the tiles around it are drawn). */
  async values(lonLats) {
    const out = [];
    for (const ll of lonLats) {
      map.getView().setCenter(fromLonLat(ll));
      await rendered();
      const d = layer.getData(map.getPixelFromCoordinate(fromLonLat(ll)));
      out.push(d ? Array.from(d) : null);
    }
    return out;
  },
};

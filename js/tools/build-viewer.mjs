// `npm run build:viewer`: the viewer as a self-contained static folder, js/dist/viewer/:
//
//   index.html             the page (inline config + early fetch of the store root and the style)
//   viewer.js              one ESM bundle: viewer, chronozarr reader and map layer, zarrita,
//                          numcodecs (its zstd/blosc WASM is inlined), proj4, MapLibre GL JS
//   maplibre-gl-worker.mjs MapLibre's worker, loaded from the bundle's own URL
//   maplibre-gl.css, style.css
//   style.json             the offline basemap: a background and a generated graticule, no tiles
//
// Every path is relative, so the folder works from any URL prefix (`cz share` copies it as is).
// The build is deterministic: no timestamps, no source maps, sorted JSON; same input, same bytes.

import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO = path.resolve(JS, "..");
const SRC = path.join(REPO, "examples", "viewer");
const OUT = path.resolve(process.argv[2] ?? path.join(JS, "dist", "viewer"));
const MAPLIBRE = path.join(JS, "node_modules", "maplibre-gl", "dist");

/** Offline basemap: ocean background and a 10-degree graticule (a line every 10 deg, 1 deg steps). */
export function offlineStyle() {
  const features = [];
  for (let lon = -180; lon <= 180; lon += 10) {
    const coords = [];
    for (let lat = -85; lat <= 85; lat += 1) coords.push([lon, lat]);
    features.push({ type: "Feature", properties: { kind: lon === 0 ? "prime" : "meridian" }, geometry: { type: "LineString", coordinates: coords } });
  }
  for (let lat = -80; lat <= 80; lat += 10) {
    const coords = [];
    for (let lon = -180; lon <= 180; lon += 1) coords.push([lon, lat]);
    features.push({ type: "Feature", properties: { kind: lat === 0 ? "equator" : "parallel" }, geometry: { type: "LineString", coordinates: coords } });
  }
  return {
    version: 8,
    name: "chronozarr offline",
    sources: { graticule: { type: "geojson", data: { type: "FeatureCollection", features } } },
    layers: [
      { id: "background", type: "background", paint: { "background-color": "#0e1a24" } },
      {
        id: "graticule",
        type: "line",
        source: "graticule",
        paint: {
          "line-color": ["match", ["get", "kind"], ["equator", "prime"], "#3d5a70", "#22384a"],
          "line-width": ["match", ["get", "kind"], ["equator", "prime"], 1.2, 0.7],
        },
      },
    ],
  };
}

export async function buildViewer(out = OUT) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [path.join(SRC, "viewer.js")],
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    keepNames: true, // error classes are told apart by name (chronozarr.errors mirrors)
    legalComments: "eof",
    charset: "utf8",
    outfile: path.join(out, "viewer.js"),
    nodePaths: [path.join(JS, "node_modules")], // examples/ has no node_modules of its own
    logLevel: "error",
  });
  copyFileSync(path.join(SRC, "index.html"), path.join(out, "index.html"));
  copyFileSync(path.join(SRC, "style.css"), path.join(out, "style.css"));
  copyFileSync(path.join(MAPLIBRE, "maplibre-gl.css"), path.join(out, "maplibre-gl.css"));
  copyFileSync(path.join(MAPLIBRE, "maplibre-gl-worker.mjs"), path.join(out, "maplibre-gl-worker.mjs"));
  writeFileSync(path.join(out, "style.json"), `${JSON.stringify(offlineStyle())}\n`);
  const files = ["index.html", "viewer.js", "maplibre-gl-worker.mjs", "maplibre-gl.css", "style.css", "style.json"];
  return files.map((f) => ({ file: f, bytes: readFileSync(path.join(out, f)).length }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const files = await buildViewer();
  for (const { file, bytes } of files) console.log(`${String(bytes).padStart(9)}  ${path.relative(process.cwd(), path.join(OUT, file))}`);
}

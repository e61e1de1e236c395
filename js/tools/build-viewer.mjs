// `npm run build:viewer`: the viewer as a self-contained static folder, js/dist/viewer/:
//
//   index.html             the page: inline config, the two stylesheets and the offline style
//                          (as the function below) inlined (no request of their own, so the
//                          store's chunks get the browser's 6 connections per host), and the
//                          early script (examples/viewer/early.js bundled with the reader code it
//                          uses, and its chunk fetcher and decoder Workers' bundles as strings: root, then
//                          the first view's chunks; MapLibre worker), inline as the first script
//   viewer.js              one ESM bundle: viewer, chronozarr reader and map layer, zarrita,
//                          proj4; no WASM codecs (below), no MapLibre (next line)
//   maplibre-gl.js         MapLibre GL JS's own ESM build, imported by viewer.js once the layer
//                          has drawn the first frame (the early script preloads it, low priority)
//   numcodecs-{zstd,blosc,lz4}.js  the WASM codecs, loaded by viewer.js only if the page decodes
//                          on its main thread (no Worker, or an array not in the consolidated
//                          metadata), and blosc / lz4 by the decode workers for a store using them
//   decode-worker.js       the chunk decoder Worker (map/decode-worker.js with zarrita and
//                          zstddec inlined; blosc and lz4 from the sibling files when needed),
//                          for the pool's later decoders; the early script starts its one from
//                          a Blob of the same bundle, written into it (decision 0066)
//   maplibre-gl-worker.mjs MapLibre's worker (the early script fetches it with maplibre-gl.js)
//   style.json             the offline basemap: a background and a generated graticule, no tiles
//
// Every path is relative, so the folder works from any URL prefix (`cz share` copies it as is).
// The build is deterministic: no timestamps, no source maps, sorted JSON; same input, same bytes.

import { build } from "esbuild";
import { copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const JS = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const REPO = path.resolve(JS, "..");
const SRC = path.join(REPO, "examples", "viewer");
const OUT = path.resolve(process.argv[2] ?? path.join(JS, "dist", "viewer"));
const MAPLIBRE = path.join(JS, "node_modules", "maplibre-gl", "dist");

/**
 * Offline basemap: ocean background and a 10-degree graticule (a line every 10 deg, 1 deg steps),
 * dark enough that no line is taken for the store's pixels. The viewer replaces the "graticule"
 * source's data with lines at a step for the view on screen (examples/viewer/graticule.js), so
 * the map has a geographic reference at any zoom without a network. (The function is written
 * into the page as its text: it may use nothing outside itself.)
 */
export function offlineStyle() {
  const features = [];
  for (let lon = -180; lon <= 180; lon += 10) {
    const coords = [];
    for (let lat = -85; lat <= 85; lat += 1) coords.push([lon, lat]);
    features.push({
      type: "Feature",
      properties: { kind: lon === 0 ? "prime" : "meridian" },
      geometry: { type: "LineString", coordinates: coords },
    });
  }
  for (let lat = -80; lat <= 80; lat += 10) {
    const coords = [];
    for (let lon = -180; lon <= 180; lon += 1) coords.push([lon, lat]);
    features.push({
      type: "Feature",
      properties: { kind: lat === 0 ? "equator" : "parallel" },
      geometry: { type: "LineString", coordinates: coords },
    });
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
          "line-width": ["match", ["get", "kind"], ["equator", "prime"], 1.2, 1],
        },
      },
    ],
  };
}

/** index.html with each `<link rel="stylesheet" href="F" />` replaced by F's text in a <style>. */
function inlineStylesheets(html, read) {
  return html.replace(/^(\s*)<link rel="stylesheet" href="([\w.-]+)" \/>$/gm, (_, indent, file) => {
    const css = read(file)
      .replace(/\/\*# sourceMappingURL=[^*]*\*\//g, "")
      .trim();
    if (/<\/style/i.test(css)) throw new Error(`${file}: contains </style>, cannot be inlined`);
    return `${indent}<style data-from="${file}">\n${css}\n${indent}</style>`;
  });
}

/**
 * early.js as one classic script (an IIFE), with early-fetcher.js's IIFE bundle as the string its
 * `import FETCHER from "cz:early-fetcher"` gives. Both carry the reader code they import (http.js,
 * jsondoc.js, metadata.js, names.js), tree-shaken.
 * @param {import("esbuild").BuildOptions} common
 * @returns {Promise<string>}
 */
async function earlyScript(common, decoderSource) {
  // No keepNames: nothing here tells errors apart by name (the reader, in viewer.js, does).
  const iife = {
    ...common,
    format: /** @type {const} */ ("iife"),
    write: false,
    keepNames: false,
    legalComments: /** @type {const} */ ("none"),
  };
  const fetcher = await build({ ...iife, entryPoints: [path.join(SRC, "early-fetcher.js")] });
  const source = fetcher.outputFiles[0].text.trim();
  // The Workers' bundles as strings: the chunk fetcher's and the chunk decoder's (decision 0066).
  const sources = { "early-fetcher": source, "decode-worker": decoderSource };
  const fetcherSource = {
    name: "early-worker-sources",
    setup(b) {
      b.onResolve({ filter: /^cz:(early-fetcher|decode-worker)$/ }, (args) => ({ path: args.path.slice(3), namespace: "cz" }));
      b.onLoad({ filter: /.*/, namespace: "cz" }, (args) => ({
        contents: `export default ${JSON.stringify(sources[args.path])};`,
        loader: "js",
      }));
    },
  };
  const early = await build({ ...iife, entryPoints: [path.join(SRC, "early.js")], plugins: [fetcherSource] });
  // The root's GET, a script of its own before early.js's (early-root.js, decision 0069).
  const root = await build({ ...iife, entryPoints: [path.join(SRC, "early-root.js")] });
  const texts = [root, early].map((b) => b.outputFiles[0].text.trim());
  if (texts.some((t) => /<\/script|<!--/i.test(t)))
    throw new Error("an early script's bundle contains </script or <!--: it cannot be inlined");
  return texts.map((t) => `<script>${t}</script>`).join("\n    ");
}

export async function buildViewer(out = OUT) {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  /** @type {import("esbuild").BuildOptions} */
  const common = {
    bundle: true,
    format: "esm",
    target: "es2022",
    minify: true,
    keepNames: true, // error classes are told apart by name (chronozarr.errors mirrors)
    legalComments: "eof",
    charset: "utf8",
    nodePaths: [path.join(JS, "node_modules")], // examples/ has no node_modules of its own
    logLevel: "error",
  };
  // zarrita loads its WASM codecs with import("numcodecs/<name>"). In viewer.js these become
  // imports of sibling files built on their own (numcodecs-<name>.js), fetched only if the page
  // ever decodes on its main thread; the decode workers have them inlined. (esbuild's code
  // splitting would do the same but adds a shared chunk that viewer.js imports statically: one
  // more round trip before the page's code runs.)
  const codecs = ["zstd", "blosc", "lz4"];
  const lazyCodecs = {
    name: "lazy-numcodecs",
    setup(b) {
      b.onResolve({ filter: /^numcodecs\/(zstd|blosc|lz4)$/ }, (args) => ({
        path: `./numcodecs-${args.path.split("/")[1]}.js`,
        external: true,
      }));
    },
  };
  // MapLibre GL JS stays a file of its own (its ESM build, copied below), imported by viewer.js
  // only after the first frame is drawn (decision 0027): evaluating its 1.1 MB is one long task.
  const ownMapLibre = {
    name: "maplibre-own-file",
    setup(b) {
      b.onResolve({ filter: /^maplibre-gl$/ }, () => ({ path: "./maplibre-gl.js", external: true }));
    },
  };
  await build({
    ...common,
    entryPoints: [path.join(SRC, "viewer.js")],
    outfile: path.join(out, "viewer.js"),
    plugins: [lazyCodecs, ownMapLibre],
  });
  for (const c of codecs) {
    await build({
      ...common,
      stdin: { contents: `export { default } from "numcodecs/${c}";`, resolveDir: JS, loader: "js" },
      outfile: path.join(out, `numcodecs-${c}.js`),
    });
  }
  // The decode worker carries zstddec (decode-only zstd, 75 kB, decision 0027) and loads blosc /
  // lz4 from their sibling files if a store uses them: each worker parses and compiles about
  // 0.1 MB before its first chunk (0.78 MB with numcodecs' zstd inlined, 1.4 MB with all three).
  const lazyRareCodecs = {
    name: "lazy-rare-numcodecs",
    setup(b) {
      b.onResolve({ filter: /^numcodecs\/(zstd|blosc|lz4)$/ }, (args) => ({
        path: `./numcodecs-${args.path.split("/")[1]}.js`,
        external: true,
      }));
    },
  };
  await build({
    ...common,
    entryPoints: [path.join(JS, "chronozarr", "map", "decode-worker.js")],
    outfile: path.join(out, "decode-worker.js"),
    plugins: [lazyRareCodecs],
  });
  // The early script starts its decoder from a Blob of this bundle (decision 0066), where a
  // relative import has no base: the sibling codec files resolve against CZ_VIEWER_BASE (the
  // folder's URL, which the early script prepends to the Blob) or, for the file itself, its URL.
  const workerFile = path.join(out, "decode-worker.js");
  const workerText = readFileSync(workerFile, "utf8").replace(
    /import\("(\.\/numcodecs-(?:zstd|blosc|lz4)\.js)"\)/g,
    (_, rel) => `import(new URL(${JSON.stringify(rel)},globalThis.CZ_VIEWER_BASE||import.meta.url).href)`,
  );
  if ((workerText.match(/globalThis\.CZ_VIEWER_BASE/g) ?? []).length !== codecs.length)
    throw new Error("decode-worker.js: its codec imports were not rebased");
  writeFileSync(workerFile, workerText);
  const sources = { "style.css": path.join(SRC, "style.css"), "maplibre-gl.css": path.join(MAPLIBRE, "maplibre-gl.css") };
  const html = inlineStylesheets(readFileSync(path.join(SRC, "index.html"), "utf8"), (f) => {
    if (!sources[f]) throw new Error(`index.html links an unknown stylesheet ${f}`);
    return readFileSync(sources[f], "utf8");
  });
  // The offline style as a function in the page (the early script calls it instead of fetching
  // style.json: one request fewer while the store's chunks need the connections). It is the
  // function that writes style.json below, so the page and the file hold the same JSON.
  const marker = "<!-- build: offline style (build-viewer.mjs writes window.CHRONOZARR_OFFLINE_STYLE here) -->";
  if (!html.includes(marker)) throw new Error("index.html lost its offline-style marker");
  const withStyle = html.replace(marker, () => `<script>window.CHRONOZARR_OFFLINE_STYLE = ${offlineStyle.toString()};</script>`);
  // The early script runs before anything else has loaded, so it is in the page, not a file
  // (decisions 0023, 0027): early.js bundled as a classic script, with the chunk fetcher
  // Worker's own bundle inside it as a string (the Worker is a Blob of it: no request either).
  const earlyMarker = "<!-- build: early script (build-viewer.mjs writes early.js here, bundled) -->";
  if (!withStyle.includes(earlyMarker)) throw new Error("index.html lost its early-script marker");
  const early = await earlyScript(common, workerText);
  writeFileSync(
    path.join(out, "index.html"),
    withStyle.replace(earlyMarker, () => early),
  );
  // .js, not .mjs: some static hosts (Python http.server, buckets without a rule) serve .mjs as
  // application/octet-stream, which a module import refuses.
  copyFileSync(path.join(MAPLIBRE, "maplibre-gl.mjs"), path.join(out, "maplibre-gl.js"));
  copyFileSync(path.join(MAPLIBRE, "maplibre-gl-worker.mjs"), path.join(out, "maplibre-gl-worker.mjs"));
  writeFileSync(path.join(out, "style.json"), `${JSON.stringify(offlineStyle())}\n`);
  const files = readdirSync(out).sort();
  return files.map((f) => ({ file: f, bytes: readFileSync(path.join(out, f)).length }));
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const files = await buildViewer();
  for (const { file, bytes } of files) console.log(`${String(bytes).padStart(9)}  ${path.relative(process.cwd(), path.join(OUT, file))}`);
}

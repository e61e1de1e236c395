// The npm package (chronozarr-tools) as a user gets it: `npm pack`, install the tarball into a
// fresh folder, then use each export from Node, from a page (bundled by esbuild from that folder)
// and from TypeScript (tsc, strict, against the .d.ts files `npm pack` generated from the JSDoc).
// Values are compared with the Python reader.
//
// Offline install: `npm install --offline` needs the registry documents of every dependency in
// npm's cache, which `npm ci` does not put there. So the test does what npm does for the package
// itself (the tarball unpacked as node_modules/chronozarr-tools) and links each of its declared
// dependencies from js/node_modules (Node and esbuild resolve their own dependencies from there).

import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, test } from "node:test";
import { JS_DIR, fixtures, loadExpected } from "./fixtures.js";
import { CHROMIUM, CHROMIUM_ARGS } from "./chromium.js";
import { startServer } from "./server.js";

const NPM = "npm";

function run(cmd, args, cwd, env = {}) {
  const res = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
  if (res.status !== 0) throw new Error(`${cmd} ${args.join(" ")} (in ${cwd}) exited ${res.status}:\n${res.stdout}\n${res.stderr}`);
  return res.stdout;
}

/** Run a command without blocking this process (whose event loop serves the child's requests). */
function runAsync(cmd, args, cwd) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { cwd, encoding: "utf8", timeout: 60_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${cmd} ${args.join(" ")} failed: ${err.message}\n${stdout}\n${stderr}`));
      else resolve(stdout);
    });
  });
}

// What a consumer writes: one pixel by the reader, and the same pixel through the adapter by zarrita.
const CONSUMER = `
import { openStore, ChronozarrError } from "chronozarr-tools";
import { chronozarrStore, zarrLayerOptions } from "chronozarr-tools/store";
import * as zarr from "zarrita";

export async function useExports(url, t, row, col) {
  const store = await openStore(url);
  const v = await store.valueAt({ t, row, col });
  const adapter = await chronozarrStore(url);
  const arr = await zarr.open.v3(zarr.root(adapter).resolve("0/data"), { kind: "array" });
  const chunk = await zarr.get(arr, [t, null, row, col]);
  return {
    reader: v.bands.map((b) => b.stored),
    adapter: Array.from(chunk.data),
    isError: typeof ChronozarrError === "function",
    variable: zarrLayerOptions(adapter).variable,
  };
}
`;

const TYPED_CONSUMER = `
import { openStore, type ChronozarrStore, type ValueAt } from "chronozarr-tools";
import { chronozarrStore, zarrLayerOptions, type TrueValueStore } from "chronozarr-tools/store";
import { ChronozarrLayer, cameraMap, fitCamera, ticks } from "chronozarr-tools/map";

export async function typed(url: string): Promise<number> {
  const store: ChronozarrStore = await openStore(url, { timeout: 5000 });
  const v: ValueAt | null = await store.valueAt({ t: 0, row: 0, col: 0 });
  const adapter: TrueValueStore = await chronozarrStore(url);
  const opts = zarrLayerOptions(adapter);
  const bytes: Uint8Array | undefined = await adapter.get("/zarr.json");
  // @ts-expect-error t must be a number: the declarations are not "any"
  await store.readCell({ t: "0", row: 0, col: 0 });
  return (v?.bands[0].stored ?? 0) + opts.bounds[0] + (bytes?.byteLength ?? 0);
}

export function onAMap(store: ChronozarrStore, box: HTMLElement): ChronozarrLayer {
  const layer = new ChronozarrLayer(store, { mode: "band", band: 0, colormap: "magma" });
  const camera = fitCamera(layer.lngLatBounds(), { width: 800, height: 600 }, 40);
  void layer.drawBeforeMap(cameraMap({ ...camera, width: 800, height: 600 }), box);
  const rc: { row: number; col: number } | null = layer.pixelAt(layer.lngLatOf({ row: 1, col: 2 }));
  const ticksOf: number[] = ticks(0, 1, 5);
  // @ts-expect-error the colour map is named by a string: the declarations are not "any"
  layer.setColormap(3);
  return rc && ticksOf.length ? layer : layer;
}
`;

describe("the packed npm package", { timeout: 240_000 }, () => {
  const { dir, manifest } = fixtures();
  const entry = manifest.map["star-delta"];
  let tmp;
  let consumer;
  let server;
  let files;

  before(async () => {
    tmp = mkdtempSync(path.join(os.tmpdir(), "chronozarr-pack-"));
    const packed = JSON.parse(run(NPM, ["pack", "--json", "--pack-destination", tmp], JS_DIR));
    files = packed[0].files.map((f) => f.path);
    consumer = path.join(tmp, "consumer");
    const installed = path.join(consumer, "node_modules", "chronozarr-tools");
    mkdirSync(installed, { recursive: true });
    writeFileSync(path.join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
    run("tar", ["-xzf", path.join(tmp, packed[0].filename), "-C", installed, "--strip-components=1"], tmp);
    const deps = Object.keys(JSON.parse(readFileSync(path.join(installed, "package.json"), "utf8")).dependencies ?? {});
    for (const dep of deps) {
      const target = path.join(JS_DIR, "node_modules", dep);
      assert.ok(existsSync(target), `dependency ${dep} is not in js/node_modules (run npm ci)`);
      mkdirSync(path.dirname(path.join(consumer, "node_modules", dep)), { recursive: true });
      symlinkSync(target, path.join(consumer, "node_modules", dep), "dir");
    }
    writeFileSync(path.join(consumer, "use.js"), CONSUMER);
    server = await startServer({ mounts: { "/": dir, "/consumer/": consumer } });
  });

  after(async () => {
    await server?.close();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const expectedAt = (t, row, col) => {
    const exp = loadExpected(dir, entry)[0][t].data;
    const [, nb, h, w] = entry.levels[0].shape;
    return [...Array(nb).keys()].map((b) => exp[b * h * w + row * w + col]);
  };

  test("the tarball holds the code, the types, README and LICENSE, and no tests", () => {
    for (const f of [
      "package.json",
      "README.md",
      "LICENSE",
      "chronozarr/decoder.js",
      "chronozarr/store-adapter.js",
      "types/decoder.d.ts",
      "types/store-adapter.d.ts",
      "types/map/index.d.ts",
    ]) {
      assert.ok(files.includes(f), `${f} missing from the tarball: ${files.join(", ")}`);
    }
    // Every module entry point names its types, and they are in the tarball (generated by
    // `npm pack` from the JSDoc, not kept by hand).
    const manifest = JSON.parse(readFileSync(path.join(JS_DIR, "package.json"), "utf8"));
    for (const [name, target] of Object.entries(manifest.exports)) {
      if (name === "./package.json" || name.endsWith("decode-worker.js")) continue;
      assert.ok(target.types && files.includes(target.types.replace(/^\.\//, "")), `${name}: types ${target.types} not in the tarball`);
    }
    assert.equal(manifest.name, "chronozarr-tools");
    assert.equal(manifest.dependencies["maplibre-gl"], undefined, "MapLibre is the page's (a peer dependency), never a second copy");
    assert.equal(manifest.peerDependenciesMeta["maplibre-gl"].optional, true);
    assert.ok(!("repository" in manifest) && !("homepage" in manifest), "no published URL we do not own");
    assert.ok(!files.some((f) => f.startsWith("test/") || f.includes("node_modules")), files.join(", "));
    assert.match(readFileSync(path.join(JS_DIR, "LICENSE"), "utf8"), /Apache License\s+Version 2\.0/);
    const pkg = JSON.parse(readFileSync(path.join(consumer, "node_modules", "chronozarr-tools", "package.json"), "utf8"));
    assert.deepEqual(Object.keys(pkg.exports).sort(), [".", "./map", "./map/decode-worker.js", "./package.json", "./store"]);
  });

  test("each export works from Node in the fresh folder", async () => {
    const t = 4; // a delta timestep (anchor_interval 3)
    const out = await runAsync(
      process.execPath,
      [
        "--input-type=module",
        "-e",
        `import { useExports } from "./use.js"; console.log(JSON.stringify(await useExports(process.argv[1], ${t}, 1, 1)));`,
        `${server.url}/${entry.path}`,
      ],
      consumer,
    );
    const got = JSON.parse(out);
    const want = expectedAt(t, 1, 1);
    assert.deepEqual(got.reader, want);
    assert.deepEqual(got.adapter, want, "zarrita through chronozarr/store reads the true values");
    assert.equal(got.isError, true);
    assert.equal(got.variable, "data");
  });

  test("chronozarr-tools/map resolves in Node without MapLibre installed", () => {
    assert.ok(!existsSync(path.join(consumer, "node_modules", "maplibre-gl")));
    const out = run(
      process.execPath,
      ["--input-type=module", "-e", `const m = await import("chronozarr-tools/map"); console.log(Object.keys(m).length);`],
      consumer,
    );
    assert.ok(Number(out) > 0);
  });

  test("the generated types compile a strict consumer of every entry point (tsc, nodenext) and are not any", () => {
    writeFileSync(path.join(consumer, "typed.ts"), TYPED_CONSUMER);
    writeFileSync(
      path.join(consumer, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: {
          module: "nodenext",
          moduleResolution: "nodenext",
          target: "es2022",
          strict: true,
          noEmit: true,
          skipLibCheck: false,
          lib: ["es2022", "dom"],
          types: [],
        },
        files: ["typed.ts"],
      }),
    );
    run(process.execPath, [path.join(JS_DIR, "node_modules", "typescript", "bin", "tsc"), "-p", "."], consumer);
  });

  test(
    "each export works from a page (bundled by esbuild from the fresh folder)",
    { skip: existsSync(CHROMIUM) ? false : `${CHROMIUM} is not installed` },
    async () => {
      const { build } = await import("esbuild");
      writeFileSync(
        path.join(consumer, "page.js"),
        `import { useExports } from "./use.js"; window.useExports = useExports;` +
          `import * as czMap from "chronozarr-tools/map"; window.mapExports = Object.keys(czMap);`,
      );
      await build({
        absWorkingDir: consumer,
        entryPoints: ["page.js"],
        bundle: true,
        format: "esm",
        target: "es2022",
        outfile: path.join(consumer, "dist", "page.js"),
        logLevel: "error",
      });
      writeFileSync(path.join(consumer, "index.html"), `<!doctype html><script type="module" src="dist/page.js"></script>`);
      const { chromium } = await import("playwright-core");
      const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
      try {
        const page = await browser.newPage();
        const errors = [];
        page.on("pageerror", (e) => errors.push(e.message));
        await page.goto(`${server.url}/consumer/index.html`);
        await page.waitForFunction(() => typeof window.useExports === "function", null, { timeout: 20_000 });
        const got = await page.evaluate((u) => window.useExports(u, 5, 40, 100), `${server.url}/${entry.path}`);
        assert.deepEqual(got.reader, expectedAt(5, 40, 100));
        assert.deepEqual(got.adapter, expectedAt(5, 40, 100));
        assert.equal(got.variable, "data");
        assert.ok((await page.evaluate(() => window.mapExports.length)) > 0, "chronozarr-tools/map in a page");
        assert.deepEqual(errors, []);
      } finally {
        await browser.close();
      }
    },
  );
});

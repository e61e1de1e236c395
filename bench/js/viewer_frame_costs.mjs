// Where a display frame of the map viewer goes, in headless Chromium (SwiftShader WebGL):
// the layer's overlay canvas redrawn as the viewer draws it (decision 0062: cells coloured on the
// CPU, the canvas clipped to their box), without the clip, with the value table on the GPU as
// before, and with cheaper shaders on the same meshes; the bench's own CPU colouring, a plain
// WebGL canvas of the same size and of the cells' size, the overlay cleared only, a texture
// re-upload, and a scrub step (setTime) with and without the viewer's onFrame work.
// Each figure is frames per second over 90 animation frames, counted by requestAnimationFrame,
// three rounds interleaved (the machine is shared: compare rows of one round), with the CPU per
// frame of the renderer, the GPU process (SwiftShader, the compositor) and every process.
//
//   cd js && node ../bench/js/viewer_frame_costs.mjs [--flags angle] [--rounds 3]
//
// --flags angle: Chromium's `--use-gl=angle --use-angle=swiftshader` (the compositor on
// SwiftShader too) instead of `--disable-gpu` (software compositing, WebGL on SwiftShader).
// Setup: bench/js/make_store.py's store (24 x 2 x 1024 x 1024 uint16, a 2 x 2 cell view) and
// the built viewer, served by a static server on 127.0.0.1 (the store is unsharded: no ranges).
// Prints a table; writes nothing.

import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const require = createRequire(path.join(REPO, "js", "package.json"));
const { chromium } = require("playwright-core");
const { buildViewer } = await import(pathToFileURL(path.join(REPO, "js", "tools", "build-viewer.mjs")).href);
const { byKind, cpuDelta, cpuSnapshot } = await import(pathToFileURL(path.join(HERE, "proc_cpu.mjs")).href);
const { startStaticServer } = await import(pathToFileURL(path.join(HERE, "servers.mjs")).href);
const python = existsSync(path.join(REPO, ".venv", "bin", "python")) ? path.join(REPO, ".venv", "bin", "python") : "python3";
const argv = process.argv.slice(2);
const angle = argv.includes("--flags") && argv[argv.indexOf("--flags") + 1] === "angle";
const FLAGS = angle ? ["--use-gl=angle", "--use-angle=swiftshader", "--enable-unsafe-swiftshader"] : ["--disable-gpu"];
const ARGS = ["--headless", "--no-sandbox", ...FLAGS, "--disable-background-networking", "--disable-component-update", "--disable-sync"];

const work = mkdtempSync(path.join(os.tmpdir(), "chronozarr-frame-costs-"));
let server;
let browser;
try {
  const made = spawnSync(python, [path.join(HERE, "make_store.py"), path.join(work, "store.zarr")], { encoding: "utf8" });
  if (made.status !== 0) throw new Error(`make_store.py failed:\n${made.stdout}${made.stderr}`);
  await buildViewer(path.join(work, "viewer"));
  server = await startStaticServer(work);
  const url = server.url;
  browser = await chromium.launch({ executablePath: "/usr/bin/chromium", headless: true, args: ARGS });
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
  await page.goto(`${url}/viewer/index.html?style=style.json&store=../store.zarr/`);
  await page.waitForFunction(() => document.body.dataset.prefetched, null, { timeout: 120000 });
  await page.waitForTimeout(1000);
  await page.evaluate(async () => {
    const { layer } = window.viewer;
    const info = layer._loader.shownInfo;
    layer._kept = new Map();
    for (const c of info.cells) layer._kept.set(`${info.level}/${c.row}/${c.col}`, await layer._read(info.level, info.t, c));
    // A program of the layer's vertex shader (its meshes) and the fragment shader `fs`.
    const gl = layer._gl;
    const link = (fs) => {
      const prog = gl.createProgram();
      const vs =
        "#version 300 es\nuniform mat4 u_matrix; in vec2 a_pos; in vec2 a_uv; out vec2 v_uv; void main() { v_uv = a_uv; gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0); }";
      for (const [type, text] of [
        [gl.VERTEX_SHADER, vs],
        [gl.FRAGMENT_SHADER, fs],
      ]) {
        const sh = gl.createShader(type);
        gl.shaderSource(sh, text);
        gl.compileShader(sh);
        if (!gl.getShaderParameter(sh, gl.COMPILE_STATUS)) throw new Error(gl.getShaderInfoLog(sh));
        gl.attachShader(prog, sh);
      }
      gl.bindAttribLocation(prog, 0, "a_pos");
      gl.bindAttribLocation(prog, 1, "a_uv");
      gl.linkProgram(prog);
      return prog;
    };
    // The same meshes with another fragment shader (body `fs`), for the shader rows.
    window.__program = (fs) => {
      const head =
        "#version 300 es\nprecision highp float; precision highp int; precision highp usampler2DArray;\nuniform highp usampler2DArray u_data; uniform sampler2D u_vlut; in vec2 v_uv; out vec4 o;\n";
      const prog = link(`${head}void main() { ${fs} }`);
      const u = {};
      for (const n of ["u_matrix", "u_data", "u_mask", "u_vlut", "u_size"]) u[n] = gl.getUniformLocation(prog, n);
      return { program: prog, u, valueLut: true };
    };
    // The alternative to the value-table shader: each cell's values coloured on the CPU through a
    // table of 65,536 RGBA8 colours into an RGBA8 texture, drawn with one fetch per fragment.
    const table = new Uint32Array(65536);
    for (let v = 0; v < 65536; v++) table[v] = 0xff000000 | ((v * 2654435761) >>> 8);
    const rgba = new Map();
    for (const c of layer._loader.shown) {
      const tex = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, tex);
      gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, c.w, c.h);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
      rgba.set(c.key, { tex, out: new Uint32Array(c.w * c.h) });
    }
    window.__rgbaColour = () => {
      for (const c of layer._loader.shown) {
        const v = layer._kept.get(c.key).data.data;
        const { tex, out } = rgba.get(c.key);
        for (let i = 0; i < out.length; i++) out[i] = table[v[i]];
        gl.bindTexture(gl.TEXTURE_2D, tex);
        gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, c.w, c.h, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(out.buffer));
      }
    };
    window.__rgbaColour();
    const prog = link(
      "#version 300 es\nprecision highp float; uniform sampler2D u_rgba; in vec2 v_uv; out vec4 o; void main() { vec4 c = texelFetch(u_rgba, ivec2(v_uv), 0); if (c.a == 0.0) discard; o = c; }",
    );
    const uMatrix = gl.getUniformLocation(prog, "u_matrix");
    window.__rgbaDraw = () => {
      gl.bindFramebuffer(gl.FRAMEBUFFER, null);
      gl.viewport(0, 0, layer.canvas.width, layer.canvas.height);
      gl.clearColor(0, 0, 0, 0);
      gl.clear(gl.COLOR_BUFFER_BIT);
      gl.useProgram(prog);
      gl.uniformMatrix4fv(uMatrix, false, layer._overlay.matrix);
      gl.disable(gl.BLEND);
      gl.activeTexture(gl.TEXTURE0);
      for (const c of layer._loader.shown) {
        gl.bindTexture(gl.TEXTURE_2D, rgba.get(c.key).tex);
        gl.bindVertexArray(c.vao);
        gl.drawElements(gl.TRIANGLES, c.count, gl.UNSIGNED_SHORT, 0);
      }
      gl.bindVertexArray(null);
    };
  });
  /** fps of 90 animation frames, each running `body` (layer, i), and their CPU per frame. */
  const frames = (setup, body) => counted(() => framesOnly(setup, body), 90);
  const framesOnly = (setup, body) =>
    page.evaluate(
      ({ setup, body }) =>
        new Promise((resolve) => {
          const { layer } = window.viewer;
          new Function("layer", setup)(layer);
          const fn = new Function("layer", "i", body);
          let n = 0;
          const t0 = performance.now();
          const f = () => {
            fn(layer, n);
            if (++n < 90) requestAnimationFrame(f);
            else resolve((n * 1000) / (performance.now() - t0));
          };
          requestAnimationFrame(f);
        }),
      { setup, body },
    );
  /**
   * Display fps of 60 scrub steps (setTime, awaited), counted at requestAnimationFrame. With
   * `warm`, one pass over the series first, uncounted, so that the layer's decoded frames are
   * all kept before the count (else the row after one that emptied the frame cache decodes the
   * deltas again and reads slower: that, not the viewer's onFrame, was the 10 fps gap between
   * the onFrame rows before decision 0025).
   */
  const scrub = async (setup, warm = false) => {
    if (warm) {
      await page.evaluate(async (setup) => {
        const { layer, store } = window.viewer;
        new Function("layer", setup)(layer);
        for (let i = 0; i < store.nTime; i++) await layer.setTime((layer.t + 1) % store.nTime);
      }, setup);
    }
    return counted(() => scrubSteps(setup), 60);
  };
  const scrubSteps = (setup) =>
    page.evaluate(
      async ({ setup }) => {
        const { layer, store } = window.viewer;
        new Function("layer", setup)(layer);
        let shown = layer._loader.shownInfo.t;
        let running = true;
        const stamps = [];
        const raf = (now) => {
          if (layer._loader.shownInfo.t !== shown) {
            shown = layer._loader.shownInfo.t;
            stamps.push(now);
          }
          if (running) requestAnimationFrame(raf);
        };
        requestAnimationFrame(raf);
        let t = layer.t;
        for (let i = 0; i < 60; i++) {
          t = (t + 1) % store.nTime;
          await layer.setTime(t);
        }
        running = false;
        return ((stamps.length - 1) * 1000) / (stamps.at(-1) - stamps[0]);
      },
      { setup },
    );
  /** fps of `run` and the CPU per frame of every process (proc_cpu.mjs) while it ran. */
  const counted = async (run, n) => {
    const before = cpuSnapshot();
    const fps = await run();
    const kinds = byKind(cpuDelta(before, cpuSnapshot()));
    const per = (k) => (kinds[k] ?? 0) / n;
    return { fps, renderer: per("renderer"), gpu: per("GPU process"), total: Object.values(kinds).reduce((a, b) => a + b, 0) / n };
  };
  const restore =
    "layer._renderer.displayChanged(); layer.valueLut = true; layer.cpuColour = true; layer._overlay.clip = true; layer.onFrame = layer._onFrame ?? layer.onFrame; layer._frameBudget ??= layer.frameCache.maxBytes; layer.frameCache.maxBytes = layer._frameBudget;";
  const rows = [
    ["requestAnimationFrame alone (the display's rate)", () => frames("", "")],
    ...[
      [1280, 800],
      [760, 760],
    ].map(([cw, ch]) => [
      `a plain ${cw} x ${ch} WebGL2 canvas cleared every frame${cw === 760 ? " (the size of the layer's cells on screen)" : ""}`,
      () =>
        frames(
          "",
          `if (i === 0) { window.__c = document.createElement('canvas'); __c.width = ${cw}; __c.height = ${ch}; __c.style.cssText = 'position:absolute;left:0;top:0;pointer-events:none'; document.body.append(__c); window.__g = __c.getContext('webgl2', {antialias: false, depth: false, stencil: false}); } __g.clearColor(i % 2, 0.5, 0.5, 1); __g.clear(__g.COLOR_BUFFER_BIT); if (i === 89) __c.remove();`,
        ),
    ]),
    [
      "overlay canvas cleared only (no draw)",
      () =>
        frames(
          "",
          "const gl = layer._gl; gl.viewport(0, 0, layer.canvas.width, layer.canvas.height); gl.clearColor(0, 0, 0, 0); gl.clear(gl.COLOR_BUFFER_BIT);",
        ),
    ],
    [
      "overlay redrawn: cells coloured on the CPU, clipped to their box (what the viewer draws, decision 0062)",
      () => frames(restore, "layer._overlay.draw()"),
    ],
    [
      "overlay redrawn: cells coloured on the CPU, whole canvas",
      () => frames(`${restore} layer._overlay.clip = false;`, "layer._overlay.draw()"),
    ],
    [
      "overlay redrawn: value-table shader on the GPU, whole canvas (before decision 0062)",
      () => frames(`${restore} layer.cpuColour = false; layer._overlay.clip = false;`, "layer._overlay.draw()"),
    ],
    [
      "overlay redrawn: per-fragment shader (valueLut: false)",
      () => frames("layer.valueLut = false; layer._renderer.displayChanged();", "layer._overlay.draw()"),
    ],
    [
      "overlay redrawn: constant colour on the same meshes",
      () => frames("layer._renderer.program = window.__program('o = vec4(0.2, 0.5, 0.3, 1.0);');", "layer._overlay.draw()"),
    ],
    [
      "overlay redrawn: one data fetch, no colour table",
      () =>
        frames(
          "layer._renderer.program = window.__program('uint v = texelFetch(u_data, ivec3(ivec2(v_uv), 0), 0).r; o = vec4(vec3(float(v & 255u) / 255.0), 1.0);');",
          "layer._overlay.draw()",
        ),
    ],
    ["overlay redrawn: one RGBA8 fetch per fragment (colours made on the CPU, textures ready)", () => frames("", "window.__rgbaDraw()")],
    [
      "overlay redrawn + the 4 cells coloured on the CPU and uploaded as RGBA8",
      () => frames("", "window.__rgbaColour(); window.__rgbaDraw()"),
    ],
    [
      "overlay redrawn + the 4 cells given their values again (coloured on the CPU and uploaded as RGBA8 at the draw)",
      () =>
        frames(
          restore,
          "const gl = layer._gl; for (const c of layer._loader.shown) layer._upload(c.level, c, layer._kept.get(c.key), c.content); layer._overlay.draw()",
        ),
    ],
    ["scrub steps (setTime), all resident, decoded frames kept (after one pass), with the viewer's onFrame", () => scrub(restore, true)],
    [
      "the same, value table on the GPU, whole canvas (before decision 0062)",
      () => scrub(`${restore} layer.cpuColour = false; layer._overlay.clip = false;`, true),
    ],
    [
      "scrub steps (setTime), all resident, decoded frames kept (after one pass), onFrame off",
      () => scrub(`${restore} layer._onFrame = layer.onFrame; layer.onFrame = null;`, true),
    ],
    ["the same with the viewer's onFrame again (ABA order)", () => scrub(restore, true)],
    [
      "scrub steps (setTime), all resident, every delta decoded per timestep (frameCacheBytes 0)",
      () => scrub(`${restore} layer.frameCache.clear(); layer.frameCache.maxBytes = 0;`),
    ],
  ];
  await page.evaluate(() =>
    window.viewer.store.prefetch({ level: window.viewer.layer.currentLevel(), cells: window.viewer.layer.visibleCells() }),
  );
  const rounds = argv.includes("--rounds") ? Number(argv[argv.indexOf("--rounds") + 1]) : 3;
  const results = rows.map(() => []);
  const loads = [os.loadavg()[0]];
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < rows.length; i++) results[i].push(await rows[i][1]());
    await page.evaluate(restore.replace(/layer/g, "window.viewer.layer"));
    loads.push(os.loadavg()[0]);
  }
  console.log(
    `Chromium ${browser.version()}, \`${FLAGS.join(" ")}\`, 1280 x 800, SwiftShader; load average ${loads.map((l) => l.toFixed(1)).join(" / ")} (start, after each round)`,
  );
  console.log(`| frame | ${[...Array(rounds).keys()].map((r) => `round ${r + 1}`).join(" | ")} |`);
  console.log(`|---|${"---|".repeat(rounds)}`);
  console.log("(each cell: display fps; CPU ms per frame of the renderer / the GPU process / every process of the run, from /proc)");
  rows.forEach(([label], i) =>
    console.log(
      `| ${label} | ${results[i].map((v) => `${v.fps.toFixed(1)} fps; ${v.renderer.toFixed(1)} / ${v.gpu.toFixed(1)} / ${v.total.toFixed(1)} ms`).join(" | ")} |`,
    ),
  );
} finally {
  await browser?.close();
  await server?.close();
  rmSync(work, { recursive: true, force: true });
}

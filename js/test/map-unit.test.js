// The map layer's pure parts in Node: the bundled EPSG table against pyproj (PROJ) at points in
// each code's area of use, CRS resolution from a store (code, WKT2, PROJJSON, array attributes,
// typed error), band-math parsing and evaluation (NDVI, precedence, errors), colour-bar ticks,
// and the layer's decode-ahead (direction of travel, one read shared with the frame).

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import proj4 from "proj4";
import { UnsupportedError } from "../chronozarr/errors.js";
import { ticks } from "../chronozarr/map/colormaps.js";
import { crsDefinition, epsgDefinition, lonLatOfMercator, mercatorOf, storeProjection } from "../chronozarr/map/crs.js";
import { EPSG } from "../chronozarr/map/epsg.js";
import { ExpressionError, PRESETS, parseExpression, toFunction, toGlsl } from "../chronozarr/map/expression.js";
import { HERE, python } from "./fixtures.js";

const BANDS = [
  { name: "B02", common_name: "blue" },
  { name: "B03", common_name: "green" },
  { name: "B04", common_name: "red" },
  { name: "B08", common_name: "nir" },
];

test("every EPSG code of the table matches pyproj within 0.5 m (WGS84 datums within 1 cm); PROJJSON from pyproj", () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "chronozarr-epsg-"));
  try {
    const out = path.join(dir, "epsg.json");
    const res = spawnSync(python(), [path.join(HERE, "make_map_fixtures.py"), "--epsg", out], { encoding: "utf8" });
    assert.equal(res.status, 0, res.stderr);
    const { rows, projjson_32631: projjson } = JSON.parse(readFileSync(out, "utf8"));
    // A store whose chronozarr.crs is PROJJSON lands where the table's EPSG:32631 does.
    const viaJson = storeProjection({ crs: projjson, levels: [] }).forward([600000, 5000000]);
    const viaCode = proj4(EPSG[32631], "EPSG:4326").forward([600000, 5000000]);
    assert.ok(Math.abs(viaJson[0] - viaCode[0]) < 1e-9 && Math.abs(viaJson[1] - viaCode[1]) < 1e-9, `PROJJSON ${viaJson} vs ${viaCode}`);
    assert.equal(rows.length, Object.keys(EPSG).length);
    assert.ok(rows.length >= 180);
    const metres = (a, b) => {
      const k = Math.PI / 180;
      const dy = (a[1] - b[1]) * k * 6371008;
      const dx = (a[0] - b[0]) * k * 6371008 * Math.cos(a[1] * k);
      return Math.hypot(dx, dy);
    };
    let worst = 0;
    for (const { code, points } of rows) {
      const conv = proj4(EPSG[code], "EPSG:4326");
      const wgs84 = /datum=WGS84|\+a=6378137 \+b=6378137/.test(EPSG[code]);
      for (const p of points) {
        const d = metres(conv.forward([p.x, p.y]), [p.lon, p.lat]);
        worst = Math.max(worst, d);
        assert.ok(d < (wgs84 ? 0.01 : 0.5), `EPSG:${code} at (${p.x}, ${p.y}): ${d.toFixed(4)} m from pyproj`);
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("CRS resolution: code forms, WKT2, array attributes, and a typed error", () => {
  assert.equal(epsgDefinition("EPSG:32631"), EPSG[32631]);
  assert.equal(epsgDefinition("urn:ogc:def:crs:EPSG::32631"), EPSG[32631]);
  assert.equal(epsgDefinition("http://www.opengis.net/def/crs/EPSG/0/3035"), EPSG[3035]);
  assert.equal(epsgDefinition("EPSG:2193"), null); // not in the table
  const store = (crs, attrs = {}) => ({
    crs,
    variable: "data",
    levels: [{ path: "0" }],
    meta: { consolidated: { "0/data": { attributes: attrs } } },
  });
  assert.deepEqual(crsDefinition(store("EPSG:32631")), { definition: EPSG[32631], source: "chronozarr.crs" });
  const wkt =
    'PROJCRS["x",BASEGEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563]]],CONVERSION["UTM zone 31N",METHOD["Transverse Mercator"],PARAMETER["Latitude of natural origin",0,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Longitude of natural origin",3,ANGLEUNIT["degree",0.0174532925199433]],PARAMETER["Scale factor at natural origin",0.9996,SCALEUNIT["unity",1]],PARAMETER["False easting",500000,LENGTHUNIT["metre",1]],PARAMETER["False northing",0,LENGTHUNIT["metre",1]]],CS[Cartesian,2],AXIS["easting",east],AXIS["northing",north],LENGTHUNIT["metre",1]]';
  assert.equal(crsDefinition(store(wkt)).definition, wkt);
  // A code outside the table falls back to the array's WKT (spec 3.3 attributes).
  const r = crsDefinition(store("EPSG:2193", { _CRS: { url: "x", wkt } }));
  assert.equal(r.source, "0/data _CRS.wkt");
  // WKT2 and the table agree on a UTM point.
  const a = storeProjection(store(wkt)).forward([600000, 5000000]);
  const b = storeProjection(store("EPSG:32631")).forward([600000, 5000000]);
  assert.ok(Math.abs(a[0] - b[0]) < 1e-9 && Math.abs(a[1] - b[1]) < 1e-9, `${a} vs ${b}`);
  assert.throws(
    () => crsDefinition(store("EPSG:2193")),
    (e) => e instanceof UnsupportedError && /EPSG:2193/.test(e.message),
  );
  assert.throws(
    () => crsDefinition(store(null)),
    (e) => e instanceof UnsupportedError && /no CRS/.test(e.message),
  );
  // Mercator helpers invert each other.
  for (const [lon, lat] of [
    [0, 0],
    [4.3, 45.1],
    [-179.9, -84],
    [120, 60],
  ]) {
    const [x, y] = lonLatOfMercator(...mercatorOf(lon, lat));
    assert.ok(Math.abs(x - lon) < 1e-9 && Math.abs(y - lat) < 1e-9);
  }
});

test("band math: NDVI, precedence, functions, names, and errors naming the problem", () => {
  const ndvi = parseExpression(PRESETS.ndvi, BANDS);
  assert.deepEqual(ndvi.bands, [3, 2]);
  const f = toFunction(ndvi.tree);
  assert.equal(f([0, 0, 0.1, 0.5]), (0.5 - 0.1) / (0.5 + 0.1));
  assert.equal(
    toGlsl(ndvi.tree, (b) => `p${b}`),
    "((p3 - p2) / (p3 + p2))",
  );
  const g = (text, p) => toFunction(parseExpression(text, BANDS).tree)(p);
  const p = [0.1, 0.2, 0.3, 0.4];
  assert.equal(g("red + nir * 2", p), 0.3 + 0.4 * 2);
  assert.equal(g("-red ^ 2", p), -(0.3 ** 2));
  assert.equal(g("red * 0 + 2 ^ 3 ^ 2", p), 2 ** 9); // right-associative
  assert.equal(g("max(B02, green) - min(red, 1e-1)", p), 0.2 - 0.1);
  assert.equal(g("clamp(nir * 10, 0, 1)", p), 1);
  assert.equal(g("sqrt(abs(blue - nir))", p), Math.sqrt(Math.abs(0.1 - 0.4)));
  assert.equal(g("NIR / Red", p), 0.4 / 0.3); // case-insensitive fallback
  for (const [bad, msg] of [
    ["", /empty/],
    ["red +", /ends too early/],
    ["(red", /expected "\)"/],
    ["swir16 - red", /no band named "swir16"/],
    ["red; alert(1)", /unexpected character/],
    ["2 + 3", /uses no band/],
    ["max(red)", /takes 2 argument/],
    ["red red", /unexpected "red"/],
  ]) {
    assert.throws(
      () => parseExpression(bad, BANDS),
      (e) => e instanceof ExpressionError && msg.test(e.message),
      bad,
    );
  }
});

test("colour-bar ticks are nice steps inside the range", () => {
  assert.deepEqual(ticks(0, 1, 5), [0, 0.2, 0.4, 0.6, 0.8, 1]);
  for (const [lo, hi] of [
    [0, 1],
    [-0.2, 0.9],
    [0.0123, 0.1327],
    [100, 4500],
    [-3, -1],
  ]) {
    const t = ticks(lo, hi, 5);
    assert.ok(t.length >= 2 && t.length <= 11, `${lo}..${hi}: ${t}`);
    for (const v of t) assert.ok(v >= lo - 1e-12 && v <= hi + 1e-12, `${v} outside ${lo}..${hi}`);
    const steps = t.slice(1).map((v, i) => v - t[i]);
    for (const s of steps) assert.ok(Math.abs(s - steps[0]) < 1e-9 * Math.abs(steps[0]) + 1e-12, "even steps");
    const m = steps[0] / 10 ** Math.floor(Math.log10(steps[0]));
    assert.ok(
      [1, 2, 5].some((k) => Math.abs(m - k) < 1e-9),
      `step ${steps[0]} is 1, 2 or 5 x 10^k`,
    );
  }
});

test("decode-ahead: after a frame the reader reads the next timesteps in the direction of travel, and a frame takes that read", async () => {
  const { FrameReader } = await import("../chronozarr/map/frames.js");
  const reads = [];
  const store = {
    nTime: 6,
    hasMask: false,
    readCell: async ({ t, row, col }) => {
      reads.push(t);
      return { t, row, col, data: new Uint16Array([t]) };
    },
  };
  const frames = new FrameReader(store, { aheadSteps: 1, frameCacheBytes: 0 });
  const cells = [{ row: 0, col: 0 }];
  const settle = () => new Promise((r) => setTimeout(r, 0));
  frames.readAhead(0, cells, 2, undefined, 1); // no previous frame: nothing to infer a direction from
  frames.readAhead(0, cells, 3, 2, 1); // 2 -> 3: forward, reads 4
  await settle();
  assert.deepEqual(reads, [4]);
  const got = await frames.read(0, 4, cells[0], 1);
  assert.equal(got.data.data[0], 4);
  assert.deepEqual(reads, [4], "the frame for t=4 used the read-ahead, no second read");
  frames.readAhead(0, cells, 5, 0, 1); // 0 -> 5 wraps backwards: reads 4 again (taken above), not 0
  await settle();
  assert.deepEqual(reads, [4, 4]);
  // The default reads 5 timesteps ahead (overlapping fetches when deltas are not resident),
  // wrapping around the series in the direction of travel, each once.
  reads.length = 0;
  const deep = new FrameReader(store, { frameCacheBytes: 0 });
  assert.equal(deep.aheadSteps, 5);
  const three = new FrameReader(store, { aheadSteps: 3, frameCacheBytes: 0 });
  three.readAhead(0, cells, 5, 4, 1); // forward from 5: 0, 1, 2
  three.readAhead(0, cells, 5, 4, 1);
  await settle();
  assert.deepEqual(reads, [0, 1, 2]);
  three.readAhead(0, cells, 0, 1, 1); // backwards from 0: 5, 4, 3
  await settle();
  assert.deepEqual(reads, [0, 1, 2, 5, 4, 3]);
  // Never more than the series minus the timestep shown: 6 timesteps, 5 ahead reads the 5 others.
  reads.length = 0;
  deep.readAhead(0, cells, 3, 2, 1);
  await settle();
  assert.deepEqual(reads, [4, 5, 0, 1, 2]);
  // The frame cache (default budget): a decoded cell-timestep is read once, however often a
  // frame or a read-ahead asks for it again; over budget, the least recently used goes.
  reads.length = 0;
  const kept = new FrameReader(store);
  await kept.read(0, 1, cells[0], 1);
  await kept.read(0, 1, cells[0], 1);
  kept.readAhead(0, cells, 0, 0, 1); // same t: no direction, nothing read
  await settle();
  assert.deepEqual(reads, [1]);
  const small = new FrameReader(store, { frameCacheBytes: 4 }); // two 1-value uint16 frames
  for (const t of [1, 2, 3, 1]) await small.read(0, t, cells[0], 1);
  assert.deepEqual(reads, [1, 1, 2, 3, 1], "t=1 was evicted by 2 and 3");
});

test("the layer hands its options to the reader: readAhead, aheadSteps, frameCacheBytes", async () => {
  const { ChronozarrLayer } = await import("../chronozarr/map/layer.js");
  const store = {
    crs: "EPSG:32631",
    levels: [{ path: "0" }],
    nTime: 6,
    nBands: 1,
    bands: [{ name: "B04", common_name: "red", scale: 1, offset: 0 }],
    hasMask: false,
    bounds: () => ({ x0: 500000, x1: 510000, y0: 4640000, y1: 4650000 }),
  };
  assert.equal(new ChronozarrLayer(store, { mode: "band", band: 0, readAhead: false }).readAhead, false);
  const layer = new ChronozarrLayer(store, { mode: "band", band: 0, aheadSteps: 3, frameCacheBytes: 1234 });
  assert.equal(layer.aheadSteps, 3);
  assert.equal(layer.frameCache.maxBytes, 1234);
  assert.equal(new ChronozarrLayer(store, {}).aheadSteps, 5);
});

test("value table: every stored value's colour is the per-fragment path's (validity, scale, band math, stretch, colour map, opacity)", async () => {
  const { buildValueLut, displayValues, VALUE_LUT_DTYPES } = await import("../chronozarr/map/value-lut.js");
  const { COLORMAPS } = await import("../chronozarr/map/colormaps.js");
  const cmap = COLORMAPS.viridis.lut;
  for (const [dtype, nodata, hasMask] of [
    ["uint16", 0, false],
    ["int16", -9999, false],
    ["uint8", 255, true],
    ["uint16", null, false],
  ]) {
    const scale = 0.0001;
    const offset = -0.1;
    const fn = (v) => (v > 0.5 ? Math.sqrt(v) : v * 2); // a formula of one band
    const min = 0.05;
    const max = 0.7;
    const opacity = 0.6;
    const lut = buildValueLut({ dtype, nodata, hasMask, scale, offset, fn, min, max, colormap: cmap, opacity });
    // The renderer computes the display values before the stretch is known, then colours them.
    const ahead = buildValueLut({
      dtype,
      min,
      max,
      colormap: cmap,
      opacity,
      values: displayValues({ dtype, nodata, hasMask, scale, offset, fn }),
    });
    assert.deepEqual(ahead.data, lut.data, `${dtype}: the table from display values computed ahead`);
    const { base, size } = VALUE_LUT_DTYPES[dtype];
    assert.equal(lut.width * lut.height >= size, true);
    assert.equal(lut.base, base);
    const alpha = Math.round(opacity * 255);
    // Every value, against the shader's arithmetic written out independently (float64 here:
    // a colour may differ by one colour-map entry where float32 rounding crosses an entry edge).
    let differ = 0;
    for (let raw = -base; raw < size - base; raw++) {
      const o = (raw + base) * 4;
      const got = Array.from(lut.data.subarray(o, o + 4));
      if (!hasMask && raw === nodata) {
        assert.equal(got[3], 0, `${dtype}: nodata ${raw} is transparent`);
        continue;
      }
      const k = Math.min(1, Math.max(0, (fn(raw * scale + offset) - min) / (max - min)));
      const e = Math.round(k * 255) * 4;
      const want = [0, 1, 2].map((c) => Math.round((cmap[e + c] * alpha) / 255));
      assert.equal(got[3], alpha, `${dtype} ${raw}: alpha`);
      if (want.some((w, c) => Math.abs(w - got[c]) > 0)) {
        differ++;
        const near = [e - 4, e + 4]
          .filter((x) => x >= 0 && x < 1024)
          .map((x) => [0, 1, 2].map((c) => Math.round((cmap[x + c] * alpha) / 255)));
        assert.ok(
          near.some((n) => n.every((w, c) => w === got[c])),
          `${dtype} ${raw}: ${got} vs ${want}`,
        );
      }
    }
    assert.ok(differ < size / 1000, `${dtype}: ${differ} values one colour-map entry off`);
  }
  // Non-finite display values are transparent; opacity 0 draws nothing.
  const nan = buildValueLut({ dtype: "uint8", fn: (v) => (v < 10 ? NaN : v), min: 0, max: 255, colormap: cmap });
  assert.equal(nan.data[5 * 4 + 3], 0);
  assert.equal(nan.data[20 * 4 + 3], 255);
  assert.ok(buildValueLut({ dtype: "uint8", min: 0, max: 1, colormap: cmap, opacity: 0 }).data.every((x) => x === 0));
  assert.throws(() => buildValueLut({ dtype: "float32", min: 0, max: 1, colormap: cmap }), RangeError);
});

test("cells coloured on the CPU: each pixel is the value table's entry of its stored value, transparent where masked", async () => {
  const { buildValueLut, colourValues } = await import("../chronozarr/map/value-lut.js");
  const { COLORMAPS } = await import("../chronozarr/map/colormaps.js");
  let seed = 7;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  for (const [dtype, Values, lo, hi, nodata] of [
    ["uint16", Uint16Array, 0, 65535, 0],
    ["int16", Int16Array, -32768, 32767, -9999],
    ["uint8", Uint8Array, 0, 255, 255],
  ]) {
    for (const withMask of [false, true]) {
      const n = 3001;
      const values = Values.from({ length: n }, (_, i) => (i % 97 === 0 ? nodata : lo + Math.floor(random() * (hi - lo + 1))));
      const mask = withMask ? Uint8Array.from({ length: n }, () => (random() < 0.2 ? 0 : 1)) : null;
      const lut = buildValueLut({
        dtype,
        nodata,
        hasMask: withMask,
        min: lo / 2,
        max: hi / 2,
        colormap: COLORMAPS.magma.lut,
        opacity: 0.8,
      });
      const out = new Uint32Array(n);
      colourValues(values, mask, new Uint32Array(lut.data.buffer), lut.base, out);
      const got = new Uint8Array(out.buffer);
      // The oracle: the value table's four bytes at index (value + base) as the value-table
      // shader fetches them (texel (v & 255, v >> 8) of a 256-wide table), zero where masked.
      for (let i = 0; i < n; i++) {
        const v = values[i] + lut.base;
        const texel = ((v >> 8) * lut.width + (v & 255)) * 4;
        const want = mask && mask[i] !== 1 ? [0, 0, 0, 0] : Array.from(lut.data.subarray(texel, texel + 4));
        assert.deepEqual(Array.from(got.subarray(i * 4, i * 4 + 4)), want, `${dtype} mask ${withMask} pixel ${i} value ${values[i]}`);
      }
      if (!withMask) assert.equal(got[3], 0, `${dtype}: nodata is transparent`);
    }
  }
});

test("overlay clip: the box on screen holds every point of the drawn cells, to within two pixels, and none behind the camera", async () => {
  const { screenBox } = await import("../chronozarr/map/overlay.js");
  let seed = 11;
  const random = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
  // clip = M v, M column-major (the layer's matrix), v = (x, y, 0, 1); screen px of the canvas.
  const project = (m, x, y, width, height) => {
    const v = [x, y, 0, 1];
    const c = [0, 1, 2, 3].map((row) => [0, 1, 2, 3].reduce((sum, col) => sum + m[col * 4 + row] * v[col], 0));
    return [((c[0] / c[3] + 1) * width) / 2, ((1 - c[1] / c[3]) * height) / 2];
  };
  for (let trial = 0; trial < 50; trial++) {
    const width = 1280;
    const height = 800;
    const s = 2 + random() * 10;
    // A map camera: scale, a small tilt (perspective through w), a shift.
    const m = [
      s,
      0.3 * random(),
      0,
      0.2 * random(),
      -0.2 * random(),
      -s,
      0,
      0.2 * random(),
      0,
      0,
      1,
      0,
      random() - 0.5,
      random() - 0.5,
      0,
      1,
    ];
    const boxes = Array.from({ length: 1 + Math.floor(random() * 4) }, () => {
      const x = random() * 0.1 - 0.05;
      const y = random() * 0.1 - 0.05;
      return [x, y, x + random() * 0.08, y + random() * 0.08];
    });
    const box = screenBox(m, boxes, width, height);
    assert.ok(box, `trial ${trial}: a box`);
    let ext = [Infinity, Infinity, -Infinity, -Infinity];
    for (const [a, b, c, d] of boxes) {
      for (let i = 0; i <= 20; i++) {
        for (let j = 0; j <= 20; j++) {
          const [px, py] = project(m, a + ((c - a) * i) / 20, b + ((d - b) * j) / 20, width, height);
          ext = [Math.min(ext[0], px), Math.min(ext[1], py), Math.max(ext[2], px), Math.max(ext[3], py)];
        }
      }
    }
    const cut = [Math.max(0, ext[0]), Math.max(0, ext[1]), Math.min(width, ext[2]), Math.min(height, ext[3])];
    if (cut[0] >= cut[2] || cut[1] >= cut[3]) continue; // off screen
    assert.ok(
      box.left <= cut[0] && box.top <= cut[1] && box.right >= cut[2] && box.bottom >= cut[3],
      `trial ${trial}: ${JSON.stringify(box)} holds ${cut}`,
    );
    assert.ok(
      cut[0] - box.left <= 2 && cut[1] - box.top <= 2 && box.right - cut[2] <= 2 && box.bottom - cut[3] <= 2,
      `trial ${trial}: ${JSON.stringify(box)} is tight around ${cut}`,
    );
  }
  // A corner behind the camera (w <= 0): no clip.
  assert.equal(screenBox([1, 0, 0, 0, 0, 1, 0, -1, 0, 0, 1, 0, 0, 0, 0, 0.5], [[0, 0, 1, 1]], 100, 100), null);
  // Nothing drawn: an empty box.
  assert.deepEqual(screenBox([1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1], [], 100, 100), { left: 0, top: 0, right: 0, bottom: 0 });
});

test("auto stretch: the 2 and 98 % points of the sampled physical values, nodata and masked pixels left out", async () => {
  const { autoStretch, stretchOf, stretchSamples } = await import("../chronozarr/map/stretch.js");
  const { resolveDisplay } = await import("../chronozarr/map/display.js");
  const store = {
    crs: "EPSG:32631",
    levels: [{ path: "0" }],
    nTime: 1,
    nBands: 2,
    nodata: 0,
    bands: [
      { name: "B04", common_name: "red", scale: 0.0001, offset: -0.1 },
      { name: "B08", common_name: "nir", scale: 0.0001, offset: -0.1 },
    ],
    hasMask: false,
    bounds: () => ({ x0: 500000, x1: 510000, y0: 4640000, y1: 4650000 }),
  };
  // Deterministic pseudo-random cells (LCG), some nodata; one cell with a mask that hides half.
  let seed = 12345;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  const cell = (h, w, withMask) => {
    const n = h * w;
    const data = new Uint16Array(2 * n).map(() => (rand() < 0.05 ? 0 : 1 + Math.floor(rand() * 9000)));
    const mask = withMask ? new Uint8Array(n).map((_, i) => (i % 2 ? 1 : 0)) : null;
    return { data: { height: h, width: w, data }, mask };
  };
  const datas = [cell(37, 41, false), cell(50, 30, true)];
  const { spec } = resolveDisplay(store, { mode: "band", band: 1 });
  // The rule restated (not the layer's code): every pixel when a cell has at most 20000, band 1,
  // leaving out nodata (no mask) and mask != 1; nearest rank at p * (n - 1).
  const want = [];
  for (const { data, mask } of datas) {
    const n = data.height * data.width;
    for (let i = 0; i < n; i++) {
      const v = data.data[n + i];
      if (mask ? mask[i] !== 1 : v === 0) continue;
      want.push(v * 0.0001 - 0.1);
    }
  }
  want.sort((a, b) => a - b);
  const at = (p) => want[Math.round(p * (want.length - 1))];
  assert.deepEqual(autoStretch(store, spec, datas), { min: at(0.02), max: at(0.98) });
  // The layer samples each cell as it arrives (in any order) and pools them at the end.
  const pooled = stretchOf([stretchSamples(store, spec, datas[1]), stretchSamples(store, spec, datas[0])]);
  assert.deepEqual(pooled, { min: at(0.02), max: at(0.98) }, "cells sampled one by one, pooled in another order");
  const flat = [{ data: { height: 2, width: 2, data: new Uint16Array([5, 5, 5, 5, 7, 7, 7, 7]) }, mask: null }];
  const s = autoStretch(store, spec, flat);
  assert.ok(s.max > s.min && s.min === 7 * 0.0001 - 0.1, `a constant frame still gets a range: ${JSON.stringify(s)}`);
});

test("stretchOf selects the 2 and 98 % ranks of the pooled samples: the sorted union's values, for any split into cells", async () => {
  const { stretchOf } = await import("../chronozarr/map/stretch.js");
  let seed = 99;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  for (let round = 0; round < 400; round++) {
    // Cells of 0-300 samples from a small value set (ties), a wide one, or with NaNs.
    const kind = round % 3;
    const cells = Array.from({ length: 1 + Math.floor(rand() * 5) }, () =>
      Float64Array.from({ length: Math.floor(rand() * 300) }, () =>
        kind === 0 ? Math.floor(rand() * 7) : kind === 1 ? (rand() - 0.5) * 1e6 : rand() < 0.3 ? NaN : rand(),
      ).sort(),
    );
    // The definition restated: every sample in one array, sorted (NaN last), nearest rank.
    const all = Float64Array.from(cells.flatMap((c) => Array.from(c))).sort();
    const n = all.length;
    const at = (p) => all[Math.min(n - 1, Math.max(0, Math.round(p * (n - 1))))];
    const min = n ? at(0.02) : 0;
    let max = n ? at(0.98) : 1;
    if (!(max > min)) max = min + (Math.abs(min) || 1) * 0.01;
    assert.deepEqual(stretchOf(cells), { min, max }, `round ${round}: ${cells.map((c) => c.length)}`);
  }
});

test("pixel helpers round-trip: pixelAt(lngLatOf(pixel)) is the pixel, for [lng, lat] pairs and MapLibre's {lng, lat}", async () => {
  const { ChronozarrLayer } = await import("../chronozarr/map/layer.js");
  const { pixelOf } = await import("../chronozarr/metadata.js");
  // A UTM 31N store of 700 x 900 pixels of 10 m, cells of 256 (as the Python writer lays it out).
  const L = { path: "0", transform: [10, 0, 500000, 0, -10, 4650000], height: 700, width: 900, cs: 256, grid: [3, 4] };
  const store = {
    crs: "EPSG:32631",
    levels: [L],
    nTime: 1,
    nBands: 1,
    bands: [{ name: "B04", scale: 1, offset: 0 }],
    hasMask: false,
    bounds: () => ({ x0: 500000, x1: 509000, y0: 4643000, y1: 4650000 }),
    pixelAt: ({ x, y }) => {
      const p = pixelOf(L.transform, x, y);
      return p.row >= 0 && p.col >= 0 && p.row < L.height && p.col < L.width ? p : null;
    },
  };
  const layer = new ChronozarrLayer(store, { mode: "band", band: 0 });
  let seed = 7;
  const rand = (n) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
  const pixels = [
    { row: 0, col: 0 },
    { row: L.height - 1, col: L.width - 1 },
    { row: 255, col: 256 },
    ...Array.from({ length: 200 }, () => ({ row: rand(L.height), col: rand(L.width) })),
  ];
  for (const p of pixels) {
    const ll = layer.lngLatOf(p);
    assert.ok(Array.isArray(ll) && ll.length === 2, "lngLatOf gives [lng, lat]");
    assert.deepEqual(layer.pixelAt(ll), p, `pixel ${p.row}, ${p.col} via [lng, lat]`);
    assert.deepEqual(layer.pixelAt({ lng: ll[0], lat: ll[1] }), p, `pixel ${p.row}, ${p.col} via {lng, lat}`);
  }
  // Outside the store: null, whichever shape.
  const [[w, s]] = layer.lngLatBounds();
  assert.equal(layer.pixelAt([w - 0.01, s - 0.01]), null);
  assert.equal(layer.pixelAt({ lng: w - 0.01, lat: s - 0.01 }), null);
});

test("an overlay canvas made early stands for a new one only with a live context, the same drawing-buffer size and preserveDrawingBuffer", async () => {
  const { fitsCanvas } = await import("../chronozarr/map/overlay.js");
  // A stand-in for overlayCanvas's result: a canvas of w x h with a context of the given state.
  const made = (w, h, { lost = false, preserve = false } = {}) => ({
    canvas: { width: w, height: h },
    gl: { isContextLost: () => lost, getContextAttributes: () => ({ preserveDrawingBuffer: preserve }) },
  });
  const like = { width: 2560, height: 1600 };
  assert.equal(fitsCanvas(made(2560, 1600), like, false), true);
  assert.equal(fitsCanvas(made(2560, 1600, { preserve: true }), like, true), true);
  // Any one difference: a new canvas (a resize would reallocate its drawing buffer; a lost
  // context draws nothing; the attribute cannot change after creation).
  assert.equal(fitsCanvas(made(2560, 1600), like, true), false);
  assert.equal(fitsCanvas(made(2560, 1600, { preserve: true }), like, false), false);
  assert.equal(fitsCanvas(made(2559, 1600), like, false), false);
  assert.equal(fitsCanvas(made(2560, 1601), like, false), false);
  assert.equal(fitsCanvas(made(2560, 1600, { lost: true }), like, false), false);
  // None made, or no context (WebGL2 refused).
  assert.equal(fitsCanvas(null, like, false), false);
  assert.equal(fitsCanvas(undefined, like, false), false);
  assert.equal(fitsCanvas({ canvas: { width: 2560, height: 1600 }, gl: null }, like, false), false);
});

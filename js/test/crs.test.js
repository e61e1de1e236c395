// The CRS of a store written by the Python writer (docs/spec.md C16): an EPSG code, and a CRS
// without one (MODIS sinusoidal, given as a pyproj CRS) that arrives as WKT2 with proj:wkt2,
// proj:projjson and _CRS.wkt on the data array.

import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { parseCrs, parseRoot } from "../chronozarr/metadata.js";
import { REPO, python } from "./fixtures.js";

const WRITE = `
import sys, numpy as np, pyproj, chronozarr
crs = 32631 if sys.argv[2] == "epsg" else pyproj.CRS.from_proj4("+proj=sinu +lon_0=0 +R=6371007.181 +units=m")
chronozarr.encode(np.ones((1, 1, 4, 4), np.uint8), sys.argv[1], times=["2024-01-01"], bands=["b"],
                  crs=crs, transform=[463.3, 0, -1e6, 0, -463.3, 5e6], chunk_size=4)
`;

function written(kind) {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cz-crs-"));
  const store = path.join(dir, "s.zarr");
  const res = spawnSync(python(), ["-c", WRITE, store, kind], { encoding: "utf8", cwd: REPO });
  try {
    assert.equal(res.status, 0, res.stderr);
    return parseRoot(JSON.parse(readFileSync(path.join(store, "zarr.json"), "utf8")));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test("an EPSG store reads as its code", () => {
  const meta = written("epsg");
  assert.deepEqual(meta.crsInfo, { text: "EPSG:32631", epsg: 32631, wkt2: null, projjson: null });
});

test("a CRS without an EPSG code reads back as WKT2 and PROJJSON", () => {
  const meta = written("sinusoidal");
  assert.equal(meta.crsInfo.epsg, null);
  assert.match(meta.crsInfo.wkt2, /^PROJCRS\[/);
  assert.equal(meta.crsInfo.wkt2, meta.crs);
  assert.equal(meta.crsInfo.projjson.type, "ProjectedCRS");
  assert.match(JSON.stringify(meta.crsInfo.projjson.conversion), /Sinusoidal/);
});

test("parseCrs without array attributes", () => {
  assert.equal(parseCrs(null), null);
  assert.deepEqual(parseCrs("ESRI:54008"), { text: "ESRI:54008", epsg: null, wkt2: null, projjson: null });
  assert.equal(parseCrs(' PROJCRS["x",BASEGEOGCRS["y"]]').wkt2, 'PROJCRS["x",BASEGEOGCRS["y"]]');
  assert.deepEqual(parseCrs('{"type":"ProjectedCRS"}').projjson, { type: "ProjectedCRS" });
});

// I/O-free parser of chronozarr metadata: the root `chronozarr` block (spec 3.2, 3.9), its
// mirrors (3.5, 3.7), the temporal block (4.1, 4.2), band objects (3.6) and the zarr.json of each
// array the reader touches (2.1, 7, 8). Every rule names the spec section it implements. Nothing
// here fetches; decoder.js feeds it documents and acts on what it returns.

import { CorruptStoreError, NotAChronozarrStoreError, UnsupportedError } from "./errors.js";
import { checkName, shown } from "./names.js";

/** Stored dtypes a store may use (spec 2.3) and the typed arrays that hold them. */
export const DTYPES = Object.freeze({
  uint8: Uint8Array,
  uint16: Uint16Array,
  int16: Int16Array,
  float32: Float32Array,
});

/** Compression codecs a reader supports (spec 8), and blosc's permitted settings. */
export const COMPRESSORS = Object.freeze(["zstd", "gzip", "blosc"]);
export const BLOSC_CNAMES = Object.freeze(["zstd", "lz4"]);
export const BLOSC_SHUFFLES = Object.freeze(["shuffle", "noshuffle"]);

/** Scale a v0.1 store's string bands read with (spec 3.6: the Sentinel-2 L2A reflectance scale). */
export const V01_DEFAULT_SCALE = 0.0001;

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

/** obj[key] when obj has it as its own property (never an inherited one such as "constructor"). */
export const own = (obj, key) => (isObject(obj) && Object.hasOwn(obj, key) ? obj[key] : undefined);

/** Limits on sizes taken from metadata, checked before anything is allocated (decision 0016). */
export const LIMITS = Object.freeze({
  // No inner chunk of a chronozarr array is this large (cs 2048, 16 float32 bands: 256 MiB).
  maxChunkBytes: 256 * 1024 * 1024,
  // Inner chunks per shard: 16 bytes of index each (a 16 MiB index).
  maxShardEntries: 1 << 20,
  // One axis of an array (2^40 pixels is 40 times the Earth's circumference at 1 mm).
  maxDimension: 2 ** 40,
  maxRank: 8,
});

/** The most bytes a compressed (or checksummed) inner chunk of `expected` decoded bytes may hold. */
export function compressedBound(expected) {
  return expected + Math.ceil(expected / 8) + 4096;
}

const isCount = (n, min = 0) => Number.isSafeInteger(n) && n >= min && n <= LIMITS.maxDimension;

// --- root block (spec 3.2, 10.1) ------------------------------------------------------------------

/**
 * Parse the root zarr.json document of a chronozarr store.
 *
 * Returns the reader's model of the store: version, variable, times, bands, nodata, temporal
 * block, optional mask/coverage/volatility names, shard_bytes, the levels mirror (or null) and
 * the consolidated metadata map (or null).
 */
export function parseRoot(doc, where = "zarr.json") {
  if (!isObject(doc)) throw new NotAChronozarrStoreError(`${where}: not a JSON object`);
  if (doc.zarr_format !== 3) {
    throw new NotAChronozarrStoreError(`${where}: zarr_format is ${shown(doc.zarr_format)}, a chronozarr store is Zarr v3`);
  }
  if (doc.node_type !== "group") {
    throw new NotAChronozarrStoreError(`${where}: the root is a ${shown(doc.node_type)}, not a group`);
  }
  const attrs = isObject(doc.attributes) ? doc.attributes : {};
  const cz = attrs.chronozarr;
  if (!isObject(cz)) {
    throw new NotAChronozarrStoreError(`${where}: no "chronozarr" attribute block: this is a Zarr group, not a chronozarr store`);
  }

  // 10.1: accept 0.1.x and 0.2.x only.
  const version = cz.spec_version;
  const m = typeof version === "string" ? /^0\.([12])\.\d+/.exec(version) : null;
  if (!m) {
    throw new UnsupportedError(`chronozarr.spec_version ${shown(version)} is not supported: this reader reads 0.1.x and 0.2.x stores`);
  }
  const isV01 = m[1] === "1";

  // Decision 0016: every node name is checked before it becomes a URL path (names.js).
  const variable = checkName(cz.variable ?? "data", "chronozarr.variable");
  const optionalName = (key) => (cz[key] == null ? null : checkName(cz[key], `chronozarr.${key}`));
  const volatilityPath = optionalName("volatility_path");
  const maskVariable = optionalName("mask_variable");
  const coverageVariable = optionalName("coverage_variable");

  const times = cz.times;
  if (!Array.isArray(times) || times.length === 0 || !times.every((s) => typeof s === "string")) {
    throw new CorruptStoreError("chronozarr.times: expected a non-empty list of ISO-8601 strings");
  }
  const timesMs = times.map((s, i) => {
    const ms = Date.parse(s);
    if (Number.isNaN(ms)) throw new CorruptStoreError(`chronozarr.times[${i}]: ${shown(s)} is not ISO-8601`);
    return ms;
  });

  const bands = parseBands(cz.bands, isV01);

  // 2.3: one number or null.
  const nodata = cz.nodata ?? null;
  if (nodata !== null && !Number.isFinite(nodata)) {
    throw new CorruptStoreError(`chronozarr.nodata: expected a number or null, got ${shown(nodata)}`);
  }

  const temporal = parseTemporal(cz.temporal, times.length);

  const levels = cz.levels == null ? null : parseLevels(cz.levels);
  let levelPaths;
  if (levels) {
    levelPaths = levels.map((l) => l.path);
  } else {
    // 10.2: without the mirror, levels come from multiscales[0].datasets[].path.
    const ds = Array.isArray(attrs.multiscales) ? attrs.multiscales[0]?.datasets : null;
    if (!Array.isArray(ds) || ds.length === 0) {
      throw new CorruptStoreError("neither chronozarr.levels nor multiscales[0].datasets lists the levels");
    }
    levelPaths = ds.map((d, i) => checkName(own(d, "path"), `multiscales[0].datasets[${i}].path`));
  }
  if (new Set(levelPaths).size !== levelPaths.length) {
    throw new CorruptStoreError(`chronozarr.levels: level paths ${shown(levelPaths)} are not distinct`);
  }

  const shardBytes = cz.shard_bytes ?? null;
  if (shardBytes !== null && !isObject(shardBytes)) {
    throw new CorruptStoreError("chronozarr.shard_bytes: expected an object {level: {key: length}}");
  }

  const history = parseHistory(cz.history, levelPaths);

  let consolidated = null;
  const cm = doc.consolidated_metadata;
  if (isObject(cm) && isObject(cm.metadata)) consolidated = cm.metadata;

  return {
    specVersion: version,
    isV01,
    variable,
    times: times.slice(),
    timesMs,
    bands,
    nodata,
    crs: cz.crs ?? null,
    crsInfo: parseCrs(cz.crs ?? null, own(own(consolidated, `${levelPaths[0]}/${variable}`), "attributes")),
    temporal,
    volatilityPath,
    maskVariable,
    coverageVariable,
    provenance: cz.provenance ?? null,
    levels,
    levelPaths,
    shardBytes,
    history,
    consolidated,
    attributes: attrs,
  };
}

/**
 * The time-series companion's block `chronozarr.history` (docs/spec.md C25): {path, levels}, or
 * null when the store has none. Every name is checked before it becomes a URL path (decision 0016).
 * @returns {{path: string, levels: string[]} | null}
 */
export function parseHistory(block, levelPaths) {
  if (block == null) return null;
  if (!isObject(block)) throw new CorruptStoreError(`chronozarr.history: expected an object, got ${shown(block)}`);
  const path = checkName(block.path, "chronozarr.history.path");
  const levels = block.levels;
  if (!Array.isArray(levels) || levels.length === 0 || new Set(levels).size !== levels.length) {
    throw new CorruptStoreError(`chronozarr.history.levels: expected a non-empty list of distinct level paths, got ${shown(levels)}`);
  }
  levels.forEach((level, i) => checkName(level, `chronozarr.history.levels[${i}]`));
  // A listed level the store lacks is the validator's finding (history.block), not a reason to
  // refuse the store: such a level is simply never read from the companion (as in Python).
  return { path, levels: levels.filter((level) => levelPaths.includes(level)) };
}

/**
 * The CRS (docs/spec.md C16): {text, epsg, wkt2, projjson}. `chronozarr.crs` is "EPSG:<n>" or,
 * for a CRS without an EPSG code, its WKT2; the level data array may add proj:wkt2 and
 * proj:projjson (zarr-conventions proj). `dataAttributes` is that array's attributes, if known.
 */
export function parseCrs(crs, dataAttributes = null) {
  if (typeof crs !== "string") return null;
  const attrs = isObject(dataAttributes) ? dataAttributes : {};
  const code = /^EPSG:(\d+)$/i.exec(crs.trim());
  if (code) return { text: crs, epsg: Number(code[1]), wkt2: null, projjson: null };
  let wkt2 = typeof attrs["proj:wkt2"] === "string" ? attrs["proj:wkt2"] : null;
  if (wkt2 === null && /^\s*[A-Z_]+\s*\[/.test(crs)) wkt2 = crs.trim();
  let projjson = isObject(attrs["proj:projjson"]) ? attrs["proj:projjson"] : null;
  if (projjson === null && crs.trim().startsWith("{")) {
    try {
      const parsed = JSON.parse(crs);
      projjson = isObject(parsed) ? parsed : null;
    } catch {
      projjson = null;
    }
  }
  return { text: crs, epsg: null, wkt2, projjson };
}

/** Band objects (3.6): strings read as {name}; scale 1 and offset 0 unless given (v0.1: 0.0001). */
export function parseBands(raw, isV01 = false, v01Scale = V01_DEFAULT_SCALE) {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new CorruptStoreError("chronozarr.bands: expected a non-empty list");
  }
  return raw.map((b, i) => {
    if (typeof b === "string") {
      return { name: b, common_name: null, scale: isV01 ? v01Scale : 1, offset: 0, units: null };
    }
    if (!isObject(b) || typeof b.name !== "string") {
      throw new CorruptStoreError(`chronozarr.bands[${i}]: expected a name or an object with "name"`);
    }
    for (const k of ["scale", "offset"]) {
      if (b[k] != null && !Number.isFinite(b[k])) {
        throw new CorruptStoreError(`chronozarr.bands[${i}].${k}: expected a number, got ${shown(b[k])}`);
      }
    }
    return {
      name: b.name,
      common_name: typeof b.common_name === "string" ? b.common_name : null,
      scale: b.scale ?? 1,
      offset: b.offset ?? 0,
      units: typeof b.units === "string" ? b.units : null,
    };
  });
}

/**
 * The temporal block (4.1, 4.2). A v0.1 block has no "encoding" and is star-delta (13).
 * Returns {encoding, anchorInterval, anchors:Set, reference(t) -> anchor index or null}.
 */
export function parseTemporal(raw, nTime) {
  if (!isObject(raw)) throw new CorruptStoreError("chronozarr.temporal: expected an object");
  const encoding = raw.encoding ?? "star-delta";
  if (encoding !== "none" && encoding !== "star-delta") {
    throw new UnsupportedError(`chronozarr.temporal.encoding ${shown(encoding)} is not supported (expected "none" or "star-delta")`);
  }
  if (encoding === "none") {
    return {
      encoding,
      anchorInterval: null,
      anchorIndices: [],
      deltaReference: {},
      selection: raw.selection ?? null,
      reference: () => null,
      isAnchor: () => true,
    };
  }
  const anchorIndices = raw.anchor_indices;
  if (!Array.isArray(anchorIndices) || !anchorIndices.every((a) => Number.isInteger(a) && a >= 0 && a < nTime)) {
    throw new CorruptStoreError(`chronozarr.temporal.anchor_indices: expected a list of timestep indices 0..${nTime - 1}`);
  }
  const interval = raw.anchor_interval ?? null;
  if (interval !== null && !(Number.isSafeInteger(interval) && interval >= 1)) {
    throw new CorruptStoreError(`chronozarr.temporal.anchor_interval: expected a positive integer, got ${shown(interval)}`);
  }
  const refs = raw.delta_reference ?? {};
  if (!isObject(refs)) throw new CorruptStoreError("chronozarr.temporal.delta_reference: expected an object");
  const anchors = new Set(anchorIndices);
  // 4.2: decode through the recorded map, never recompute it.
  const refArray = new Int32Array(nTime).fill(-1);
  for (let t = 0; t < nTime; t++) {
    if (anchors.has(t)) continue;
    const a = own(refs, String(t));
    if (!Number.isInteger(a) || !anchors.has(a)) {
      throw new CorruptStoreError(
        `chronozarr.temporal.delta_reference["${t}"]: ${a === undefined ? "missing" : `${shown(a)} is not an anchor`}`,
      );
    }
    refArray[t] = a;
  }
  return {
    encoding,
    anchorInterval: interval,
    anchorIndices: anchorIndices.slice(),
    deltaReference: { ...refs },
    selection: raw.selection ?? null,
    reference: (t) => (refArray[t] >= 0 ? refArray[t] : null),
    isAnchor: (t) => anchors.has(t),
  };
}

/** The levels mirror (3.7): [{path, resolution, transform, shape, grid}]. */
export function parseLevels(raw) {
  if (!Array.isArray(raw) || raw.length === 0) {
    throw new CorruptStoreError("chronozarr.levels: expected a non-empty list");
  }
  return raw.map((l, i) => {
    const ok =
      isObject(l) &&
      Number.isFinite(l.resolution) &&
      l.resolution > 0 &&
      Array.isArray(l.transform) &&
      l.transform.length === 6 &&
      l.transform.every(Number.isFinite) &&
      Array.isArray(l.shape) &&
      l.shape.length === 4 &&
      l.shape.every((n) => isCount(n)) &&
      Array.isArray(l.grid) &&
      l.grid.length === 2 &&
      l.grid.every((n) => isCount(n));
    if (!ok) {
      throw new CorruptStoreError(
        `chronozarr.levels[${i}]: expected {path, resolution > 0, transform (6 numbers), shape (4 sizes), grid (2 sizes)}`,
      );
    }
    return {
      path: checkName(l.path, `chronozarr.levels[${i}].path`),
      resolution: l.resolution,
      transform: l.transform.slice(),
      shape: l.shape.slice(),
      grid: l.grid.slice(),
    };
  });
}

// --- arrays (spec 2.1, 7, 8) ----------------------------------------------------------------------

const INT_RANGE = { uint8: [0, 255], uint16: [0, 65535], int16: [-32768, 32767] };

function parseFill(value, dtype, where) {
  if (typeof value === "number") {
    const range = INT_RANGE[dtype];
    if (range && !(Number.isInteger(value) && value >= range[0] && value <= range[1])) {
      throw new CorruptStoreError(`${where}: fill_value ${shown(value)} is not a ${dtype} value`);
    }
    if (!range && !Number.isFinite(value)) throw new CorruptStoreError(`${where}: fill_value ${shown(value)} out of range`);
    return value;
  }
  if (dtype !== "float32" && typeof value === "string") {
    throw new CorruptStoreError(`${where}: fill_value ${shown(value)} is not a ${dtype} value`);
  }
  if (value === "NaN") return NaN;
  if (value === "Infinity") return Infinity;
  if (value === "-Infinity") return -Infinity;
  if (typeof value === "string" && /^0x[0-9a-f]+$/i.test(value) && dtype === "float32") {
    const buf = new DataView(new ArrayBuffer(4));
    buf.setUint32(0, parseInt(value, 16));
    return buf.getFloat32(0);
  }
  if (value === null || value === undefined) return 0;
  throw new CorruptStoreError(`${where}: unreadable fill_value ${shown(value)}`);
}

function codecName(c) {
  return typeof c === "string" ? c : own(c, "name");
}

/** A codec's configuration: an object, or {} when absent; anything else is refused. */
function codecConfiguration(c, where) {
  const conf = own(c, "configuration");
  if (conf == null) return {};
  if (!isObject(conf))
    throw new CorruptStoreError(`${where}: codec ${shown(codecName(c))} configuration must be an object, got ${shown(conf)}`);
  return conf;
}

/** Optional integer setting `key` of a codec configuration, within [min, max]. */
function intSetting(conf, key, min, max, where, name) {
  const v = conf[key];
  if (v == null) return undefined;
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new CorruptStoreError(`${where}: ${name}.configuration.${key} must be an integer in ${min}..${max}, got ${shown(v)}`);
  }
  return v;
}

/**
 * Normalize a bytes-to-bytes codec chain (the `codecs` after `bytes`), refusing anything spec 8
 * does not allow with an error naming the codec and the array.
 */
function parseCompressors(list, where) {
  const out = [];
  for (const [i, c] of list.entries()) {
    const name = codecName(c);
    if (typeof name !== "string") throw new CorruptStoreError(`${where}: codec ${i + 1} has no name (got ${shown(c)})`);
    const conf = codecConfiguration(c, where);
    if (name === "crc32c") {
      if (i !== list.length - 1) throw new UnsupportedError(`${where}: crc32c must be the last codec`);
      out.push({ name, configuration: conf });
      continue;
    }
    if (!COMPRESSORS.includes(name)) {
      throw new UnsupportedError(
        `${where}: unsupported codec "${name}" (this reader supports bytes, zstd, gzip, blosc and crc32c; spec 8)`,
      );
    }
    // Decision 0016: settings of the wrong type are typed errors here, never deep in a codec class.
    if (name === "zstd") {
      intSetting(conf, "level", -131072, 22, where, name);
      if (conf.checksum != null && typeof conf.checksum !== "boolean") {
        throw new CorruptStoreError(`${where}: zstd.configuration.checksum must be a boolean, got ${shown(conf.checksum)}`);
      }
    }
    if (name === "gzip") intSetting(conf, "level", 0, 9, where, name);
    if (name === "blosc") {
      const cname = conf.cname ?? "lz4";
      const shuffle = conf.shuffle ?? "noshuffle";
      intSetting(conf, "clevel", 0, 9, where, name);
      intSetting(conf, "typesize", 1, 255, where, name);
      intSetting(conf, "blocksize", 0, 2 ** 31 - 1, where, name);
      if (!BLOSC_CNAMES.includes(cname)) {
        throw new UnsupportedError(`${where}: unsupported codec blosc with cname ${shown(cname)} (supported: zstd, lz4; spec 8)`);
      }
      if (!BLOSC_SHUFFLES.includes(shuffle)) {
        throw new UnsupportedError(
          `${where}: unsupported codec blosc with shuffle ${shown(shuffle)} (supported: shuffle, noshuffle; spec 8)`,
        );
      }
    }
    out.push({ name, configuration: conf });
  }
  // Spec 8: exactly one compressor (optionally followed by crc32c); the reader bounds its output
  // by the chunk's decoded size, which a second compressor's input would not be.
  if (out.filter((c) => c.name !== "crc32c").length > 1) {
    throw new UnsupportedError(`${where}: more than one compressor (spec 8 allows one of zstd, gzip, blosc)`);
  }
  return out;
}

/** Split a codec list into the bytes codec (endian) and the compressor chain that follows it. */
function parseChain(codecs, where) {
  if (!Array.isArray(codecs) || codecs.length === 0) throw new CorruptStoreError(`${where}: empty codec list`);
  const first = codecName(codecs[0]);
  if (first !== "bytes") {
    throw new UnsupportedError(
      `${where}: unsupported codec "${first}" before the bytes codec (a chronozarr array starts with bytes; spec 8)`,
    );
  }
  const endian = codecConfiguration(codecs[0], where).endian ?? "little";
  if (endian !== "little" && endian !== "big") {
    throw new CorruptStoreError(`${where}: bytes codec endian ${shown(endian)}`);
  }
  return { endian, compressors: parseCompressors(codecs.slice(1), where) };
}

/**
 * Parse an array's zarr.json. `allowed` lists the dtypes accepted for this role. The result holds
 * what the reader needs to locate and decode any chunk: shape, dtype, fill value, the chunk grid
 * (outer = shard when sharded), the inner chunk shape and codec chains, and the key encoding.
 */
export function parseArray(doc, path, allowed = Object.keys(DTYPES)) {
  const where = `${path}/zarr.json`;
  if (!isObject(doc) || doc.node_type !== "array") {
    throw new CorruptStoreError(`${where}: expected a Zarr v3 array document`);
  }
  const dtype = doc.data_type;
  if (typeof dtype !== "string" || !allowed.includes(dtype)) {
    throw new UnsupportedError(`${where}: unsupported data_type ${shown(dtype)} (this reader supports ${allowed.join(", ")}; spec 2.3)`);
  }
  const shape = doc.shape;
  if (!Array.isArray(shape) || shape.length === 0 || shape.length > LIMITS.maxRank || !shape.every((n) => isCount(n))) {
    throw new CorruptStoreError(`${where}: malformed shape ${shown(shape)} (1 to ${LIMITS.maxRank} sizes of at most 2^40)`);
  }
  const grid = doc.chunk_grid;
  if (!isObject(grid) || grid.name !== "regular" || !Array.isArray(own(grid.configuration, "chunk_shape"))) {
    throw new UnsupportedError(`${where}: unsupported chunk_grid ${shown(own(grid, "name"))} (regular only)`);
  }
  const chunkShape = grid.configuration.chunk_shape;
  if (chunkShape.length !== shape.length) throw new CorruptStoreError(`${where}: chunk_shape rank differs from shape`);
  if (!chunkShape.every((n) => isCount(n, 1))) {
    throw new CorruptStoreError(`${where}: chunk_grid.configuration.chunk_shape ${shown(chunkShape)} must hold positive integers`);
  }

  const kenc = doc.chunk_key_encoding ?? { name: "default" };
  if (!isObject(kenc))
    throw new CorruptStoreError(`${where}: chunk_key_encoding must be an object {name, configuration}, got ${shown(kenc)}`);
  const kname = own(kenc, "name");
  const kconf = own(kenc, "configuration") ?? {};
  if (!isObject(kconf)) throw new CorruptStoreError(`${where}: chunk_key_encoding.configuration must be an object`);
  let keyEncoding;
  if (kname === "default") keyEncoding = { prefix: "c", sep: kconf.separator ?? "/" };
  else if (kname === "v2") keyEncoding = { prefix: null, sep: kconf.separator ?? "." };
  else throw new UnsupportedError(`${where}: unsupported chunk_key_encoding ${shown(kname)}`);
  if (keyEncoding.sep !== "/" && keyEncoding.sep !== ".") {
    throw new CorruptStoreError(`${where}: chunk_key_encoding separator ${shown(keyEncoding.sep)} is not "/" or "." (Zarr v3 9.2)`);
  }

  const codecs = doc.codecs;
  if (!Array.isArray(codecs) || codecs.length === 0) throw new CorruptStoreError(`${where}: no codecs`);
  let sharding = null;
  let chain;
  if (codecName(codecs[0]) === "sharding_indexed") {
    if (codecs.length !== 1) {
      throw new UnsupportedError(`${where}: codecs after sharding_indexed are not supported`);
    }
    const conf = codecConfiguration(codecs[0], where);
    const inner = conf.chunk_shape;
    if (!Array.isArray(inner) || inner.length !== shape.length || !inner.every((n) => isCount(n, 1))) {
      throw new CorruptStoreError(`${where}: sharding_indexed.chunk_shape missing, of the wrong rank or not positive integers`);
    }
    for (let d = 0; d < inner.length; d++) {
      if (chunkShape[d] % inner[d] !== 0) {
        throw new CorruptStoreError(`${where}: shard shape ${chunkShape} is not a multiple of ${inner}`);
      }
    }
    chain = parseChain(conf.codecs, `${where} (sharding_indexed.codecs)`);
    const ic = conf.index_codecs ?? [{ name: "bytes" }, { name: "crc32c" }];
    const indexChain = parseChain(ic, `${where} (sharding_indexed.index_codecs)`);
    if (indexChain.compressors.some((c) => c.name !== "crc32c")) {
      throw new UnsupportedError(`${where}: index_codecs other than bytes and crc32c are not supported`);
    }
    if (indexChain.endian !== "little") throw new UnsupportedError(`${where}: big-endian shard index`);
    const location = conf.index_location ?? "end";
    if (location !== "end" && location !== "start") {
      throw new CorruptStoreError(`${where}: index_location ${shown(location)}`);
    }
    const perShard = chunkShape.map((s, d) => s / inner[d]);
    const nEntries = perShard.reduce((a, b) => a * b, 1);
    if (nEntries > LIMITS.maxShardEntries) {
      throw new CorruptStoreError(`${where}: ${nEntries} inner chunks per shard (at most ${LIMITS.maxShardEntries})`);
    }
    sharding = {
      innerShape: inner.slice(),
      perShard,
      nEntries,
      indexLocation: location,
      indexCrc: indexChain.compressors.length > 0,
      indexBytes: 16 * nEntries + (indexChain.compressors.length > 0 ? 4 : 0),
    };
  } else {
    chain = parseChain(codecs, where);
  }
  const innerShape = sharding ? sharding.innerShape : chunkShape.slice();
  const chunkGrid = shape.map((s, d) => Math.ceil(s / innerShape[d]));
  const TypedArray = DTYPES[dtype];
  // Decision 0016: a chunk's decoded size is fixed by the metadata; refuse an absurd one before any
  // buffer is sized by it (a fill chunk, a decode).
  const innerBytes = innerShape.reduce((a, b) => a * b, 1) * TypedArray.BYTES_PER_ELEMENT;
  if (innerBytes > LIMITS.maxChunkBytes) {
    throw new CorruptStoreError(
      `${where}: an inner chunk of ${innerShape.join(" x ")} ${dtype} (${innerBytes} bytes) is absurd (at most ${LIMITS.maxChunkBytes})`,
    );
  }
  return {
    path,
    shape: shape.slice(),
    dtype,
    TypedArray,
    bytesPerElement: TypedArray.BYTES_PER_ELEMENT,
    fillValue: parseFill(doc.fill_value, dtype, where),
    chunkShape: chunkShape.slice(),
    innerShape,
    chunkGrid,
    innerLength: innerShape.reduce((a, b) => a * b, 1),
    endian: chain.endian,
    compressors: chain.compressors,
    sharding,
    keyEncoding,
    attributes: isObject(doc.attributes) ? doc.attributes : {},
  };
}

/** Object key (relative to the store) of the chunk or shard at grid coordinates `coords`. */
export function chunkKey(array, coords) {
  const { prefix, sep } = array.keyEncoding;
  const tail = coords.join(sep);
  return prefix ? `${array.path}/${prefix}${sep}${tail}` : `${array.path}/${tail}`;
}

/**
 * Where an inner chunk lives (spec 7.1): for an unsharded array the chunk key itself; for a sharded
 * one the shard coordinates and key, the C-order entry index inside the shard and the
 * shard_bytes key "ts/r/c" (the shard coordinates without the band axis).
 */
export function locateChunk(array, coords) {
  if (!array.sharding) return { key: chunkKey(array, coords), sharded: false };
  const { perShard } = array.sharding;
  const shard = coords.map((c, d) => Math.floor(c / perShard[d]));
  let entry = 0;
  for (let d = 0; d < coords.length; d++) entry = entry * perShard[d] + (coords[d] - shard[d] * perShard[d]);
  return { key: chunkKey(array, shard), sharded: true, shard, entry };
}

/**
 * Decode a shard index (spec 7.2): `bytes` holds 16 * n little-endian uint64 (offset, nbytes)
 * pairs, then the crc32c when `crc` is a function. Returns Float64Array [off0, n0, off1, n1, ...]
 * with -1 marking an empty inner chunk.
 */
export function decodeShardIndex(bytes, nEntries, crcFn, where) {
  const expected = 16 * nEntries + (crcFn ? 4 : 0);
  if (bytes.byteLength !== expected) {
    throw new CorruptStoreError(
      `${where}: shard index is ${bytes.byteLength} bytes, expected ${expected} (a stale shard_bytes after an append? reopen the store)`,
    );
  }
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (crcFn) {
    const stored = view.getUint32(16 * nEntries, true);
    const computed = crcFn(bytes.subarray(0, 16 * nEntries));
    if (stored !== computed) {
      throw new CorruptStoreError(
        `${where}: shard index checksum mismatch (crc32c stored 0x${stored.toString(16).padStart(8, "0")}, ` +
          `computed 0x${computed.toString(16).padStart(8, "0")}): the shard is corrupt, or shard_bytes is stale after an append (reopen the store)`,
      );
    }
  }
  const out = new Float64Array(2 * nEntries);
  for (let i = 0; i < 2 * nEntries; i++) {
    const lo = view.getUint32(8 * i, true);
    const hi = view.getUint32(8 * i + 4, true);
    // Exactly 2^64 - 1 is empty; any other value above 2^53 stays inexact and is refused by
    // shard.checkIndexEntries (as a float, 2^64 - 2 would equal 2^64 - 1).
    out[i] = hi === 0xffffffff && lo === 0xffffffff ? -1 : hi * 4294967296 + lo;
  }
  for (let i = 0; i < nEntries; i++) {
    if (out[2 * i] < 0 !== out[2 * i + 1] < 0) {
      throw new CorruptStoreError(`${where}: shard index entry ${i} is half empty`);
    }
  }
  return out;
}

// --- geometry (spec 2.1, 3.3, 10.3) ---------------------------------------------------------------

/** Level choice (10.3): the largest k whose resolution does not exceed gsd; 0 if none does. */
export function levelForResolution(resolutions, gsd) {
  let best = 0;
  for (let k = 0; k < resolutions.length; k++) if (resolutions[k] <= gsd) best = k;
  return best;
}

/** Pixel (row, col) containing projected (x, y) under affine [a, b, c, d, e, f] (3.3). */
export function pixelOf(transform, x, y) {
  const [a, b, c, d, e, f] = transform;
  const det = a * e - b * d;
  const dx = x - c;
  const dy = y - f;
  const col = (e * dx - b * dy) / det;
  const row = (-d * dx + a * dy) / det;
  return { row: Math.floor(row), col: Math.floor(col) };
}

/** Projected (x, y) of the centre of pixel (row, col) (2.2). */
export function pixelCentre(transform, row, col) {
  const [a, b, c, d, e, f] = transform;
  return { x: a * (col + 0.5) + b * (row + 0.5) + c, y: d * (col + 0.5) + e * (row + 0.5) + f };
}

// chronozarr/map/gl-cells.js: the layer's GL resources per cell, kept like a cache: one vertex
// array (the cell's reprojected mesh, cells.js) and one integer texture array of the stored
// values (one layer per band the display uses) plus the mask, per "level/row/col". The stored
// values go to the GPU as they are (R16UI for uint16, ...): scale, offset, validity, band math,
// stretch and colour map run in the shader or the value table, so a new timestep costs a texture
// upload and nothing else. The least recently used cells beyond GL_CELLS are freed.
//
// A one-band value-table display may instead be coloured on the CPU (decision 0062): the cells on
// screen keep a reference to their decoded values and get an RGBA8 texture, coloured through the
// value table when drawn with new values or a new table; a cell that leaves the screen frees it,
// so that memory is bounded by the view. Either texture is made from the cell's values when the
// program that draws it needs it (the display's path changed since the values came).

import { colourValues } from "./value-lut.js";

/** GL cells (mesh + textures) kept before the least recently used is freed. */
export const GL_CELLS = 96;

/** Texture formats of each stored dtype (the shader's sampler reads them as they are). */
export const TEX = Object.freeze({
  uint8: { sampler: "usampler2DArray", internal: "R8UI", format: "RED_INTEGER", type: "UNSIGNED_BYTE" },
  uint16: { sampler: "usampler2DArray", internal: "R16UI", format: "RED_INTEGER", type: "UNSIGNED_SHORT" },
  int16: { sampler: "isampler2DArray", internal: "R16I", format: "RED_INTEGER", type: "SHORT" },
  float32: { sampler: "sampler2DArray", internal: "R32F", format: "RED", type: "FLOAT" },
});

/**
 * A cell's GL resources. `content` names the values it holds ("t|display key"), `texContent`
 * what its integer textures hold, `colourKey` what its RGBA8 texture holds (content and table).
 * @typedef {object} GLCell
 * @property {string} key
 * @property {number} level
 * @property {number} row
 * @property {number} col
 * @property {number} w
 * @property {number} h
 * @property {WebGLVertexArrayObject} vao
 * @property {WebGLBuffer} vbo
 * @property {WebGLBuffer} ibo
 * @property {number} count
 * @property {[number, number, number, number]} bounds the mesh's [minX, minY, maxX, maxY] (mercator, relative to the layer's origin)
 * @property {WebGLTexture | null} tex
 * @property {number} layers
 * @property {WebGLTexture | null} maskTex
 * @property {string | null} content
 * @property {string | null} texContent
 * @property {CellSource | null} source the values of `content`, kept while the cell is on screen
 * @property {WebGLTexture | null} rgbaTex
 * @property {string | null} colourKey
 */

/**
 * A cell's decoded values as the loader gave them: the display's bands of `frame` (in texture-layer
 * order), of `dtype`.
 * @typedef {{frame: {data: {data: import("../types.js").StoredArray}, mask: Uint8Array | null}, bands: number[], dtype: import("../types.js").DType}} CellSource
 */

/** @import {CellMesh, Cell} from "./cells.js" */

/**
 * @param {number} level
 * @param {Cell} c
 */
export function cellKey(level, c) {
  return `${level}/${c.row}/${c.col}`;
}

export class GLCells {
  /**
   * @param {{uploads: number, uploadBytes: number}} [stats] counts uploads into this object (the layer's stats)
   * @param {number} [max] cells kept
   */
  constructor(stats = { uploads: 0, uploadBytes: 0 }, max = GL_CELLS) {
    this.stats = stats;
    this.max = max;
    /** @type {Map<string, GLCell>} in LRU order */
    this._cells = new Map();
    /** Scratch colours of one cell (colour), grown to the largest cell. */
    this._rgba = new Uint32Array(0);
  }

  /**
   * The cell under its key, if it has GL resources.
   * @param {number} level
   * @param {Cell} cell
   */
  get(level, cell) {
    return this._cells.get(cellKey(level, cell));
  }

  /**
   * The GL cell of (level, cell), made from `mesh()` when absent; marks it most recently used and
   * frees the least recently used beyond `max`, never one of `keep` (the cells on screen).
   * @param {WebGL2RenderingContext} gl
   * @param {number} level
   * @param {Cell} cell
   * @param {() => CellMesh} mesh
   * @param {Iterable<GLCell | undefined>} keep
   * @returns {GLCell}
   */
  cell(gl, level, cell, mesh, keep) {
    const key = cellKey(level, cell);
    let c = this._cells.get(key);
    if (c) {
      this._cells.delete(key); // LRU order
      this._cells.set(key, c);
      return c;
    }
    const { verts, idx, w, h } = mesh();
    const vao = gl.createVertexArray();
    gl.bindVertexArray(vao);
    const vbo = gl.createBuffer();
    gl.bindBuffer(gl.ARRAY_BUFFER, vbo);
    gl.bufferData(gl.ARRAY_BUFFER, verts, gl.STATIC_DRAW);
    gl.enableVertexAttribArray(0);
    gl.vertexAttribPointer(0, 2, gl.FLOAT, false, 16, 0);
    gl.enableVertexAttribArray(1);
    gl.vertexAttribPointer(1, 2, gl.FLOAT, false, 16, 8);
    const ibo = gl.createBuffer();
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, ibo);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, idx, gl.STATIC_DRAW);
    gl.bindVertexArray(null);
    c = {
      key,
      level,
      row: cell.row,
      col: cell.col,
      w,
      h,
      vao,
      vbo,
      ibo,
      count: idx.length,
      bounds: meshBounds(verts),
      tex: null,
      layers: 0,
      maskTex: null,
      content: null,
      texContent: null,
      source: null,
      rgbaTex: null,
      colourKey: null,
    };
    this._cells.set(key, c);
    const kept = new Set(keep);
    for (const [k, old] of this._cells) {
      if (this._cells.size <= this.max) break;
      if (kept.has(old) || old === c) continue;
      free(gl, old);
      this._cells.delete(k);
    }
    return c;
  }

  /**
   * Give a cell a decoded cell-timestep: `bands` of `frame.data` (the display's, in texture-layer
   * order) and the mask when there is one. `content` names what it now holds. With `textures`
   * (false: the cell is coloured on the CPU when drawn, colour) its integer textures are uploaded.
   * @param {WebGL2RenderingContext} gl
   * @param {GLCell} c
   * @param {CellSource["frame"]} frame
   * @param {number[]} bands
   * @param {import("../types.js").DType} dtype
   * @param {string} content
   * @param {boolean} [textures]
   */
  upload(gl, c, frame, bands, dtype, content, textures = true) {
    c.source = { frame, bands, dtype };
    c.content = content;
    c.colourKey = null;
    if (textures) this.textures(gl, c);
  }

  /**
   * The cell's integer textures hold its content: uploaded from its values when they do not.
   * False when they do not and its values are gone (not drawn then).
   * @param {WebGL2RenderingContext} gl
   * @param {GLCell} c
   */
  textures(gl, c) {
    if (c.texContent === c.content && c.tex) return true;
    if (!c.source) return false;
    const { frame, bands, dtype } = c.source;
    const { data, mask } = frame;
    const tex = TEX[dtype];
    const n = c.w * c.h;
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.pixelStorei(gl.UNPACK_FLIP_Y_WEBGL, false);
    gl.pixelStorei(gl.UNPACK_PREMULTIPLY_ALPHA_WEBGL, false);
    if (!c.tex || c.layers !== bands.length) {
      if (c.tex) gl.deleteTexture(c.tex);
      c.tex = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
      gl.texStorage3D(gl.TEXTURE_2D_ARRAY, 1, gl[tex.internal], c.w, c.h, bands.length);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D_ARRAY, p, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D_ARRAY, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      gl.texParameteri(gl.TEXTURE_2D_ARRAY, gl.TEXTURE_WRAP_T, gl.CLAMP_TO_EDGE);
      c.layers = bands.length;
    } else {
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
    }
    bands.forEach((b, l) => {
      gl.texSubImage3D(gl.TEXTURE_2D_ARRAY, 0, 0, 0, l, c.w, c.h, 1, gl[tex.format], gl[tex.type], data.data.subarray(b * n, (b + 1) * n));
    });
    this.stats.uploadBytes += bands.length * n * data.data.BYTES_PER_ELEMENT;
    if (mask) {
      if (!c.maskTex) {
        c.maskTex = gl.createTexture();
        gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
        gl.texStorage2D(gl.TEXTURE_2D, 1, gl.R8UI, c.w, c.h);
        for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
      } else {
        gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
      }
      gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, c.w, c.h, gl.RED_INTEGER, gl.UNSIGNED_BYTE, mask);
      this.stats.uploadBytes += n;
    }
    this.stats.uploads++;
    c.texContent = c.content;
    return true;
  }

  /**
   * The cell's RGBA8 texture holds its values coloured through `table` (named `key`): coloured on
   * the CPU (value-lut.js colourValues) and uploaded when it does not. False without values.
   * @param {WebGL2RenderingContext} gl
   * @param {GLCell} c
   * @param {Uint32Array} table the value table as 32-bit words
   * @param {number} base
   * @param {string} key names the table (display, stretch, colour map, opacity)
   */
  colour(gl, c, table, base, key) {
    const want = `${c.content}|${key}`;
    if (c.colourKey === want && c.rgbaTex) return true;
    if (!c.source) return false;
    const n = c.w * c.h;
    if (this._rgba.length < n) this._rgba = new Uint32Array(n);
    const out = this._rgba.subarray(0, n);
    const { frame, bands } = c.source;
    const b = bands[0];
    colourValues(frame.data.data.subarray(b * n, (b + 1) * n), frame.mask, table, base, out);
    if (!c.rgbaTex) {
      c.rgbaTex = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, c.rgbaTex);
      gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, c.w, c.h);
      for (const p of [gl.TEXTURE_MIN_FILTER, gl.TEXTURE_MAG_FILTER]) gl.texParameteri(gl.TEXTURE_2D, p, gl.NEAREST);
    } else {
      gl.bindTexture(gl.TEXTURE_2D, c.rgbaTex);
    }
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.texSubImage2D(gl.TEXTURE_2D, 0, 0, 0, c.w, c.h, gl.RGBA, gl.UNSIGNED_BYTE, new Uint8Array(out.buffer, 0, n * 4));
    this.stats.uploads++;
    this.stats.uploadBytes += n * 4;
    c.colourKey = want;
    return true;
  }

  /**
   * The cells on screen are now `shown`: every other cell lets go of its values and frees its
   * RGBA8 texture (memory bounded by the view); one whose integer textures do not hold its
   * content forgets it (read again when shown).
   * @param {WebGL2RenderingContext} gl
   * @param {Iterable<GLCell | undefined>} shown
   */
  retain(gl, shown) {
    const kept = new Set(shown);
    for (const c of this._cells.values()) {
      if (kept.has(c)) continue;
      if (c.source && c.texContent !== c.content) c.content = null;
      c.source = null;
      if (c.rgbaTex) gl.deleteTexture(c.rgbaTex);
      c.rgbaTex = null;
      c.colourKey = null;
    }
  }

  /**
   * Free every cell's GL resources.
   * @param {WebGL2RenderingContext} gl
   */
  clear(gl) {
    for (const c of this._cells.values()) free(gl, c);
    this._cells.clear();
  }
}

/**
 * The [minX, minY, maxX, maxY] of a mesh's vertices (x, y, u, v per vertex): every fragment of
 * its triangles lies inside.
 * @param {Float32Array} verts
 * @returns {[number, number, number, number]}
 */
export function meshBounds(verts) {
  const b = /** @type {[number, number, number, number]} */ ([Infinity, Infinity, -Infinity, -Infinity]);
  for (let i = 0; i < verts.length; i += 4) {
    b[0] = Math.min(b[0], verts[i]);
    b[1] = Math.min(b[1], verts[i + 1]);
    b[2] = Math.max(b[2], verts[i]);
    b[3] = Math.max(b[3], verts[i + 1]);
  }
  return b;
}

/**
 * @param {WebGL2RenderingContext} gl
 * @param {GLCell} c
 */
function free(gl, c) {
  gl.deleteVertexArray(c.vao);
  gl.deleteBuffer(c.vbo);
  gl.deleteBuffer(c.ibo);
  if (c.tex) gl.deleteTexture(c.tex);
  if (c.maskTex) gl.deleteTexture(c.maskTex);
  if (c.rgbaTex) gl.deleteTexture(c.rgbaTex);
}

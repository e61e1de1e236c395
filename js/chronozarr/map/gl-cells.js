// chronozarr/map/gl-cells.js: the layer's GL resources per cell, kept like a cache: one vertex
// array (the cell's reprojected mesh, cells.js) and one integer texture array of the stored
// values (one layer per band the display uses) plus the mask, per "level/row/col". The stored
// values go to the GPU as they are (R16UI for uint16, ...): scale, offset, validity, band math,
// stretch and colour map run in the shader or the value table, so a new timestep costs a texture
// upload and nothing else. The least recently used cells beyond GL_CELLS are freed.

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
 * A cell's GL resources. `content` names what its textures hold ("t|display key").
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
 * @property {WebGLTexture | null} tex
 * @property {number} layers
 * @property {WebGLTexture | null} maskTex
 * @property {string | null} content
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
      tex: null,
      layers: 0,
      maskTex: null,
      content: null,
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
   * Upload a decoded cell-timestep into a cell's textures: `bands` of `data` (the display's, in
   * texture-layer order) and the mask when there is one. `content` names what it now holds.
   * @param {WebGL2RenderingContext} gl
   * @param {GLCell} c
   * @param {{data: {data: import("../types.js").StoredArray}, mask: Uint8Array | null}} frame
   * @param {number[]} bands
   * @param {import("../types.js").DType} dtype
   * @param {string} content
   */
  upload(gl, c, { data, mask }, bands, dtype, content) {
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
    c.content = content;
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
 * @param {WebGL2RenderingContext} gl
 * @param {GLCell} c
 */
function free(gl, c) {
  gl.deleteVertexArray(c.vao);
  gl.deleteBuffer(c.vbo);
  gl.deleteBuffer(c.ibo);
  if (c.tex) gl.deleteTexture(c.tex);
  if (c.maskTex) gl.deleteTexture(c.maskTex);
}

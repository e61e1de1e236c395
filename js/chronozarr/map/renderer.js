// chronozarr/map/renderer.js: draws the layer's cells in a WebGL2 context: the program for the
// display (program.js, compiled on first use and after a display change), its uniforms, the
// colour map's texture or the display's value table (value-lut.js, rebuilt when the display,
// stretch, colour map or opacity changes), one draw call per cell. A value-table display is
// coloured on the CPU by default (decision 0062): the cells on screen get RGBA8 textures coloured
// through the table (gl-cells.js colour), drawn with one texel fetch per fragment.

import { COLORMAPS } from "./colormaps.js";
import { compileProgram, usesValueLut } from "./program.js";
import { buildValueLut, displayValues } from "./value-lut.js";

/**
 * What a draw shows.
 * @typedef {object} DrawState
 * @property {import("./display.js").DisplaySpec} spec
 * @property {{min: number, max: number}} stretch
 * @property {string} colormap
 * @property {number} opacity
 * @property {boolean} valueLut false: colour one-band integer displays per fragment
 * @property {boolean} [cpuColour] false: a value-table display fetches its colours on the GPU (decision 0062)
 */

/** @import {GLCell} from "./gl-cells.js" */
/** @import {Program} from "./program.js" */

export class Renderer {
  /**
   * @param {import("./program.js").StoreInfo & {nBands: number}} store
   * @param {import("./gl-cells.js").GLCells} glCells the cells' textures, made when a program needs them
   */
  constructor(store, glCells) {
    this.store = store;
    this.glCells = glCells;
    /** The program of the current display; null: compiled at the next draw. @type {Program | null} */
    this.program = null;
    /** @type {WebGLTexture | null} */
    this._lutTex = null;
    this._lutDirty = true;
    /** @type {WebGLTexture | null} */
    this._vlutTex = null;
    /** What the value table's texture holds. @type {string | null} */
    this._vlutKey = null;
    /** The display values of the value table's display (value-lut.js displayValues). @type {{key: string, values: Float64Array} | null} */
    this._values = null;
    /** The value table on the CPU: its key, its RGBA8 words and the index of value 0. @type {{key: string, words: Uint32Array, base: number, lut: ReturnType<typeof buildValueLut>} | null} */
    this._vlut = null;
  }

  /**
   * True when `state` colours its cells on the CPU (decision 0062): a value-table display, unless
   * told not to (`cpuColour: false`).
   * @param {DrawState} state
   */
  coloursOnCpu(state) {
    return state.cpuColour !== false && usesValueLut(state.spec, this.store.dtype, state.valueLut);
  }

  /**
   * Take a context: the colour map's texture is made in it.
   * @param {WebGL2RenderingContext} gl
   */
  attach(gl) {
    this._lutTex = gl.createTexture();
    this._lutDirty = true;
  }

  /**
   * Compile the program for `state` now (e.g. while the first chunks are in flight).
   * @param {WebGL2RenderingContext} gl
   * @param {DrawState} state
   */
  compile(gl, state) {
    this.program = compileProgram(gl, this.store, state.spec, state.valueLut, this.coloursOnCpu(state));
    // The value table's display values need no stretch: computed now too (decision 0061).
    if (this.program.valueLut) this._displayValues(state.spec);
  }

  /**
   * Compile again when `state` colours a value-table display the other way than the program does
   * (the first frame fetches its colours on the GPU, later ones are coloured on the CPU: decision
   * 0073); the old program is deleted.
   * @param {WebGL2RenderingContext} gl
   * @param {DrawState} state
   */
  recompile(gl, state) {
    if (!this.program?.valueLut || !!this.program.cpuColour === this.coloursOnCpu(state)) return;
    gl.deleteProgram(this.program.program);
    this.program = null;
    this.compile(gl, state);
  }

  /**
   * The display values of the value table for `spec` (kept while the display is the same).
   * @param {import("./display.js").DisplaySpec} spec
   */
  _displayValues(spec) {
    if (this._values?.key === spec.key) return this._values.values;
    const s = this.store;
    const b = spec.bands[0];
    const phys = new Array(s.nBands).fill(0);
    const fn = spec.fn;
    const values = displayValues({
      dtype: s.dtype,
      nodata: s.nodata,
      hasMask: s.hasMask,
      scale: s.bands[b].scale,
      offset: s.bands[b].offset,
      fn: (v) => {
        phys[b] = v;
        return fn(phys);
      },
    });
    this._values = { key: spec.key, values };
    return values;
  }

  /** The display changed: compile again at the next draw. */
  displayChanged() {
    this.program = null;
  }

  /** The colour map changed: upload it again at the next draw. */
  colormapChanged() {
    this._lutDirty = true;
  }

  /**
   * Draw `cells` with the camera `matrix` (Web Mercator [0, 1] relative to the cells' origin, to
   * clip space). Nothing without cells or a stretch.
   * @param {WebGL2RenderingContext} gl
   * @param {Float32Array} matrix
   * @param {(GLCell | undefined)[]} cells
   * @param {DrawState} state
   */
  draw(gl, matrix, cells, state) {
    if (!cells.length || !state.stretch) return;
    this.recompile(gl, state);
    if (!this.program) this.compile(gl, state);
    const { program, u } = this.program;
    gl.useProgram(program);
    gl.uniformMatrix4fv(u.u_matrix, false, matrix);
    this._blend(gl, state);
    if (this.program.cpuColour) {
      this._drawCpuColoured(gl, cells, state);
      return;
    }
    if (this.program.valueLut) {
      gl.uniform1i(u.u_data, 0);
      gl.uniform1i(u.u_mask, 1);
      gl.uniform1i(u.u_vlut, 2);
      this._bindValueLut(gl, state);
    } else {
      this._bindStretchUniforms(gl, this.program, state);
    }
    for (const c of cells) {
      if (!c || !this.glCells.textures(gl, c)) continue;
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D_ARRAY, c.tex);
      gl.activeTexture(gl.TEXTURE1);
      gl.bindTexture(gl.TEXTURE_2D, c.maskTex);
      gl.uniform2i(u.u_size, c.w, c.h);
      gl.bindVertexArray(c.vao);
      gl.drawElements(gl.TRIANGLES, c.count, gl.UNSIGNED_SHORT, 0);
    }
    gl.bindVertexArray(null);
    gl.activeTexture(gl.TEXTURE0);
  }

  /**
   * The cells coloured on the CPU (decision 0062): each one's RGBA8 texture, recoloured when its
   * values or the table changed, one fetch per fragment.
   * @param {WebGL2RenderingContext} gl
   * @param {(GLCell | undefined)[]} cells
   * @param {DrawState} state
   */
  _drawCpuColoured(gl, cells, state) {
    const { u } = this.program;
    const { words, base } = this._valueTable(state);
    gl.uniform1i(u.u_rgba, 0);
    for (const c of cells) {
      if (!c || !this.glCells.colour(gl, c, words, base, this._vlut.key)) continue;
      gl.activeTexture(gl.TEXTURE0);
      gl.bindTexture(gl.TEXTURE_2D, c.rgbaTex);
      gl.uniform2i(u.u_size, c.w, c.h);
      gl.bindVertexArray(c.vao);
      gl.drawElements(gl.TRIANGLES, c.count, gl.UNSIGNED_SHORT, 0);
    }
    gl.bindVertexArray(null);
  }

  /**
   * Blending for `state`'s opacity, and no depth, stencil or culling.
   * @param {WebGL2RenderingContext} gl
   * @param {DrawState} state
   */
  _blend(gl, state) {
    // Opaque (opacity 1): every fragment is either written with alpha 1 or discarded (or, coloured
    // on the CPU, written transparent over the cleared canvas), so blending would give the same pixels; without it the software rasterizer (SwiftShader)
    // does not read the framebuffer back per fragment.
    if (state.opacity < 1) {
      gl.enable(gl.BLEND);
      gl.blendFunc(gl.ONE, gl.ONE_MINUS_SRC_ALPHA);
    } else {
      gl.disable(gl.BLEND);
    }
    gl.disable(gl.DEPTH_TEST);
    gl.disable(gl.STENCIL_TEST);
    gl.disable(gl.CULL_FACE);
  }

  /**
   * Uniforms and colour map of the per-fragment path (scale, offset, band math, stretch).
   * @param {WebGL2RenderingContext} gl
   * @param {Program} program
   * @param {DrawState} state
   */
  _bindStretchUniforms(gl, { u, scale, offset }, state) {
    if (this._lutDirty) {
      gl.bindTexture(gl.TEXTURE_2D, this._lutTex);
      gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, 256, 1, 0, gl.RGBA, gl.UNSIGNED_BYTE, COLORMAPS[state.colormap].lut);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
      gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_WRAP_S, gl.CLAMP_TO_EDGE);
      this._lutDirty = false;
    }
    gl.uniform1fv(u.u_scale, scale);
    gl.uniform1fv(u.u_offset, offset);
    gl.uniform1f(u.u_min, state.stretch.min);
    gl.uniform1f(u.u_max, state.stretch.max);
    gl.uniform1f(u.u_opacity, state.opacity);
    gl.uniform1i(u.u_data, 0);
    gl.uniform1i(u.u_mask, 1);
    gl.uniform1i(u.u_lut, 2);
    gl.uniform1i(u.u_hasMask, this.store.hasMask ? 1 : 0);
    gl.activeTexture(gl.TEXTURE2);
    gl.bindTexture(gl.TEXTURE_2D, this._lutTex);
  }

  /**
   * The value table for the current display, stretch, colour map and opacity (rebuilt on change).
   * @param {WebGL2RenderingContext} gl
   * @param {DrawState} state
   */
  _bindValueLut(gl, state) {
    const { key, lut } = this._valueTable(state);
    if (!this._vlutTex) this._vlutTex = gl.createTexture();
    gl.activeTexture(gl.TEXTURE2);
    gl.bindTexture(gl.TEXTURE_2D, this._vlutTex);
    if (this._vlutKey === key) return;
    gl.pixelStorei(gl.UNPACK_ALIGNMENT, 1);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA8, lut.width, lut.height, 0, gl.RGBA, gl.UNSIGNED_BYTE, lut.data);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MIN_FILTER, gl.NEAREST);
    gl.texParameteri(gl.TEXTURE_2D, gl.TEXTURE_MAG_FILTER, gl.NEAREST);
    this._vlutKey = key;
  }

  /**
   * The value table of the current display, stretch, colour map and opacity, built on the CPU
   * (value-lut.js) when any of them changed.
   * @param {DrawState} state
   */
  _valueTable({ spec, stretch, colormap, opacity }) {
    const key = `${spec.key}|${stretch.min}|${stretch.max}|${colormap}|${opacity}`;
    if (this._vlut?.key === key) return this._vlut;
    const s = this.store;
    const lut = buildValueLut({
      dtype: s.dtype,
      min: stretch.min,
      max: stretch.max,
      colormap: COLORMAPS[colormap].lut,
      opacity,
      values: this._displayValues(spec),
    });
    this._vlut = { key, words: new Uint32Array(lut.data.buffer, lut.data.byteOffset, lut.data.length / 4), base: lut.base, lut };
    return this._vlut;
  }

  /**
   * Free the program and the textures of `gl`.
   * @param {WebGL2RenderingContext} gl
   */
  detach(gl) {
    if (this.program) gl.deleteProgram(this.program.program);
    this.program = null;
    gl.deleteTexture(this._lutTex);
    if (this._vlutTex) gl.deleteTexture(this._vlutTex);
    this._vlutTex = null;
    this._vlutKey = null;
    this._vlut = null;
  }
}

/**
 * Resolves once the GPU has run every command issued to `gl` so far (a WebGL2 fence; at once
 * without a context or fences): a frame drawn is then rendered, not only asked for. Polled on
 * tasks, never blocking the page's thread.
 * @param {WebGL2RenderingContext | null | undefined} gl
 * @returns {Promise<void>}
 */
export function rendered(gl) {
  const sync = gl?.fenceSync?.(gl.SYNC_GPU_COMMANDS_COMPLETE, 0);
  if (!sync) return Promise.resolve();
  gl.flush();
  return new Promise((/** @type {() => void} */ resolve) => {
    const poll = () => {
      if (gl.isContextLost() || gl.getSyncParameter(sync, gl.SYNC_STATUS) === gl.SIGNALED) {
        gl.deleteSync(sync);
        resolve();
      } else setTimeout(poll, 1);
    };
    poll();
  });
}

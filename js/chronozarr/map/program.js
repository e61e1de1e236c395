// chronozarr/map/program.js: the layer's shader programs. The vertex shader places a cell's mesh
// (mercator offsets from the layer's origin, cells.js); the fragment shader reads the cell's
// stored values (gl-cells.js textures) and colours them, one of two ways:
//
// - per fragment: validity (the mask, or nodata, spec 2.3), physical values (scale and offset,
//   3.6: `phys()`, the GLSL twin of physical.js), the display's band math (display.js), the
//   stretch and the colour map (a 256-entry texture), RGB by three bands;
// - through a value table (value-lut.js), for a one-band display of an integer store: two texel
//   fetches, the stored value then its colour (decision 0024);
// - or, for the same displays, from an RGBA8 texture per cell on screen coloured on the CPU
//   through that table (value-lut.js colourValues): one texel fetch (decision 0062).

import { MAX_LAYERS } from "./display.js";
import { TEX } from "./gl-cells.js";
import { VALUE_LUT_DTYPES } from "./value-lut.js";

/**
 * A linked program, its uniform locations, and for the per-fragment path the scale and offset of
 * each texture layer.
 * @typedef {object} Program
 * @property {WebGLProgram} program
 * @property {Record<string, WebGLUniformLocation | null>} u
 * @property {Float32Array} [scale]
 * @property {Float32Array} [offset]
 * @property {boolean} [valueLut] true for the value-table programs (on the GPU or coloured on the CPU)
 * @property {boolean} [cpuColour] true for the program of cells coloured on the CPU (decision 0062)
 */

/** @import {DisplaySpec} from "./display.js" */
/** @typedef {{dtype: import("../types.js").DType, nodata: number | null, hasMask: boolean, bands: {scale: number, offset: number}[]}} StoreInfo */

const VERTEX = `#version 300 es
      uniform mat4 u_matrix;
      in vec2 a_pos;
      in vec2 a_uv;
      out vec2 v_uv;
      void main() { v_uv = a_uv; gl_Position = u_matrix * vec4(a_pos, 0.0, 1.0); }`;

/**
 * The head of both fragment shaders: precision, and the samplers of a cell's stored values (of
 * the store's dtype, gl-cells.js TEX) and of its mask.
 * @param {{sampler: string}} tex
 */
function fragmentHead(tex) {
  return `#version 300 es
      precision highp float;
      precision highp int;
      precision highp ${tex.sampler};
      precision highp usampler2D;
      uniform highp ${tex.sampler} u_data;
      uniform highp usampler2D u_mask;`;
}

/**
 * True when `spec` draws through a value table: one band of a uint8 / uint16 / int16 store,
 * unless the layer was told not to (`valueLut: false`).
 * @param {DisplaySpec} spec
 * @param {string} dtype
 * @param {boolean} valueLut
 */
export function usesValueLut(spec, dtype, valueLut) {
  return spec.kind === "scalar" && spec.bands.length === 1 && valueLut !== false && VALUE_LUT_DTYPES[dtype] !== undefined;
}

/**
 * Compile and link the program for `spec` on `store`'s data: with `cpuColour`, a display that
 * draws through a value table reads its colours from the cells' RGBA8 textures instead.
 * @param {WebGL2RenderingContext} gl
 * @param {StoreInfo} store
 * @param {DisplaySpec} spec
 * @param {boolean} valueLut
 * @param {boolean} [cpuColour]
 * @returns {Program}
 */
export function compileProgram(gl, store, spec, valueLut, cpuColour = false) {
  if (!usesValueLut(spec, store.dtype, valueLut)) return compilePerFragment(gl, store, spec);
  return cpuColour ? compileCpuColour(gl) : compileValueLut(gl, store);
}

/**
 * @param {WebGL2RenderingContext} gl
 * @param {StoreInfo} store
 * @param {DisplaySpec} spec
 * @returns {Program}
 */
function compilePerFragment(gl, store, spec) {
  const tex = TEX[store.dtype];
  const nd = store.nodata;
  const ref = (/** @type {number} */ b) => `phys(${spec.bands.indexOf(b)}, p)`;
  const okAll = spec.bands.map((_, l) => `ok(${l}, p)`).join(" && ");
  const body =
    spec.kind === "rgb"
      ? `if (!(${okAll})) discard;
           vec3 c = clamp((vec3(phys(0, p), phys(1, p), phys(2, p)) - u_min) / (u_max - u_min), 0.0, 1.0);
           outColor = vec4(c * u_opacity, u_opacity);`
      : `if (!(${okAll})) discard;
           float v = ${spec.glsl(ref)};
           if (isnan(v) || isinf(v)) discard;
           float k = clamp((v - u_min) / (u_max - u_min), 0.0, 1.0);
           vec3 c = texture(u_lut, vec2(k * (255.0 / 256.0) + 0.5 / 256.0, 0.5)).rgb;
           outColor = vec4(c * u_opacity, u_opacity);`;
  const nodataTest = nd === null ? "false" : Number.isNaN(nd) ? "isnan(raw(l, p))" : `raw(l, p) == ${glslNumber(nd)}`;
  const fs = `${fragmentHead(tex)}
      uniform sampler2D u_lut;
      uniform bool u_hasMask;
      uniform ivec2 u_size;
      uniform float u_scale[${MAX_LAYERS}];
      uniform float u_offset[${MAX_LAYERS}];
      uniform float u_min;
      uniform float u_max;
      uniform float u_opacity;
      in vec2 v_uv;
      out vec4 outColor;
      float raw(int l, ivec2 p) { return float(texelFetch(u_data, ivec3(p, l), 0).r); }
      bool ok(int l, ivec2 p) { return u_hasMask || !(${nodataTest}); }
      float phys(int l, ivec2 p) { return raw(l, p) * u_scale[l] + u_offset[l]; }
      void main() {
        ivec2 p = clamp(ivec2(floor(v_uv)), ivec2(0), u_size - 1);
        if (u_hasMask && texelFetch(u_mask, p, 0).r != 1u) discard;
        ${body}
      }`;
  const program = linkProgram(gl, VERTEX, fs);
  const names = ["u_matrix", "u_data", "u_mask", "u_lut", "u_hasMask", "u_size", "u_scale", "u_offset", "u_min", "u_max", "u_opacity"];
  const scale = new Float32Array(MAX_LAYERS);
  const offset = new Float32Array(MAX_LAYERS);
  spec.bands.forEach((b, l) => {
    scale[l] = store.bands[b].scale;
    offset[l] = store.bands[b].offset;
  });
  return { program, u: uniforms(gl, program, names), scale, offset };
}

/**
 * @param {WebGL2RenderingContext} gl
 * @param {StoreInfo} store
 * @returns {Program}
 */
function compileValueLut(gl, store) {
  const tex = TEX[store.dtype];
  const base = VALUE_LUT_DTYPES[store.dtype].base;
  // Two fetches per fragment: the stored value, then its colour (value-lut.js); validity,
  // scale/offset, band math, stretch, colour map and opacity are in the table. The mask test
  // (spec 2.3) is compiled in only for a store that has a mask.
  const fs = `${fragmentHead(tex)}
      uniform sampler2D u_vlut;
      uniform ivec2 u_size;
      in vec2 v_uv;
      out vec4 outColor;
      void main() {
        ivec2 p = min(ivec2(v_uv), u_size - 1);
        ${store.hasMask ? "if (texelFetch(u_mask, p, 0).r != 1u) discard;" : ""}
        int v = int(texelFetch(u_data, ivec3(p, 0), 0).r) + ${base};
        vec4 c = texelFetch(u_vlut, ivec2(v & 255, v >> 8), 0);
        if (c.a == 0.0) discard;
        outColor = c;
      }`;
  const program = linkProgram(gl, VERTEX, fs);
  return { program, u: uniforms(gl, program, ["u_matrix", "u_data", "u_mask", "u_vlut", "u_size"]), valueLut: true };
}

/**
 * The program of cells coloured on the CPU (decision 0062): one fetch of the cell's RGBA8 texture
 * per fragment. Validity is in the colours (alpha 0: not valid, or masked), so no mask texture,
 * and no discard: a transparent texel written over the cleared canvas (opacity 1, no blending) or
 * blended onto it (premultiplied, below 1) leaves the pixel as a discard would, since adjacent
 * cells' meshes share their edge vertices and never cover a pixel twice. In SwiftShader a shader
 * without discard costs less per fragment (about 1.5 ms of GPU-process CPU per scrub step).
 * @param {WebGL2RenderingContext} gl
 * @returns {Program}
 */
function compileCpuColour(gl) {
  const fs = `#version 300 es
      precision highp float;
      precision highp int;
      uniform sampler2D u_rgba;
      uniform ivec2 u_size;
      in vec2 v_uv;
      out vec4 outColor;
      void main() {
        outColor = texelFetch(u_rgba, min(ivec2(v_uv), u_size - 1), 0);
      }`;
  const program = linkProgram(gl, VERTEX, fs);
  return { program, u: uniforms(gl, program, ["u_matrix", "u_rgba", "u_size"]), valueLut: true, cpuColour: true };
}

/**
 * @param {WebGL2RenderingContext} gl
 * @param {WebGLProgram} program
 * @param {string[]} names
 */
function uniforms(gl, program, names) {
  /** @type {Record<string, WebGLUniformLocation | null>} */
  const u = {};
  for (const name of names) u[name] = gl.getUniformLocation(program, name);
  return u;
}

/**
 * @param {WebGL2RenderingContext} gl
 * @param {string} vs
 * @param {string} fs
 */
export function linkProgram(gl, vs, fs) {
  const program = gl.createProgram();
  const shaders = /** @type {[number, string][]} */ ([
    [gl.VERTEX_SHADER, vs],
    [gl.FRAGMENT_SHADER, fs],
  ]).map(([type, src]) => {
    const sh = gl.createShader(type);
    gl.shaderSource(sh, src);
    gl.compileShader(sh);
    gl.attachShader(program, sh);
    return sh;
  });
  gl.bindAttribLocation(program, 0, "a_pos");
  gl.bindAttribLocation(program, 1, "a_uv");
  gl.linkProgram(program);
  // One status query: each is a synchronous round trip to the GPU process (decision 0055). A
  // shader that did not compile fails the link; its own log is read then, for the message.
  if (!gl.getProgramParameter(program, gl.LINK_STATUS)) {
    const failed = shaders.find((sh) => !gl.getShaderParameter(sh, gl.COMPILE_STATUS));
    const message = failed
      ? `chronozarr layer shader: ${gl.getShaderInfoLog(failed)}`
      : `chronozarr layer program: ${gl.getProgramInfoLog(program)}`;
    for (const sh of shaders) gl.deleteShader(sh);
    gl.deleteProgram(program);
    throw new Error(message);
  }
  for (const sh of shaders) gl.deleteShader(sh);
  return program;
}

/**
 * A number as a GLSL float literal, rounded to float32 as the shader holds it.
 * @param {number} v
 */
function glslNumber(v) {
  const s = String(Math.fround(v));
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

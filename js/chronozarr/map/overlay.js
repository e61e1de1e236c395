// chronozarr/map/overlay.js: "overlay" rendering (decision 0024): the layer draws in a WebGL2
// canvas of its own, stacked right after the map's canvas, with the camera of the map's last
// render. A new timestep then repaints that canvas only, not the basemap (MapLibre's software
// repaint of the whole map is what bounds scrubbing in SwiftShader). The canvas is drawn at most
// once per animation frame, and cleared after a map frame that did not render the layer (hidden,
// outside its zoom range, removed from the style), as the map would.
//
// The canvas is clipped (CSS `clip`) to the box its cells cover on screen (decision 0062): where
// the compositor draws every layer of the page for every frame in software (GPU compositing on
// SwiftShader, decision 0055), a frame then costs the area the layer shows, not the whole map's.

// No depth, stencil or antialiasing (the layer draws flat meshes, and the software rasterizer,
// SwiftShader, then clears and resolves one colour buffer only).
const OVERLAY_CONTEXT = { alpha: true, premultipliedAlpha: true, antialias: false, depth: false, stencil: false };

/**
 * The overlay's canvas (no pointer events, at the container's origin) and its WebGL2 context, or
 * gl null where a context is refused. The canvas gets the size of `like` (the map's canvas, or
 * camera.js's stand-in for it) before its context exists: a WebGL canvas resized later
 * reallocates its drawing buffer, and the browser checks that buffer with synchronous calls to
 * the GPU process (a framebuffer status and an error query per dimension), which on the first
 * frame's path waited behind the compositor's frames there (decision 0055).
 * @param {Document} doc
 * @param {boolean} preserveDrawingBuffer as the map's context has it (a page that reads the map's pixels reads the layer's)
 * @param {{width: number, height: number, style?: {width?: string, height?: string}}} [like] the size to start at
 * @returns {{canvas: HTMLCanvasElement, gl: WebGL2RenderingContext | null}}
 */
export function overlayCanvas(doc, preserveDrawingBuffer, like) {
  const canvas = doc.createElement("canvas");
  canvas.className = "chronozarr-overlay";
  canvas.style.cssText = "position:absolute;left:0;top:0;pointer-events:none;";
  if (like?.width > 0 && like?.height > 0) {
    canvas.width = like.width;
    canvas.height = like.height;
    if (like.style?.width) canvas.style.width = like.style.width;
    if (like.style?.height) canvas.style.height = like.style.height;
  }
  return { canvas, gl: canvas.getContext("webgl2", { ...OVERLAY_CONTEXT, preserveDrawingBuffer }) };
}

/**
 * Whether `made` (an overlayCanvas result made earlier) can stand for the one overlayCanvas would
 * make now like `like` with `preserveDrawingBuffer`: a live context, the same drawing-buffer size
 * (no resize, see overlayCanvas) and the same attribute. (Both calls are answered in the page.)
 * @param {{canvas: HTMLCanvasElement, gl: WebGL2RenderingContext | null} | null | undefined} made
 * @param {{width: number, height: number}} like
 * @param {boolean} preserveDrawingBuffer
 * @returns {made is {canvas: HTMLCanvasElement, gl: WebGL2RenderingContext}}
 */
export function fitsCanvas(made, like, preserveDrawingBuffer) {
  if (!made?.gl || made.gl.isContextLost()) return false;
  const attrs = made.gl.getContextAttributes();
  return made.canvas.width === like.width && made.canvas.height === like.height && attrs?.preserveDrawingBuffer === preserveDrawingBuffer;
}

/**
 * The box, in CSS px of a canvas of `width` x `height` CSS px, that holds every point of `boxes`
 * (mercator [minX, minY, maxX, maxY]) drawn with `matrix` (column-major, to clip space, z 0), grown
 * to whole pixels and one more on each side and cut to the canvas; null when a corner is behind
 * the camera (clip w <= 0: the projection of the box is then not the hull of its corners).
 * @param {ArrayLike<number>} m
 * @param {Iterable<readonly number[]>} boxes
 * @param {number} width
 * @param {number} height
 * @returns {{left: number, top: number, right: number, bottom: number} | null}
 */
export function screenBox(m, boxes, width, height) {
  let x0 = Infinity;
  let y0 = Infinity;
  let x1 = -Infinity;
  let y1 = -Infinity;
  for (const [a, b, c, d] of boxes) {
    for (const [x, y] of [
      [a, b],
      [c, b],
      [a, d],
      [c, d],
    ]) {
      const w = m[3] * x + m[7] * y + m[15];
      if (!(w > 0)) return null;
      const sx = (((m[0] * x + m[4] * y + m[12]) / w + 1) / 2) * width;
      const sy = ((1 - (m[1] * x + m[5] * y + m[13]) / w) / 2) * height;
      x0 = Math.min(x0, sx);
      y0 = Math.min(y0, sy);
      x1 = Math.max(x1, sx);
      y1 = Math.max(y1, sy);
    }
  }
  if (!(x1 >= x0 && y1 >= y0)) return { left: 0, top: 0, right: 0, bottom: 0 };
  const left = Math.min(width, Math.max(0, Math.floor(x0) - 1));
  const top = Math.min(height, Math.max(0, Math.floor(y0) - 1));
  return {
    left,
    top,
    right: Math.max(left, Math.min(width, Math.ceil(x1) + 1)),
    bottom: Math.max(top, Math.min(height, Math.ceil(y1) + 1)),
  };
}

export class Overlay {
  /**
   * @param {HTMLCanvasElement} canvas
   * @param {WebGL2RenderingContext} gl
   * @param {(gl: WebGL2RenderingContext, matrix: Float32Array) => void} draw draws the layer
   * @param {() => void} cleared called when a draw clears the canvas without drawing (hidden)
   * @param {() => Iterable<readonly number[]>} [boxes] the drawn cells' mercator [minX, minY, maxX, maxY] (relative to the layer's origin), for the clip
   */
  constructor(canvas, gl, draw, cleared, boxes) {
    this.canvas = canvas;
    this.gl = gl;
    this._drawLayer = draw;
    this._cleared = cleared;
    this._boxes = boxes ?? null;
    /** false: the canvas is not clipped to its cells' box on screen. */
    this.clip = true;
    /** The canvas's CSS clip now. */
    this._clip = "";
    /** The camera of the map's last render (or the stand-in camera's before the map). @type {Float32Array | null} */
    this.matrix = null;
    /** @type {{getCanvas: () => HTMLCanvasElement, on: Function, off: Function} | null} */
    this._map = null;
    this._hiddenInMap = false;
    this._renderedThisFrame = false;
    this._frame = 0;
    /** @type {number | null | undefined} */
    this._drawnInFrame = undefined;
    /** @type {(() => void) | null} */
    this._onMapRender = null;
  }

  /**
   * Follow `map` (any object with getCanvas; a camera.js stand-in before the map exists): its
   * canvas gives the size, and with `frames` its render events clear a layer it did not render.
   * @param {any} map
   * @param {boolean} frames
   */
  follow(map, frames) {
    this.unfollow();
    this._map = map;
    this._hiddenInMap = false;
    this._renderedThisFrame = false;
    if (!frames) return;
    this._onMapRender = () => {
      if (!this._renderedThisFrame && !this._hiddenInMap) {
        this._hiddenInMap = true;
        this.draw();
      }
      this._renderedThisFrame = false;
    };
    map.on("render", this._onMapRender);
  }

  /** Stop following the map's frames. */
  unfollow() {
    if (this._map && this._onMapRender) this._map.off("render", this._onMapRender);
    this._onMapRender = null;
  }

  /**
   * The map rendered the layer with `matrix`: draw now, in the map's frame, so basemap and layer
   * show the same camera.
   * @param {Float32Array} matrix
   */
  mapFrame(matrix) {
    this.matrix = matrix;
    this._renderedThisFrame = true;
    this._hiddenInMap = false;
    if (this._frame) {
      globalThis.cancelAnimationFrame(this._frame);
      this._frame = 0;
    }
    this.draw();
  }

  /**
   * Ask for a draw. One draw per animation frame, however many changes ask for it: the first
   * change since the last frame draws now (it is shown in the next frame, and a playback tick
   * that asked inside an animation frame is shown in that one), later ones wait for the next
   * frame. The document timeline's time is the latest frame's, constant between frames.
   */
  repaint() {
    if (this._frame) return;
    const frame = this.canvas.ownerDocument.timeline?.currentTime;
    if (frame != null && frame !== this._drawnInFrame) {
      this.draw();
      return;
    }
    this._frame = globalThis.requestAnimationFrame(() => {
      this._frame = 0;
      this.draw();
    });
  }

  /** Draw the canvas with the last camera (or clear it when the map did not render the layer). */
  draw() {
    const { gl, canvas } = this;
    if (!gl || !canvas || !this._map) return;
    this._drawnInFrame = /** @type {number | null | undefined} */ (canvas.ownerDocument.timeline?.currentTime);
    const src = this._map.getCanvas();
    if (canvas.width !== src.width || canvas.height !== src.height) {
      canvas.width = src.width;
      canvas.height = src.height;
    }
    if (canvas.style.width !== src.style.width || canvas.style.height !== src.style.height) {
      canvas.style.width = src.style.width || `${src.clientWidth}px`;
      canvas.style.height = src.style.height || `${src.clientHeight}px`;
    }
    gl.bindFramebuffer(gl.FRAMEBUFFER, null);
    gl.viewport(0, 0, canvas.width, canvas.height);
    gl.clearColor(0, 0, 0, 0);
    gl.clear(gl.COLOR_BUFFER_BIT);
    if (this._hiddenInMap || !this.matrix) {
      this._cleared();
      return;
    }
    this._drawLayer(gl, this.matrix);
    this._clipToCells();
  }

  /** Clip the canvas to the box its cells cover on screen (none when unknown or turned off). */
  _clipToCells() {
    const { canvas } = this;
    const dpr = globalThis.devicePixelRatio || 1;
    const width = parseFloat(canvas.style.width) || canvas.width / dpr;
    const height = parseFloat(canvas.style.height) || canvas.height / dpr;
    const box = this.clip && this._boxes ? screenBox(this.matrix, this._boxes(), width, height) : null;
    const clip = box ? `rect(${box.top}px, ${box.right}px, ${box.bottom}px, ${box.left}px)` : "";
    if (clip === this._clip) return;
    this._clip = clip;
    canvas.style.clip = clip;
  }

  /** Stop following the map and take the canvas out of the page. */
  remove() {
    this.unfollow();
    if (this._frame) globalThis.cancelAnimationFrame(this._frame);
    this._frame = 0;
    this.canvas.remove();
    this._map = null;
  }
}

// The basemap's canvas without an alpha channel when its style paints every pixel (decision 0069).
//
// MapLibre makes its WebGL context with `alpha: true` whatever its options say. The compositor
// then takes the map's canvas for translucent: every frame it draws the page's own layer under
// the canvas and blends the canvas over it. In headless Chromium every frame is drawn whole
// (decision 0055), and under GPU compositing on a software renderer (SwiftShader) that area is
// what a scrubbed timestep costs the GPU process, though the basemap itself has not changed. A
// style whose first layer is an opaque background, shown at every zoom, covers every pixel of the
// map: the canvas is then made without alpha, the same pixels on screen, and the compositor draws
// it as opaque. A style known only by its URL when the map is made (MapLibre fetches it), or one
// that may leave pixels uncovered, keeps MapLibre's context as it is.

/**
 * Whether `css` is a colour with no transparency: #rgb, #rrggbb (#rgba, #rrggbbaa at full alpha),
 * rgb() / hsl() of three components or with an alpha of 1. Anything else (a name, an expression,
 * "transparent") is not taken for opaque.
 * @param {unknown} css
 * @returns {boolean}
 */
export function opaqueColour(css) {
  if (typeof css !== "string") return false;
  const s = css.trim().toLowerCase();
  if (/^#([0-9a-f]{3}|[0-9a-f]{6})$/.test(s)) return true;
  if (/^#[0-9a-f]{3}f$/.test(s) || /^#[0-9a-f]{6}ff$/.test(s)) return true;
  const fn = /^(rgba?|hsla?)\(([^()]*)\)$/.exec(s);
  if (!fn) return false;
  const parts = fn[2]
    .split(/[\s,/]+/)
    .map((p) => p.trim())
    .filter(Boolean);
  if (parts.length === 3) return true;
  if (parts.length !== 4) return false;
  const a = parts[3];
  return a.endsWith("%") ? Number(a.slice(0, -1)) >= 100 : Number(a) >= 1;
}

/**
 * Whether a MapLibre style (the JSON; not a URL) paints every pixel of the map opaque at every
 * zoom: its first layer is a visible background with an opaque colour, opacity 1, no pattern and
 * no zoom range. (Layers above it only paint over it.)
 * @param {any} style
 * @returns {boolean}
 */
export function paintsEveryPixel(style) {
  const first = style && typeof style === "object" ? style.layers?.[0] : null;
  if (!first || first.type !== "background") return false;
  if (first.layout?.visibility === "none" || first.minzoom !== undefined || first.maxzoom !== undefined) return false;
  const paint = first.paint ?? {};
  if (paint["background-pattern"] !== undefined) return false;
  if ((paint["background-opacity"] ?? 1) !== 1) return false;
  return opaqueColour(paint["background-color"] ?? "#000000");
}

/**
 * Run `make` (which makes a MapLibre map) so that the map's canvas, the one with class
 * `maplibregl-canvas`, gets its context without alpha when `opaque`. MapLibre makes its context
 * in its constructor; any other canvas, and any call after `make` returns, is left as it was.
 * @template T
 * @param {boolean} opaque
 * @param {() => T} make
 * @returns {T}
 */
export function withOpaqueMapCanvas(opaque, make) {
  if (!opaque || typeof HTMLCanvasElement === "undefined") return make();
  const proto = HTMLCanvasElement.prototype;
  const getContext = proto.getContext;
  /** @type {any} */ (proto).getContext = function (/** @type {string} */ type, /** @type {any} */ attrs) {
    const mine = this.classList.contains("maplibregl-canvas") && attrs && typeof attrs === "object";
    return getContext.call(this, type, mine ? { ...attrs, alpha: false } : attrs);
  };
  try {
    return make();
  } finally {
    proto.getContext = getContext;
  }
}
